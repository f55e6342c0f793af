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


# What an error event inside a 200 stream says, by its ``type``, ``code`` or ``status``, as the
# HTTP status the same refusal gets before a stream: Anthropic's error types, OpenAI's codes,
# Google's canonical status names. Only "not now" kinds are here: an error event naming the
# request itself stays a final failure.
STREAM_ERROR_STATUSES: dict[str, int] = {
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "server_error": 500,
    "rate_limit_exceeded": 429,
    "server_is_overloaded": 503,
    "slow_down": 503,
    "unavailable": 503,
    "resource_exhausted": 429,
    "internal": 500,
    "deadline_exceeded": 504,
}
# Kinds that name the request or the account: any of them makes the event final, whatever
# else it says (an ``invalid_request_error`` with a ``server_error`` code is not "not now").
STREAM_ERROR_FINAL = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "request_too_large",
        "billing_error",
        "insufficient_quota",
        "invalid_api_key",
        "context_length_exceeded",
        "invalid_argument",
        "failed_precondition",
        "permission_denied",
        "unauthenticated",
        "not_found",
    }
)


def stream_error_status(data: object) -> int | None:
    """The transient HTTP status an error event stands for (``{"error": {...}}``, a Responses
    ``response.failed``, or a flat error), or None when it names no "not now" kind."""
    if isinstance(data, dict):
        response = data.get("response")
        if isinstance(response, dict) and isinstance(response.get("error"), dict):
            data = response["error"]
        elif isinstance(data.get("error"), dict):
            data = data["error"]
    if not isinstance(data, dict):
        return None
    kinds = [v.lower() for key in ("type", "code", "status") if isinstance(v := data.get(key), str)]
    if any(kind in STREAM_ERROR_FINAL for kind in kinds):
        return None
    for kind in kinds:
        if kind in STREAM_ERROR_STATUSES:
            return STREAM_ERROR_STATUSES[kind]
    code = data.get("code")
    if type(code) is int and (code in (408, 429) or 500 <= code <= 599):
        return code  # Google's errors carry the HTTP status as their code
    return None


class ProviderFailure(Exception):
    """A failed provider call. ``message`` is shown to users and stored: it never holds a key.

    ``too_long``: the provider refused the request for its length (the turn compacts the
    conversation and asks again instead of failing). ``stream_status``: an error event of a 200
    stream said "not now" (``stream_error_status``): retried and fallen back as that status."""

    def __init__(
        self,
        kind: FailureKind,
        message: str,
        *,
        http_status: int | None = None,
        too_long: bool = False,
        stream_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.http_status = http_status
        self.too_long = too_long
        self.stream_status = stream_status

    def with_message(self, message: str) -> ProviderFailure:
        """The same failure saying ``message`` (scrubbed, or naming its model)."""
        return ProviderFailure(
            self.kind,
            message,
            http_status=self.http_status,
            too_long=self.too_long,
            stream_status=self.stream_status,
        )

    def __repr__(self) -> str:
        return f"ProviderFailure({self.kind.value}, {self.message!r})"
