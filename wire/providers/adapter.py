"""The provider adapter interface, its lookup, and the small helpers all three formats share.

An adapter is sans-IO: it turns the neutral ``LlmRequest`` into one ``HttpCall`` and the bytes
of the answer into canonical ``ProviderEvent``s. The transport does the IO, emits ``CallStarted``
on 2xx headers and hands a non-2xx body to ``http_error``.
"""

from __future__ import annotations

import abc
import base64
from http import HTTPStatus
from typing import Any, Protocol

import msgspec

from actors.conversation.events import FinishReason, ProviderEvent
from actors.conversation.model import ReplayState
from actors.conversation.request import HttpCall, LlmRequest, ModelRoute
from wire.json_input import decode_json
from wire.providers.errors import (
    FailureKind,
    ProviderFailure,
    is_length_refusal,
    stream_error_status,
)
from wire.providers.redaction import route_secrets, scrub_text
from wire.providers.sse import ServerSentEvent, SseDecoder


class StreamDecoder(Protocol):
    """Turns one response body into canonical events, chunk by chunk (never ``CallStarted``)."""

    def feed(self, chunk: bytes) -> list[ProviderEvent]:
        """Raw network bytes in, the events they complete out; raises ``ProviderFailure``."""
        ...

    def finish(self) -> list[ProviderEvent]:
        """End of body; raises ``ProviderFailure(PROVIDER)`` if the terminal event never came."""
        ...


class ProviderAdapter(Protocol):
    """One wire format (OpenAI Chat, OpenAI Responses, Anthropic Messages, Gemini).

    ``honours_replay_reasoning``: whether a provider's ``replay_reasoning`` setting changes what
    this format sends (the console offers the setting only where it does)."""

    name: str
    honours_replay_reasoning: bool

    def build_call(self, request: LlmRequest, route: ModelRoute) -> HttpCall:
        """The HTTP request for one call; ``ProviderFailure(CONFIG)`` when it cannot be built."""
        ...

    def new_decoder(self, route: ModelRoute) -> StreamDecoder: ...

    def http_error(self, status: int, body: bytes, route: ModelRoute) -> ProviderFailure:
        """The failure for a non-2xx answer; ``route`` supplies the secrets to scrub."""
        ...


# ---------------------------------------------------------------------------------------------
# Building requests


def check_route(adapter: str, route: ModelRoute) -> None:
    """Refuse what no adapter can honour, before anything is sent."""
    if route.fast:
        raise ProviderFailure(
            FailureKind.CONFIG,
            f"{adapter} route cannot satisfy fast latency: no request was sent",
        )


def endpoint(route: ModelRoute, path: str) -> str:
    return route.base_url.rstrip("/") + path


def json_headers(
    auth: tuple[tuple[str, str], ...], route: ModelRoute
) -> tuple[tuple[str, str], ...]:
    """Auth, JSON and SSE headers, then the route's custom headers (a same-named one replaces
    ours: the operator configured it on purpose, e.g. a gateway's own auth scheme)."""
    base = [*auth, ("content-type", "application/json"), ("accept", "text/event-stream")]
    custom = {name.lower() for name, _ in route.headers}
    kept = [(name, value) for name, value in base if name.lower() not in custom]
    return (*kept, *route.headers)


def encode_body(body: dict[str, Any]) -> bytes:
    """Compact JSON bytes: what is sent is exactly what a recorder stores and measures."""
    return msgspec.json.encode(body)


def b64(data: bytes) -> str:
    """Standard, padded base64, as every provider expects for inline images."""
    return base64.b64encode(data).decode("ascii")


def data_url(mime_type: str, data: bytes) -> str:
    return f"data:{mime_type};base64,{b64(data)}"


def replay_value(
    adapter: str, replay: ReplayState | None, provider_kind: str, key: str, expected: type
) -> Any | None:
    """The replay payload under ``key`` if the state came from this format, else None (another
    provider's reasoning cannot be replayed). A malformed state of our own kind is refused."""
    if replay is None or replay.provider_kind != provider_kind:
        return None
    value = replay.value.get(key)
    if not isinstance(value, expected):
        raise ProviderFailure(
            FailureKind.PROTOCOL, f"{adapter} replay state has no {expected.__name__} {key}"
        )
    return value


# ---------------------------------------------------------------------------------------------
# HTTP errors

ERROR_BODY_LIMIT = 500  # characters of a non-JSON error body kept in the message


def http_failure(adapter: str, status: int, body: bytes, route: ModelRoute) -> ProviderFailure:
    """``<adapter> <status> <phrase>: <provider message>``, with every route secret removed."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    detail = scrub_text(provider_error_message(body), route_secrets(route))
    if len(detail) > ERROR_BODY_LIMIT:
        detail = detail[:ERROR_BODY_LIMIT] + "…"
    head = f"{adapter} {status} {phrase}".rstrip()
    too_long = status < 500 and is_length_refusal(body.decode("utf-8", "replace"))
    return ProviderFailure(
        FailureKind.PROVIDER, f"{head}: {detail}", http_status=status, too_long=too_long
    )


def provider_error_message(body: bytes) -> str:
    """The provider's own message from an error body (``error.message``, ``error`` or
    ``message``), else the body's text with white space folded."""
    try:
        parsed = decode_json(body)
    except msgspec.DecodeError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str):
            return message
        message = parsed.get("message")
        if isinstance(message, str):
            return message
    text = " ".join(body.decode("utf-8", errors="replace").split())
    return text or "(empty body)"


# ---------------------------------------------------------------------------------------------
# Reading streams


# The largest token count a provider may report: JSON numbers are exact up to here (the
# console reads them in JavaScript), and a turn's sum of many calls still fits the int64 of
# the store's columns and of ``TurnEndedUpdate``. No real call comes near it.
MAX_TOKEN_COUNT = 2**53 - 1


class SseJsonDecoder(abc.ABC):
    """The framing every format shares: SSE events in, one JSON object per event, and nothing
    but ``[DONE]`` accepted once the format's terminal event was handled."""

    name = "provider"
    terminal = "its terminal event"

    def __init__(self) -> None:
        self._sse = SseDecoder()
        self.finished = False

    def feed(self, chunk: bytes) -> list[ProviderEvent]:
        out: list[ProviderEvent] = []
        for event in self._sse.feed(chunk):
            if event.data == "[DONE]":
                self.on_done_marker(out)
            elif self.finished:
                raise self.protocol(f"sent {event.event!r} after {self.terminal}")
            else:
                self.on_event(event, self.parse(event.data), out)
        return out

    def finish(self) -> list[ProviderEvent]:
        self._sse.finish()
        if not self.finished:
            raise ProviderFailure(
                FailureKind.PROVIDER, f"{self.name} stream ended before {self.terminal}"
            )
        return []

    @abc.abstractmethod
    def on_event(
        self, event: ServerSentEvent, data: dict[str, Any], out: list[ProviderEvent]
    ) -> None:
        """Map one decoded event of the format onto canonical events (each format its own)."""

    def on_done_marker(self, out: list[ProviderEvent]) -> None:
        """``data: [DONE]``: harmless after the terminal event, a truncation before it."""
        if not self.finished:
            raise ProviderFailure(
                FailureKind.PROVIDER, f"{self.name} stream sent [DONE] before {self.terminal}"
            )

    def parse(self, data: str) -> dict[str, Any]:
        try:
            value = decode_json(data)
        except msgspec.DecodeError as error:
            raise self.protocol(f"sent an event that is not JSON ({error})") from None
        if not isinstance(value, dict):
            raise self.protocol("sent an event that is not a JSON object")
        return value

    def protocol(self, what: str) -> ProviderFailure:
        return ProviderFailure(FailureKind.PROTOCOL, f"{self.name} {what}")

    def provider(self, what: str) -> ProviderFailure:
        return ProviderFailure(FailureKind.PROVIDER, f"{self.name} {what}")

    def stream_error(self, what: str, data: dict[str, Any]) -> ProviderFailure:
        """An error the stream reported; ``too_long`` when its event refuses the length,
        ``stream_status`` when it says "not now"."""
        too_long = is_length_refusal(msgspec.json.encode(data).decode())
        return ProviderFailure(
            FailureKind.PROVIDER,
            f"{self.name} {what}",
            too_long=too_long,
            stream_status=stream_error_status(data),
        )

    # -- typed field access: a missing or mistyped required field is a protocol failure ------

    def obj(self, data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
        value = data.get(key)
        if not isinstance(value, dict):
            raise self.protocol(f"{where} is missing object {key}")
        return value

    def string(self, data: dict[str, Any], key: str, where: str) -> str:
        value = data.get(key)
        if not isinstance(value, str):
            raise self.protocol(f"{where} is missing string {key}")
        return value

    def nonempty(self, data: dict[str, Any], key: str, where: str) -> str:
        value = self.string(data, key, where)
        if not value:
            raise self.protocol(f"{where} has an empty {key}")
        return value

    def integer(self, data: dict[str, Any], key: str, where: str) -> int:
        value = data.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self.protocol(f"{where} is missing integer {key}")
        return value

    def optional_string(self, data: dict[str, Any], key: str, where: str) -> str | None:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise self.protocol(f"{where} has a non-string {key}")
        return value

    def count(self, data: Any, path: tuple[str, ...], where: str) -> int | None:
        """A token count at ``path``; absent or null stays None (never 0)."""
        for key in path:
            if not isinstance(data, dict):
                return None
            data = data.get(key)
        if data is None:
            return None
        if not isinstance(data, int) or isinstance(data, bool) or data < 0:
            raise self.protocol(f"{where} has a non-integer {'.'.join(path)}")
        if data > MAX_TOKEN_COUNT:
            raise self.protocol(f"{where} has an out-of-range {'.'.join(path)} ({data})")
        return data


def error_text(data: dict[str, Any]) -> str:
    """The human message of an error object, for ``{"error": {...}}`` and flat shapes alike."""
    error = data.get("error", data)
    if isinstance(error, dict):
        message = error.get("message")
        kind = error.get("code") or error.get("type")
        if isinstance(message, str) and message:
            named = isinstance(kind, str) and kind and kind != "error"
            return f"{message} ({kind})" if named else message
    if isinstance(error, str) and error:
        return error
    return msgspec.json.encode(data).decode()[:ERROR_BODY_LIMIT]


def finish_for(has_tools: bool) -> FinishReason:
    return FinishReason.TOOL_USE if has_tools else FinishReason.STOP


def bearer_auth(route: ModelRoute) -> tuple[tuple[str, str], ...]:
    """``Authorization: Bearer <key>``, or nothing for a provider without a key (a local
    server); an empty ``Bearer `` is not a valid header value."""
    return (("authorization", f"Bearer {route.api_key.reveal()}"),) if route.api_key else ()
