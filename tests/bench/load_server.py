"""``python run.py`` as it runs for a user, plus a count of the database transactions it commits
and of its crossings (actor-pool hand-offs, loop wake-ups, context switches).

The load benchmark prints transactions per turn, which only the server's own process can count:
this wraps ``peewee.Database.commit`` and the group-commit writer's COMMIT with a counter,
written as JSON to ``LOAD_STATS_FILE`` when the process gets SIGUSR1 (only then: a thread
writing it every 50 ms showed in the server's CPU). Nothing else differs from ``run.py``.
"""

from __future__ import annotations

import json
import os
import resource
import runpy
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import peewee

REPO = Path(__file__).resolve().parents[2]
_commits = [0]
_original_commit = peewee.Database.commit


def _counting_commit(self: peewee.Database, *args: Any, **kwargs: Any) -> Any:
    _commits[0] += 1
    return _original_commit(self, *args, **kwargs)


def _count_group_commits() -> None:
    """The group-commit writer COMMITs straight on its driver connection: count those too."""
    try:
        from store import group_commit
    except ImportError:  # a build from before group commit
        return
    original = group_commit._execute

    def counting(conn: Any, sql: str) -> None:
        if sql == "COMMIT":
            _commits[0] += 1
        original(conn, sql)

    group_commit._execute = counting


def publisher(path: str) -> Callable[[int, Any], None]:
    """A SIGUSR1 handler writing the count and how many times it was asked (``asked``)."""
    asked = [0]

    def publish(signum: int, frame: Any) -> None:
        from actors.loop.bridge import loop_wakeups
        from actors.pool.pooled_actor import ACTOR_POOL

        asked[0] += 1
        usage = resource.getrusage(resource.RUSAGE_SELF)
        stats = {
            "commits": _commits[0],
            "asked": asked[0],
            "handoffs": ACTOR_POOL.jobs,
            # Actors made ready on a worker and run there next (0 on a build without them).
            "kept": getattr(ACTOR_POOL, "kept", 0),
            "loop_wakeups": loop_wakeups(),
            "context_switches": usage.ru_nvcsw + usage.ru_nivcsw,
        }
        Path(path + ".tmp").write_text(json.dumps(stats))
        os.replace(path + ".tmp", path)

    return publish


if __name__ == "__main__":
    _count_group_commits()
    signal.signal(signal.SIGUSR1, publisher(os.environ["LOAD_STATS_FILE"]))
    # Every peewee commit counted for as long as the server runs.
    with mock.patch.object(peewee.Database, "commit", _counting_commit):
        runpy.run_path(str(REPO / "run.py"), run_name="__main__")
