"""What the servers in this process have crossed so far: jobs handed to the actor pool (and how
many woke a waiting worker; actors kept on the worker that made them ready are counted apart),
wake-ups of the asyncio loop by the actors (``LoopCalls``, and coroutines they submitted), and
the process's context switches (every thread, from ``getrusage``; the test's own client and fake
provider included)."""

from __future__ import annotations

import resource
from dataclasses import dataclass, fields

from actors.loop.bridge import loop_wakeups
from actors.pool.pooled_actor import ACTOR_POOL


@dataclass(frozen=True)
class Crossings:
    handoffs: int  # jobs handed to the actor pool: an actor made ready from idle
    woken: int  # of those, the ones that woke a waiting worker thread
    kept: int  # actors made ready on a worker and run there next: no hand-off
    loop_wakeups: int  # actor -> loop: LoopCalls bursts and submitted coroutines
    context_switches: int  # the whole process's, voluntary and not

    def __sub__(self, other: Crossings) -> Crossings:
        return Crossings(
            *(getattr(self, f.name) - getattr(other, f.name) for f in fields(Crossings))
        )


def crossings() -> Crossings:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return Crossings(
        handoffs=ACTOR_POOL.jobs,
        woken=ACTOR_POOL.woken,
        kept=ACTOR_POOL.kept,
        loop_wakeups=loop_wakeups(),
        context_switches=usage.ru_nvcsw + usage.ru_nivcsw,
    )
