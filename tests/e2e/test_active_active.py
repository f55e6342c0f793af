"""Three in-process servers on one PostgreSQL, every request of the editor sent to the next one
in turn: a run is held by the instance that first heard of its id, and the others pass its
requests to that one (``wire.http.peer_forwarding``), so whole turns work whichever instance
each request reaches."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from actors.server.compose import RunningServer, ServerConfig, start_server
from store import Store, connect_store
from store.conversations import ConversationStore
from store.run_routes import RunRoutes
from tests.conftest import TEST_LIMITS, add_fake_model
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    cancel_message,
    final_text,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from tests.support.round_robin import RoundRobinCursor
from wire.hop_by_hop import PEER_TOKEN_HEADER
from wire.http.agent_routes import BIDI_APPEND_PATH
from wire.providers.retry import NO_RETRY

SHARED_KEY = secrets.token_bytes(32)


class Fleet:
    """Three servers on one database, a client of each, and the stores they run on."""

    def __init__(self, servers: list[RunningServer], stores: list[Store]) -> None:
        self.servers = servers
        self.stores = stores
        self.cursors = [FakeCursor(f"http://{s.address}") for s in servers]

    def round_robin(self, start: int = 0, *, run_sse_late: bool = False) -> RoundRobinCursor:
        return RoundRobinCursor(self.cursors, start, run_sse_late=run_sse_late)

    def holder(self, request_id: str) -> int:
        """Which server holds ``request_id`` in memory (exactly one must)."""
        holders = [i for i, s in enumerate(self.servers) if s.registry.has(request_id)]
        assert len(holders) == 1, holders
        return holders[0]

    def instance(self, index: int) -> str:
        lease = self.servers[index].lease
        assert lease is not None
        return lease.instance_id


@pytest.fixture
async def fleet(pg_url: str, upstream: str) -> AsyncIterator[Fleet]:
    stores = [connect_store(pg_url, SHARED_KEY) for _ in range(3)]
    servers = []
    for store in stores:
        config = ServerConfig(
            host="127.0.0.1",
            port=0,
            upstream_url=upstream,
            limits=TEST_LIMITS,
            provider_retry=NO_RETRY,
            peer_listen=("127.0.0.1", 0),
        )
        servers.append(await start_server(config, store=store))
    fleet = Fleet(servers, stores)
    yield fleet
    for cursor in fleet.cursors:
        await cursor.aclose()
    for server in servers:
        await server.stop()
    for store in stores:
        store.close()


async def test_a_tool_turn_whose_requests_each_reach_the_next_instance(
    fleet: Fleet, fake: FakeProvider, tmp_path: Path
) -> None:
    """RunSSE on A, the RunRequest on B, the tool's result on C, …: one run, held by A,
    answered in full; a RunSSE reconnect on another instance replays every frame; a late
    append is answered 404 from wherever it lands."""
    public_id = add_fake_model(fleet.stores[0], fake)
    (tmp_path / "a.txt").write_text("alpha\n")
    read = FakeToolCall("call_1", "Read", ('{"path": "/a.txt"}',))
    fake.enqueue(Script.sse(chat_events(tools=[read])), Script.sse(chat_events(text=["read it"])))
    client = fleet.round_robin(start=0)
    session = CursorSession(client, "rr-turn", workspace=tmp_path)
    log = await session.run(user_turn_message("read a.txt", public_id, conversation_id="rr"))
    assert log.end == {}
    assert "alpha" in fake.requests[1].body.decode()
    assert len(set(client.sent_to)) == 3  # every instance took some of the run's requests
    assert fleet.holder("rr-turn") == 0  # the one that heard of it first: the RunSSE's
    route = RunRoutes(fleet.stores[1].database).claim("rr-turn", fleet.instance(1))
    assert route.owner == fleet.instance(0)
    run = ConversationStore(fleet.stores[2].database).run("rr-turn")
    assert run is not None and run.status == "completed"

    # The editor reconnects its RunSSE on another instance: every frame, from the holder.
    replay = await fleet.cursors[2].open_run_sse("rr-turn")
    replayed = await replay.read_to_end()
    assert [m.SerializeToString() for m in replayed.messages] == [
        m.SerializeToString() for m in log.messages
    ]
    # An append after the end, on an instance that does not hold the run: 404, not a new run.
    late = await fleet.cursors[1].append("rr-turn", 99, cancel_message())
    assert late.status_code == 404, late.text
    assert fleet.holder("rr-turn") == 0


async def test_an_append_that_arrives_before_its_run_sse_on_another_instance(
    fleet: Fleet, fake: FakeProvider
) -> None:
    """The RunRequest reaches B first (B claims the run); the RunSSE opened later on C is
    forwarded to B and reads the whole turn."""
    public_id = add_fake_model(fleet.stores[0], fake)
    fake.enqueue(Script.sse(chat_events(text=["early bird"])))
    client = fleet.round_robin(start=1, run_sse_late=True)
    session = CursorSession(client, "rr-early")
    log = await session.run(user_turn_message("hi", public_id, conversation_id="early"))
    assert log.end == {}
    assert client.sent_to[:2] == [1, 2]  # the RunRequest on B, then the RunSSE on C
    assert fleet.holder("rr-early") == 1
    assert "early bird" in final_text(log)


async def test_a_cancel_sent_to_another_instance_stops_the_run(
    fleet: Fleet, fake: FakeProvider
) -> None:
    public_id = add_fake_model(fleet.stores[0], fake)
    fake.enqueue(Script.hang_before_headers())
    stream = await fleet.cursors[0].open_run_sse("rr-cancel")
    first = await fleet.cursors[1].append(
        "rr-cancel", 0, user_turn_message("wait", public_id, conversation_id="cancel")
    )
    assert first.status_code == 200, first.text
    await fake.wait_for_request(1)
    started = time.monotonic()
    stop = await fleet.cursors[2].append("rr-cancel", 1, cancel_message())
    assert stop.status_code == 200, stop.text
    result = await stream.read_to_end(timeout=10)
    assert result.end is not None and result.end["error"]["code"] == "canceled"
    assert time.monotonic() - started < 5


async def test_a_new_message_on_another_instance_interrupts_the_run_held_elsewhere(
    fleet: Fleet, fake: FakeProvider
) -> None:
    """Run 1 is held by A, waiting on its model; run 2 on the same conversation starts on B.
    The store fences run 1 at once, and A is told: run 1's stream ends ``canceled`` without
    waiting for its model."""
    public_id = add_fake_model(fleet.stores[0], fake)
    fake.enqueue(Script.hang_before_headers(), Script.sse(chat_events(text=["second"])))
    first = CursorSession(fleet.round_robin(start=0), "rr-one")
    one = asyncio.create_task(first.run(user_turn_message("one", public_id, conversation_id="c")))
    await fake.wait_for_request(1)
    assert fleet.holder("rr-one") == 0
    started = time.monotonic()
    second = CursorSession(fleet.round_robin(start=1), "rr-two")
    log = await second.run(user_turn_message("two", public_id, conversation_id="c"))
    assert log.end == {}
    assert fleet.holder("rr-two") == 1
    superseded = await asyncio.wait_for(one, 10)
    assert superseded.end is not None and superseded.end["error"]["code"] == "canceled"
    assert time.monotonic() - started < 5


async def test_the_peer_listener_takes_nothing_without_the_peer_token(fleet: Fleet) -> None:
    peers = fleet.servers[0].peers
    assert peers is not None and peers.listener is not None
    url = f"http://{peers.listener.address}{BIDI_APPEND_PATH}"
    async with httpx.AsyncClient() as client:
        for headers in ({}, {PEER_TOKEN_HEADER: "0" * 64}):
            answer = await client.post(url, content=b"", headers=headers)
            assert answer.status_code == 401
            assert answer.json()["code"] == "unauthenticated"


async def test_a_provider_added_on_one_instance_serves_a_turn_on_another_at_once(
    fleet: Fleet, fake: FakeProvider
) -> None:
    """Nothing of the catalog is cached per process: a provider and model saved through A's
    console run B's very next turn, and B's model list names the model."""
    async with httpx.AsyncClient(base_url=f"http://{fleet.servers[0].address}") as console:
        body = {"name": "Shared", "type": "openai-chat", "base_url": fake.base_url}
        created = await console.post("/console/api/providers", json={**body, "api_key": "k-1"})
        assert created.status_code == 201, created.text
        models = {"models": [{"model_id": "fake-model", "display_name": "Shared model"}]}
        saved = await console.post(
            f"/console/api/providers/{created.json()['id']}/models", json=models
        )
        assert saved.status_code == 201, saved.text
    saved_at = time.monotonic()
    public_id = saved.json()[0]["public_id"]
    async with httpx.AsyncClient(base_url=f"http://{fleet.servers[1].address}") as other:
        listed = await other.get("/console/api/models")
    assert public_id in [m["public_id"] for m in listed.json()]
    fake.enqueue(Script.sse(chat_events(text=["from the shared model"])))
    session = CursorSession(fleet.cursors[1], "rr-catalog")
    log = await session.run(user_turn_message("hi", public_id, conversation_id="catalog"))
    assert log.end == {}
    assert "from the shared model" in final_text(log)
    assert fleet.holder("rr-catalog") == 1
    assert time.monotonic() - saved_at < 5  # the turn itself; no wait for a cache


async def test_a_forward_to_an_instance_that_does_not_hold_the_run_is_sent_on(
    fleet: Fleet, fake: FakeProvider
) -> None:
    """B remembers C as the holder of a run A holds (as after C restarted on its address):
    C answers ``misdirected`` instead of serving it, and B asks the database again and
    forwards to A. The run stays whole on A."""
    public_id = add_fake_model(fleet.stores[0], fake)
    fake.enqueue(Script.sse(chat_events(text=["held by a"])))
    client = RoundRobinCursor([fleet.cursors[0], fleet.cursors[1]], start=0)
    session = CursorSession(client, "rr-stale")
    peers_b, peers_c = fleet.servers[1].peers, fleet.servers[2].peers
    assert peers_b is not None and peers_c is not None
    # The RunSSE reaches A first; B's first forward goes to C, which does not hold the run.
    peers_b.forwarder._remember("rr-stale", peers_c.url)
    log = await session.run(user_turn_message("hi", public_id, conversation_id="stale"))
    assert log.end == {}
    assert "held by a" in final_text(log)
    assert fleet.holder("rr-stale") == 0
    assert not fleet.servers[2].registry.has("rr-stale")
