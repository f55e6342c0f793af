"""A cached thread pool: jobs run on reused worker threads, and the pool grows when none is idle.

Why not a fixed-size pool: an actor's handler may block (on another actor's future, a store
write, a provider's first byte), and a job queued behind blocked workers could be the one they
wait for. So a job never waits for a worker: it goes to an idle worker, else to a new one. A
worker that finishes waits for the next job while fewer than ``max_idle`` others wait; beyond
that it ends, which bounds the threads kept after a burst.

Each idle worker waits on its own ``queue.SimpleQueue`` (one C lock, no Python-level condition
variable), and the most recently idle worker is handed the next job, so a few hot threads do
most of the work and the rest stay asleep.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections.abc import Callable

logger = logging.getLogger("cursor_server.pool")

Job = Callable[[], None]


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
        # switch each; the others started a thread): what a run costs in hand-offs.
        self._jobs = 0
        self._woken = 0

    @property
    def threads_started(self) -> int:
        """How many worker threads this pool has started in its life."""
        return self._started

    @property
    def jobs(self) -> int:
        """Jobs handed to the pool in its life: one per actor made ready from idle."""
        return self._jobs

    @property
    def woken(self) -> int:
        """Jobs that woke a waiting worker (the rest started a thread)."""
        return self._woken

    @property
    def idle(self) -> int:
        """Workers waiting for a job now."""
        return len(self._idle)

    @property
    def busy(self) -> int:
        """Workers running a job now."""
        return self._busy

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
        job: Job | None = first
        while job is not None:
            try:
                job()
            except BaseException:  # a job's own errors are its own; the worker goes on
                logger.exception("a job on %s raised", threading.current_thread().name)
            job = None  # drop the job (and the actor it holds) before waiting
            with self._lock:
                self._busy -= 1
                if len(self._idle) >= self.max_idle:
                    return
                self._idle.append(slot)
            job = slot.get()
