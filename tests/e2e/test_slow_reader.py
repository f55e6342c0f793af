"""A RunSSE client that stops reading: its full socket buffer blocks only its own stream, which
is cut after ``slow_reader_timeout_s``, and its run ends ``deadline_exceeded``; other runs go on
meanwhile. Real sockets: the stalled reader is a raw socket with a tiny receive buffer that
never calls ``recv``."""

from __future__ import annotations

import asyncio
import socket

import msgspec

from store import Store
from store.conversations import ConversationStore
from store.llm_calls import CallFilter, CallRecords
from tests.conftest import TEST_LIMITS, StartServer
from tests.support.fake_cursor import (
    RUN_SSE,
    CursorSession,
    FakeCursor,
    final_text,
    frame_body,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, Script, chat_events
from wire.proto import agent_v1_pb2 as agent

STALL_S = 0.5
LIMITS = msgspec.structs.replace(TEST_LIMITS, slow_reader_timeout_s=STALL_S)
# About 10 MiB of text, more than the kernel buffers of both ends hold, sent over ~6 s.
BIG_TEXT = ["x" * 16384] * 640


def open_stalled_reader(address: str, request_id: str) -> socket.socket:
    """Open RunSSE for ``request_id`` and never read: the receive window closes soon."""
    host, port = address.rsplit(":", 1)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    payload = agent.BidiRequestId(request_id=request_id).SerializeToString()
    body, headers = frame_body(payload, enveloped=True, gzipped=False)
    head = [f"POST {RUN_SSE} HTTP/1.1", f"Host: {address}", f"Content-Length: {len(body)}"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    return sock


async def test_a_reader_that_stops_is_cut_its_run_ends_and_other_runs_go_on(
    fake: FakeProvider, public_id: str, make_server: StartServer, server_store: Store
) -> None:
    server = await make_server(limits=LIMITS)
    cursor = FakeCursor(f"http://{server.address}")
    stalled = await asyncio.to_thread(open_stalled_reader, server.address, "slow-run")
    try:
        fake.enqueue(Script.sse(chat_events(text=BIG_TEXT), delay_between=0.01))
        slow = asyncio.create_task(
            CursorSession(cursor, "slow-run").run(
                user_turn_message("write a lot", public_id), total_timeout=30
            )
        )
        await fake.wait_for_request(1)
        fake.enqueue(Script.sse(chat_events(text=["meanwhile"])))
        other = await CursorSession(cursor, "other-run").run(
            user_turn_message("hi", public_id, message_id="msg-2", conversation_id="conv-2")
        )
        assert other.end == {} and final_text(other) == "meanwhile"
        assert not slow.done(), "the other run waited for the stalled one"
        log = await asyncio.wait_for(slow, 30)
        assert log.end == {
            "error": {
                "code": "deadline_exceeded",
                "message": f"the client read nothing of its RunSSE stream for {STALL_S:g} s",
            }
        }
        await asyncio.wait_for(fake.disconnected(0).wait(), 5)  # its provider call stopped
    finally:
        stalled.close()
        await cursor.aclose()
    run = ConversationStore(server_store.database).run("slow-run")
    assert run is not None and run.status != "running"
    await asyncio.sleep(0.3)
    rows = CallRecords(server_store.database).list(10, only=CallFilter(run_id="slow-run"))
    assert [r.status for r in rows] == ["cancelled"]
