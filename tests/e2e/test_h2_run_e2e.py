"""``agent.v1.AgentService/Run`` over the HTTP/2 listener, end to end: our own h2 client
(``tests/support/h2_client.py``) on real sockets, h2c and TLS, driving the same fake editor
(``CursorSession``) the HTTP/1.1 pair tests use, against the real server and fake provider."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path

import h2.errors
import msgspec
import pytest

from store import Store
from store.conversations import ConversationStore
from tests.support.fake_cursor import (
    CursorSession,
    cancel_message,
    resume_message,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from tests.support.h2_client import RUN, ClientStream, H2Client, H2Cursor
from tests.support.h2_servers import (
    LIMITS,
    StartH2,
    client_tls,
    connect,
    make_certificate,
    make_h2,
    upstream_config,
)
from wire.connect import EnvelopeReader, encode_envelope
from wire.h2_connection import H2Limits
from wire.proto import agent_v1_pb2 as agent

__all__ = ["make_h2", "upstream_config"]  # fixtures used by name


def run_status(store: Store, run_id: str) -> str | None:
    run = ConversationStore(store.database).run(run_id)
    return None if run is None else run.status


def tool_turn(fake: FakeProvider, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hello from the workspace\n")
    call = FakeToolCall("call_read", "Read", (json.dumps({"path": str(workspace / "notes.txt")}),))
    fake.enqueue(Script.sse(chat_events(tools=[call])))
    fake.enqueue(Script.sse(chat_events(text=["It says hello."])))


# ---- a whole tool turn ----


RULE = "Always answer in exactly three words."
CONTEXT = agent.RequestContext(non_file_rules=[agent.CursorRule(content=RULE)])


@pytest.mark.parametrize("context", ["inline", "asked"])
@pytest.mark.parametrize("transport", ["h2c", "tls"])
async def test_a_tool_turn_over_run(
    transport: str,
    context: str,
    make_h2: StartH2,
    fake: FakeProvider,
    public_id: str,
    server_store: Store,
    tmp_path: Path,
) -> None:
    """The whole turn with a tool, the editor's way (its context in the RunRequest) and a
    CLI's (no context: the server asks with request_context_args and waits for it)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    tls = make_certificate(tmp_path) if transport == "tls" else None
    server = await make_h2(tls=tls)
    client = await connect(server, client_tls(tls[0]) if tls else None)
    cursor = H2Cursor(client, context=CONTEXT if context == "asked" else None)
    run_id = f"h2-turn-{transport}-{context}"
    inline = CONTEXT if context == "inline" else None
    try:
        tool_turn(fake, workspace)
        session = CursorSession(cursor, run_id, workspace=workspace)
        log = await session.run(
            user_turn_message("what do my notes say?", public_id, request_context=inline)
        )
    finally:
        await cursor.aclose()
    assert log.end == {}
    assert "turn_ended" in log.kinds()
    assert cursor.streams[run_id].asked == (1 if context == "asked" else 0)
    # A CLI takes a second of silence after turn_ended as the end: the final checkpoints
    # and the EndStream follow at once.
    ended_at = cursor.streams[run_id].ended_at
    assert ended_at is not None
    assert ended_at - log.received_at[log.kinds().index("turn_ended")] < 0.5
    # The context reached the model either way, before its first call.
    assert RULE in json.dumps(fake.requests[0].json)
    results = [m for m in fake.requests[1].json["messages"] if m["role"] == "tool"]
    assert "hello from the workspace" in results[0]["content"]
    # The run id is the RunRequest's, not the per-stream x-request-id.
    assert run_status(server_store, run_id) == "completed"


async def test_a_client_that_never_answers_request_context_args_ends_the_run(
    make_h2: StartH2, fake: FakeProvider, public_id: str, server_store: Store
) -> None:
    server = await make_h2(limits=msgspec.structs.replace(LIMITS, request_context_wait_s=0.3))
    client = await connect(server)
    cursor = H2Cursor(client, context=None)
    try:
        session = CursorSession(cursor, "h2-no-context")
        log = await session.run(user_turn_message("hi", public_id))
    finally:
        await cursor.aclose()
    assert log.end is not None
    assert log.end["error"]["code"] == "deadline_exceeded"
    assert "request_context_args" in log.end["error"]["message"]
    assert fake.requests == []


async def test_a_model_id_with_suffixes_runs_with_them_and_a_bad_one_is_named(
    make_h2: StartH2, fake: FakeProvider, public_id: str
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["ok"])))
    server = await make_h2()
    client = await connect(server)
    cursor = H2Cursor(client)
    try:
        good = CursorSession(cursor, "h2-suffix")
        log = await good.run(
            user_turn_message("hi", f"{public_id}/high/64k", request_context=CONTEXT)
        )
        bad = CursorSession(cursor, "h2-bad-suffix")
        refused = await bad.run(
            user_turn_message("hi", f"{public_id}/high/64k/slow", request_context=CONTEXT)
        )
    finally:
        await cursor.aclose()
    assert log.end == {}
    assert fake.requests[0].json["model"] == "fake-model"
    assert fake.requests[0].json["reasoning_effort"] == "high"
    assert refused.end is not None
    assert refused.end["error"]["code"] == "invalid_argument"
    assert "'slow'" in refused.end["error"]["message"]
    assert len(fake.requests) == 1


# ---- disconnects ----
# The runs below carry their context the editor's way: in the RunRequest (request_context).


async def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def open_run(
    client: H2Client, first: agent.AgentClientMessage, run_id: str, *, context: bool = True
) -> tuple[ClientStream, EnvelopeReader]:
    stream = client.open(
        RUN, {"content-type": "application/connect+proto", "x-request-id": "try-1"}
    )
    first.run_request.run_id = run_id
    if context:
        first.run_request.action.user_message_action.request_context.CopyFrom(CONTEXT)
    await stream.send(encode_envelope(0, first.SerializeToString()))
    return stream, EnvelopeReader()


async def read_until(stream: ClientStream, reader: EnvelopeReader, kind: str) -> list[str]:
    """Read frames (acking KV SETs) until an AgentServerMessage of ``kind`` or the end."""
    seen: list[str] = []
    while (chunk := await stream.read(10)) is not None:
        for envelope in reader.feed(chunk):
            if envelope.is_end_stream:
                seen.append("end:" + envelope.payload.decode())
                return seen
            message = agent.AgentServerMessage.FromString(envelope.payload)
            which = message.WhichOneof("message") or ""
            seen.append(which)
            if message.kv_server_message.HasField("set_blob_args"):
                ack = agent.AgentClientMessage(
                    kv_client_message=agent.KvClientMessage(
                        id=message.kv_server_message.id, set_blob_result=agent.SetBlobResult()
                    )
                )
                await stream.send(encode_envelope(0, ack.SerializeToString()))
            if which == kind:
                return seen
    return seen


@pytest.mark.parametrize("how", ["rst_stream", "half_close"])
async def test_leaving_the_run_stream_mid_tool_cancels_the_run(
    how: str,
    make_h2: StartH2,
    fake: FakeProvider,
    public_id: str,
    server_store: Store,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An exec nobody will answer any more: a RST_STREAM or a half-close mid-tool is a
    disconnect, and the run ends cancelled instead of waiting for the exec forever. The run
    hears of it from both of the stream's halves, and logs one cancel naming the first."""
    caplog.set_level(logging.INFO, "cursor_server.session")
    tool_turn(fake, tmp_path)
    server = await make_h2()
    client = await connect(server)
    try:
        stream, reader = await open_run(
            client, user_turn_message("read it", public_id), f"h2-{how}"
        )
        assert (await stream.headers())[":status"] == "200"
        seen = await read_until(stream, reader, "exec_server_message")
        assert seen[-1] == "exec_server_message"
        if how == "rst_stream":
            stream.reset()
        else:
            stream.end()
        await wait_for(
            lambda: run_status(server_store, f"h2-{how}") == "cancelled", "the run to be cancelled"
        )
        if how == "half_close":  # the response side is still open: it ends with canceled
            rest = await read_until(stream, reader, "")
            assert rest[-1].startswith("end:") and "canceled" in rest[-1]
    finally:
        await client.aclose()
    assert len(fake.requests) == 1  # the model was never asked again
    cancels = [r.getMessage() for r in caplog.records if r.getMessage().startswith("run cancel")]
    assert len(cancels) == 1, cancels
    assert f"request_id=h2-{how}" in cancels[0]


async def test_an_error_before_the_run_is_an_end_stream_in_http_200(make_h2: StartH2) -> None:
    server = await make_h2()
    client = await connect(server)
    try:
        stream = client.open(RUN, {"content-type": "application/connect+proto"})
        await stream.send(b"\x00\x00\x00\x00\x03\xff\xff\xff", end=True)
        assert (await stream.headers())[":status"] == "200"
        (envelope,) = EnvelopeReader().feed(await stream.body())
        assert envelope.is_end_stream
        assert json.loads(envelope.payload)["error"]["code"] == "invalid_argument"
    finally:
        await client.aclose()


async def test_a_cancel_over_run_aborts_the_pending_exec(
    make_h2: StartH2, fake: FakeProvider, public_id: str
) -> None:
    fake.enqueue(
        Script.sse(chat_events(tools=[FakeToolCall("call_x", "Read", ('{"path": "/x"}',))]))
    )
    server = await make_h2()
    client = await connect(server)
    cursor = H2Cursor(client)
    try:
        session = CursorSession(cursor, "h2-cancel")
        task = asyncio.create_task(
            session.run(user_turn_message("read x", public_id, request_context=CONTEXT))
        )
        await wait_for(
            lambda: any(m.HasField("exec_server_message") for m in session.log.messages),
            "the exec",
        )
        await session.send(cancel_message())
        log = await asyncio.wait_for(task, 10)
    finally:
        await cursor.aclose()
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    aborts = [
        m.exec_server_control_message.abort.id
        for m in log.messages
        if m.HasField("exec_server_control_message")
    ]
    assert aborts == [1]


async def test_a_provider_error_ends_the_run_stream_as_over_the_pair(
    make_h2: StartH2, fake: FakeProvider, public_id: str
) -> None:
    fake.enqueue(Script.error(401, {"error": {"message": "bad key"}}))
    server = await make_h2()
    client = await connect(server)
    cursor = H2Cursor(client)
    try:
        session = CursorSession(cursor, "h2-provider-error")
        log = await session.run(user_turn_message("hi", public_id, request_context=CONTEXT))
    finally:
        await cursor.aclose()
    assert log.end is not None
    error = log.end["error"]
    assert error["code"] == "unavailable"
    assert "bad key" in error["message"]


async def test_a_resume_over_run_after_the_stream_was_reset_mid_batch(
    make_h2: StartH2, fake: FakeProvider, public_id: str, server_store: Store, tmp_path: Path
) -> None:
    """Two Reads; the first is answered, then the client resets the stream (the run is
    cancelled). A new Run with resume_action and the last staged checkpoint runs only the
    second Read, and the model sees both results."""
    (tmp_path / "a.txt").write_text("alpha contents\n")
    (tmp_path / "b.txt").write_text("beta contents\n")
    tools = [
        FakeToolCall("call_a", "Read", (json.dumps({"path": "/a.txt"}),)),
        FakeToolCall("call_b", "Read", (json.dumps({"path": "/b.txt"}),)),
    ]
    fake.enqueue(Script.sse(chat_events(text=["Reading."], tools=tools)))
    server = await make_h2()
    client = await connect(server)
    cursor = H2Cursor(client, context=CONTEXT)
    try:
        dropped = CursorSession(cursor, "h2-drop", workspace=tmp_path)
        stream = await cursor.open_run_sse("h2-drop")
        await dropped.send(user_turn_message("read both", public_id, request_context=CONTEXT))
        state: agent.ConversationStateStructure | None = None
        answered = False
        completed = False
        while not (completed and state is not None and state.pending_tool_calls):
            envelope = await stream.next_envelope()
            assert envelope is not None and not envelope.is_end_stream
            message = agent.AgentServerMessage.FromString(envelope.payload)
            kv = message.kv_server_message
            if kv.HasField("set_blob_args"):
                dropped.log.blobs[kv.set_blob_args.blob_id] = kv.set_blob_args.blob_data
                ack = agent.KvClientMessage(id=kv.id, set_blob_result=agent.SetBlobResult())
                await dropped.send(agent.AgentClientMessage(kv_client_message=ack))
            if message.HasField("conversation_checkpoint_update"):
                state = message.conversation_checkpoint_update
            if message.HasField("exec_server_message") and not answered:
                answered = True
                await dropped.answer(message.exec_server_message)
            if message.interaction_update.HasField("tool_call_completed"):
                completed = True
        stream.stream.reset()
        await wait_for(
            lambda: run_status(server_store, "h2-drop") == "cancelled", "the dropped run's end"
        )
        fake.enqueue(Script.sse(chat_events(text=["Both read."])))
        resumed = CursorSession(
            cursor, "h2-resume", workspace=tmp_path, blobs=dict(dropped.log.blobs)
        )
        log = await resumed.run(
            resume_message(public_id, conversation_id="conv-1", conversation_state=state)
        )
    finally:
        await cursor.aclose()
    assert log.end == {}, log.end
    reads = [
        m.exec_server_message.read_args.path
        for m in log.messages
        if m.HasField("exec_server_message")
    ]
    assert reads == ["/b.txt"]
    messages = fake.requests[-1].json["messages"]
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert "alpha contents" in results["call_a"] and "beta contents" in results["call_b"]
    assert run_status(server_store, "h2-resume") == "completed"


async def test_a_second_run_stream_for_an_open_run_is_refused(
    make_h2: StartH2, fake: FakeProvider, public_id: str, tmp_path: Path
) -> None:
    tool_turn(fake, tmp_path)
    server = await make_h2()
    client = await connect(server)
    try:
        first, reader = await open_run(client, user_turn_message("read", public_id), "h2-twice")
        await read_until(first, reader, "exec_server_message")
        second, _ = await open_run(client, user_turn_message("again", public_id), "h2-twice")
        (envelope,) = EnvelopeReader().feed(await second.body())
        error = json.loads(envelope.payload)["error"]
        assert error["code"] == "aborted" and "h2-twice" in error["message"]
        assert not first.ended.is_set()  # the first run goes on
    finally:
        await client.aclose()


async def test_a_second_run_stream_is_refused_while_the_first_waits_for_its_context(
    make_h2: StartH2, public_id: str
) -> None:
    server = await make_h2()
    client = await connect(server)
    try:
        # No context in the RunRequest: the server asks for it and waits, the run not yet open.
        message = user_turn_message("read", public_id)
        first, reader = await open_run(client, message, "h2-ctx", context=False)
        assert await read_until(first, reader, "exec_server_message") == ["exec_server_message"]
        again = user_turn_message("again", public_id)
        second, _ = await open_run(client, again, "h2-ctx", context=False)
        (envelope,) = EnvelopeReader().feed(await second.body())
        error = json.loads(envelope.payload)["error"]
        assert error["code"] == "aborted" and "h2-ctx" in error["message"]
        assert not first.ended.is_set()
    finally:
        await client.aclose()


# ---- many streams, big frames ----


async def test_two_concurrent_runs_on_one_connection(
    make_h2: StartH2, fake: FakeProvider, public_id: str
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["one"])))
    fake.enqueue(Script.sse(chat_events(text=["two"])))
    server = await make_h2()
    client = await connect(server)
    cursor = H2Cursor(client)
    try:
        first = CursorSession(cursor, "h2-a")
        second = CursorSession(cursor, "h2-b")
        logs = await asyncio.gather(
            first.run(
                user_turn_message("a", public_id, conversation_id="conv-a", request_context=CONTEXT)
            ),
            second.run(
                user_turn_message("b", public_id, conversation_id="conv-b", request_context=CONTEXT)
            ),
        )
    finally:
        await cursor.aclose()
    assert [log.end for log in logs] == [{}, {}]
    assert all("turn_ended" in log.kinds() for log in logs)
    assert len({stream for stream in client.streams}) == 2


async def test_a_large_kv_blob_crosses_many_data_frames_under_flow_control(
    make_h2: StartH2, fake: FakeProvider, public_id: str
) -> None:
    """A 900 KiB message: in, it outgrows the server's 256 KiB stream window (the client
    waits for WINDOW_UPDATEs); out, its KV SET outgrows the client's 64 KiB window."""
    fake.enqueue(Script.sse(chat_events(text=["big"])))
    server = await make_h2(h2_limits=H2Limits(initial_window_size=256 * 1024))
    client = await connect(server)
    cursor = H2Cursor(client)
    text = "x" * (900 * 1024)
    try:
        session = CursorSession(cursor, "h2-big")
        log = await session.run(
            user_turn_message(text, public_id, request_context=CONTEXT), timeout=20
        )
    finally:
        await cursor.aclose()
    assert log.end == {}
    assert any(text.encode() in blob for blob in log.blobs.values())
    assert fake.requests[0].json["messages"][-1]["content"].count("x") >= len(text)


# ---- shutdown ----


async def test_shutdown_sends_goaway_then_ends_the_run(
    make_h2: StartH2, fake: FakeProvider, public_id: str, tmp_path: Path
) -> None:
    """What SIGTERM runs (``RunningServer.stop``): GOAWAY first, then the open run's
    canceled EndStream reaches its stream."""
    tool_turn(fake, tmp_path)
    server = await make_h2()
    client = await connect(server)
    try:
        stream, reader = await open_run(client, user_turn_message("read", public_id), "h2-stop")
        await read_until(stream, reader, "exec_server_message")
        stopping = asyncio.create_task(server.stop())
        await asyncio.wait_for(client.goaway_seen.wait(), 5)
        assert client.goaway is not None and client.goaway.error_code == 0
        assert client.goaway.last_stream_id == stream.stream_id
        rest = await read_until(stream, reader, "")
        assert rest[-1].startswith("end:") and "canceled" in rest[-1]
        assert await stopping
    finally:
        await client.aclose()


async def test_a_run_client_that_stops_reading_is_cut_and_its_run_ends(
    make_h2: StartH2, fake: FakeProvider, public_id: str, server_store: Store
) -> None:
    """As for RunSSE: a Run whose client takes nothing for ``slow_reader_timeout_s`` has its
    stream reset and its run ended; the server does not wait on it for good."""
    fake.enqueue(Script.sse(chat_events(text=["big"])))
    server = await make_h2(limits=msgspec.structs.replace(LIMITS, slow_reader_timeout_s=0.3))
    client = await connect(server)
    try:
        stream = client.open(RUN, {"content-type": "application/connect+proto"}, auto_ack=False)
        first = user_turn_message("y" * (600 * 1024), public_id, request_context=CONTEXT)
        first.run_request.run_id = "h2-stalled"
        await stream.send(encode_envelope(0, first.SerializeToString()))
        await asyncio.wait_for(stream.ended.wait(), 10)  # never read, so never acked
        assert stream.reset_code == h2.errors.ErrorCodes.CANCEL
        await wait_for(
            lambda: run_status(server_store, "h2-stalled") not in (None, "running"),
            "the stalled run's end",
        )
    finally:
        await client.aclose()
