"""Fuzzing the decoders of what the editor hands back of a conversation: root message blobs
(``decode_root``), ``pending_tool_calls`` entries (``decode_pending``), replay signatures and
turn blobs, seeded with what our own encoders write and then mutated (values replaced, keys
dropped, bytes flipped). A client's state we cannot read is a ``CheckpointJsonError`` or
``CheckpointStateError``; nothing else escapes."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from actors.codecs.checkpoint_json import (
    CheckpointJsonError,
    decode_pending,
    decode_root,
    encode_pending,
    encode_root,
    encode_system_root,
    replay_signature,
    replay_state_from_signature,
)
from actors.codecs.checkpoint_state import (
    CheckpointStateError,
    decode_turn,
    extend_turn_blob,
    turn_blob,
)
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    ImagePart,
    Origin,
    PartsContent,
    ReplayState,
    Role,
    TextPart,
    ToolResultContent,
)
from tests.support.fuzz import DEEP_MARK, fuzz_settings, mutated, mutated_json

REPLAY = ReplayState(
    "anthropic", {"blocks": [{"type": "thinking", "thinking": "h", "signature": "s"}]}
)
CALLS = (
    CanonicalToolCall(0, "call-1", "Read", '{"path":"/a"}', "req-1:0"),
    CanonicalToolCall(1, "call-2", "Grep", '{"pattern":"x"}', "req-1:0"),
)
ASSISTANT = AssistantContent(
    text="looking", thinking="hmm", tool_round_id="r-1", replay_state=REPLAY, tool_calls=CALLS
)
PNG = ImagePart("image/png", b"\x89PNG\r\n\x1a\n")
ROOTS = [
    encode_system_root("Be terse."),
    encode_root(
        CanonicalMessage(
            "runtime:run-request:r",
            Role.USER,
            Origin.RUNTIME,
            PartsContent((TextPart("hi"), PNG)),
            runtime_event_id="run-request:r",
        ),
        "m",
    ),
    encode_root(CanonicalMessage("a-1", Role.ASSISTANT, Origin.ASSISTANT, ASSISTANT), "m"),
    encode_root(
        CanonicalMessage(
            "t-1",
            Role.TOOL,
            Origin.TOOL,
            ToolResultContent("call-1", "Read", "file text", False, (PNG,)),
        ),
        "m",
    ),
]
PENDING = encode_pending(
    ASSISTANT, model_name="m", allowed_tools=("Read", "Grep"), dynamic_tools=(), started_at_ms=5
)
SIGNATURE = replay_signature(REPLAY)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.sampled_from([-1, 0, 2**63, 10**30, 1.5])
    | st.integers()
    | st.text(max_size=8)
    | st.sampled_from(
        ["", "user", "assistant", "tool", "system", "tool-call", "image", "reasoning", DEEP_MARK]
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)


@fuzz_settings()
@given(st.sampled_from(ROOTS).flatmap(lambda seed: mutated_json(seed, JSON_VALUES)))
def test_root_blobs_fail_only_with_checkpoint_json_errors(data: bytes) -> None:
    try:
        message = decode_root(data, "internal:0")
    except CheckpointJsonError:
        return
    assert isinstance(message, CanonicalMessage)


@fuzz_settings()
@given(mutated_json(PENDING, JSON_VALUES))
def test_pending_entries_fail_only_with_checkpoint_json_errors(data: bytes) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # a protobuf string field is valid UTF-8: the edge never hands us this
    try:
        pending = decode_pending(text)
    except CheckpointJsonError:
        return
    assert pending.calls and pending.started_at_ms >= 0


@fuzz_settings()
@given(st.one_of(mutated(SIGNATURE.encode()), st.text(max_size=40).map(str.encode)))
def test_replay_signatures_fail_only_with_checkpoint_json_errors(data: bytes) -> None:
    try:
        signature = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    try:
        state = replay_state_from_signature(signature)
    except CheckpointJsonError:
        return
    assert isinstance(state, ReplayState)


TURN = turn_blob(b"\x01" * 32, [b"\x02" * 32, b"\x03" * 32], "req-1")


@fuzz_settings()
@given(mutated(TURN))
def test_turn_blobs_fail_only_with_checkpoint_state_errors(data: bytes) -> None:
    try:
        extended = extend_turn_blob(data, [b"\x04" * 32])
    except CheckpointStateError:
        return
    assert len(decode_turn(extended).steps) == len(decode_turn(data).steps) + 1


def test_a_turn_blob_that_does_not_parse_is_a_checkpoint_state_error() -> None:
    """Found by the fuzzer: a resumed turn blob from the client that is not protobuf raised
    a raw ``DecodeError`` out of ``extend_turn_blob``, which the CheckpointActor does not
    catch, instead of the ``conversation_state`` error the run ends with."""
    for decode in (decode_turn, lambda data: extend_turn_blob(data, [b"\x04" * 32])):
        try:
            decode(b"\x0b" + TURN)
        except CheckpointStateError as error:
            assert "does not parse" in str(error)
        else:
            raise AssertionError("a corrupt turn blob decoded")


def test_image_base64_that_is_not_ascii_is_a_checkpoint_json_error() -> None:
    """Found by the fuzzer: ``base64.b64decode`` raises a plain ValueError (not
    ``binascii.Error``) for a non-ASCII string, which escaped ``decode_root``."""
    root = (
        '{"role":"user","content":[{"type":"image","data":"\\u0080","mimeType":"image/png"}],'
        '"id":"u-1"}'
    )
    try:
        decode_root(root, "internal:0")
    except CheckpointJsonError as error:
        assert "base64" in str(error)
    else:
        raise AssertionError("non-ASCII base64 decoded")
