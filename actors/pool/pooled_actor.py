"""PooledActor: a ``pykka.ThreadingActor`` whose mailbox is drained on a shared worker pool.

Why: every run starts about five actors, and a ``ThreadingActor`` starts a thread of its own,
which then wakes from ``queue.Queue.get`` (a Python-level condition variable) for every message.
At 50 concurrent runs the thread start-ups, wake-ups and interpreter-lock hand-overs were about
a tenth of the server's CPU. A pooled actor starts no thread: a message put into an idle
actor's mailbox hands the actor to a worker of ``ACTOR_POOL`` (``actors.pool.worker_pool``),
which runs its messages until the mailbox is empty and then takes the next ready actor. A
message put while the actor is on a worker only joins the mailbox: no wake-up at all.

pykka's guarantees stay: one message at a time per actor, in the order they were put (the
mailbox is handed to at most one worker at a time, its ``scheduled`` flag guarded by the
mailbox's lock); ``on_start`` runs on a worker before the first message; ``stop()``,
``on_stop``, ``on_failure``, ``ask``/``tell``/``proxy`` and the ``ActorRegistry`` are pykka's
own; a message left in the mailbox when the actor stops, or put after it stopped, gets
``ActorDeadError`` (a stop request gets None, as pykka's teardown answers it). A handler may
block (on another actor's future, a store write): the pool grows instead of deadlocking.

An actor made ready by a handler running on a worker is kept on that worker and runs there
next (``WorkerPool.run_soon``): a run's actors take turns on one thread while they hand work to
each other. Three rules keep that from holding anyone up: an actor that others wait behind on
its worker gives the worker back after each message (it is kept again, behind them); a message
from another thread for an actor kept on a worker that has not started it takes the actor and
runs it elsewhere at once (a cancel from the loop gets through while that worker is busy); and
a worker about to wait on a pooled actor's future first hands what it keeps to the pool
(``PooledFuture``), so an ask between a run's actors cannot deadlock.

This reuses pykka's internals, read in pykka 4.5 and pinned to it in ``setup.cfg``:
``Actor._actor_loop_setup`` (``on_start``), ``_handle_receive``, ``_handle_failure``,
``_stop``, ``_actor_loop_teardown`` (which drains through the inbox's ``get``/``empty``), the
inbox protocol ``put``/``get``/``empty`` that ``ActorRef`` calls, ``Envelope`` and
``messages._ActorStop``. What is ours is only the scheduling: ``_run_on_worker`` replaces
``_actor_loop_running``'s blocking loop with one that returns when the mailbox is empty.

Differences from ``ThreadingActor``: ``use_daemon_thread`` is not read (every worker is a
daemon thread, as every actor of ours already was); thread-local state does not carry from one
message to the next (a message may run on another worker), which no actor of ours relies on.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import pykka
from pykka import ActorDeadError, ActorRegistry, ThreadingFuture, messages

from actors.pool.worker_pool import Ticket, WorkerPool, others_kept_here, release_here

if TYPE_CHECKING:
    from pykka._envelope import Envelope

# pykka's own logger, so a pooled actor logs its failures where a ThreadingActor does.
logger = logging.getLogger("pykka")

# Idle workers kept for the next ready actor; a worker finishing when this many already wait
# ends. A burst beyond it starts threads, which end again after it.
MAX_IDLE_WORKERS = 64

ACTOR_POOL = WorkerPool("actor-pool", MAX_IDLE_WORKERS)


class Mailbox:
    """One pooled actor's envelopes, and whether the actor is on (or handed to) a worker."""

    __slots__ = (
        "_closed",
        "_envelopes",
        "_job",
        "_lock",
        "_name",
        "_pool",
        "_scheduled",
        "_ticket",
    )

    def __init__(self) -> None:
        self._envelopes: deque[Envelope[Any]] = deque()
        self._lock = threading.Lock()
        # True until the actor starts (messages put before wait for on_start), and while a
        # worker holds the actor or keeps it to run next.
        self._scheduled = True
        # How the actor was last made ready; claimable while a worker keeps it unstarted.
        self._ticket: Ticket | None = None
        self._closed = False
        self._pool: WorkerPool | None = None
        self._job: Callable[[], None] | None = None
        self._name = ""

    def bind(self, pool: WorkerPool, job: Callable[[], None], name: str) -> None:
        """``job`` drains the actor (called ``name``) on a worker of ``pool``; a put that finds
        the actor idle makes it ready."""
        self._pool = pool
        self._job = job
        self._name = name

    def put(self, envelope: Envelope[Any], /) -> None:
        ticket = None
        with self._lock:
            if not self._closed:
                self._envelopes.append(envelope)
                ticket = self._make_ready()
                if ticket is None:
                    return
        if ticket is None:
            _refuse(envelope, self._name)
            return
        assert self._pool is not None
        self._pool.run_soon(ticket)

    def _make_ready(self) -> Ticket | None:
        """Under the lock, an envelope just put: the actor's new ticket when it must be made
        ready, or None when a worker holds it or will start it."""
        if self._scheduled:
            held = self._ticket
            if held is None or held.keeper in (None, threading.get_ident()):
                return None  # on a worker, handed to one, or kept by this very thread
            if not held.claim():
                return None  # its keeper started it: it will take this envelope
            # Kept, unstarted, by a worker that may be busy for a while: run it elsewhere now.
        self._scheduled = True
        ticket = self._ticket = Ticket(self._run)
        return ticket

    def ready(self) -> None:
        """Make the actor ready (its start, or its turn given back with envelopes left)."""
        with self._lock:
            ticket = self._ticket = Ticket(self._run)
        assert self._pool is not None
        self._pool.run_soon(ticket)

    def _run(self) -> None:
        job = self._job
        if job is not None:  # None: the actor stopped (no ticket outlives that, but be sure)
            job()

    def take(self) -> Envelope[Any] | None:
        """The next envelope, or None, in which case the actor is no longer held by a worker."""
        with self._lock:
            if self._envelopes:
                return self._envelopes.popleft()
            self._scheduled = False
            self._ticket = None
            return None

    def close(self) -> None:
        """Refuse every later put: the actor has stopped. The mailbox lets go of the actor: an
        ``ActorRef`` holds its mailbox long after (the edge keeps a finished run's for its
        retention period), and the actor must not live as long (a run's whole state)."""
        with self._lock:
            self._closed = True
            self._job = None
            self._ticket = None

    # What pykka's teardown drains the mailbox with (it runs after ``close``).
    def get(self) -> Envelope[Any]:
        with self._lock:
            return self._envelopes.popleft()

    def empty(self) -> bool:
        with self._lock:
            return not self._envelopes

    def qsize(self) -> int:
        """Envelopes waiting, the one being handled not counted (``queue.Queue``'s meaning)."""
        return len(self._envelopes)


def _refuse(envelope: Envelope[Any], name: str) -> None:
    """Answer an envelope that arrived after its actor stopped, as pykka's teardown does."""
    if envelope.reply_to is None:
        return
    if isinstance(envelope.message, messages._ActorStop):
        envelope.reply_to.set(None)
    else:
        error = ActorDeadError(f"{name} stopped before handling the message")
        envelope.reply_to.set_exception(exc_info=(ActorDeadError, error, None))


class PooledActor(pykka.ThreadingActor):
    """A ThreadingActor run on ``actor_pool``'s workers instead of a thread of its own."""

    actor_pool: ClassVar[WorkerPool] = ACTOR_POOL

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._mailbox: Mailbox = self.actor_inbox  # type: ignore[assignment]
        self._mailbox.bind(self.actor_pool, self._run_on_worker, str(self.actor_ref))
        self._on_start_done = False

    @staticmethod
    def _create_actor_inbox() -> Mailbox:
        return Mailbox()

    @staticmethod
    def _create_future() -> PooledFuture[Any]:
        return PooledFuture()

    def _start_actor_loop(self) -> None:
        self._mailbox.ready()

    def _run_on_worker(self) -> None:
        """Run on a worker: ``on_start`` the first time, then messages until none is left, or
        until another actor kept on this worker waits (then this one is kept again, behind)."""
        if not self._on_start_done:
            self._on_start_done = True
            self._actor_loop_setup()
        while not self.actor_stopped.is_set():
            envelope = self._mailbox.take()
            if envelope is None:
                return
            self._handle_envelope(envelope)
            if others_kept_here() and self._mailbox.qsize() and not self.actor_stopped.is_set():
                self._mailbox.ready()  # kept again, behind the ones waiting here
                return
        self._mailbox.close()
        self._actor_loop_teardown()

    def _handle_envelope(self, envelope: Envelope[Any]) -> None:
        """One message, answered as pykka's ``_actor_loop_running`` answers it."""
        try:
            response = self._handle_receive(envelope.message)
            if envelope.reply_to is not None:
                envelope.reply_to.set(response)
        except Exception:
            if envelope.reply_to is not None:
                logger.info(f"Exception returned from {self} to caller:", exc_info=sys.exc_info())
                envelope.reply_to.set_exception()
            else:
                self._handle_failure(*sys.exc_info())
                try:
                    self.on_failure(*sys.exc_info())
                except Exception:
                    self._handle_failure(*sys.exc_info())
        except BaseException:
            logger.debug(f"{sys.exc_info()[1]!r} in {self}. Stopping all actors.")
            release_here()  # stop_all waits for every actor, the ones kept here too
            self._stop()
            ActorRegistry.stop_all()


T = TypeVar("T")


class PooledFuture(ThreadingFuture[T]):
    """A pooled actor's answer: waiting for it on a worker first hands that worker's kept actors
    to the pool, since the answer may come from one of them."""

    def get(self, *, timeout: float | None = None) -> Any:
        if self._result is None:  # pykka's own field: no answer yet, so this will wait
            release_here()
        return super().get(timeout=timeout)
