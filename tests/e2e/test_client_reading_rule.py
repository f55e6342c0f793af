"""The test client reads on when an append finds the server gone, as the editor does.

A stopping server closes its listener before it cancels its runs, so an append sent in that
moment cannot connect, while the run's stream still brings the ``canceled`` EndStream. The
client must read that stream to its end: a run it gave up at the failed append would look
dropped, and the process tests of a graceful stop would fail by chance.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import httpx

from actors.server.compose import RunningServer
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events
from wire.proto import agent_v1_pb2 as agent


class LosesFirstAck(FakeCursor):
    """A client whose first KV acknowledgement never reaches the server: its connection is
    refused, as when the server's listener has just closed."""

    def __init__(self, base_url: str) -> None:
        super().__init__(base_url)
        self.lost = asyncio.Event()

    async def append(
        self,
        request_id: str,
        seqno: int,
        message: agent.AgentClientMessage,
        *,
        enveloped: bool = False,
        gzipped: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        if message.HasField("kv_client_message") and not self.lost.is_set():
            self.lost.set()
            raise httpx.ConnectError("the server's listener is closed")
        return await super().append(
            request_id, seqno, message, enveloped=enveloped, gzipped=gzipped, headers=headers
        )


async def test_a_failed_append_does_not_end_reading_the_stream(
    server: RunningServer, fake: FakeProvider, public_id: str
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["Hello."])))
    client = LosesFirstAck(f"http://{server.address}")
    try:
        session = CursorSession(client, "run-lost-ack")
        run = asyncio.create_task(session.run(user_turn_message("hi", public_id)))
        await asyncio.wait_for(client.lost.wait(), 10)
        # The server waits for the lost acknowledgement; stopping it cancels the run.
        await server.stop()
        log = await run
    finally:
        await client.aclose()
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    assert not log.dropped
