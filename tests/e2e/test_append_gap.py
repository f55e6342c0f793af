"""An ``append_seqno`` gap that does not fill in time ends the run ``invalid_argument`` naming
the missing number (a deadline on the loop, told to the run as a message); one that fills in
time changes nothing."""

from __future__ import annotations

import asyncio
import contextlib

import msgspec

from store import Store
from store.conversations import ConversationStore
from store.llm_calls import CallFilter, CallRecords
from tests.conftest import TEST_LIMITS, StartServer
from tests.support.fake_cursor import FakeCursor, heartbeat_message, user_turn_message
from tests.support.fake_provider import FakeProvider, Script

GAP_S = 0.3
LIMITS = msgspec.structs.replace(TEST_LIMITS, append_gap_timeout_s=GAP_S)


async def test_a_gap_that_does_not_fill_ends_the_run_naming_the_missing_seqno(
    fake: FakeProvider, public_id: str, make_server: StartServer, server_store: Store
) -> None:
    server = await make_server(limits=LIMITS)
    cursor = FakeCursor(f"http://{server.address}")
    fake.enqueue(Script.hang_before_headers())
    stream = await cursor.open_run_sse("gap-run")
    assert (
        await cursor.append("gap-run", 0, user_turn_message("hi", public_id))
    ).status_code == 200
    await fake.wait_for_request(1)
    # 1 and 2 never come; 3 waits for them.
    assert (await cursor.append("gap-run", 3, heartbeat_message())).status_code == 200
    result = await stream.read_to_end(timeout=5)
    assert result.end == {
        "error": {
            "code": "invalid_argument",
            "message": f"protocol error: append_seqno 1 did not arrive within {GAP_S:g} s",
        }
    }
    await asyncio.wait_for(fake.disconnected(0).wait(), 5)  # its provider call is cancelled
    await cursor.aclose()
    run = ConversationStore(server_store.database).run("gap-run")
    assert run is not None and run.status in ("failed", "cancelled")
    await asyncio.sleep(0.2)
    rows = CallRecords(server_store.database).list(10, only=CallFilter(run_id="gap-run"))
    assert [r.status for r in rows] == ["cancelled"]


async def test_gaps_that_fill_in_time_change_nothing(
    fake: FakeProvider, public_id: str, make_server: StartServer
) -> None:
    server = await make_server(limits=LIMITS)
    cursor = FakeCursor(f"http://{server.address}")
    fake.enqueue(Script.hang_before_headers())
    stream = await cursor.open_run_sse("gap-filled")
    message = user_turn_message("hi", public_id)
    assert (await cursor.append("gap-filled", 0, message)).status_code == 200
    # Two gaps, one after the other, each open for less than the limit; together longer.
    for missing in (1, 3):
        assert (
            await cursor.append("gap-filled", missing + 1, heartbeat_message())
        ).status_code == 200
        await asyncio.sleep(GAP_S * 0.6)
        assert (await cursor.append("gap-filled", missing, heartbeat_message())).status_code == 200
    await asyncio.sleep(GAP_S * 1.5)
    # The run goes on: it waits for the KV acks of its first checkpoint, which never come.
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(0.5):
            while (envelope := await stream.next_envelope()) is not None:
                assert not envelope.is_end_stream, envelope.payload
    assert envelope is not None  # the body did not end either
    await stream.aclose()
    await cursor.aclose()
