"""Protocol drift: what a decoded Cursor message carried that our schema cannot name.

Sans-IO. Our ``.proto`` files are a subset of Cursor's, and a Cursor update may add fields or
enum values; protobuf keeps both when it decodes (unknown fields in the message's unknown field
set, an open enum's unknown number as its plain value), so nothing fails and nothing shows.
``drift_of`` walks a decoded message and names them: unknown fields as (message type, field
number, wire type), enum values no value of the enum names as (message type, field name,
value). The walk is bounded (``MAX_DEPTH`` nested messages deep, ``MAX_MESSAGES`` messages in
all, ``MAX_FINDINGS`` findings): a message past a bound is not looked into and the result says
it was cut. Values are never read beyond an enum's number, so no content is ever reported.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable
from typing import Any, Literal

import msgspec
from google.protobuf import unknown_fields
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

# How deep nested messages are looked into (protobuf's own decoder allows 100).
MAX_DEPTH = 32
# How many messages one walk looks into (a RunRequest as the editor sends it has about 40).
MAX_MESSAGES = 2000
# How many findings one walk reports; the rest are left out (the result says it was cut).
MAX_FINDINGS = 64

Kind = Literal["field", "enum"]


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


class _Walk:
    def __init__(self, max_depth: int, max_messages: int, max_findings: int) -> None:
        self.max_depth = max_depth
        self.left = max_messages
        self.max_findings = max_findings
        self.found: dict[Finding, None] = {}
        self.cut = False

    def note(self, finding: Finding) -> None:
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
        descriptor: Descriptor = message.DESCRIPTOR
        full_name = descriptor.full_name
        unknown = unknown_fields.UnknownFieldSet(message)
        for i in range(len(unknown)):
            field = unknown[i]
            self.note(Finding("field", full_name, str(field.field_number), field.wire_type))
        for field, value in message.ListFields():
            self.value(full_name, field, value, depth)

    def value(self, full_name: str, field: FieldDescriptor, value: object, depth: int) -> None:
        how = _how(field)
        if how is _How.SCALAR:
            return
        items: Iterable[Any]
        if how in (_How.MAP_MESSAGE, _How.MAP_ENUM):
            items = value.values()  # type: ignore[attr-defined]
        else:
            items = value if field.is_repeated else (value,)  # type: ignore[assignment]
        if how in (_How.MESSAGE, _How.MAP_MESSAGE):
            for item in items:
                self.message(item, depth + 1)
            return
        enum = _enum_of(field, how)
        for number in items:
            if number not in enum.values_by_number:
                self.note(Finding("enum", full_name, field.name, number))


class _How(enum.Enum):
    """What a field's values are to the walk."""

    SCALAR = 0  # nothing to look at
    MESSAGE = 1
    ENUM = 2
    MAP_MESSAGE = 3
    MAP_ENUM = 4


@functools.cache
def _how(field: FieldDescriptor) -> _How:
    """Decided once per field of our schema (a closed enum keeps an unknown value among the
    unknown fields, so only open enums are checked here)."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value = field.message_type.fields_by_name["value"]
        if value.type == FieldDescriptor.TYPE_MESSAGE:
            return _How.MAP_MESSAGE
        if value.type == FieldDescriptor.TYPE_ENUM and not value.enum_type.is_closed:
            return _How.MAP_ENUM
        return _How.SCALAR
    if field.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
        return _How.MESSAGE
    if field.type == FieldDescriptor.TYPE_ENUM and not field.enum_type.is_closed:
        return _How.ENUM
    return _How.SCALAR


def _enum_of(field: FieldDescriptor, how: _How) -> EnumDescriptor:
    if how is _How.MAP_ENUM:
        enum_type: EnumDescriptor = field.message_type.fields_by_name["value"].enum_type
        return enum_type
    return field.enum_type


def drift_of(
    message: Message,
    *,
    max_depth: int = MAX_DEPTH,
    max_messages: int = MAX_MESSAGES,
    max_findings: int = MAX_FINDINGS,
) -> Drift:
    """The unknown fields and unnamed enum values of ``message`` and every message in it."""
    walk = _Walk(max_depth, max_messages, max_findings)
    walk.message(message, 0)
    if not walk.found and not walk.cut:
        return NO_DRIFT
    return Drift(tuple(walk.found), walk.cut)
