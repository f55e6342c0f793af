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


# How providers say a request is longer than the model's context window, lower-cased: OpenAI's
# and its followers' error code and message, Anthropic's message, the stop reason some send as
# an error, GitHub-style proxies' code.
LENGTH_REFUSALS: tuple[str, ...] = (
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "model_context_window_exceeded",
    "context window exceeded",
    "exceeds the context window",
    "model_max_prompt_tokens_exceeded",
)


def is_length_refusal(text: str) -> bool:
    """Whether a provider's error text refuses the request for its length."""
    folded = text.lower()
    return any(phrase in folded for phrase in LENGTH_REFUSALS)


class ProviderFailure(Exception):
    """A failed provider call. ``message`` is shown to users and stored: it never holds a key.

    ``too_long``: the provider refused the request for its length (the turn compacts the
    conversation and asks again instead of failing)."""

    def __init__(
        self,
        kind: FailureKind,
        message: str,
        *,
        http_status: int | None = None,
        too_long: bool = False,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.http_status = http_status
        self.too_long = too_long

    def __repr__(self) -> str:
        return f"ProviderFailure({self.kind.value}, {self.message!r})"
