"""Incremental server-sent events decoder (sans-IO): raw bytes in any chunking → events.

Follows the WHATWG event-stream rules: lines end with CRLF, LF or CR (a CR at the end of one
chunk and an LF at the start of the next are one line end); ``:`` lines are comments; ``data``
lines of one event are joined with ``\\n``; ``id`` persists across events; an empty line
dispatches; an event with no data is not dispatched. At end of stream an unfinished event (no
blank line after it) is discarded, as the spec says: a provider stream cut in the middle of an
event must not look like a complete one (the adapter then reports the missing terminal event).

Two deliberate differences from a browser: invalid UTF-8 is a protocol failure instead of being
replaced (provider JSON never needs replacement characters, so it means a broken stream), and a
line or an event longer than ``MAX_LINE_BYTES`` is refused so a runaway stream cannot exhaust
memory.
"""

from __future__ import annotations

import re

import msgspec

from wire.providers.errors import FailureKind, ProviderFailure

# Large enough for a Responses ``response.completed`` that repeats a long answer and its
# encrypted reasoning; small enough that a stream without line breaks cannot exhaust memory.
MAX_LINE_BYTES = 8 * 1024 * 1024

_LINE_END = re.compile(rb"\r\n|\r|\n")


class ServerSentEvent(msgspec.Struct, frozen=True):
    """One dispatched event; ``event`` is ``message`` when the stream named none."""

    event: str
    data: str
    id: str | None = None


class SseDecoder:
    """Feed bytes as they arrive; get back every event completed by them."""

    def __init__(self, *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._max = max_line_bytes
        self._buffer = bytearray()
        self._scanned = 0  # the buffer's first bytes hold no line end (no rescanning)
        self._skip_lf = False  # the previous chunk ended with CR: a leading LF is its pair
        self._first_line = True
        self._event = ""
        self._data: list[str] = []
        self._data_size = 0
        self._last_id: str | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if self._skip_lf and chunk:
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
            self._skip_lf = False
        self._buffer += chunk
        events: list[ServerSentEvent] = []
        if b"\r" in self._buffer:
            self._feed_any_line_ends(events)
        else:
            self._feed_lf_lines(events)
        if len(self._buffer) > self._max:
            raise _too_long(self._max)
        return events

    def _feed_lf_lines(self, events: list[ServerSentEvent]) -> None:
        """The common case (LF only): decode every complete line at once, then split.

        Splitting after decoding is safe because a UTF-8 multi-byte sequence never holds 0x0A.
        """
        end = self._buffer.rfind(b"\n", self._scanned)
        if end < 0:
            self._scanned = len(self._buffer)
            return
        block = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        self._scanned = 0
        for line in _decode(block).split("\n"):
            self._line(line, events)

    def _feed_any_line_ends(self, events: list[ServerSentEvent]) -> None:
        start = 0
        while (match := _LINE_END.search(self._buffer, max(start, self._scanned))) is not None:
            if match.group() == b"\r" and match.end() == len(self._buffer):
                self._skip_lf = True
            self._line(_decode(bytes(self._buffer[start : match.start()])), events)
            start = match.end()
        del self._buffer[:start]
        self._scanned = len(self._buffer)

    def finish(self) -> list[ServerSentEvent]:
        """End of stream: an unterminated line or event is dropped (see the module docstring)."""
        self._buffer.clear()
        self._scanned = 0
        self._data.clear()
        self._event = ""
        return []

    def _line(self, line: str, events: list[ServerSentEvent]) -> None:
        if len(line) > self._max:
            raise _too_long(self._max)
        if self._first_line:
            self._first_line = False
            line = line.removeprefix("\ufeff")
        if not line:
            self._dispatch(events)
            return
        if line.startswith(":"):
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data_size += len(value)
            if self._data_size > self._max:
                raise _too_long(self._max)
            self._data.append(value)
        elif name == "id" and "\0" not in value:  # an id with NUL is ignored, per the spec
            self._last_id = value
        # ``retry`` and unknown fields mean nothing to a one-shot provider stream.

    def _dispatch(self, events: list[ServerSentEvent]) -> None:
        if self._data:
            events.append(
                ServerSentEvent(
                    event=self._event or "message", data="\n".join(self._data), id=self._last_id
                )
            )
        self._event = ""
        self._data = []
        self._data_size = 0


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ProviderFailure(
            FailureKind.PROTOCOL, f"provider stream is not valid UTF-8: {error.reason}"
        ) from None


def _too_long(limit: int) -> ProviderFailure:
    return ProviderFailure(
        FailureKind.PROTOCOL, f"provider stream has a line or event longer than {limit} bytes"
    )
