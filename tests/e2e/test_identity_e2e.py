"""Who each run is for, end to end: the editor's ``authorization`` token read at the edge
(``wire.identity``), the user id kept on the run's row and on each call record, never the
token, over the HTTP/1.1 pair and HTTP/2 ``Run``; a subagent run is its parent's user's."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest

from store import Store
from store.base.typed_peewee import execute_sql
from store.conversations.runs import run_user
from store.llm_calls import CallFilter, CallRecords
from tests.conftest import StartServer
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    authorization,
    login_token,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from tests.support.h2_client import H2Cursor
from tests.support.h2_servers import StartH2, connect, make_h2, upstream_config
from wire.identity import ANONYMOUS_USER
from wire.proto import agent_v1_pb2 as agent

__all__ = ["make_h2", "upstream_config"]  # fixtures used by name

ALICE = login_token({"sub": "auth0|alice-1", "email": "Alice@Example.com", "exp": 1})
BOB = login_token({"sub": "auth0|bob-2"})
CONTEXT = agent.RequestContext()


def stored_text(store: Store) -> str:
    """Every row of every table of the test's SQLite database, as text."""
    db = store.database
    tables = [
        name
        for (name,) in execute_sql(
            db, "SELECT name FROM sqlite_master WHERE type = 'table'"
        ).fetchall()
    ]
    rows: list[str] = []
    for table in tables:
        for row in execute_sql(db, f'SELECT * FROM "{table}"').fetchall():
            rows.append(repr(row))
    return "\n".join(rows)


def assert_token_nowhere(token: str, *texts: str) -> None:
    """Neither the token nor any of its three parts appears in ``texts``."""
    for text in texts:
        for piece in (token, *token.split(".")):
            assert piece not in text


def call_users(store: Store) -> dict[str | None, str | None]:
    """Each call record's run id and user."""
    return {c.run_id: c.user_id for c in CallRecords(store.database).list(100)}


async def test_two_users_runs_and_calls_are_attributed_and_no_token_is_kept(
    make_server: StartServer,
    fake: FakeProvider,
    public_id: str,
    server_store: Store,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    server = await make_server()
    base = f"http://{server.address}"
    fake.enqueue(Script.sse(chat_events(text=["Hello Alice."])))
    fake.enqueue(Script.sse(chat_events(text=["Hello Bob."])))
    fake.enqueue(Script.sse(chat_events(text=["Hello whoever."])))
    bodies: list[str] = []
    for run_id, headers in (
        ("run-alice", authorization(ALICE)),
        ("run-bob", authorization(BOB)),
        ("run-nobody", {}),
    ):
        cursor = FakeCursor(base, headers=headers)
        try:
            log = await CursorSession(cursor, run_id).run(
                user_turn_message("hi", public_id, conversation_id=f"conv-{run_id}")
            )
        finally:
            await cursor.aclose()
        assert log.end == {}
        bodies.append(repr(log.messages))
    db = server_store.database
    assert run_user(db, "run-alice") == "alice@example.com"  # the e-mail, lower-cased
    assert run_user(db, "run-bob") == "auth0|bob-2"  # no e-mail: the subject
    assert run_user(db, "run-nobody") == ANONYMOUS_USER
    assert call_users(server_store) == {
        "run-alice": "alice@example.com",
        "run-bob": "auth0|bob-2",
        "run-nobody": ANONYMOUS_USER,
    }
    async with httpx.AsyncClient(base_url=base) as console:
        listed = await console.get("/console/api/calls", params={"user": "auth0|bob-2"})
        people = await console.get("/console/api/people", params={"range": "day"})
        stats = await console.get("/console/api/stats", params={"user": "alice@example.com"})
    assert listed.status_code == 200, listed.text
    assert [(c["run_id"], c["user_id"]) for c in listed.json()["calls"]] == [
        ("run-bob", "auth0|bob-2")
    ]
    assert people.status_code == 200, people.text
    by_user = {p["user_id"]: p for p in people.json()["people"]}
    assert set(by_user) == {"alice@example.com", "auth0|bob-2", ANONYMOUS_USER}
    assert all((p["runs"], p["calls"]) == (1, 1) for p in by_user.values())
    assert stats.status_code == 200, stats.text
    assert sum(b["calls"] for b in stats.json()["buckets"]) == 1
    # The tokens are nowhere: no row, no answer, no log line.
    log_text = "\n".join(r.getMessage() for r in caplog.records)
    answers = [listed.text, people.text, stats.text, *bodies]
    for token in (ALICE, BOB):
        assert_token_nowhere(token, stored_text(server_store), log_text, *answers)


def task_call() -> FakeToolCall:
    arguments = json.dumps({"description": "Look", "prompt": "Say hi.", "subagent_type": "explore"})
    return FakeToolCall("call_task", "Task", (arguments,))


async def test_a_subagent_run_is_its_parents_users_whatever_its_own_token(
    make_server: StartServer,
    fake: FakeProvider,
    public_id: str,
    server_store: Store,
    tmp_path: Path,
) -> None:
    server = await make_server()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fake.enqueue(Script.sse(chat_events(tools=[task_call()])))
    fake.enqueue(Script.sse(chat_events(text=["Hi from the subagent."])))
    fake.enqueue(Script.sse(chat_events(text=["Done."])))
    cursor = FakeCursor(f"http://{server.address}", headers=authorization(ALICE))
    try:
        session = CursorSession(
            cursor,
            "run-parent",
            workspace=workspace,
            run_subagents=True,
            subagent_headers=authorization(BOB),
        )
        log = await session.run(user_turn_message("delegate", public_id))
    finally:
        await cursor.aclose()
    assert log.end == {}
    (child,) = session.subagents
    assert child.log.end == {}
    assert run_user(server_store.database, child.request_id) == "alice@example.com"
    users = {c.run_id: c.user_id for c in CallRecords(server_store.database).list(100)}
    assert users == {"run-parent": "alice@example.com", child.request_id: "alice@example.com"}


async def test_a_run_over_http2_is_attributed(
    make_h2: StartH2, fake: FakeProvider, public_id: str, server_store: Store
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["Hello over Run."])))
    server = await make_h2()
    cursor = H2Cursor(await connect(server), headers=authorization(BOB))
    try:
        log = await CursorSession(cursor, "h2-bob").run(
            user_turn_message("hi", public_id, request_context=CONTEXT)
        )
    finally:
        await cursor.aclose()
    assert log.end == {}
    assert run_user(server_store.database, "h2-bob") == "auth0|bob-2"
    records = CallRecords(server_store.database)
    (call,) = records.list(10, only=CallFilter(user_id="auth0|bob-2"))
    assert call.run_id == "h2-bob"
    assert_token_nowhere(BOB, stored_text(server_store))
