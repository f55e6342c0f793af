"""A whole agent turn, with a tool round, on a server whose store is PostgreSQL.

The store tests run on both backends, but a turn exercises the statements of every actor at
once (the turn's start, tool results, checkpoints, the CAS, call records); a call record that
could not be inserted on PostgreSQL once went unnoticed because no turn ran there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from store import Store, connect_store
from store.conversations import ConversationStore
from store.llm_calls import CallRecords
from tests.conftest import StartServer, add_fake_model
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[Store]:
    store = connect_store(pg_url)
    yield store
    store.close()


async def test_a_turn_with_a_tool_round_on_postgresql(
    make_server: StartServer, fake: FakeProvider, pg_store: Store, tmp_path: Path
) -> None:
    public_id = add_fake_model(pg_store, fake)
    server = await make_server(store=pg_store)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    fake.enqueue(
        Script.sse(chat_events(tools=[FakeToolCall("call_1", "Read", ('{"path": "/a.txt"}',))])),
        Script.sse(chat_events(text=["read it"])),
    )
    cursor = FakeCursor(f"http://{server.address}")
    try:
        session = CursorSession(cursor, "pg-turn", workspace=workspace)
        log = await session.run(user_turn_message("read a.txt", public_id, conversation_id="pg"))
    finally:
        await cursor.aclose()
    assert log.end == {}
    assert "alpha" in fake.requests[1].body.decode()  # the second call saw the file's text
    run = ConversationStore(pg_store.database).run("pg-turn")
    assert run is not None and run.status == "completed"
    calls = CallRecords(pg_store.database).list(10)
    assert [call.status for call in calls] == ["completed", "completed"]
