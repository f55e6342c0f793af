"""A staged checkpoint proves which calls of its round completed.

After each result but a round's last, the round is staged again: ``pending_tool_calls`` holds
the round's assistant (every call) followed by the tool message of each call completed so far,
and the turn holds those calls' steps. A server that lost its database reads the proof back:
a resume runs only the other calls, a new user message keeps the proven results and interrupts
only the others. Entries that do not fit the round are the client's error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from actors.codecs.checkpoint_json import (
    CheckpointJsonError,
    decode_pending_round,
    encode_pending,
    encode_pending_result,
)
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    ImagePart,
    Origin,
    Role,
    ToolResultContent,
)
from actors.turn.interrupted import INTERRUPTED_RESULT
from store import Store, connect_store
from store.conversations import ConversationStore
from tests.conftest import StartServer, add_fake_model
from tests.support.fake_cursor import CursorSession, FakeCursor, kv_ack, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from wire.connect import Envelope
from wire.proto import agent_v1_pb2 as agent

CALLS = (
    CanonicalToolCall(0, "call_a", "Read", '{"path":"/a.txt"}', "m:0"),
    CanonicalToolCall(1, "call_b", "Read", '{"path":"/b.txt"}', "m:0"),
)
ASSISTANT = AssistantContent(text="Reading.", tool_calls=CALLS)


def staged_assistant() -> str:
    return encode_pending(
        ASSISTANT, model_name="m", allowed_tools=["Read"], dynamic_tools=(), started_at_ms=7
    )


def result_entry(call_id: str, text: str, *, is_error: bool = False) -> str:
    images = (ImagePart("image/png", b"\x89PNG-bytes"),) if call_id == "call_a" else ()
    content = ToolResultContent(call_id, "Read", text, is_error, images)
    return encode_pending_result(CanonicalMessage(f"r:{call_id}", Role.TOOL, Origin.TOOL, content))


def test_a_result_entry_reads_back_as_the_proven_result_of_its_call() -> None:
    entries = [staged_assistant(), result_entry("call_a", "alpha\n", is_error=True)]
    assert json.loads(entries[1])["role"] == "tool"  # the tool message Cursor keeps as a root
    pending = decode_pending_round(entries)
    assert pending is not None
    assert [c.call_id for c in pending.calls] == ["call_a", "call_b"]
    (result,) = pending.results
    assert (result.call_id, result.name, result.content, result.is_error) == (
        "call_a",
        "Read",
        "alpha\n",
        True,
    )
    assert result.images == (ImagePart("image/png", b"\x89PNG-bytes"),)
    assert decode_pending_round([]) is None
    unanswered = decode_pending_round([staged_assistant()])
    assert unanswered is not None and unanswered.results == ()


@pytest.mark.parametrize(
    ("entries", "words"),
    [
        ([result_entry("call_x", "?")], "'call_x', which is not a call of the pending round"),
        ([result_entry("call_a", "1"), result_entry("call_a", "2")], "second result of 'call_a'"),
        ([result_entry("call_a", "1"), result_entry("call_b", "2")], "result for every call"),
        ([staged_assistant()], r"pending_tool_calls\[1\] is not a tool message"),
    ],
    ids=["unknown call", "twice", "every call", "a second assistant"],
)
def test_entries_that_do_not_fit_the_round_are_refused(entries: list[str], words: str) -> None:
    with pytest.raises(CheckpointJsonError, match=words):
        decode_pending_round([staged_assistant(), *entries])


def test_only_a_tool_result_is_a_pending_result() -> None:
    assistant = CanonicalMessage("a", Role.ASSISTANT, Origin.ASSISTANT, ASSISTANT)
    with pytest.raises(CheckpointJsonError, match="must be a tool message"):
        encode_pending_result(assistant)


# ---- end to end, in process ----


async def proven_after_first_result(
    session: CursorSession, stream: Any
) -> agent.ConversationStateStructure:
    """Read ``stream``, answering only its first exec, until a checkpoint proves that call
    completed (its result after the staged assistant); the caller then drops the stream."""
    answered = False
    while True:
        envelope: Envelope | None = await stream.next_envelope(5.0)
        assert envelope is not None and not envelope.is_end_stream
        message = agent.AgentServerMessage.FromString(envelope.payload)
        session.log.messages.append(message)
        kv = message.kv_server_message
        if kv.HasField("set_blob_args"):
            session.log.blobs[kv.set_blob_args.blob_id] = kv.set_blob_args.blob_data
            await session.send(kv_ack(kv.id))
        if message.HasField("exec_server_message") and not answered:
            answered = True
            await session.answer(message.exec_server_message)
        state = message.conversation_checkpoint_update
        if message.HasField("conversation_checkpoint_update") and len(state.pending_tool_calls) > 1:
            return state


def turn(
    text: str, model: str, state: agent.ConversationStateStructure | None, message_id: str
) -> agent.AgentClientMessage:
    message = user_turn_message(text, model, message_id=message_id)
    if state is not None:
        message.run_request.conversation_state.CopyFrom(state)
    return message


async def test_after_losing_the_database_a_new_message_keeps_the_proven_result(
    fake: FakeProvider,
    public_id: str,
    make_server: StartServer,
    server_store: Store,
    tmp_path: Path,
) -> None:
    """Two Reads; the first is answered and proven by the checkpoint staged again, then the
    stream drops and the server's database is lost. The user's next message closes the round:
    the proven Read keeps its real result, the other is interrupted, nothing runs again."""
    (tmp_path / "a.txt").write_text("alpha contents\n")
    (tmp_path / "b.txt").write_text("beta contents\n")
    tools = [
        FakeToolCall("call_a", "Read", ('{"path": "/a.txt"}',)),
        FakeToolCall("call_b", "Read", ('{"path": "/b.txt"}',)),
    ]
    first_server = await make_server()
    client = FakeCursor(f"http://{first_server.address}")
    fake.enqueue(Script.sse(chat_events(text=["Reading."], tools=tools)))
    dropped = CursorSession(client, "run-drop", workspace=tmp_path)
    stream = await client.open_run_sse("run-drop")
    await dropped.send(turn("read both", public_id, None, "m1"))
    state = await proven_after_first_result(dropped, stream)
    await stream.aclose()
    await client.aclose()
    await first_server.stop()
    answered = json.loads(state.pending_tool_calls[1])["id"]

    empty = connect_store(f"sqlite:///{tmp_path}/empty.db")
    try:
        add_fake_model(empty, fake)
        second_server = await make_server(store=empty)
        client = FakeCursor(f"http://{second_server.address}")
        fake.enqueue(Script.sse(chat_events(text=["Fine."])))
        session = CursorSession(client, "run-next", workspace=tmp_path, blobs=dropped.log.blobs)
        log = await session.run(turn("stop there", public_id, state, "m2"))
        await client.aclose()
        assert log.end == {}, log.end
        assert not any(m.HasField("exec_server_message") for m in log.messages)
        messages = fake.requests[-1].json["messages"]
        assert [m["role"] for m in messages] == [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "user",
        ]
        assert [c["id"] for c in messages[2]["tool_calls"]] == ["call_a", "call_b"]
        results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
        other = "call_b" if answered == "call_a" else "call_a"
        assert results[other] == INTERRUPTED_RESULT
        assert results[answered] == ("alpha" if answered == "call_a" else "beta") + " contents\n"
        conversations = ConversationStore(empty.database)
        head = conversations.conversation("conv-1")
        assert head is not None
        stored = [m.origin for m in conversations.messages_at(head.current_revision_id)]
        assert stored == [
            "runtime",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "runtime",
            "assistant",
        ]
    finally:
        empty.close()
