"""A Cursor agent turn end to end: fake Cursor client and fake provider over real HTTP.

The fake client acknowledges every KV SET after checking its SHA-256, as the editor does.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from pathlib import Path

from actors.protocols.edge import EdgeMessage
from actors.protocols.mailbox import Mailbox
from actors.protocols.run_output import RunOutput
from actors.run.session import SessionActor
from store import Store
from store.conversations import ConversationStore
from tests.conftest import StartServer
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    cancel_message,
    kv_ack,
    user_turn_message,
)
from tests.support.fake_provider import (
    FakeProvider,
    FakeToolCall,
    Script,
    chat_events,
    chat_usage,
)


async def test_text_turn_has_the_exact_tail(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store
) -> None:
    fake.enqueue(
        Script.sse(
            chat_events(thinking=["let me ", "think"], text=["Hel", "lo!"], usage=chat_usage(20, 8))
        )
    )
    log = await CursorSession(cursor, "turn-1").run(user_turn_message("say hello", public_id))
    assert log.end == {}
    kinds = log.kinds()
    # The user turn is published (blobs acked, then a settled checkpoint) before the model runs.
    first_update = next(i for i, k in enumerate(kinds) if k in ("text_delta", "thinking_delta"))
    assert "conversation_checkpoint_update" in kinds[:first_update]
    assert kinds[:first_update].index("conversation_checkpoint_update") > kinds.index(
        "kv_set_blob_args"
    )
    middle = [k for k in kinds[first_update:] if not k.startswith("kv_")]
    assert middle == [
        "thinking_delta",
        "thinking_delta",
        "thinking_completed",
        "text_delta",
        "text_delta",
        "token_delta",
        "turn_ended",
        "conversation_checkpoint_update",
        "conversation_checkpoint_update",
        "conversation_checkpoint_update",
    ]
    texts = [
        m.interaction_update.text_delta.text
        for m in log.messages
        if m.interaction_update.HasField("text_delta")
    ]
    assert "".join(texts) == "Hello!"
    completed = [m for m in log.messages if m.interaction_update.HasField("thinking_completed")]
    assert completed[0].interaction_update.thinking_completed.thinking_duration_ms >= 1
    ended = next(
        m for m in log.messages if m.interaction_update.HasField("turn_ended")
    ).interaction_update.turn_ended
    assert (ended.input_tokens, ended.output_tokens) == (20, 8)
    assert not ended.HasField("cache_read_tokens") and not ended.HasField("cache_write_tokens")
    initial, staged, settled, again = log.checkpoints()
    assert list(initial.pending_tool_calls) == []
    assert len(staged.pending_tool_calls) == 1
    pending = json.loads(staged.pending_tool_calls[0])
    assert pending["role"] == "assistant"
    assert list(settled.pending_tool_calls) == []
    assert settled.SerializeToString() == again.SerializeToString()
    assert list(staged.turns) == list(settled.turns)
    assert len(settled.root_prompt_messages_json) == len(staged.root_prompt_messages_json) + 1
    # Every blob a checkpoint names reached the client and was acknowledged first.
    for checkpoint in log.checkpoints():
        for blob_id in [*checkpoint.root_prompt_messages_json, *checkpoint.turns]:
            assert blob_id in log.blobs
    final_root = json.loads(log.blobs[settled.root_prompt_messages_json[-1]])
    assert final_root["role"] == "assistant"
    assert any(part.get("text") == "Hello!" for part in final_root["content"])
    # No blob was sent twice.
    sets = [
        m.kv_server_message.set_blob_args.blob_id
        for m in log.messages
        if m.kv_server_message.HasField("set_blob_args")
    ]
    assert len(sets) == len(set(sets))
    # The store holds the runtime user message once and the final answer, and the run completed.
    conversations = ConversationStore(server_store.database)
    head = conversations.ensure_conversation("conv-1")
    messages = conversations.messages_at(head)
    assert [m.origin for m in messages] == ["runtime", "assistant"]
    assert "say hello" in messages[0].payload.decode()
    run = conversations.run("turn-1")
    assert run is not None and run.status == "completed"
    # The provider got the system prompt, the tools and the rendered user turn.
    body = fake.requests[0].json
    assert body["messages"][0]["role"] == "system"
    assert "say hello" in body["messages"][-1]["content"]
    assert {t["function"]["name"] for t in body["tools"]} >= {"Read", "Shell", "Grep"}


async def test_turn_ended_waits_for_the_final_acks(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["ok"])))
    session = CursorSession(cursor, "turn-held")
    held: list[int] = []

    def hold_after_initial(kv_id: int) -> bool:
        # Acknowledge the initial checkpoint's blobs; hold the first blob of the final one.
        if (
            any(m.interaction_update.HasField("text_delta") for m in session.log.messages)
            and not held
        ):
            held.append(kv_id)
            return True
        return False

    task = asyncio.create_task(
        session.run(user_turn_message("hi", public_id), hold_ack=hold_after_initial)
    )
    for _ in range(100):
        if held:
            break
        await asyncio.sleep(0.05)
    assert held, "the final checkpoint's blobs never came"
    await asyncio.sleep(0.3)
    assert "turn_ended" not in session.log.kinds()
    # Release the held blob: the tail follows.
    await session.send(kv_ack(held[0]))
    log = await asyncio.wait_for(task, 10)
    assert log.end == {}
    assert "turn_ended" in log.kinds()


async def test_provider_error_ends_with_unavailable_and_no_turn_ended(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store
) -> None:
    fake.enqueue(Script.error(500, {"error": {"message": "provider failed"}}))
    log = await CursorSession(cursor, "turn-err").run(user_turn_message("hi", public_id))
    assert log.end is not None
    error = log.end["error"]
    assert error["code"] == "unavailable"
    assert "provider failed" in error["message"]
    assert error["details"][0]["type"] == "aiserver.v1.ErrorDetails"
    assert "turn_ended" not in log.kinds()
    assert len(log.checkpoints()) == 1
    conversations = ConversationStore(server_store.database)
    messages = conversations.messages_at(conversations.ensure_conversation("conv-1"))
    assert [m.origin for m in messages] == ["runtime"]


async def test_parallel_reads_answered_in_reverse_order(
    fake: FakeProvider,
    public_id: str,
    cursor: FakeCursor,
    server_store: Store,
    tmp_path: Path,
) -> None:
    """Two Read calls in one round; the editor answers the second first. The pairs are stored
    in completion order, the next model call sees one assistant with both calls then both
    results (prefix-stable), and the turn ends normally."""
    (tmp_path / "a.txt").write_text("alpha contents\n")
    (tmp_path / "b.txt").write_text("beta contents\n")
    tools = [
        FakeToolCall("call_a", "Read", ('{"path": ', '"/a.txt"}')),
        FakeToolCall("call_b", "Read", ('{"path": "/b.txt"}',)),
    ]
    fake.enqueue(Script.sse(chat_events(text=["Reading."], tools=tools, usage=chat_usage(10, 5))))
    fake.enqueue(Script.sse(chat_events(text=["Both read."], usage=chat_usage(30, 3))))
    session = CursorSession(cursor, "turn-tools", workspace=tmp_path, batch_size=2)
    log = await session.run(user_turn_message("read both", public_id))
    assert log.end == {}
    kinds = [k for k in log.kinds() if not k.startswith("kv_")]
    assert kinds.count("tool_call_started") == 2 and kinds.count("tool_call_completed") == 2
    assert kinds.count("partial_tool_call") >= 2
    # Completion order: b then a.
    completed = [
        m.interaction_update.tool_call_completed.call_id
        for m in log.messages
        if m.interaction_update.HasField("tool_call_completed")
    ]
    assert completed == ["call_b", "call_a"]
    exec_ids = [m.exec_server_message.id for m in log.messages if m.HasField("exec_server_message")]
    assert exec_ids == [1, 2]
    # A staged checkpoint with the round's one assistant message, then a settled one, then the
    # second model call; the tail as for a text turn.
    checkpoints = log.checkpoints()
    staged = next(c for c in checkpoints if c.pending_tool_calls)
    pending = json.loads(staged.pending_tool_calls[0])
    assert [p["toolCallId"] for p in pending["content"] if p["type"] == "tool-call"] == [
        "call_a",
        "call_b",
    ]
    assert kinds[-4:] == ["turn_ended", *["conversation_checkpoint_update"] * 3], " ".join(kinds)
    # The second call's text comes after the settled checkpoint of the round (system, user
    # turn, the round's assistant and both results), though the call itself was sent earlier.
    second_text = next(
        i
        for i, m in enumerate(log.messages)
        if m.interaction_update.text_delta.text == "Both read."
    )
    before = [
        m.conversation_checkpoint_update
        for m in log.messages[:second_text]
        if m.HasField("conversation_checkpoint_update")
    ]
    assert not before[-1].pending_tool_calls
    assert len(before[-1].root_prompt_messages_json) == 5
    # Store: runtime, then pairs in completion order, then the final answer.
    conversations = ConversationStore(server_store.database)
    messages = conversations.messages_at(conversations.ensure_conversation("conv-1"))
    assert [(m.origin, m.message_id.rsplit(":", 2)[-2:]) for m in messages[1:5]] == [
        ("assistant", ["call_b", "assistant"]),
        ("tool", ["call_b", "result"]),
        ("assistant", ["call_a", "assistant"]),
        ("tool", ["call_a", "result"]),
    ]
    assert messages[-1].origin == "assistant"
    # The second request: prefix of the first, then one assistant with both calls (by index),
    # then the results in completion order, holding the real file text.
    first_body, second_body = (r.json for r in fake.requests)
    first_messages, second_messages = first_body["messages"], second_body["messages"]
    assert second_messages[: len(first_messages)] == first_messages
    assistant, *results = second_messages[len(first_messages) :]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_a", "call_b"]
    assert [r["tool_call_id"] for r in results] == ["call_b", "call_a"]
    assert "beta contents" in results[0]["content"]
    assert "alpha contents" in results[1]["content"]
    run = conversations.run("turn-tools")
    assert run is not None and run.provider_call_index == 1 and run.status == "completed"


async def test_cancel_mid_tool_aborts_the_pending_exec_before_the_end(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    fake.enqueue(
        Script.sse(chat_events(tools=[FakeToolCall("call_x", "Read", ('{"path": "/x"}',))]))
    )
    session = CursorSession(cursor, "turn-abort")  # no workspace: the exec is never answered
    task = asyncio.create_task(session.run(user_turn_message("read x", public_id)))
    for _ in range(100):
        if any(m.HasField("exec_server_message") for m in session.log.messages):
            break
        await asyncio.sleep(0.05)
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    aborts = [
        m.exec_server_control_message.abort.id
        for m in log.messages
        if m.HasField("exec_server_control_message")
    ]
    assert aborts == [1]


async def test_the_runtime_message_is_appended_once_across_a_restart(
    fake: FakeProvider, public_id: str, make_server: StartServer, server_store: Store
) -> None:
    """The provider fails, the server restarts, and the client sends the same RunRequest for
    the same request id again: the user turn is replayed, never appended a second time."""
    first_server = await make_server()
    fake.enqueue(Script.error(500, {"error": {"message": "try again"}}))
    first_cursor = FakeCursor(f"http://{first_server.address}")
    first = await CursorSession(first_cursor, "turn-retry").run(user_turn_message("hi", public_id))
    await first_cursor.aclose()
    assert first.end is not None and first.end["error"]["code"] == "unavailable"
    await first_server.stop()

    second_server = await make_server()
    fake.enqueue(Script.sse(chat_events(text=["done"])))
    second_cursor = FakeCursor(f"http://{second_server.address}")
    second = await CursorSession(second_cursor, "turn-retry").run(
        user_turn_message("hi", public_id)
    )
    await second_cursor.aclose()
    assert second.end == {}
    conversations = ConversationStore(server_store.database)
    messages = conversations.messages_at(conversations.ensure_conversation("conv-1"))
    assert [m.origin for m in messages] == ["runtime", "assistant"]
    # Both provider requests carried exactly one user turn.
    for request in fake.requests:
        users = [m for m in request.json["messages"] if m["role"] == "user"]
        assert len(users) == 1


async def test_a_second_run_on_the_conversation_cancels_the_first(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store
) -> None:
    fake.enqueue(Script.hang_before_headers())
    first = CursorSession(cursor, "turn-old")
    old = asyncio.create_task(first.run(user_turn_message("slow", public_id)))
    await fake.wait_for_request(1)
    fake.enqueue(Script.sse(chat_events(text=["new answer"])))
    new = await CursorSession(cursor, "turn-new").run(
        user_turn_message("fast", public_id, message_id="msg-2")
    )
    old_log = await asyncio.wait_for(old, 10)
    assert old_log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    await asyncio.wait_for(fake.disconnected(0).wait(), 5)  # its provider call was cancelled
    assert new.end == {}
    conversations = ConversationStore(server_store.database)
    old_run, new_run = conversations.run("turn-old"), conversations.run("turn-new")
    assert old_run is not None and old_run.status == "cancelled"
    assert new_run is not None and new_run.status == "completed"


async def test_a_crash_in_the_session_ends_the_stream_with_internal(
    make_server: StartServer, public_id: str
) -> None:
    """An unexpected exception inside the SessionActor never leaves the client hanging."""

    def broken_resolver(request: object) -> object:
        raise RuntimeError("resolver exploded")

    def start(request_id: str, output: RunOutput) -> Mailbox[EdgeMessage]:
        return SessionActor.start(request_id, output, broken_resolver)

    server = await make_server(start_session=start)
    cursor = FakeCursor(f"http://{server.address}")
    try:
        log = await CursorSession(cursor, "crash").run(user_turn_message("hi", public_id))
    finally:
        await cursor.aclose()
    assert log.end == {
        "error": {"code": "internal", "message": "internal error: resolver exploded"}
    }


async def test_an_image_sent_by_blob_id_is_fetched_and_reaches_the_model(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    """The editor attaches an image by blob id only: the server fetches it with one KV GET
    (checked against its id) and the model request carries it after the rendered text."""
    image = b"\x89PNG\r\n\x1a\n not really a png"
    blob_id = hashlib.sha256(image).digest()
    message = user_turn_message("what is in the picture?", public_id)
    selected = message.run_request.action.user_message_action.user_message.selected_context
    selected.selected_images.add(mime_type="image/png", blob_id=blob_id)
    fake.enqueue(Script.sse(chat_events(text=["a picture"])))
    log = await CursorSession(cursor, "turn-image", blobs={blob_id: image}).run(message)
    assert log.end == {}
    gets = [
        m.kv_server_message.get_blob_args.blob_id
        for m in log.messages
        if m.kv_server_message.HasField("get_blob_args")
    ]
    assert gets == [blob_id]
    (user,) = [m for m in fake.requests[0].json["messages"] if m["role"] == "user"]
    text, picture = user["content"]
    assert "what is in the picture?" in text["text"]
    encoded = base64.b64encode(image).decode()
    assert picture == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{encoded}"},
    }


async def test_an_image_the_client_does_not_have_ends_the_run(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    message = user_turn_message("look", public_id)
    selected = message.run_request.action.user_message_action.user_message.selected_context
    selected.selected_images.add(mime_type="image/png", blob_id=hashlib.sha256(b"x").digest())
    log = await CursorSession(cursor, "turn-no-image").run(message)
    assert log.end is not None
    assert log.end["error"]["code"] == "invalid_argument"
    assert "the client has no blob" in log.end["error"]["message"]
    assert fake.requests == []
