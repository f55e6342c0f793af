"""Write ``wire/proto/cursor_fields.json``: for each message and enum our ``.proto`` subset
declares, the field numbers and enum values Cursor's extracted schema declares beyond ours.

Those are known to Cursor's client and deliberately not used here, so the protocol drift
record (``wire.drift``) leaves them out and lists only what neither schema names: what a Cursor
newer than the reference sends. Run by hand when the reference schema is updated::

    python tests/data/extract_cursor_fields.py ../shared/reference/proto

``tests/repo/test_proto_schema.py`` checks the committed file against the reference.
"""

from __future__ import annotations

import importlib.resources
import json
import sys
import tempfile
from collections.abc import Callable, Container, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor
from grpc_tools import protoc

from wire.drift import KNOWN_FIELDS_FILE
from wire.proto import agent_v1_pb2, aiserver_v1_pb2

REFERENCE_FILES = ("agent_v1.proto", "aiserver_v1.proto")
OURS = (agent_v1_pb2.DESCRIPTOR, aiserver_v1_pb2.DESCRIPTOR)
T = TypeVar("T")
V = TypeVar("V")
OUT = Path(__file__).resolve().parents[2] / "wire" / "proto" / KNOWN_FIELDS_FILE


def load_pool(descriptor_set: Path) -> descriptor_pool.DescriptorPool:
    """A fresh pool (never the default one) holding every file of a descriptor set."""
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file_proto in files.file:
        pool.Add(file_proto)
    return pool


def compile_reference(proto_dir: Path) -> descriptor_pool.DescriptorPool:
    """Cursor's schema in ``proto_dir`` compiled into a pool of its own."""
    include = importlib.resources.files("grpc_tools") / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "reference.pb"
        args = [
            "grpc_tools.protoc",
            f"-I{proto_dir}",
            f"-I{include}",
            "--include_imports",
            f"--descriptor_set_out={out}",
            *REFERENCE_FILES,
        ]
        if protoc.main(args) != 0:
            raise SystemExit(f"protoc failed on {proto_dir}")
        return load_pool(out)


def walk_messages(file: FileDescriptor) -> Iterator[Descriptor]:
    """Every message a file defines, nested ones included."""
    stack = list(file.message_types_by_name.values())
    while stack:
        message = stack.pop()
        yield message
        stack.extend(message.nested_types)


def walk_enums(file: FileDescriptor) -> Iterator[EnumDescriptor]:
    """Every enum a file defines, at top level or nested in a message."""
    yield from file.enum_types_by_name.values()
    for message in walk_messages(file):
        yield from message.enum_types


_WIRE_TYPES = {
    **dict.fromkeys(
        (
            FieldDescriptor.TYPE_INT32,
            FieldDescriptor.TYPE_INT64,
            FieldDescriptor.TYPE_UINT32,
            FieldDescriptor.TYPE_UINT64,
            FieldDescriptor.TYPE_SINT32,
            FieldDescriptor.TYPE_SINT64,
            FieldDescriptor.TYPE_BOOL,
            FieldDescriptor.TYPE_ENUM,
        ),
        0,
    ),
    **dict.fromkeys(
        (FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED64, FieldDescriptor.TYPE_DOUBLE),
        1,
    ),
    **dict.fromkeys(
        (FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_SFIXED32, FieldDescriptor.TYPE_FLOAT),
        5,
    ),
    FieldDescriptor.TYPE_GROUP: 3,
}


def wire_types(field: FieldDescriptor) -> list[int]:
    """The wire types ``field`` may arrive with: its own, and length-delimited for a repeated
    number (packed); 2 for strings, bytes and messages."""
    own = _WIRE_TYPES.get(field.type, 2)
    return sorted({own, 2}) if field.is_repeated and own in (0, 1, 5) else [own]


def _known_field(field: FieldDescriptor) -> dict[str, object]:
    return {"name": field.name, "wire_types": wire_types(field)}


def _beyond(
    theirs: Iterable[T], ours: Container[int], number: Callable[[T], int], value: Callable[[T], V]
) -> dict[str, V]:
    """Number -> ``value`` of each of ``theirs`` whose number ``ours`` lacks, by number."""
    return {str(number(i)): value(i) for i in sorted(theirs, key=number) if number(i) not in ours}


def known_beyond_ours(reference: descriptor_pool.DescriptorPool) -> dict[str, object]:
    """What the reference declares beyond our subset, in the shipped file's shape."""
    fields: dict[str, dict[str, dict[str, object]]] = {}
    enums: dict[str, dict[str, str]] = {}
    for file in OURS:
        for message in walk_messages(file):
            theirs = reference.FindMessageTypeByName(message.full_name).fields
            known = _beyond(
                theirs,
                message.fields_by_number,
                lambda f: f.number,
                _known_field,
            )
            if known:
                fields[message.full_name] = known
        for enum in walk_enums(file):
            values = reference.FindEnumTypeByName(enum.full_name).values
            extra = _beyond(values, enum.values_by_number, lambda v: v.number, lambda v: v.name)
            if extra:
                enums[enum.full_name] = extra
    return {
        "source": "Cursor's schema as extracted from the Cursor client (reference proto)",
        "fields": dict(sorted(fields.items())),
        "enums": dict(sorted(enums.items())),
    }


def render(known: dict[str, object]) -> str:
    """The file's text: one line per message or enum type, so a regeneration's diff names
    the types that changed."""

    def table(entries: object) -> str:
        assert isinstance(entries, dict)
        rows = [f"  {json.dumps(name)}: {json.dumps(value)}" for name, value in entries.items()]
        return "{\n" + ",\n".join(rows) + "\n }"

    return (
        f'{{\n "source": {json.dumps(known["source"])},\n'
        f' "fields": {table(known["fields"])},\n'
        f' "enums": {table(known["enums"])}\n}}\n'
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    OUT.write_text(render(known_beyond_ours(compile_reference(Path(sys.argv[1])))))
    print(f"wrote {OUT}")
