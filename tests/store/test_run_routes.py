"""Who holds each request id (``store.run_routes``), on SQLite and PostgreSQL: the first claim
wins and every later one reads it; a dead holder's route is taken over once; the sweep
forgets the routes no live lease covers."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from store import Store, connect_store
from store.conversations import ConversationStore
from store.instances import Instances, bind_instance
from store.run_routes import RunRoutes

LEASE_MS = 60_000


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = connect_store(db_url)
    instances = Instances(opened.database)
    instances.register("a", LEASE_MS, internal_url="http://127.0.0.1:1001")
    instances.register("b", LEASE_MS, host="elsewhere", internal_url="http://127.0.0.1:1002")
    yield opened
    opened.close()


def test_the_first_claim_wins_and_later_ones_read_it(store: Store) -> None:
    routes = RunRoutes(store.database)
    first = routes.claim("req-1", "a")
    assert (first.owner, first.live) == ("a", True)  # the claim was this call's
    second = routes.claim("req-1", "b")
    assert (second.owner, second.internal_url, second.live) == ("a", "http://127.0.0.1:1001", True)
    assert routes.claim("req-1", "a").owner == "a"


def test_of_claims_racing_on_threads_exactly_one_wins(store: Store) -> None:
    routes = RunRoutes(store.database)
    seen: list[str] = []
    barrier = threading.Barrier(8)

    def claim(me: str) -> None:
        barrier.wait()
        seen.append(routes.claim("req-race", me).owner)

    threads = [threading.Thread(target=claim, args=("ab"[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8 and len(set(seen)) == 1


def test_a_dead_holders_route_is_taken_over_once(store: Store) -> None:
    routes = RunRoutes(store.database)
    routes.claim("req-2", "b")
    Instances(store.database).release("b")  # b's lease is gone: it died
    dead = routes.claim("req-2", "a")
    assert (dead.owner, dead.live, dead.internal_url) == ("b", False, None)
    assert routes.take_over("req-2", "b", "a")
    assert not routes.take_over("req-2", "b", "c")  # the second taker read a stale owner
    assert routes.claim("req-2", "c").owner == "a"


def test_the_sweep_forgets_routes_of_instances_without_a_live_lease(store: Store) -> None:
    routes = RunRoutes(store.database)
    routes.claim("req-a", "a")
    routes.claim("req-b", "b")
    Instances(store.database).release("b")
    assert routes.forget_stale() == 1
    assert routes.claim("req-b", "a").owner == "a"  # claimed afresh
    assert routes.claim("req-a", "b").owner == "a"


def test_a_runs_owner_is_the_instance_that_opened_its_row(store: Store) -> None:
    routes = RunRoutes(store.database)
    assert routes.run_owner("run-1") is None
    bind_instance(store.database, "b")
    conversations = ConversationStore(store.database)
    conversations.claim_run("run-1", "conv", conversations.ensure_conversation("conv"))
    owner = routes.run_owner("run-1")
    assert owner is not None
    assert (owner.owner, owner.internal_url, owner.live) == ("b", "http://127.0.0.1:1002", True)
