"""Our protobuf subset against Cursor's extracted schema, its generated code, and unknown fields.

The subset in ``wire/proto`` must agree with ``../shared/reference/proto`` on every name, number,
type, label and presence it declares; the committed ``*_pb2.py`` must be what its ``.proto``
generates; and fields the subset leaves out must survive a decode/encode round trip.
"""

from __future__ import annotations

import ast
import importlib.resources
import shlex
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, unknown_fields
from google.protobuf.descriptor import FieldDescriptor, FileDescriptor
from google.protobuf.message import Message

pytest.importorskip("grpc_tools")

from grpc_tools import protoc

from tests.data.extract_cursor_fields import (
    known_beyond_ours,
    load_pool,
    render,
    walk_enums,
    walk_messages,
)
from tests.support.process import REPO as REPO_ROOT
from wire.drift import KNOWN_FIELDS_FILE
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

REFERENCE_PROTO_DIR = REPO_ROOT.parent / "shared/reference/proto"
REFERENCE_FILES = ("agent_v1.proto", "aiserver_v1.proto")
OUR_PROTO_FILES = ("wire/proto/agent_v1.proto", "wire/proto/aiserver_v1.proto")
OUR_MODULES = (agent, aiserver)
WELL_KNOWN_INCLUDE = str(importlib.resources.files("grpc_tools") / "_proto")

SKIP_REASON = (
    f"schema check skipped: ../shared/reference/proto is missing (looked for "
    f"{REFERENCE_PROTO_DIR}); the proto subset was NOT compared with Cursor's schema"
)


# ---- helpers -------------------------------------------------------------------------------


def _run_protoc(args: list[str]) -> None:
    """Run the bundled protoc; fail the test with its exit code when it fails."""
    rc = protoc.main(["grpc_tools.protoc", *args])
    assert rc == 0, f"protoc failed with exit code {rc}: {args}"


def _label(field: FieldDescriptor) -> str:
    if field.is_repeated:
        return "repeated"
    return "required" if field.is_required else "optional"


def _field_shape(field: FieldDescriptor) -> dict[str, object]:
    """What must agree between our field and the reference field of the same name."""
    return {
        "number": field.number,
        "type": field.type,
        "label": _label(field),
        "message_type": field.message_type.full_name if field.message_type else None,
        "enum_type": field.enum_type.full_name if field.enum_type else None,
        "has_presence": field.has_presence,
        "oneof": field.containing_oneof.name if field.containing_oneof else None,
    }


def schema_mismatches(
    ours: list[FileDescriptor], reference: descriptor_pool.DescriptorPool
) -> list[str]:
    """Every difference between what our files declare and the reference pool."""
    problems: list[str] = []
    for file in ours:
        for message in walk_messages(file):
            try:
                ref_message = reference.FindMessageTypeByName(message.full_name)
            except KeyError:
                problems.append(f"message {message.full_name} is not in the reference")
                continue
            for field in message.fields:
                ref_field = ref_message.fields_by_name.get(field.name)
                if ref_field is None:
                    taken = ref_message.fields_by_number.get(field.number)
                    hint = f" (number {field.number} is {taken.name!r})" if taken else ""
                    problems.append(f"field {field.full_name} is not in the reference{hint}")
                    continue
                mine, theirs = _field_shape(field), _field_shape(ref_field)
                for key, value in mine.items():
                    if value != theirs[key]:
                        problems.append(
                            f"field {field.full_name}: {key} is {value!r}, "
                            f"reference {theirs[key]!r}"
                        )
        for enum in walk_enums(file):
            try:
                ref_enum = reference.FindEnumTypeByName(enum.full_name)
            except KeyError:
                problems.append(f"enum {enum.full_name} is not in the reference")
                continue
            for value in enum.values:
                ref_value = ref_enum.values_by_name.get(value.name)
                if ref_value is None:
                    problems.append(f"enum value {enum.full_name}.{value.name} not in reference")
                elif ref_value.number != value.number:
                    problems.append(
                        f"enum value {enum.full_name}.{value.name} is {value.number}, "
                        f"reference {ref_value.number}"
                    )
    return problems


def _tag(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _len_field(number: int, payload: bytes) -> bytes:
    return _tag(number, 2) + _varint(len(payload)) + payload


def _unknown_numbers(message: Message) -> list[int]:
    fields = unknown_fields.UnknownFieldSet(message)  # indexed: the stub has no __iter__
    return [fields[index].field_number for index in range(len(fields))]


# ---- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference_pool(tmp_path_factory: pytest.TempPathFactory) -> descriptor_pool.DescriptorPool:
    """Cursor's extracted schema compiled into its own pool; skips when the folder is absent."""
    if not REFERENCE_PROTO_DIR.is_dir():
        pytest.skip(SKIP_REASON)
    out = tmp_path_factory.mktemp("reference") / "reference.pb"
    _run_protoc(
        [
            f"-I{REFERENCE_PROTO_DIR}",
            f"-I{WELL_KNOWN_INCLUDE}",
            "--include_imports",
            f"--descriptor_set_out={out}",
            *REFERENCE_FILES,
        ]
    )
    return load_pool(out)


# ---- the subset agrees with the reference ----------------------------------------------------


def test_subset_matches_reference_schema(reference_pool: descriptor_pool.DescriptorPool) -> None:
    """Every message, field and enum value we declare is declared the same way by Cursor."""
    problems = schema_mismatches([module.DESCRIPTOR for module in OUR_MODULES], reference_pool)
    assert not problems, "proto subset differs from the reference:\n" + "\n".join(problems)


def test_schema_check_detects_a_wrong_field(
    reference_pool: descriptor_pool.DescriptorPool,
) -> None:
    """The checker itself reports renumbered, retyped, relabelled and invented declarations."""
    bad = descriptor_pb2.FileDescriptorProto(name="bad.proto", package="agent.v1", syntax="proto3")
    request = bad.message_type.add(name="BidiRequestId")
    request.field.add(
        name="request_id",
        number=2,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
    )
    request.field.add(
        name="no_such_field_anywhere",
        number=99,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    bad.message_type.add(name="NoSuchMessageAnywhere")
    enum = bad.message_type.add(name="Holder").enum_type.add(name="NoSuchEnum")
    enum.value.add(name="NO_SUCH_ENUM_UNSPECIFIED", number=0)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(bad)
    problems = schema_mismatches([pool.FindFileByName(bad.name)], reference_pool)
    text = "\n".join(problems)
    assert "agent.v1.BidiRequestId.request_id: number is 2, reference 1" in text
    assert "agent.v1.BidiRequestId.request_id: label is 'repeated'" in text
    assert "agent.v1.BidiRequestId.request_id: type is" in text
    assert "agent.v1.BidiRequestId.no_such_field_anywhere is not in the reference" in text
    assert "message agent.v1.NoSuchMessageAnywhere is not in the reference" in text
    assert "enum agent.v1.Holder.NoSuchEnum is not in the reference" in text


# ---- the committed generated code is fresh --------------------------------------------------


def _regenerate_command() -> list[str]:
    """The protoc arguments from the header comment of ``wire/proto/agent_v1.proto``."""
    header = (REPO_ROOT / OUR_PROTO_FILES[0]).read_text(encoding="utf-8")
    lines = [line for line in header.splitlines() if "grpc_tools.protoc" in line]
    assert len(lines) == 1, "agent_v1.proto must state its regenerate command in one comment line"
    words = shlex.split(lines[0].lstrip("/ "))
    args = words[words.index("grpc_tools.protoc") + 1 :]
    for proto in OUR_PROTO_FILES:
        assert proto in args, f"the regenerate command does not compile {proto}"
    return args


def _embedded_descriptor(generated: Path) -> bytes:
    """The serialized FileDescriptorProto a generated ``_pb2.py`` registers."""
    tree = ast.parse(generated.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "AddSerializedFile":
            value = ast.literal_eval(node.args[0])
            assert isinstance(value, bytes)
            return value
    raise AssertionError(f"{generated} registers no serialized descriptor")


def test_generated_modules_are_up_to_date(tmp_path: Path) -> None:
    """Running the header's command again yields the descriptors of the committed modules."""
    args = []
    for arg in _regenerate_command():
        if arg.startswith(("--python_out=", "--pyi_out=")):
            arg = f"{arg.split('=', 1)[0]}={tmp_path}"
        elif arg.startswith("-I"):
            arg = f"-I{(REPO_ROOT / arg[2:]).resolve()}"
        args.append(arg)
    args.append(f"-I{WELL_KNOWN_INCLUDE}")
    _run_protoc(args)
    for proto, module in zip(OUR_PROTO_FILES, OUR_MODULES, strict=True):
        fresh = _embedded_descriptor(tmp_path / proto.replace(".proto", "_pb2.py"))
        assert fresh == module.DESCRIPTOR.serialized_pb, (
            f"{proto} changed but its _pb2.py was not regenerated"
        )
        assert (tmp_path / proto.replace(".proto", "_pb2.pyi")).is_file()


# ---- fields the subset leaves out survive a round trip --------------------------------------

# Field numbers no schema of Cursor's uses: unknown to any version of our subset.
_FAR_VARINT, _FAR_FIXED64, _FAR_FIXED32, _FAR_LEN = 9001, 9002, 9003, 9004


def _hand_built_client_message() -> bytes:
    """An AgentClientMessage whose run_request carries fields our subset does not declare.

    Unknown fields follow the known ones in every message, so a round trip is byte-exact.
    """
    state = _len_field(1, b"x") + _len_field(_FAR_LEN, b"state extra")
    run_request = (
        _len_field(1, state)  # conversation_state
        + _len_field(5, b"c1")  # conversation_id
        + _len_field(8, b"be nice")  # custom_system_prompt (not in our subset)
        + _tag(_FAR_VARINT, 0)
        + _varint(150)
        + _tag(_FAR_FIXED64, 1)
        + (0x0102030405060708).to_bytes(8, "little")
        + _tag(_FAR_FIXED32, 5)
        + (0xDEADBEEF).to_bytes(4, "little")
    )
    return _len_field(1, run_request) + _len_field(_FAR_LEN, b"top extra")


def test_unknown_fields_survive_round_trip_hand_built() -> None:
    """Unknown varint, fixed64, fixed32 and length fields are kept and re-emitted byte-exact."""
    wire = _hand_built_client_message()
    message = agent.AgentClientMessage.FromString(wire)
    run_request = message.run_request
    assert message.WhichOneof("message") == "run_request"
    assert run_request.conversation_id == "c1"
    assert list(run_request.conversation_state.root_prompt_messages_json) == [b"x"]
    assert {_FAR_VARINT, _FAR_FIXED64, _FAR_FIXED32} <= set(_unknown_numbers(run_request))
    assert _FAR_LEN in _unknown_numbers(run_request.conversation_state)
    assert _FAR_LEN in _unknown_numbers(message)
    assert message.SerializeToString() == wire
    assert message.SerializeToString(deterministic=True) == wire


def test_unknown_enum_value_survives_round_trip() -> None:
    """An ErrorDetails.Error number our subset does not name is kept (open proto3 enum)."""
    unnamed = next(n for n in range(1, 200) if n not in aiserver.ErrorDetails.Error.values())
    wire = _tag(1, 0) + _varint(unnamed)
    details = aiserver.ErrorDetails.FromString(wire)
    assert details.error == unnamed
    assert details.SerializeToString() == wire


def _reference_class(pool: descriptor_pool.DescriptorPool, name: str) -> type[Message]:
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def _reference_run_request_message(
    pool: descriptor_pool.DescriptorPool, *, interleave_known: bool
) -> Any:
    """A reference AgentClientMessage with run_request fields our subset lacks (a class built
    at run time from the reference schema: its fields are not typed here).

    Without ``interleave_known`` every unknown field follows every known one of its message.
    """
    message: Any = _reference_class(pool, "agent.v1.AgentClientMessage")()
    run_request = message.run_request
    run_request.conversation_state.root_prompt_messages_json.append(b'{"role":"system"}')
    run_request.conversation_state.self_summary_count = 3  # reference-only, number > 8
    run_request.action.resume_action.SetInParent()
    run_request.model_details.model_id = "gpt-test"  # reference-only
    run_request.custom_system_prompt = "be nice"  # reference-only
    if interleave_known:
        run_request.conversation_id = "conv-1"  # known, numbered between unknown ones
        run_request.run_id = "run-1"
    return message


def test_reference_only_fields_survive_round_trip(
    reference_pool: descriptor_pool.DescriptorPool,
) -> None:
    """Bytes from the full schema pass through our subset unchanged."""
    original = _reference_run_request_message(reference_pool, interleave_known=False)
    wire = original.SerializeToString()
    ours = agent.AgentClientMessage.FromString(wire)
    assert list(ours.run_request.conversation_state.root_prompt_messages_json) == [
        b'{"role":"system"}'
    ]
    assert ours.run_request.action.WhichOneof("action") == "resume_action"
    assert _unknown_numbers(ours.run_request), "model_details should be unknown to our subset"
    again = ours.SerializeToString()
    assert again == wire
    assert type(original).FromString(again) == original


def test_reference_only_fields_survive_when_interleaved(
    reference_pool: descriptor_pool.DescriptorPool,
) -> None:
    """With known fields between unknown ones the order may change, but nothing is lost."""
    original = _reference_run_request_message(reference_pool, interleave_known=True)
    wire = original.SerializeToString()
    ours = agent.AgentClientMessage.FromString(wire)
    assert ours.run_request.conversation_id == "conv-1"
    assert ours.run_request.run_id == "run-1"
    again = ours.SerializeToString()
    assert sorted(again) == sorted(wire)
    reparsed: Any = type(original).FromString(again)
    assert reparsed == original
    assert reparsed.run_request.model_details.model_id == "gpt-test"
    assert reparsed.run_request.custom_system_prompt == "be nice"
    assert reparsed.run_request.conversation_state.self_summary_count == 3
    assert agent.AgentClientMessage.FromString(again).SerializeToString() == again


def test_the_shipped_baseline_of_cursors_fields_is_the_references(
    reference_pool: descriptor_pool.DescriptorPool,
) -> None:
    """``wire/proto/cursor_fields.json`` names exactly what the reference declares beyond our
    subset (rerun ``tests/data/extract_cursor_fields.py`` when either changes)."""
    shipped = importlib.resources.files("wire.proto") / KNOWN_FIELDS_FILE
    assert shipped.read_text() == render(known_beyond_ours(reference_pool))
