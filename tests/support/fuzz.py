"""Shared pieces of the decoder fuzz tests: settings, byte-level mutations of valid inputs and
value-level mutations of JSON documents.

Random bytes rarely get past a decoder's first check; mutating a valid input (a recorded
stream, a serialized message) reaches the checks behind it. ``FUZZ_EXAMPLES`` raises the
number of examples per test for a longer run by hand (e.g. ``FUZZ_EXAMPLES=20000``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

if TYPE_CHECKING:
    from google._upb._message import Descriptor as UpbDescriptor

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "200"))


def fuzz_settings(examples: int = EXAMPLES) -> Callable[..., object]:
    """Modest by default; the deadline is the hang guard (generous: the machine is shared)."""
    return settings(
        max_examples=examples,
        deadline=2000,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )


@st.composite
def mutated(draw: st.DrawFn, base: bytes, max_ops: int = 4) -> bytes:
    """``base`` with up to ``max_ops`` edits: flip, set, insert, delete, duplicate, truncate."""
    data = bytearray(base)
    for _ in range(draw(st.integers(0, max_ops))):
        op = draw(st.sampled_from(("flip", "set", "insert", "delete", "duplicate", "truncate")))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and at < len(data):
            data[at] = draw(st.sampled_from((0x00, 0x01, 0x7F, 0x80, 0xFF, 0x0A, 0x0D, 0x22)))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif op == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 64))]
        elif op == "truncate":
            del data[at:]
    return bytes(data)


@st.composite
def chunked(draw: st.DrawFn, data: bytes, boundaries: tuple[int, ...] = ()) -> list[bytes]:
    """``data`` split at arbitrary points (a network delivers any chunking), or at some of
    ``boundaries`` (a protocol's frame edges: each read then ends between two frames)."""
    points = st.integers(0, len(data))
    if boundaries:
        points = points | st.sampled_from([b for b in boundaries if b <= len(data)] or [0])
    cuts = sorted(draw(st.lists(points, max_size=6)))
    pieces, start = [], 0
    for cut in cuts:
        pieces.append(data[start:cut])
        start = cut
    pieces.append(data[start:])
    return pieces


# ---- protobuf messages with random field values ----


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[object]:
    t = field.type
    if t == FieldDescriptor.TYPE_STRING:
        return st.text(max_size=24) | st.sampled_from(["", "a.py", "/tmp/x", "\n", "ok"])
    if t == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=32)
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats(width=32, allow_nan=True)
    if t == FieldDescriptor.TYPE_ENUM:
        assert field.enum_type is not None  # an enum field names its enum
        return st.sampled_from([v.number for v in field.enum_type.values] + [999])
    if t in (
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SFIXED32,
    ):
        return st.sampled_from([0, 1, -1, 2**31 - 1, -(2**31)]) | st.integers(-(2**31), 2**31 - 1)
    if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return st.sampled_from([0, 1, 2**32 - 1]) | st.integers(0, 2**32 - 1)
    if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return st.sampled_from([0, 1, 2**64 - 1]) | st.integers(0, 2**64 - 1)
    return st.sampled_from([0, 1, -1, 2**63 - 1, -(2**63)]) | st.integers(-(2**63), 2**63 - 1)


@st.composite
def proto_message(
    draw: st.DrawFn,
    descriptor: Descriptor | UpbDescriptor,
    depth: int = 4,
    oneof: str | None = None,
) -> Message:
    """A message of ``descriptor`` with random fields set (``oneof``: that field is set).
    ``descriptor`` may be a message class's ``DESCRIPTOR`` (upb's, typed apart)."""
    # upb's descriptors are Descriptors to isinstance (protobuf's metaclass says so).
    assert isinstance(descriptor, Descriptor)
    message = message_factory.GetMessageClass(descriptor)()
    fields = list(descriptor.fields)
    chosen = [f for f in fields if f.name == oneof]
    group = chosen[0].containing_oneof if chosen else None
    # Another member of the chosen field's oneof would replace it.
    rest = [f for f in fields if f.name != oneof and (group is None or f.containing_oneof != group)]
    chosen += draw(st.lists(st.sampled_from(rest), max_size=4, unique=True)) if rest else []
    for field in chosen:
        _set(draw, message, field, depth)
    return message


def _set(draw: st.DrawFn, message: Message, field: FieldDescriptor, depth: int) -> None:
    repeated = field.is_repeated
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        message_type = field.message_type
        assert message_type is not None  # a message field names its message
        if message_type.GetOptions().map_entry:
            key_field, value_field = message_type.fields
            for _ in range(draw(st.integers(0, 2))):
                key = draw(_scalar(key_field))
                target = getattr(message, field.name)
                if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                    if depth > 0:
                        assert value_field.message_type is not None
                        target[key].CopyFrom(
                            draw(proto_message(value_field.message_type, depth - 1))
                        )
                else:
                    target[key] = draw(_scalar(value_field))
            return
        if depth <= 0:
            if not repeated:
                getattr(message, field.name).SetInParent()
            return
        count = draw(st.integers(0, 2)) if repeated else 1
        for _ in range(count):
            child = draw(proto_message(message_type, depth - 1))
            if repeated:
                getattr(message, field.name).add().CopyFrom(child)
            else:
                getattr(message, field.name).CopyFrom(child)
                getattr(message, field.name).SetInParent()
        return
    if repeated:
        getattr(message, field.name).extend(draw(st.lists(_scalar(field), max_size=3)))
    else:
        setattr(message, field.name, draw(_scalar(field)))


# ---- JSON nested beyond the interpreter's recursion limit ----

DEEP_MARK = "@@deep@@"
"""A string a JSON mutation may put anywhere; ``deepen`` turns it into ``DEEP_JSON``."""
DEEP_JSON = "[" * 5000 + "]" * 5000


def deepen(text: str) -> str:
    """The JSON text with every ``DEEP_MARK`` string replaced by a 5000-deep array."""
    return text.replace(f'"{DEEP_MARK}"', DEEP_JSON)


# ---- JSON documents with values replaced or keys dropped ----


def json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a decoded JSON document (the root excluded)."""
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    found: list[tuple[Any, ...]] = []
    for key, child in items:
        found.append((*prefix, key))
        found.extend(json_paths(child, (*prefix, key)))
    return found


@st.composite
def mutated_json(draw: st.DrawFn, seed: bytes | str, values: st.SearchStrategy[Any]) -> bytes:
    """The JSON ``seed`` with one to three edits (a value replaced by one of ``values``, or a
    key dropped), ``DEEP_MARK`` deepened, and now and then its bytes mutated too: what a
    decoder of that document meets past its first checks."""
    document = json.loads(seed)
    for _ in range(draw(st.integers(1, 3))):
        paths = json_paths(document)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.integers(0, 3)) == 0:
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(values)
    text = deepen(json.dumps(document)).encode()
    return draw(mutated(text, max_ops=2)) if draw(st.integers(0, 4)) == 0 else text
