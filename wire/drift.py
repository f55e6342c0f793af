"""Protocol drift: what a decoded Cursor message carried that our schema cannot name.

Sans-IO. Our ``.proto`` files are a subset of Cursor's, and a Cursor update may add fields or
enum values; protobuf keeps both when it decodes (unknown fields in the message's unknown field
set, an open enum's unknown number as its plain value), so nothing fails and nothing shows.
``drift_of`` walks a decoded message and names them: unknown fields as (message type, field
number, wire type), enum values no value of the enum names as (message type, field name,
value). What Cursor's own schema declares and our subset leaves out on purpose is not drift:
the shipped ``cursor_fields.json`` (``KnownToCursor``, written from the reference schema by
``tests/data/extract_cursor_fields.py``) names those numbers, and the walk passes them by, so
what it reports is what a Cursor newer than that schema sends. The walk is bounded
(``MAX_DEPTH`` nested messages deep, ``MAX_MESSAGES`` messages in all, ``MAX_FINDINGS``
findings): a message past a bound is not looked into and the result says it was cut. Values
are never read beyond an enum's number, so no content is ever reported.
"""

from __future__ import annotations

import enum
import functools
from importlib.resources import files
from typing import Any, Literal, NamedTuple

import msgspec
from google.protobuf import unknown_fields
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

# How deep nested messages are looked into (protobuf's own decoder allows 100).
MAX_DEPTH = 32
# How many messages one walk looks into (a RunRequest as the editor sends it has about 25).
MAX_MESSAGES = 2000
# How many findings one walk reports; the rest are left out (the result says it was cut).
MAX_FINDINGS = 64

Kind = Literal["field", "enum"]
KNOWN_FIELDS_FILE = "cursor_fields.json"


class KnownField(msgspec.Struct, frozen=True):
    """A field Cursor's schema declares: its name and the wire types it may arrive with (a
    known number on another wire type is drift: the field changed)."""

    name: str
    wire_types: frozenset[int]


class KnownToCursor(msgspec.Struct, frozen=True):
    """Per message type, the fields Cursor's schema declares beyond ours, by number; per enum
    type, its values beyond ours (number -> Cursor's name)."""

    source: str = ""
    fields: dict[str, dict[int, KnownField]] = {}
    enums: dict[str, dict[int, str]] = {}


NOTHING_KNOWN = KnownToCursor()


@functools.cache
def known_to_cursor() -> KnownToCursor:
    """The shipped baseline, read once (package data of ``wire.proto``)."""
    data = (files("wire.proto") / KNOWN_FIELDS_FILE).read_bytes()
    return msgspec.json.decode(data, type=KnownToCursor)


class Finding(msgspec.Struct, frozen=True):
    """One thing not known here: an unknown field (``kind`` "field": ``name`` the field
    number, ``value`` its wire type) or an enum value (``kind`` "enum": ``name`` the field's
    name, ``value`` the number), in a message of type ``message_type`` (full name)."""

    kind: Kind
    message_type: str
    name: str
    value: int


class Drift(msgspec.Struct, frozen=True):
    """What one walk found, each finding once, in the order met; ``cut``: a bound stopped it."""

    findings: tuple[Finding, ...]
    cut: bool = False


NO_DRIFT = Drift(())


class _How(enum.Enum):
    """What a field's values are to the walk."""

    MESSAGE = 1
    ENUM = 2
    MAP_MESSAGE = 3
    MAP_ENUM = 4


class _Look(NamedTuple):
    """One field the walk looks at: a message, an open enum, or a map of either."""

    name: str
    how: _How
    repeated: bool
    enum_type: EnumDescriptor | None


def _look_of(field: FieldDescriptor) -> _Look | None:
    """How the walk looks at ``field``; None for a scalar (never read, so a large string or
    bytes value is never copied). A closed enum keeps an unknown value among the unknown
    fields, so only open ones are looked at."""
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        value = entry.fields_by_name["value"]
        if value.type == FieldDescriptor.TYPE_MESSAGE:
            return _Look(field.name, _How.MAP_MESSAGE, True, None)
        if value.enum_type is not None and not value.enum_type.is_closed:
            return _Look(field.name, _How.MAP_ENUM, True, value.enum_type)
        return None
    if field.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
        return _Look(field.name, _How.MESSAGE, field.is_repeated, None)
    if field.enum_type is not None and not field.enum_type.is_closed:
        return _Look(field.name, _How.ENUM, field.is_repeated, field.enum_type)
    return None


@functools.cache
def _looks(descriptor: Descriptor) -> tuple[_Look, ...]:
    """The fields of a message type the walk looks at, decided once per type."""
    return tuple(look for f in descriptor.fields if (look := _look_of(f)) is not None)


class _Walk:
    def __init__(
        self, known: KnownToCursor, max_depth: int, max_messages: int, max_findings: int
    ) -> None:
        self.known = known
        self.max_depth = max_depth
        self.left = max_messages
        self.max_findings = max_findings
        self.found: dict[tuple[Kind, str, str, int], None] = {}
        self.cut = False

    def note(self, finding: tuple[Kind, str, str, int]) -> None:
        if finding in self.found:
            return
        if len(self.found) >= self.max_findings:
            self.cut = True
            return
        self.found[finding] = None

    def message(self, message: Message, depth: int) -> None:
        if depth > self.max_depth or self.left <= 0:
            self.cut = True
            return
        self.left -= 1
        descriptor = message.DESCRIPTOR
        full_name: str = descriptor.full_name
        unknown = unknown_fields.UnknownFieldSet(message)
        if len(unknown):
            known = self.known.fields.get(full_name, {})
            for i in range(len(unknown)):
                field = unknown[i]
                declared = known.get(field.field_number)
                if declared is None or field.wire_type not in declared.wire_types:
                    self.note(("field", full_name, str(field.field_number), field.wire_type))
        for look in _looks(descriptor):
            if look.repeated:
                values = getattr(message, look.name)
                if values:
                    self.values(full_name, look, values, depth)
            elif look.how is _How.MESSAGE:
                if message.HasField(look.name):
                    self.message(getattr(message, look.name), depth + 1)
            else:
                self.values(full_name, look, (getattr(message, look.name),), depth)

    def values(self, full_name: str, look: _Look, values: Any, depth: int) -> None:
        how = look.how
        if how is _How.MAP_MESSAGE or how is _How.MAP_ENUM:
            values = values.values()
        if how is _How.MESSAGE or how is _How.MAP_MESSAGE:
            for item in values:
                self.message(item, depth + 1)
            return
        enum_type: EnumDescriptor = look.enum_type  # type: ignore[assignment]
        ours = enum_type.values_by_number
        for number in values:
            if number not in ours and number not in self.known.enums.get(enum_type.full_name, {}):
                self.note(("enum", full_name, look.name, number))


def drift_of(
    message: Message,
    *,
    max_depth: int = MAX_DEPTH,
    max_messages: int = MAX_MESSAGES,
    max_findings: int = MAX_FINDINGS,
    known: KnownToCursor | None = None,
) -> Drift:
    """The unknown fields and unnamed enum values of ``message`` and every message in it,
    but those ``known`` names (by default the shipped baseline of Cursor's schema)."""
    baseline = known if known is not None else known_to_cursor()
    walk = _Walk(baseline, max_depth, max_messages, max_findings)
    walk.message(message, 0)
    if not walk.found and not walk.cut:
        return NO_DRIFT
    return Drift(tuple(Finding(*found) for found in walk.found), walk.cut)
