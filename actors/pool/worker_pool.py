"""A cached thread pool whose workers keep the jobs their own job makes ready.

Why a cached pool, not a fixed-size one: an actor's handler may block (on another actor's
future, a store write), and a job queued behind blocked workers could be the one they wait for.
So a job handed to the pool never waits for a worker: it goes to an idle worker, else to a new
one. A worker that finishes waits for the next job while fewer than ``max_idle`` others wait;
beyond that it ends, which bounds the threads kept after a burst. Each idle worker waits on its
own ``queue.SimpleQueue`` (one C lock), and the most recently idle worker is handed the next job,
so a few hot threads do most of the work and the rest stay asleep.

Why workers keep jobs (``run_soon``): the actors of one run hand work to each other in chains
(the session tells the checkpoint builder, which tells the blob sync, ...). Handing each link to
another worker wakes a thread and moves the interpreter lock for a few microseconds of work. A
job made ready on a worker is instead kept on that worker, in a queue of its own, and run there
once the current job returns: the run's actors take turns on one thread while they talk, which
is Akka's dispatcher per actor, chosen here by who made the actor ready. A kept job is held by a
``Ticket``; whoever claims the ticket first runs the job, so a kept job is never stuck behind a
worker that blocks:

- the worker hands its kept jobs to the pool before it blocks (``release_here``: the pooled
  actors' futures and the store's waits call it);
- a message for a kept actor from another thread (the loop's cancel) claims the ticket and runs
  the actor at once (``PooledActor``'s mailbox).
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable

logger = logging.getLogger("cursor_server.pool")

Job = Callable[[], None]


class Ticket:
    """One job made ready: run by whoever claims it first (its keeper, or a thread taking it)."""

    __slots__ = ("_claim", "job", "keeper")

    def __init__(self, job: Job) -> None:
        self.job = job
        # The thread whose queue holds the ticket, once kept (None: handed to the pool).
        self.keeper: int | None = None
        self._claim = threading.Lock()

    def claim(self) -> bool:
        """True for the one caller that may run the job; False for every later one."""
        return self._claim.acquire(blocking=False)


class _Here(threading.local):
    """What the current thread keeps, when it is a worker running a job."""

    kept: deque[Ticket] | None = None
    pool: WorkerPool | None = None


_HERE = _Here()


def release_here() -> None:
    """The current thread is about to block: hand the jobs it keeps to other workers.

    A no-op on a thread that is not a worker running a job, or that keeps nothing."""
    kept, pool = _HERE.kept, _HERE.pool
    while kept:
        ticket = kept.popleft()
        if ticket.claim():
            assert pool is not None
            pool.submit(ticket.job)


def others_kept_here() -> bool:
    """Whether the current worker keeps jobs waiting for its current one to return."""
    return bool(_HERE.kept)


class WorkerPool:
    """Runs jobs on daemon worker threads named ``<name>-<n>``; never makes a job wait for one."""

    def __init__(self, name: str, max_idle: int) -> None:
        if max_idle < 0:
            raise ValueError(f"max_idle must be >= 0, not {max_idle}")
        self.name = name
        self.max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Job]] = []
        self._numbers = itertools.count()
        self._started = 0
        self._busy = 0
        # Every job handed over, and how many of those woke a waiting worker (a thread
        # switch each; the others started a thread): what a run costs in hand-offs. Jobs kept
        # on the worker that made them ready are counted apart: they cost no thread.
        self._jobs = 0
        self._woken = 0
        self._kept = 0

    @property
    def threads_started(self) -> int:
        """How many worker threads this pool has started in its life."""
        return self._started

    @property
    def jobs(self) -> int:
        """Jobs handed to a worker in the pool's life (an idle one, or a new one)."""
        return self._jobs

    @property
    def woken(self) -> int:
        """Jobs that woke a waiting worker (the rest started a thread)."""
        return self._woken

    @property
    def kept(self) -> int:
        """Jobs kept on the worker that made them ready, run there with no hand-off."""
        return self._kept

    @property
    def idle(self) -> int:
        """Workers waiting for a job now."""
        return len(self._idle)

    @property
    def busy(self) -> int:
        """Workers running a job now."""
        return self._busy

    def run_soon(self, ticket: Ticket) -> None:
        """Run ``ticket``'s job: kept on this worker when called from one of this pool's
        workers during a job, else handed to the pool (if nobody claimed it meanwhile)."""
        kept = _HERE.kept
        if kept is not None and _HERE.pool is self:
            ticket.keeper = threading.get_ident()
            kept.append(ticket)
            with self._lock:
                self._kept += 1
        elif ticket.claim():
            self.submit(ticket.job)

    def submit(self, job: Job) -> None:
        """Run ``job`` on an idle worker, or on a new one when every worker is busy."""
        with self._lock:
            self._busy += 1
            self._jobs += 1
            slot = self._idle.pop() if self._idle else None
            if slot is not None:
                self._woken += 1
            else:
                self._started += 1
                number = next(self._numbers)
        if slot is not None:
            slot.put(job)
            return
        thread = threading.Thread(
            target=self._work, args=(job,), name=f"{self.name}-{number}", daemon=True
        )
        thread.start()

    def _work(self, first: Job) -> None:
        slot: queue.SimpleQueue[Job] = queue.SimpleQueue()
        kept: deque[Ticket] = deque()
        _HERE.pool = self
        job: Job | None = first
        ticket: Ticket | None = None
        while job is not None:
            _HERE.kept = kept
            _run(job)
            while kept:
                ticket = kept.popleft()
                if ticket.claim():
                    _run(ticket.job)
            _HERE.kept = None
            job = ticket = None  # drop the jobs (and the actors they hold) before waiting
            with self._lock:
                self._busy -= 1
                if len(self._idle) >= self.max_idle:
                    return
                self._idle.append(slot)
            job = slot.get()


def _run(job: Job) -> None:
    try:
        job()
    except BaseException:  # a job's own errors are its own; the worker goes on
        logger.exception("a job on %s raised", threading.current_thread().name)
