"""How a provider call fails: one exception with a category, a message and no secret."""

from __future__ import annotations

from enum import StrEnum


class FailureKind(StrEnum):
    """``provider``: the provider or the network failed (HTTP error, error event, timeout,
    EOF before done). ``protocol``: the stream broke the canonical grammar or a wire rule.
    ``config``: the request cannot be built from the configuration (no request was sent)."""

    PROVIDER = "provider"
    PROTOCOL = "protocol"
    CONFIG = "config"


class ProviderFailure(Exception):
    """A failed provider call. ``message`` is shown to users and stored: it never holds a key."""

    def __init__(self, kind: FailureKind, message: str, *, http_status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.http_status = http_status

    def __repr__(self) -> str:
        return f"ProviderFailure({self.kind.value}, {self.message!r})"
