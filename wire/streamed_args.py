"""Incremental decoding of a tool call's JSON arguments while the model streams them.

Providers stream a call's arguments as raw JSON text cut at arbitrary points, inside escapes
(``\\n``, ``\\"``, ``\\u00e9``) and between the two halves of a ``\\uXXXX`` surrogate pair
included. ``StreamedArgsDecoder`` is fed those pieces in order and says, for one chosen top-level
string field (the *content* field, e.g. Write's ``contents``), which characters of its value are
new, and for the other top-level string fields their whole value once the string has closed
(e.g. ``path``). It never re-reads earlier text: each character is looked at once and the only
carry-over between pieces is a partial escape (at most six characters), a pending high
surrogate and the token, key or reported value being read, so a feed costs O(len(delta)).

It is a checker as well as a decoder: the text must be one JSON object as the call's final
decoding (``msgspec.json``) accepts it. At the first character that cannot continue such a text
the decoder stops for good: ``failed`` turns true and no later feed yields anything. It never
raises on bad input; the complete arguments are validated again when the call ends, and that is
where a bad call is reported.

Sans-IO: no IO, no threads, no clocks; one decoder per streamed call.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from enum import IntEnum

import msgspec

__all__ = [
    "ArgsEvent",
    "ContentDelta",
    "ContentEnded",
    "FieldCompleted",
    "StreamedArgsDecoder",
]


def _match_end(pattern: re.Pattern[str], text: str, i: int) -> int:
    """Where a run of ``pattern`` (which may match empty) starting at ``i`` ends."""
    match = pattern.match(text, i)
    return i if match is None else match.end()


class ContentDelta(msgspec.Struct, frozen=True):
    """Newly decoded characters of the content field (never empty)."""

    text: str


class ContentEnded(msgspec.Struct, frozen=True):
    """The content field's string has closed; no more ``ContentDelta`` follows."""


class FieldCompleted(msgspec.Struct, frozen=True):
    """Another top-level string field, complete."""

    name: str
    value: str


ArgsEvent = ContentDelta | ContentEnded | FieldCompleted


class _State(IntEnum):
    VALUE = 0  # a value must come next
    VALUE_OR_CLOSE = 1  # just after "[": a value or "]"
    KEY_OR_CLOSE = 2  # just after "{": a key or "}"
    KEY = 3  # after "," in an object: a key
    COLON = 4  # after a key
    AFTER_VALUE = 5  # "," or the closing bracket of the innermost container
    STRING = 6
    SCALAR = 7  # inside a number or true/false/null
    DONE = 8  # the top-level object has closed: only whitespace may follow
    FAILED = 9


class _Role(IntEnum):
    """What a string being read is for."""

    SKIP = 0  # checked, not kept
    KEY = 1  # a top-level key: kept to know what its value is
    CONTENT = 2  # the content field's value: streamed
    REPORT = 3  # a reported field's value: kept until it closes


class _Stop(Exception):
    """The text cannot be the start of a valid arguments object (internal)."""


_WHITESPACE = re.compile(r"[ \t\n\r]*")
# A run of characters a JSON string holds as they are. Lone surrogates cannot be sent as UTF-8,
# so a raw one ends the run like a control character does, and is refused.
_PLAIN = re.compile(r'[^"\\\x00-\x1f\ud800-\udfff]+')
_SCALAR_CHARS = re.compile(r"[0-9A-Za-z+\-.]*")
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_SCALAR_START = frozenset("-0123456789tfn")
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
_PARTIAL_HEX = re.compile(r"[0-9A-Fa-f]{0,3}")
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_CLOSERS = {"}": "{", "]": "["}


class StreamedArgsDecoder:
    """Decodes one call's argument text piece by piece; ``feed`` returns what each piece adds.

    ``content_field`` is the top-level key whose string value is streamed as ``ContentDelta``
    events (joined, they are exactly the decoded value), then one ``ContentEnded``.
    ``report_fields`` names the other top-level keys whose string value is reported once
    complete as ``FieldCompleted``; ``None`` reports every other top-level string field. A
    field whose value is not a string (a number, an object, ``null``) yields nothing, and only
    a key's first occurrence counts (a repeated key is checked and skipped).

    With ``normalize_newlines`` the content is streamed as the edit tools store it: CRLF and a
    lone CR become LF. A CR at the end of a piece is held back until the next character shows
    whether an LF follows, and is given as ``"\\n"`` when the string closes on it; joined, the
    deltas are then exactly the LF form of the value.
    """

    def __init__(
        self,
        content_field: str,
        *,
        report_fields: Collection[str] | None = None,
        normalize_newlines: bool = False,
    ) -> None:
        self.content_field = content_field
        self._report = None if report_fields is None else frozenset(report_fields)
        self._normalize = normalize_newlines
        self._state = _State.VALUE
        self._stack: list[str] = []  # open containers, "{" or "["
        self._role = _Role.SKIP
        self._string_is_key = False
        self._kept: list[str] = []  # the key or reported value being read
        self._key = ""  # the top-level key whose value comes next
        self._seen: set[str] = set()  # top-level keys whose value has begun
        self._first = False  # the current top-level value is its key's first occurrence
        self._escape = ""  # the characters of an escape cut off at the end of a piece
        self._high = 0  # a high surrogate waiting for its low half
        self._token: list[str] = []  # a number or literal being read
        self._content: list[str] = []  # content decoded during the current feed
        self._held_cr = False
        self._events: list[ArgsEvent] = []
        self.error: str | None = None
        """Why the decoder stopped (for logs); None while the text can still be valid."""

    @property
    def failed(self) -> bool:
        """The text so far cannot begin a valid arguments object; nothing more is yielded."""
        return self._state is _State.FAILED

    @property
    def finished(self) -> bool:
        """The top-level object has closed (whitespace may still follow)."""
        return self._state is _State.DONE

    def feed(self, delta: str) -> list[ArgsEvent]:
        """The events the next piece of argument text adds, in text order; never raises."""
        if self._state is _State.FAILED:
            return []
        events: list[ArgsEvent] = []
        self._events = events
        try:
            self._scan(delta)
        except _Stop as stop:
            self._state = _State.FAILED
            self.error = str(stop)
        self._flush_content()
        self._events = []
        return events

    # ---- the scanner ----

    def _scan(self, text: str) -> None:
        i = 0
        n = len(text)
        while i < n:
            state = self._state
            if state is _State.STRING:
                i = self._scan_string(text, i)
                continue
            if state is _State.SCALAR:
                i = self._scan_scalar(text, i)
                continue
            i = _match_end(_WHITESPACE, text, i)
            if i == n:
                return
            ch = text[i]
            if state is _State.AFTER_VALUE:
                self._after_value(ch)
            elif state is _State.COLON:
                if ch != ":":
                    raise _Stop(f"expected ':' after a key, got {ch!r}")
                self._state = _State.VALUE
            elif state is _State.KEY_OR_CLOSE and ch == "}":
                self._close(ch)
            elif state in (_State.KEY_OR_CLOSE, _State.KEY):
                if ch != '"':
                    raise _Stop(f"expected a key, got {ch!r}")
                self._begin_string(key=True)
            elif state is _State.VALUE_OR_CLOSE and ch == "]":
                self._close(ch)
            elif state in (_State.VALUE, _State.VALUE_OR_CLOSE):
                self._begin_value(ch)
            else:  # DONE
                raise _Stop(f"unexpected {ch!r} after the arguments object")
            i += 1

    def _begin_value(self, ch: str) -> None:
        depth = len(self._stack)
        if depth == 0 and ch != "{":
            raise _Stop("the arguments are not a JSON object")
        if depth == 1:
            self._first = self._key not in self._seen
            self._seen.add(self._key)
        if ch == "{":
            self._stack.append("{")
            self._state = _State.KEY_OR_CLOSE
        elif ch == "[":
            self._stack.append("[")
            self._state = _State.VALUE_OR_CLOSE
        elif ch == '"':
            self._begin_string(key=False)
        elif ch in _SCALAR_START:
            self._token = [ch]
            self._state = _State.SCALAR
        else:
            raise _Stop(f"expected a value, got {ch!r}")

    def _after_value(self, ch: str) -> None:
        if ch == ",":
            self._state = _State.KEY if self._stack[-1] == "{" else _State.VALUE
        elif ch in _CLOSERS:
            self._close(ch)
        else:
            raise _Stop(f"expected ',' or a closing bracket, got {ch!r}")

    def _close(self, ch: str) -> None:
        if not self._stack or self._stack[-1] != _CLOSERS[ch]:
            raise _Stop(f"unbalanced {ch!r}")
        self._stack.pop()
        self._state = _State.AFTER_VALUE if self._stack else _State.DONE

    def _scan_scalar(self, text: str, i: int) -> int:
        end = _match_end(_SCALAR_CHARS, text, i)
        self._token.append(text[i:end])
        if end == len(text):
            return end  # the token may go on in the next piece
        token = "".join(self._token)
        self._token = []
        if _SCALAR.fullmatch(token) is None:
            raise _Stop(f"invalid value {token[:40]!r}")
        self._state = _State.AFTER_VALUE
        return end

    # ---- strings ----

    def _begin_string(self, *, key: bool) -> None:
        self._state = _State.STRING
        self._string_is_key = key
        depth = len(self._stack)
        if depth != 1:
            self._role = _Role.SKIP
        elif key:
            self._role = _Role.KEY
        elif not self._first:
            self._role = _Role.SKIP
        elif self._key == self.content_field:
            self._role = _Role.CONTENT
        elif self._report is None or self._key in self._report:
            self._role = _Role.REPORT
        else:
            self._role = _Role.SKIP
        self._kept = []

    def _scan_string(self, text: str, i: int) -> int:
        n = len(text)
        while i < n:
            if self._escape or text[i] == "\\":
                i = self._read_escape(text, i)
                continue
            if self._high:
                raise _Stop("a high surrogate escape is not followed by its low half")
            if text[i] == '"':
                self._end_string()
                return i + 1
            run = _PLAIN.match(text, i)
            if run is None:
                raise _Stop(f"invalid character {text[i]!r} in a string")
            self._take(run.group())
            i = run.end()
        return i

    def _read_escape(self, text: str, i: int) -> int:
        """Decode the escape starting at ``text[i]`` (or continuing ``self._escape``)."""
        held = len(self._escape)
        escape = self._escape + text[i : i + 6 - held]
        if len(escape) < 2:
            self._escape = escape
            return len(text)
        kind = escape[1]
        if kind != "u":
            char = _SIMPLE_ESCAPES.get(kind)
            if char is None:
                raise _Stop(f"invalid escape {escape[:2]!r}")
            if self._high:
                raise _Stop("a high surrogate escape is not followed by its low half")
            self._escape = ""
            self._take(char)
            return i + 2 - held
        if len(escape) < 6:
            if _PARTIAL_HEX.fullmatch(escape, 2) is None:
                raise _Stop(f"invalid escape {escape!r}")
            self._escape = escape
            return len(text)
        if _HEX4.fullmatch(escape, 2) is None:
            raise _Stop(f"invalid escape {escape!r}")
        self._escape = ""
        self._code_unit(int(escape[2:], 16))
        return i + 6 - held

    def _code_unit(self, unit: int) -> None:
        if self._high:
            if not 0xDC00 <= unit <= 0xDFFF:
                raise _Stop("a high surrogate escape is not followed by its low half")
            code = 0x10000 + ((self._high - 0xD800) << 10) + (unit - 0xDC00)
            self._high = 0
            self._take(chr(code))
        elif 0xD800 <= unit <= 0xDBFF:
            self._high = unit
        elif 0xDC00 <= unit <= 0xDFFF:
            raise _Stop("a low surrogate escape without its high half")
        else:
            self._take(chr(unit))

    def _take(self, piece: str) -> None:
        role = self._role
        if role is _Role.CONTENT:
            self._content.append(piece)
        elif role is not _Role.SKIP:
            self._kept.append(piece)

    def _end_string(self) -> None:
        role = self._role
        if self._string_is_key:
            if role is _Role.KEY:
                self._key = "".join(self._kept)
            self._state = _State.COLON
        else:
            if role is _Role.CONTENT:
                self._flush_content(closing=True)
                self._events.append(ContentEnded())
            elif role is _Role.REPORT:
                self._events.append(FieldCompleted(self._key, "".join(self._kept)))
            self._state = _State.AFTER_VALUE
        self._kept = []
        self._role = _Role.SKIP

    def _flush_content(self, *, closing: bool = False) -> None:
        if not self._content and not (closing and self._held_cr):
            return
        text = "".join(self._content)
        self._content = []
        if self._normalize:
            if self._held_cr:
                text = "\r" + text
                self._held_cr = False
            if text.endswith("\r") and not closing:
                text = text[:-1]
                self._held_cr = True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if text:
            self._events.append(ContentDelta(text))
