"""Retries inside a turn (in-process server, real sockets): the user sees one answer, a cancel
during the wait ends the run ``canceled`` at once and the next attempt is never sent."""

from __future__ import annotations

import asyncio
import time

from store import Store
from store.conversations import ConversationStore
from store.llm_calls import CallFilter, CallRecords
from tests.conftest import StartServer
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    cancel_message,
    final_text,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, Script, chat_events
from wire.providers.retry import RetryPolicy

FAST = RetryPolicy(base_delay_s=0.05, max_delay_s=0.1)


async def test_a_retried_turn_shows_its_answer_once_and_keeps_both_attempts(
    fake: FakeProvider, public_id: str, make_server: StartServer, server_store: Store
) -> None:
    server = await make_server(provider_retry=FAST)
    cursor = FakeCursor(f"http://{server.address}")
    fake.enqueue(
        Script.error(502, "bad gateway"),
        Script.sse(chat_events(text=["Hel", "lo"])),
    )
    log = await CursorSession(cursor, "turn-retried").run(user_turn_message("hi", public_id))
    await cursor.aclose()
    assert log.end == {}
    assert final_text(log) == "Hello"
    assert log.kinds().count("turn_ended") == 1
    rows = CallRecords(server_store.database).list(10, only=CallFilter(run_id="turn-retried"))
    assert sorted(r.status for r in rows) == ["completed", "failed"]
    run = ConversationStore(server_store.database).run("turn-retried")
    assert run is not None and run.status == "completed"


async def test_a_cancel_during_the_wait_ends_the_run_at_once_and_nothing_more_is_sent(
    fake: FakeProvider, public_id: str, make_server: StartServer, server_store: Store
) -> None:
    server = await make_server(provider_retry=FAST)
    cursor = FakeCursor(f"http://{server.address}")
    fake.enqueue(
        Script.error(503, {"error": {"message": "busy"}}, retry_after="3"),
        Script.sse(chat_events(text=["never"])),
    )
    session = CursorSession(cursor, "turn-cancel-wait")
    task = asyncio.create_task(session.run(user_turn_message("hi", public_id)))
    await fake.wait_for_request(1)
    await asyncio.sleep(0.3)  # the 503 is in: the call waits for its Retry-After
    sent = time.monotonic()
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert time.monotonic() - sent < 1.0
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    await asyncio.sleep(3.2)  # past the Retry-After
    assert len(fake.requests) == 1 and fake.pending_scripts == 1
    rows = CallRecords(server_store.database).list(10, only=CallFilter(run_id="turn-cancel-wait"))
    assert [r.status for r in rows] == ["failed"]
    assert all(r.ended_at_ms is not None for r in rows)
    await cursor.aclose()
