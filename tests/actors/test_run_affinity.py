"""Actors made ready by a handler run next on that handler's worker (kept, not handed off),
and nothing kept waits on a worker that blocks: a foreign message takes a kept actor elsewhere
at once, a wait on a pooled future or in the store hands the kept actors to the pool, and an
actor others wait behind gives its worker back after each message. No sockets: actors, futures,
threads and a SQLite store."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pykka import ActorRef, ActorRegistry

from actors.pool import PooledActor, WorkerPool, release_here
from store import connect_store
from store.base import waits
from store.base.typed_peewee import execute_sql

WAIT = 5.0  # seconds: far beyond anything these tests should take; hitting it is a failure


@pytest.fixture(autouse=True)
def _stop_leftovers() -> Iterator[None]:
    yield
    ActorRegistry.stop_all(block=True, timeout=WAIT)


class Link(PooledActor):
    """Tells the next link, then does what the message says; records where it ran."""

    def __init__(self, pool: WorkerPool, log: list[tuple[str, str, Any]]) -> None:
        super().__init__()
        self.name = ""
        self.next: ActorRef[Any] | None = None
        self._log = log

    def on_receive(self, message: Any) -> Any:
        kind, payload = message
        self._log.append((self.name, threading.current_thread().name, payload))
        if kind == "name":
            self.name, self.next = payload
        elif kind == "pass" and self.next is not None:
            self.next.tell(("pass", payload))
        elif kind == "tell-then-block":
            target, then = payload
            target.tell(("done", None))
            then()
        return None


def links(pool: WorkerPool, count: int) -> tuple[list[ActorRef[Any]], list[Any]]:
    """``count`` links on ``pool``, each telling the next; the log they share."""
    log: list[Any] = []
    kind: type[Link] = type("OnPool", (Link,), {"actor_pool": pool})
    refs = [kind.start(pool, log) for _ in range(count)]
    for index, ref in enumerate(refs):
        nxt = refs[index + 1] if index + 1 < count else None
        ref.ask(("name", (f"link{index}", nxt)), timeout=WAIT)
    log.clear()
    return refs, log


def wait_for(predicate: Any) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_a_chain_of_tells_runs_on_the_first_links_worker_with_one_hand_off() -> None:
    pool = WorkerPool("chain-kept", max_idle=4)
    refs, log = links(pool, 5)
    jobs, kept = pool.jobs, pool.kept
    refs[0].tell(("pass", "x"))
    wait_for(lambda: len(log) == 5)
    assert [name for name, _, _ in log] == [f"link{i}" for i in range(5)]
    assert len({thread for _, thread, _ in log}) == 1, log  # one worker ran the whole chain
    assert pool.jobs - jobs == 1  # only the first link, told from this thread, was handed off
    assert pool.kept - kept == 4


def test_a_message_from_another_thread_takes_a_kept_actor_off_a_busy_worker() -> None:
    """The cancel case: link0's handler tells link1 (kept on link0's worker) and then stays
    busy; a message told to link1 from outside runs on another worker within 100 ms."""
    pool = WorkerPool("steal", max_idle=0)
    refs, log = links(pool, 2)
    release = threading.Event()
    busy = threading.Event()

    def stay_busy() -> None:
        busy.set()
        release.wait(WAIT)  # not a wait the pool knows of: the worker just stays busy

    refs[0].tell(("tell-then-block", (refs[1], stay_busy)))
    assert busy.wait(WAIT)
    started = time.monotonic()
    refs[1].tell(("cancel", "now"))
    wait_for(lambda: any(payload == "now" for _, _, payload in log))
    assert time.monotonic() - started < 0.1
    # link1 took the message kept for it first, then the cancel, on a worker of its own
    ran = [(name, thread, payload) for name, thread, payload in log if name == "link1"]
    assert [payload for _, _, payload in ran] == [None, "now"]
    assert ran[0][1] != log[0][1]
    release.set()


def test_an_ask_between_actors_kept_on_one_worker_does_not_deadlock() -> None:
    """link0 tells link1 (kept here), then waits on link1's answer to an ask: the wait hands
    link1 to another worker first."""
    pool = WorkerPool("ask-kept", max_idle=0)
    refs, log = links(pool, 2)
    answered: list[Any] = []

    def ask_link1() -> None:
        answered.append(refs[1].ask(("echo", "asked"), timeout=WAIT))

    refs[0].tell(("tell-then-block", (refs[1], ask_link1)))
    wait_for(lambda: answered)
    assert [payload for name, _, payload in log if name == "link1"] == [None, "asked"]


def test_a_store_wait_hands_the_kept_actors_to_the_pool(tmp_path: Path) -> None:
    """link0 tells link1 (kept), then writes to the store and waits for the commit, during
    which the store calls the registered hook: link1 runs while the writer is held back."""
    waits.before_waiting(release_here)
    store = connect_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    pool = WorkerPool("store-kept", max_idle=0)
    refs, log = links(pool, 2)
    ran_during_wait = threading.Event()
    db = store.database
    execute_sql(db, "CREATE TABLE t (x INTEGER)")

    def write_while_link1_runs() -> None:
        with db.atomic():
            execute_sql(db, "INSERT INTO t VALUES (1)")
        # the commit was waited for; link1 ran on another worker by then, or during it
        ran_during_wait.set()

    refs[0].tell(("tell-then-block", (refs[1], write_while_link1_runs)))
    assert ran_during_wait.wait(WAIT)
    wait_for(lambda: any(name == "link1" for name, _, _ in log))
    threads = {name: thread for name, thread, _ in log}
    assert threads["link1"] != threads["link0"]  # handed off at the wait, not run after it
    store.close()


def test_an_actor_with_a_long_mailbox_lets_the_actors_kept_behind_it_run_between_messages() -> None:
    """link0 has 50 messages waiting; its first tells link1 (kept). link1 runs after link0's
    first message, not after its fiftieth: one message at a time each, in turn."""
    pool = WorkerPool("turns", max_idle=0)
    refs, log = links(pool, 2)
    gate = threading.Event()

    def hold() -> None:
        gate.wait(WAIT)

    refs[0].tell(("tell-then-block", (refs[1], hold)))  # link0 busy; link1 kept behind it
    for n in range(50):
        refs[0].tell(("pass", n))
    gate.set()
    wait_for(lambda: sum(1 for name, _, _ in log if name == "link1") == 51)
    order = [(name, payload) for name, _, payload in log]
    first_link1 = order.index(("link1", None))
    assert first_link1 <= 2, order[:5]
