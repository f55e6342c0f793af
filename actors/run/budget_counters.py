"""What each user has used, kept where a run's start reads it without a query: the budget
check's counters (the decision is ``wire.budgets.refusal``).

Two kinds of counts, kept for different reasons:

- per user, the runs open now and the turn starts of the last minute: counted here, in memory,
  as this process admits and ends runs (per instance: a user's runs on another instance on the
  same database are not counted against these two limits);
- per user, the estimated USD spent today and this month, and the budget settings themselves:
  re-read from the database by :meth:`BudgetCounters.refresh`, which the server runs every
  ``refresh_s`` on a worker thread (and once at its start, and after the console saves the
  settings), never on a run's path. The spend is what every instance's recorded calls cost, so
  a user's budget sees the calls of all instances within ``refresh_s``.

A run already admitted is never cut: the check is made once, at its start. Every access holds
one lock, since the SessionActors of many runs run on many threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

import peewee

from store import catalog
from store.database import log_store_failure
from store.user_spend import UserSpend, user_spend
from wire.budgets import MINUTE_MS, BudgetSettings, UserLimits, UserUsage, refusal
from wire.errors import ConnectError

logger = logging.getLogger("cursor_server.budgets")

# How often the spend and the settings are re-read from the database: how late a user's
# budget may see calls recorded elsewhere (another instance, or this one's since the last read).
BUDGET_REFRESH_S = 5.0


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def limits_of(stored: catalog.Limits) -> UserLimits:
    """The decision's limits from their stored form."""
    models = stored.allowed_models
    return UserLimits(
        usd_per_day=stored.usd_per_day,
        usd_per_month=stored.usd_per_month,
        turns_per_minute=stored.turns_per_minute,
        concurrent_runs=stored.concurrent_runs,
        allowed_models=None if models is None else frozenset(models),
    )


def settings_of(stored: catalog.BudgetsSettings) -> BudgetSettings:
    """The decision's settings from their stored form."""
    overrides = {user: limits_of(limits) for user, limits in stored.overrides.items()}
    return BudgetSettings(limits_of(stored.default), overrides)


def _newest(turns: deque[int] | None, count: int | None) -> tuple[int, ...]:
    if not turns or count is None:
        return ()
    if len(turns) <= count:
        return tuple(turns)
    return tuple(itertools.islice(turns, len(turns) - count, None))


def _has_budget(limits: UserLimits) -> bool:
    return limits.usd_per_day is not None or limits.usd_per_month is not None


class BudgetCounters:
    """user id -> runs open and recent turn starts (counted here), and spend (re-read)."""

    def __init__(self, database: peewee.Database, clock_ms: Callable[[], int] = _wall_ms) -> None:
        self._db = database
        self._clock_ms = clock_ms
        self._lock = threading.Lock()
        self._settings = BudgetSettings()
        self._spend: dict[str, UserSpend] = {}
        self._active: dict[str, int] = {}
        self._turns: dict[str, deque[int]] = {}

    def refresh(self) -> None:
        """Re-read the settings and, when any USD budget is set, every user's spend (two
        queries at most; on a worker thread, never a run's). A failure keeps what was read."""
        settings = settings_of(catalog.get_budgets(self._db))
        limits = (settings.default, *settings.overrides.values())
        spend = user_spend(self._db, self._clock_ms()) if any(map(_has_budget, limits)) else {}
        with self._lock:
            self._settings = settings
            self._spend = spend

    def admit(self, user_id: str, public_id: str) -> ConnectError | None:
        """Whether ``user_id`` may start a run of ``public_id`` now: the refusal, or None, the
        run then counted as open and as a turn started now (:meth:`release` at its end)."""
        now = self._clock_ms()
        with self._lock:
            limits = self._settings.limits_for(user_id)
            turns = self._turns.get(user_id)
            if turns is not None:
                while turns and turns[0] <= now - MINUTE_MS:
                    turns.popleft()
            spend = self._spend.get(user_id)
            usage = UserUsage(
                usd_today=spend.today if spend is not None else 0.0,
                usd_this_month=spend.month if spend is not None else 0.0,
                # Only the newest ``turns_per_minute`` matter to the decision (they are in
                # order): the rest is not copied.
                recent_turns_ms=_newest(turns, limits.turns_per_minute),
                active_runs=self._active.get(user_id, 0),
            )
            refused = refusal(limits, usage, public_id, now)
            if refused is not None:
                return refused
            self._active[user_id] = usage.active_runs + 1
            # Counted whatever the limit now, so a limit saved later sees the last minute.
            self._turns.setdefault(user_id, deque()).append(now)
            return None

    def release(self, user_id: str) -> None:
        """An admitted run ended: it no longer counts as open."""
        with self._lock:
            left = self._active.get(user_id, 0) - 1
            if left > 0:
                self._active[user_id] = left
            else:
                self._active.pop(user_id, None)


class BudgetRefresh:
    """Runs :meth:`BudgetCounters.refresh` on a worker thread: at :meth:`start` (awaited, so
    the first run is checked against what the database holds), then every ``interval_s``, and
    when :meth:`refresh` is awaited (after the console saved the settings)."""

    def __init__(self, counters: BudgetCounters, interval_s: float = BUDGET_REFRESH_S) -> None:
        self.counters = counters
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.refresh()
        self._task = asyncio.create_task(self._every_interval())

    async def refresh(self) -> None:
        await asyncio.to_thread(self._refresh_logged)

    def _refresh_logged(self) -> None:
        try:
            self.counters.refresh()
        except peewee.DatabaseError as exc:
            log_store_failure(logger, exc, "re-reading the budgets and spend failed")

    async def _every_interval(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                await self.refresh()
            except Exception:  # a bug must not stop the re-reads: the counts would go stale
                logger.exception("re-reading the budgets and spend failed")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
