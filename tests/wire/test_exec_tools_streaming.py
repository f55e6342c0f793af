"""Write, StrReplace and EditNotebook cards fill in while the model streams the arguments.

The frames are checked twice: with our proto subset (which does not declare
``ToolCallDelta.edit_tool_call_delta``, so its bytes are checked as written) and with Cursor's
full schema from ``../shared/reference/proto`` (skipped when that folder is absent).
"""

from __future__ import annotations

import importlib.resources
import itertools
import json
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

pytest.importorskip("hypothesis")
pytest.importorskip("grpc_tools")

from grpc_tools import protoc
from hypothesis import given
from hypothesis import strategies as st

from tests.support.process import REPO
from wire.connect import EnvelopeReader
from wire.proto import agent_v1_pb2 as agent
from wire.streamed_args import ArgsEvent, ContentDelta, ContentEnded, FieldCompleted
from wire.tools.dispatch import prepare_tool_call
from wire.tools.frames import edit_content_delta_frame, edit_path_partial_frame
from wire.tools.registry import STREAMED_CONTENT_FIELDS
from wire.tools.streaming import streamed_args_decoder, streamed_args_frames
from wire.tools.text import lf

CALL_ID = "toolu_01"
MODEL_CALL_ID = "run:0"
REFERENCE_PROTO_DIR = REPO.parent / "shared/reference/proto"


def payload(frame: bytes) -> bytes:
    envelopes = EnvelopeReader().feed(frame)
    assert len(envelopes) == 1 and envelopes[0].flags == 0
    return envelopes[0].payload


def decode(frame: bytes) -> agent.AgentServerMessage:
    return agent.AgentServerMessage.FromString(payload(frame))


def reference_update(client_message: type[Message], frame: bytes) -> Any:
    """The frame's ``interaction_update`` read with Cursor's schema (``client_message``, built
    at run time: its fields are not typed here)."""
    message: Any = client_message.FromString(payload(frame))
    return message.interaction_update


def _length_delimited(data: bytes, number: int) -> bytes:
    """The payload of ``data`` when it is exactly one length-delimited field ``number``."""
    assert data[0] == number << 3 | 2
    length, shift, index = 0, 0, 1
    while True:
        byte = data[index]
        length |= (byte & 0x7F) << shift
        index += 1
        shift += 7
        if byte < 0x80:
            break
    assert len(data) == index + length
    return data[index:]


def subset_content_delta(update: agent.ToolCallDeltaUpdate) -> str:
    """``tool_call_delta.edit_tool_call_delta.stream_content_delta``, read from the bytes our
    subset keeps as an unknown field (fields 3, then 1)."""
    edit = _length_delimited(update.tool_call_delta.SerializeToString(), 3)
    return _length_delimited(edit, 1).decode()


def stream(tool: str, pieces: list[str]) -> list[bytes]:
    """What AgentRun sends for the argument deltas of one call."""
    decoder = streamed_args_decoder(tool)
    assert decoder is not None
    frames: list[bytes] = []
    for piece in pieces:
        frames.extend(streamed_args_frames(CALL_ID, tool, MODEL_CALL_ID, decoder.feed(piece)))
    return frames


@pytest.fixture(scope="module")
def client_message(tmp_path_factory: pytest.TempPathFactory) -> type[Message]:
    """``agent.v1.AgentServerMessage`` from Cursor's full schema, in a pool of its own."""
    if not REFERENCE_PROTO_DIR.is_dir():
        pytest.skip(f"{REFERENCE_PROTO_DIR} is missing: frames not checked with Cursor's schema")
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    out = tmp_path_factory.mktemp("reference") / "agent_v1.pb"
    args = ["protoc", f"-I{REFERENCE_PROTO_DIR}", f"-I{include}", "--include_imports"]
    rc = protoc.main([*args, f"--descriptor_set_out={out}", "agent_v1.proto"])
    assert rc == 0, "protoc failed on the reference schema"
    files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file_proto in files.file:
        pool.Add(file_proto)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("agent.v1.AgentServerMessage")
    )


# ---- which calls stream --------------------------------------------------------------------


def test_only_the_edit_tools_get_a_decoder() -> None:
    assert STREAMED_CONTENT_FIELDS == {
        "Write": "contents",
        "StrReplace": "new_string",
        "EditNotebook": "new_string",
    }
    for name, field in (
        ("Write", "contents"),
        ("StrReplace", "new_string"),
        ("EditNotebook", "new_string"),
    ):
        decoder = streamed_args_decoder(name)
        assert decoder is not None and decoder.content_field == field
    alias = streamed_args_decoder("str_replace")
    assert alias is not None and alias.content_field == "new_string"
    for name in ("Read", "Shell", "Delete", "Grep", "Glob", "ReadLints", "TodoWrite", "Teleport"):
        assert streamed_args_decoder(name) is None


def test_other_tools_get_no_frames() -> None:
    events: list[ArgsEvent] = [ContentDelta("x"), FieldCompleted("path", "/p"), ContentEnded()]
    for name in ("Read", "Shell", "TodoWrite", "Teleport"):
        assert streamed_args_frames(CALL_ID, name, MODEL_CALL_ID, events) == []


# ---- the frames ----------------------------------------------------------------------------


def test_a_content_delta_frame_carries_the_edit_delta_bytes() -> None:
    message = decode(edit_content_delta_frame(CALL_ID, MODEL_CALL_ID, "héllo\n"))
    update = message.interaction_update.tool_call_delta
    assert (update.call_id, update.model_call_id) == (CALL_ID, MODEL_CALL_ID)
    # Field 3 (edit_tool_call_delta) holding field 1 (stream_content_delta), both length-delimited.
    text = "héllo\n".encode()
    inner = b"\x0a" + bytes([len(text)]) + text
    assert update.tool_call_delta.SerializeToString() == b"\x1a" + bytes([len(inner)]) + inner
    assert subset_content_delta(update) == "héllo\n"


def test_a_long_content_delta_uses_multi_byte_lengths(client_message: type[Message]) -> None:
    text = "x" * 300 + "世" * 100
    update = reference_update(client_message, edit_content_delta_frame(CALL_ID, "m", text))
    delta = update.tool_call_delta.tool_call_delta
    assert delta.WhichOneof("delta") == "edit_tool_call_delta"
    assert delta.edit_tool_call_delta.stream_content_delta == text


def test_the_path_frame_is_a_partial_card_naming_the_file() -> None:
    message = decode(edit_path_partial_frame(CALL_ID, MODEL_CALL_ID, "/src/a.py"))
    partial = message.interaction_update.partial_tool_call
    assert (partial.call_id, partial.model_call_id) == (CALL_ID, MODEL_CALL_ID)
    assert partial.args_text_delta == ""
    assert partial.tool_call.tool_call_id == CALL_ID
    assert partial.tool_call.WhichOneof("tool") == "edit_tool_call"
    args = partial.tool_call.edit_tool_call.args
    assert args.path == "/src/a.py" and not args.HasField("stream_content")
    assert not partial.tool_call.edit_tool_call.HasField("result")


def test_write_streams_the_path_then_the_content(client_message: type[Message]) -> None:
    frames = stream("Write", ['{"path": "/w/a.txt", "cont', 'ents": "hel', 'lo\\n世界"}'])
    decoded = [reference_update(client_message, frame) for frame in frames]
    assert [update.WhichOneof("message") for update in decoded] == [
        "partial_tool_call",
        "tool_call_delta",
        "tool_call_delta",
    ]
    partial = decoded[0].partial_tool_call
    assert partial.tool_call.edit_tool_call.args.path == "/w/a.txt"
    assert partial.args_text_delta == ""
    contents = []
    for update in decoded[1:]:
        delta = update.tool_call_delta
        assert (delta.call_id, delta.model_call_id) == (CALL_ID, MODEL_CALL_ID)
        contents.append(delta.tool_call_delta.edit_tool_call_delta.stream_content_delta)
    assert contents == ["hel", "lo\n世界"]


def test_str_replace_streams_new_string_only_and_may_precede_the_path(
    client_message: type[Message],
) -> None:
    pieces = ['{"old_string": "old", "new_', 'string": "n', 'ew", "path": "/w/b.py"', "}"]
    decoded = [reference_update(client_message, frame) for frame in stream("StrReplace", pieces)]
    assert [update.WhichOneof("message") for update in decoded] == [
        "tool_call_delta",
        "tool_call_delta",
        "partial_tool_call",
    ]
    streamed = [u.tool_call_delta.tool_call_delta.edit_tool_call_delta for u in decoded[:2]]
    assert [delta.stream_content_delta for delta in streamed] == ["n", "ew"]
    assert decoded[2].partial_tool_call.tool_call.edit_tool_call.args.path == "/w/b.py"


def test_edit_notebook_streams_new_string_and_names_the_notebook(
    client_message: type[Message],
) -> None:
    """Its path field is ``target_notebook``; ``old_string`` and the other fields stay out."""
    pieces = [
        '{"target_notebook": "/w/a.ip',
        'ynb", "cell_idx": 2, "is_new_cell": false, "cell_language": "python", ',
        '"old_string": "x = 1", "new_str',
        'ing": "x = 2\\r\\n',
        'print(x)"}',
    ]
    decoded = [reference_update(client_message, frame) for frame in stream("EditNotebook", pieces)]
    assert [update.WhichOneof("message") for update in decoded] == [
        "partial_tool_call",
        "tool_call_delta",
        "tool_call_delta",
    ]
    partial = decoded[0].partial_tool_call
    assert partial.tool_call.edit_tool_call.args.path == "/w/a.ipynb"
    assert partial.args_text_delta == ""
    streamed = [u.tool_call_delta.tool_call_delta.edit_tool_call_delta for u in decoded[1:]]
    assert [delta.stream_content_delta for delta in streamed] == ["x = 2\n", "print(x)"]
    started = prepare_tool_call("EditNotebook", CALL_ID, "".join(pieces)).started()
    assert started.edit_tool_call.args.path == "/w/a.ipynb"
    assert started.edit_tool_call.args.stream_content == "x = 2\nprint(x)"


def test_a_crlf_split_across_chunks_is_sent_as_one_newline() -> None:
    frames = stream("Write", ['{"path":"p","contents":"a\\r', "\\nb\\r", '\\n"}'])
    deltas = [decode(frame).interaction_update.tool_call_delta for frame in frames[1:]]
    assert len(deltas) == 3
    assert [subset_content_delta(delta) for delta in deltas] == ["a", "\nb", "\n"]


def test_invalid_arguments_stop_the_frames_quietly() -> None:
    frames = stream("Write", ['{"contents": "ok', '\\x", "path": "/p"}', '"more"'])
    assert len(frames) == 1  # the "ok" delta; nothing after the bad escape


@given(
    st.text(max_size=80),
    st.text(max_size=20),
    st.lists(st.integers(0, 300), max_size=20),
    st.booleans(),
)
def test_the_streamed_content_is_what_the_started_card_shows(
    contents: str, path: str, cuts: list[int], path_first: bool
) -> None:
    """The deltas join to the ``stream_content`` the dispatched call renders (LF form)."""
    value = {"path": path, "contents": contents} if path_first else {"contents": contents}
    if not path_first:
        value["path"] = path
    text = json.dumps(value)
    bounds = [0, *sorted(min(cut, len(text)) for cut in cuts), len(text)]
    pieces = [text[start:end] for start, end in itertools.pairwise(bounds)]
    streamed: list[str] = []
    paths: list[str] = []
    for frame in stream("Write", pieces):
        update = decode(frame).interaction_update
        if update.WhichOneof("message") == "partial_tool_call":
            paths.append(update.partial_tool_call.tool_call.edit_tool_call.args.path)
        else:
            streamed.append(subset_content_delta(update.tool_call_delta))
    started = prepare_tool_call("Write", CALL_ID, text).started()
    assert "".join(streamed) == started.edit_tool_call.args.stream_content == lf(contents)
    assert paths == [path]
