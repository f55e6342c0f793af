"""Two server instances on one PostgreSQL schema, as behind a round-robin balancer: what one
instance needs of the other is in the database, not in one process's memory. A console login
made on one is accepted by the other and a logout on either ends it on both (within the live
cache, 0.5 s); the Connect page of one shows Cursor's requests to the other (within the flush
interval, 1 s); and a subagent whose child run the balancer sent to the other instance is still
cancelled through its parent's Task call (the link the child's instance wrote is read by the
parent's)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import httpx
import pytest

from actors.conversation.secret import Secret
from actors.server.compose import RunningServer, ServerConfig, start_server
from store import Store, connect_store
from store.base.typed_peewee import execute_sql
from store.subagent_links import SubagentLinkRows
from tests.conftest import TEST_LIMITS
from tests.e2e.test_call_actions_e2e import CANCELED, aborts, action_message, wait_for
from tests.e2e.test_task_e2e import call, execs, task
from tests.support.fake_cursor import (
    AppendAnswer,
    CursorSession,
    FakeCursor,
    RunBody,
    heartbeat_message,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider
from tests.support.formats import FORMATS
from wire.http.agent_activity import FLUSH_AFTER_S
from wire.proto import agent_v1_pb2 as agent
from wire.providers.retry import NO_RETRY

TOKEN = "two-instances-TOKEN-0123456789"
BEARER = {"authorization": f"Bearer {TOKEN}"}
COOKIE = "cursor_console_session"
VERSION = "2.0.77"


class Instance:
    """One server process of the pair: its store, its server and a console client on it."""

    def __init__(self, store: Store, server: RunningServer) -> None:
        self.store = store
        self.server = server
        self.url = f"http://{server.address}"
        self.console = httpx.AsyncClient(base_url=self.url, timeout=10.0)


@pytest.fixture
async def pair(pg_url: str, upstream: str) -> AsyncIterator[tuple[Instance, Instance]]:
    """Two servers, each with its own store (its own connections) on one schema."""
    config = ServerConfig(
        host="127.0.0.1",
        port=0,
        upstream_url=upstream,
        limits=TEST_LIMITS,
        console_token=Secret(TOKEN),
        provider_retry=NO_RETRY,
    )
    instances: list[Instance] = []
    try:
        for _ in range(2):
            store = connect_store(pg_url)
            instances.append(Instance(store, await start_server(config, store=store)))
        yield instances[0], instances[1]
    finally:
        for instance in instances:
            await instance.console.aclose()
            await instance.server.stop()
            instance.store.close()


async def login(instance: Instance) -> str:
    answer = await instance.console.post("/console/api/login", json={"token": TOKEN})
    assert answer.status_code == 200, answer.text
    return answer.cookies[COOKIE]


async def with_cookie(instance: Instance, session: str) -> int:
    answer = await instance.console.get(
        "/console/api/providers", headers={"cookie": f"{COOKIE}={session}"}
    )
    return answer.status_code


async def test_a_login_on_one_instance_is_accepted_by_the_other_and_a_logout_ends_it_on_both(
    pair: tuple[Instance, Instance],
) -> None:
    a, b = pair
    session = await login(a)
    assert await with_cookie(a, session) == 200  # and now in A's live cache
    assert await with_cookie(b, session) == 200
    logout = await b.console.post(
        "/console/api/logout", headers={"cookie": f"{COOKIE}={session}"}, json={}
    )
    assert logout.status_code == 204
    assert await with_cookie(b, session) == 401
    ended = time.monotonic()
    while await with_cookie(a, session) != 401:
        assert time.monotonic() - ended < 1.0, "the logout on B is not seen on A within 1 s"
        await asyncio.sleep(0.05)
    (stored,) = execute_sql(a.store.database, 'SELECT COUNT(*) FROM "console_sessions"').fetchone()
    assert stored == 0


async def test_the_connect_page_of_one_instance_shows_cursors_requests_to_the_other(
    pair: tuple[Instance, Instance],
) -> None:
    a, b = pair
    before = (await b.console.get("/console/api/connection", headers=BEARER)).json()
    assert before["agent_requests"] == 0
    cursor = FakeCursor(a.url, headers={"x-cursor-client-version": VERSION})
    try:
        for n in range(3):
            answer = await cursor.append(f"req-{n}", 0, heartbeat_message())
            assert answer.status_code == 200, answer.text
    finally:
        await cursor.aclose()
    sent = time.monotonic()
    while True:
        seen = (await b.console.get("/console/api/connection", headers=BEARER)).json()
        if seen["agent_requests"] == 3:
            break
        assert time.monotonic() - sent < FLUSH_AFTER_S + 1.0, seen
        await asyncio.sleep(0.05)
    assert seen["client_version"] == VERSION
    mine = (await a.console.get("/console/api/connection", headers=BEARER)).json()
    assert (mine["agent_requests"], mine["client_version"]) == (3, VERSION)


class Balanced:
    """The editor's client behind the balancer: the parent run goes to one instance, every
    subagent's child run (``<parent>.sub<n>``) to the other."""

    def __init__(self, parent: FakeCursor, children: FakeCursor) -> None:
        self.parent = parent
        self.children = children

    def _for(self, request_id: str) -> FakeCursor:
        return self.children if ".sub" in request_id else self.parent

    async def open_run_sse(self, request_id: str) -> RunBody:
        return await self._for(request_id).open_run_sse(request_id)

    async def append(
        self,
        request_id: str,
        seqno: int,
        message: agent.AgentClientMessage,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> AppendAnswer:
        return await self._for(request_id).append(request_id, seqno, message, headers=headers)


async def test_a_subagent_run_on_the_other_instance_is_cancelled_through_its_parents_task(
    pair: tuple[Instance, Instance], fake: FakeProvider, tmp_path: Path
) -> None:
    a, b = pair
    fmt = FORMATS[0]
    model = fmt.add_model(a.store, fake)
    fake.enqueue(fmt.tool_round([task()]))
    fake.enqueue(fmt.tool_round([call("call_sleep", "Shell", command="sleep 30")]))
    fake.enqueue(fmt.answer("Skipped the subagent, as you asked."))
    on_a, on_b = FakeCursor(a.url), FakeCursor(b.url)
    try:
        session = CursorSession(
            Balanced(on_a, on_b), "turn-split", workspace=tmp_path, run_subagents=True
        )
        run = asyncio.create_task(session.run(user_turn_message("find the values", model)))
        await wait_for(
            lambda: session.subagents and execs(session.subagents[0].log, "shell_stream_args"),
            "the child's command",
        )
        # B ran the child and wrote its link; A's store reads it.
        (child,) = session.subagents
        task_call = child.parent_headers["x-parent-agent-tool-call-id"]
        assert SubagentLinkRows(a.store.database).tool_call("turn-split", "subagent-1") == task_call
        await session.send(action_message(cancel_subagent_action={"subagent_id": "subagent-1"}))
        log = await asyncio.wait_for(run, 15)
    finally:
        await on_a.aclose()
        await on_b.aclose()
    assert log.end == {}
    (task_exec,) = execs(log, "subagent_args")
    assert aborts(log) == [task_exec.id]  # A found the Task call through B's link
    assert child.log.end == CANCELED
    result = fmt.tool_results(fake.requests[2].json)["call_task"]
    assert result.startswith("the user cancelled this subagent (subagent-1) before it finished")
    # The child's end removed its link.
    await wait_for(
        lambda: SubagentLinkRows(b.store.database).tool_call("turn-split", "subagent-1") is None,
        "the link removed",
    )
