"""Recovery, rollback and resume end to end: the client sends a checkpoint back.

The editor keeps the last ``conversation_state`` it was sent and its blobs; the next RunRequest
carries that state. The server maps it to a revision through its checkpoint index, or (with an
emptied database) fetches the roots by KV GET and imports them; an older state starts a new
branch; a ``resume_action`` continues an unfinished turn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from actors.turn.interrupted import INTERRUPTED_RESULT
from store import Store, connect_store
from store.conversations import ConversationStore
from tests.conftest import StartServer, add_fake_model
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    RunBody,
    TurnLog,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from wire.connect import Envelope
from wire.proto import agent_v1_pb2 as agent


def turn(
    text: str, model: str, state: agent.ConversationStateStructure | None, message_id: str
) -> agent.AgentClientMessage:
    """A user turn on conv-1 carrying the client's last state (as the editor sends it)."""
    message = user_turn_message(text, model, message_id=message_id)
    if state is not None:
        message.run_request.conversation_state.CopyFrom(state)
    return message


def resume(model: str, state: agent.ConversationStateStructure) -> agent.AgentClientMessage:
    request = agent.AgentRunRequest(
        conversation_id="conv-1",
        action=agent.ConversationAction(resume_action=agent.ResumeAction()),
        requested_model=agent.RequestedModel(model_id=model),
        conversation_state=state,
    )
    return agent.AgentClientMessage(run_request=request)


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every message of a chat request, in order (user turns hold the query)."""
    out = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        out.append(f"{message['role']}:{content or ''}")
    return out


def kv_sets(log: TurnLog) -> list[bytes]:
    return [
        m.kv_server_message.set_blob_args.blob_id
        for m in log.messages
        if m.kv_server_message.HasField("set_blob_args")
    ]


def kv_gets(log: TurnLog) -> list[bytes]:
    return [
        m.kv_server_message.get_blob_args.blob_id
        for m in log.messages
        if m.kv_server_message.HasField("get_blob_args")
    ]


async def test_the_next_turn_maps_the_state_back_and_sends_only_new_blobs(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["first answer"])))
    first = await CursorSession(cursor, "run-1").run(turn("question one", public_id, None, "m1"))
    assert first.end == {}
    state = first.checkpoints()[-1]
    fake.enqueue(Script.sse(chat_events(text=["second answer"])))
    second_session = CursorSession(cursor, "run-2", blobs=dict(first.blobs))
    second = await second_session.run(turn("question two", public_id, state, "m2"))
    assert second.end == {}
    # No KV GET (the server knew the state) and no blob of the first turn's state SET again.
    assert kv_gets(second) == []
    already = set(state.root_prompt_messages_json) | set(state.turns)
    assert already.isdisjoint(kv_sets(second))
    # The second request holds the whole history, the first request as its prefix.
    first_body, second_body = (r.json for r in fake.requests)
    assert second_body["messages"][: len(first_body["messages"])] == first_body["messages"]
    texts = user_texts(second_body)
    assert any("question one" in t for t in texts) and "assistant:first answer" in texts
    assert "question two" in texts[-1]
    # The published roots extend the first state's roots; the first turn is kept.
    final = second.checkpoints()[-1]
    roots = list(final.root_prompt_messages_json)
    assert roots[: len(state.root_prompt_messages_json)] == list(state.root_prompt_messages_json)
    assert list(final.turns[: len(state.turns)]) == list(state.turns)
    assert len(final.turns) == len(state.turns) + 1


async def test_recovery_after_a_restart_with_an_empty_database(
    fake: FakeProvider,
    public_id: str,
    make_server: StartServer,
    server_store: Store,
    tmp_path: Path,
) -> None:
    first_server = await make_server()
    client = FakeCursor(f"http://{first_server.address}")
    fake.enqueue(Script.sse(chat_events(text=["remembered answer"])))
    first = await CursorSession(client, "run-a").run(turn("remember this", public_id, None, "m1"))
    await client.aclose()
    await first_server.stop()
    assert first.end == {}
    state = first.checkpoints()[-1]

    empty = connect_store(f"sqlite:///{tmp_path}/empty.db")
    try:
        new_public_id = add_fake_model(empty, fake)
        assert new_public_id == public_id  # the same provider URL and model: the same id
        second_server = await make_server(store=empty)
        client = FakeCursor(f"http://{second_server.address}")
        fake.enqueue(Script.sse(chat_events(text=["recovered"])))
        session = CursorSession(client, "run-b", blobs=dict(first.blobs))
        second = await session.run(turn("and now?", public_id, state, "m2"))
        await client.aclose()
        assert second.end == {}
        # Every root came back by KV GET, checked against its id, in the state's order.
        assert kv_gets(second)[: len(state.root_prompt_messages_json)] == list(
            state.root_prompt_messages_json
        )
        texts = user_texts(fake.requests[-1].json)
        assert any("remember this" in t for t in texts)
        assert "assistant:remembered answer" in texts
        assert "and now?" in texts[-1]
        # The imported history is stored: a revision with the old turn and the new one.
        conversations = ConversationStore(empty.database)
        head = conversations.conversation("conv-1")
        assert head is not None
        origins = [m.origin for m in conversations.messages_at(head.current_revision_id)]
        assert origins == ["runtime", "assistant", "runtime", "assistant"]
    finally:
        empty.close()


async def test_a_corrupt_blob_from_kv_get_ends_the_run(
    fake: FakeProvider, public_id: str, make_server: StartServer, tmp_path: Path
) -> None:
    first_server = await make_server()
    client = FakeCursor(f"http://{first_server.address}")
    fake.enqueue(Script.sse(chat_events(text=["answer"])))
    first = await CursorSession(client, "run-a").run(turn("hello", public_id, None, "m1"))
    await client.aclose()
    await first_server.stop()
    state = first.checkpoints()[-1]
    corrupt = {blob_id: data + b" " for blob_id, data in first.blobs.items()}

    empty = connect_store(f"sqlite:///{tmp_path}/empty.db")
    try:
        add_fake_model(empty, fake)
        second_server = await make_server(store=empty)
        client = FakeCursor(f"http://{second_server.address}")
        session = CursorSession(client, "run-b", blobs=corrupt)
        second = await session.run(turn("again", public_id, state, "m2"))
        await client.aclose()
        assert second.end is not None
        error = second.end["error"]
        assert error["code"] == "invalid_argument"
        assert "hash mismatch" in error["message"]
        assert len(fake.requests) == 1  # no model call with a broken history
    finally:
        empty.close()


async def test_an_older_state_rolls_back_to_a_new_branch(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["answer one"])))
    one = await CursorSession(cursor, "run-1").run(turn("turn one", public_id, None, "m1"))
    fake.enqueue(Script.sse(chat_events(text=["answer two"])))
    two = await CursorSession(cursor, "run-2", blobs=dict(one.blobs)).run(
        turn("turn two", public_id, one.checkpoints()[-1], "m2")
    )
    assert two.end == {}
    # The user goes back to after turn one and asks something else.
    fake.enqueue(Script.sse(chat_events(text=["answer three"])))
    blobs = {**one.blobs, **two.blobs}
    three = await CursorSession(cursor, "run-3", blobs=blobs).run(
        turn("turn three", public_id, one.checkpoints()[-1], "m3")
    )
    assert three.end == {}
    assert kv_gets(three) == []
    texts = user_texts(fake.requests[-1].json)
    assert any("turn one" in t for t in texts) and "assistant:answer one" in texts
    assert not any("turn two" in t or "answer two" in t for t in texts)
    assert "turn three" in texts[-1]
    # The store: the head's lineage is one + three; turn two stays on its own branch.
    conversations = ConversationStore(server_store.database)
    record = conversations.conversation("conv-1")
    assert record is not None
    head_ids = [m.message_id for m in conversations.messages_at(record.current_revision_id)]
    assert "runtime:run-request:run-2" not in head_ids
    assert head_ids[0] == "runtime:run-request:run-1"
    assert head_ids[2] == "runtime:run-request:run-3"
    run_two = conversations.run("run-2")
    assert run_two is not None
    two_ids = [m.message_id for m in conversations.messages_at(run_two.head_revision_id)]
    assert "runtime:run-request:run-2" in two_ids
    # The new branch's checkpoint starts from turn one's roots, not turn two's.
    roots_one = list(one.checkpoints()[-1].root_prompt_messages_json)
    roots_three = list(three.checkpoints()[-1].root_prompt_messages_json)
    assert roots_three[: len(roots_one)] == roots_one
    assert not set(two.checkpoints()[-1].root_prompt_messages_json[len(roots_one) :]) & set(
        roots_three
    )


async def next_message(
    stream: RunBody, timeout: float = 5.0
) -> tuple[agent.AgentServerMessage | None, Envelope]:
    envelope = await stream.next_envelope(timeout)
    assert envelope is not None
    if envelope.is_end_stream:
        return None, envelope
    return agent.AgentServerMessage.FromString(envelope.payload), envelope


async def test_resume_after_the_stream_dropped_mid_batch(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store, tmp_path: Path
) -> None:
    """Two Reads in one round; the client answers the first, then its stream drops. It
    reconnects with resume_action and its last (staged) checkpoint: only the second Read runs
    again, and the model then sees both results."""
    (tmp_path / "a.txt").write_text("alpha contents\n")
    (tmp_path / "b.txt").write_text("beta contents\n")
    tools = [
        FakeToolCall("call_a", "Read", ('{"path": "/a.txt"}',)),
        FakeToolCall("call_b", "Read", ('{"path": "/b.txt"}',)),
    ]
    fake.enqueue(Script.sse(chat_events(text=["Reading."], tools=tools)))
    dropped = CursorSession(cursor, "run-drop", workspace=tmp_path)
    stream = await cursor.open_run_sse("run-drop")
    await dropped.send(turn("read both", public_id, None, "m1"))
    state: agent.ConversationStateStructure | None = None
    answered: list[str] = []
    completed = False
    # Until the staged checkpoint (pending round) is in and the first result is committed (its
    # card completed): the two can arrive in either order. Then the stream drops.
    while not (completed and state is not None and state.pending_tool_calls):
        message, _ = await next_message(stream)
        assert message is not None
        dropped.log.messages.append(message)
        kv = message.kv_server_message
        if kv.HasField("set_blob_args"):
            dropped.log.blobs[kv.set_blob_args.blob_id] = kv.set_blob_args.blob_data
            await dropped.send(kv_ack_message(kv.id))
        if message.HasField("conversation_checkpoint_update"):
            state = message.conversation_checkpoint_update
        if message.HasField("exec_server_message") and not answered:
            exec_message = message.exec_server_message
            answered.append(exec_message.read_args.path)
            await dropped.answer(exec_message)
        if message.interaction_update.HasField("tool_call_completed"):
            completed = True
    await stream.aclose()
    assert answered == ["/a.txt"]

    fake.enqueue(Script.sse(chat_events(text=["Both read."])))
    resumed = CursorSession(cursor, "run-resume", workspace=tmp_path, blobs=dict(dropped.log.blobs))
    log = await resumed.run(resume(public_id, state))
    assert log.end == {}, log.end
    reads = [
        m.exec_server_message.read_args.path
        for m in log.messages
        if m.HasField("exec_server_message")
    ]
    assert reads == ["/b.txt"]  # the completed Read is not run again
    # Progress at once: the same staged round is published again before any model call,
    # followed by the result of the Read that completed (whether or not the client had seen
    # that already).
    (round_entry, done) = log.checkpoints()[0].pending_tool_calls
    assert round_entry == state.pending_tool_calls[0]
    assert json.loads(done)["content"][0]["toolCallId"] == "call_a"
    # The next model call holds one assistant with both calls and both real results.
    assert len(fake.requests) == 2
    messages = fake.requests[-1].json["messages"]
    assistant = next(m for m in messages if m.get("tool_calls"))
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_a", "call_b"]
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert "alpha contents" in results["call_a"] and "beta contents" in results["call_b"]
    # The stored round belongs to the resumed run and is settled; the old run was cancelled.
    conversations = ConversationStore(server_store.database)
    drop_run, resume_run = conversations.run("run-drop"), conversations.run("run-resume")
    assert drop_run is not None and drop_run.status == "cancelled"
    assert resume_run is not None and resume_run.status == "completed"


async def test_a_resumed_run_takes_the_terminals_folder_and_denylist_of_its_resume_action(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, tmp_path: Path
) -> None:
    """A Shell round whose stream dropped before the command ran; the resume carries the
    editor's RequestContext, so the command sent again holds the admin's denylist and the
    model is told where the backgrounded command's output goes."""
    tools = [FakeToolCall("call_sh", "Shell", ('{"command": "sleep 60", "block_until_ms": 0}',))]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    dropped = CursorSession(cursor, "run-drop-sh")  # no workspace: the exec stays unanswered
    stream = await cursor.open_run_sse("run-drop-sh")
    await dropped.send(turn("start it", public_id, None, "m1"))
    state: agent.ConversationStateStructure | None = None
    first: agent.ExecServerMessage | None = None
    while not (first is not None and state is not None and state.pending_tool_calls):
        message, _ = await next_message(stream)
        assert message is not None
        kv = message.kv_server_message
        if kv.HasField("set_blob_args"):
            dropped.log.blobs[kv.set_blob_args.blob_id] = kv.set_blob_args.blob_data
            await dropped.send(kv_ack_message(kv.id))
        if message.HasField("conversation_checkpoint_update"):
            state = message.conversation_checkpoint_update
        if message.HasField("exec_server_message"):
            first = message.exec_server_message
    await stream.aclose()
    assert not first.shell_stream_args.admin_command_denylist  # the user turn sent no context

    fake.enqueue(Script.sse(chat_events(text=["It runs."])))
    request = resume(public_id, state)
    request.run_request.action.resume_action.request_context.CopyFrom(
        agent.RequestContext(
            env=agent.RequestContextEnv(terminals_folder="/home/u/.cursor/terminals"),
            admin_command_denylist=["rm -rf /", "curl * | sh"],
        )
    )
    resumed = CursorSession(
        cursor, "run-resume-sh", workspace=tmp_path, blobs=dict(dropped.log.blobs)
    )
    log = await resumed.run(request)
    assert log.end == {}, log.end
    (shell,) = [m.exec_server_message for m in log.messages if m.HasField("exec_server_message")]
    assert shell.exec_id == "call_sh"
    assert list(shell.shell_stream_args.admin_command_denylist) == ["rm -rf /", "curl * | sh"]
    results = {
        m["tool_call_id"]: m["content"]
        for m in fake.requests[-1].json["messages"]
        if m["role"] == "tool"
    }
    assert "its output keeps going to /home/u/.cursor/terminals/1.txt" in results["call_sh"]


async def drop_after_first_result(
    session: CursorSession, stream: Any
) -> agent.ConversationStateStructure:
    """Read ``stream`` until the staged checkpoint (a pending round) is in and the first exec's
    result is committed, answering only that exec; the caller then drops the stream."""
    state: agent.ConversationStateStructure | None = None
    answered = completed = False
    while not (completed and state is not None and state.pending_tool_calls):
        message, _ = await next_message(stream)
        assert message is not None
        session.log.messages.append(message)
        kv = message.kv_server_message
        if kv.HasField("set_blob_args"):
            session.log.blobs[kv.set_blob_args.blob_id] = kv.set_blob_args.blob_data
            await session.send(kv_ack_message(kv.id))
        if message.HasField("conversation_checkpoint_update"):
            state = message.conversation_checkpoint_update
        if message.HasField("exec_server_message") and not answered:
            answered = True
            await session.answer(message.exec_server_message)
        if message.interaction_update.HasField("tool_call_completed"):
            completed = True
    return state


async def test_a_new_message_closes_the_interrupted_round_with_the_clients_resolutions(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, tmp_path: Path
) -> None:
    """A round of a Read (answered), a Shell and a second Read is left pending when the stream
    drops. The user's next message resolves the Shell call with its result and names nothing
    for the Read: the model sees every call with a result (the Shell's output, the Read cut
    off), then the new message."""
    (tmp_path / "a.txt").write_text("alpha contents\n")
    (tmp_path / "b.txt").write_text("beta contents\n")
    tools = [
        FakeToolCall("call_a", "Read", ('{"path": "/a.txt"}',)),
        FakeToolCall("call_sh", "Shell", ('{"command": "make test"}',)),
        FakeToolCall("call_b", "Read", ('{"path": "/b.txt"}',)),
    ]
    fake.enqueue(Script.sse(chat_events(text=["Working."], tools=tools)))
    dropped = CursorSession(cursor, "run-drop", workspace=tmp_path)
    stream = await cursor.open_run_sse("run-drop")
    await dropped.send(turn("test it", public_id, None, "m1"))
    state = await drop_after_first_result(dropped, stream)
    await stream.aclose()

    fake.enqueue(Script.sse(chat_events(text=["Fine."])))
    message = turn("never mind, stop", public_id, state, "m2")
    action = message.run_request.action.user_message_action
    success = agent.ShellSuccess(command="make test", exit_code=0, stdout="42 passed\n")
    action.interrupted_pending_tool_call_resolutions.resolutions.add(
        tool_call_id="call_sh", shell_result=agent.ShellResult(success=success)
    )
    session = CursorSession(cursor, "run-next", workspace=tmp_path, blobs=dict(dropped.log.blobs))
    log = await session.run(message)
    assert log.end == {}, log.end
    assert not any(m.HasField("exec_server_message") for m in log.messages)  # nothing re-runs
    messages = fake.requests[-1].json["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "tool", "user"]
    assistant = messages[2]
    assert assistant["content"] == "Working."
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_a", "call_sh", "call_b"]
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert results == {
        "call_a": "alpha contents\n",
        "call_sh": "42 passed\n",
        "call_b": INTERRUPTED_RESULT,
    }
    assert "never mind, stop" in messages[-1]["content"]
    # The final checkpoint has no pending round left.
    assert not log.checkpoints()[-1].pending_tool_calls


async def test_a_resolution_for_a_call_that_was_not_pending_ends_the_run(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    tools = [
        FakeToolCall("call_a", "Read", ('{"path": "/a.txt"}',)),
        FakeToolCall("call_b", "Read", ('{"path": "/a.txt"}',)),
    ]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    dropped = CursorSession(cursor, "run-drop", workspace=tmp_path)
    stream = await cursor.open_run_sse("run-drop")
    await dropped.send(turn("read", public_id, None, "m1"))
    state = await drop_after_first_result(dropped, stream)
    await stream.aclose()

    message = turn("next", public_id, state, "m2")
    resolutions = message.run_request.action.user_message_action
    resolutions.interrupted_pending_tool_call_resolutions.resolutions.add(tool_call_id="call_a")
    session = CursorSession(cursor, "run-next", workspace=tmp_path, blobs=dict(dropped.log.blobs))
    log = await session.run(message)
    assert log.end is not None
    assert log.end["error"]["message"] == (
        "protocol error: interrupted_pending_tool_call_resolutions: 'call_a' is not a pending call"
    )
    assert len(fake.requests) == 1


async def test_a_resolution_sent_when_no_round_is_pending_ends_the_run(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, tmp_path: Path
) -> None:
    """Nothing is pending, so the resolution is not silently dropped: it is the client's error."""
    message = turn("hello", public_id, None, "m1")
    action = message.run_request.action.user_message_action
    action.interrupted_pending_tool_call_resolutions.resolutions.add(tool_call_id="call_x")
    log = await CursorSession(cursor, "run-none-pending", workspace=tmp_path).run(message)
    assert log.end is not None
    assert log.end["error"] == {
        "code": "invalid_argument",
        "message": "protocol error: interrupted_pending_tool_call_resolutions: 'call_x' is not "
        "a pending call (no tool round is pending)",
    }
    assert fake.requests == []


def kv_ack_message(kv_id: int) -> agent.AgentClientMessage:
    return agent.AgentClientMessage(
        kv_client_message=agent.KvClientMessage(id=kv_id, set_blob_result=agent.SetBlobResult())
    )


async def test_resume_of_an_ended_turn_is_refused(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["done"])))
    first = await CursorSession(cursor, "run-1").run(turn("hi", public_id, None, "m1"))
    log = await CursorSession(cursor, "run-2", blobs=dict(first.blobs)).run(
        resume(public_id, first.checkpoints()[-1])
    )
    assert log.end is not None
    assert log.end["error"]["code"] == "invalid_argument"
    assert "already ended" in log.end["error"]["message"]
    assert len(fake.requests) == 1


async def test_resume_without_a_state_is_refused(public_id: str, cursor: FakeCursor) -> None:
    log = await CursorSession(cursor, "run-x").run(
        resume(public_id, agent.ConversationStateStructure())
    )
    assert log.end is not None
    assert log.end["error"]["code"] == "invalid_argument"
