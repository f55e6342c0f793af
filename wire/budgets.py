"""Whether a user may start a run now, under their budgets and limits: a pure decision.

Sans-IO, and no clock read here: the caller gives the time and what the user has used so far
(``UserUsage``, from counters it keeps), and gets back ``None`` (go on) or the refusal the
editor shows, a ``resource_exhausted`` ``ConnectError`` whose message says which limit, its
value and when it resets ("daily budget of $5.00 reached; resets at 00:00 UTC"). It is asked
once, when a run starts and before any provider call; a limit reached during a turn lets that
turn finish (nothing here is asked again mid-turn).

The limits (``UserLimits``, each ``None`` for "no limit"): estimated USD per UTC day and per
UTC month (the dashboard's cost rule), turns started per minute (a sliding 60 s window), runs
at once, and the models (public ids) the user may run. ``BudgetSettings`` is a default for
everyone and overrides per user id (``wire.identity``); an override replaces the default as a
whole, so a user can be given no limit where the default has one.
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from wire.errors import Code, ConnectError

MINUTE_MS = 60_000


class UserLimits(msgspec.Struct, frozen=True):
    """One user's limits; ``None``: no limit. ``allowed_models``: public ids, ``None`` any."""

    usd_per_day: float | None = None
    usd_per_month: float | None = None
    turns_per_minute: int | None = None
    concurrent_runs: int | None = None
    allowed_models: frozenset[str] | None = None


class BudgetSettings(msgspec.Struct, frozen=True):
    """The default for everyone and the overrides by user id (each replaces the default)."""

    default: UserLimits = UserLimits()
    overrides: dict[str, UserLimits] = {}

    def limits_for(self, user_id: str) -> UserLimits:
        return self.overrides.get(user_id, self.default)


class UserUsage(msgspec.Struct, frozen=True):
    """What the user has used when a run would start: estimated USD since today's and this
    month's UTC start, the start times (ms) of their turns of the last minute, and their runs
    running now (the new one not counted)."""

    usd_today: float = 0.0
    usd_this_month: float = 0.0
    recent_turns_ms: tuple[int, ...] = ()
    active_runs: int = 0


def _usd(value: float) -> str:
    return f"${value:,.2f}"


def _month_start_after(moment: datetime) -> datetime:
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


def _refused(message: str) -> ConnectError:
    return ConnectError(Code.RESOURCE_EXHAUSTED, message)


def turns_in_window(recent_turns_ms: tuple[int, ...], now_ms: int) -> tuple[int, ...]:
    """The turn starts still inside the sliding minute ending at ``now_ms``."""
    return tuple(t for t in recent_turns_ms if now_ms - MINUTE_MS < t <= now_ms)


def refusal(
    limits: UserLimits, usage: UserUsage, public_id: str, now_ms: int
) -> ConnectError | None:
    """Why a run of ``public_id`` may not start at ``now_ms``; None when it may. The checks
    run in a fixed order (model, runs at once, turns per minute, day, month), the first
    failing one answering."""
    allowed = limits.allowed_models
    if allowed is not None and public_id not in allowed:
        names = ", ".join(sorted(allowed)) or "none"
        return _refused(f"model {public_id} is not allowed for you (allowed: {names})")
    if limits.concurrent_runs is not None and usage.active_runs >= limits.concurrent_runs:
        return _refused(
            f"limit of {limits.concurrent_runs} runs at once reached; "
            "start this one when another has ended"
        )
    if limits.turns_per_minute is not None:
        recent = turns_in_window(usage.recent_turns_ms, now_ms)
        if len(recent) >= limits.turns_per_minute:
            # Free again once the turn that would leave the window first has left it.
            oldest = sorted(recent)[len(recent) - limits.turns_per_minute]
            wait_s = max(1, -(-(oldest + MINUTE_MS - now_ms) // 1000))
            return _refused(
                f"limit of {limits.turns_per_minute} turns per minute reached; "
                f"try again in {wait_s} s"
            )
    now = datetime.fromtimestamp(now_ms / 1000, UTC)
    if limits.usd_per_day is not None and usage.usd_today >= limits.usd_per_day:
        return _refused(f"daily budget of {_usd(limits.usd_per_day)} reached; resets at 00:00 UTC")
    if limits.usd_per_month is not None and usage.usd_this_month >= limits.usd_per_month:
        reset = _month_start_after(now)
        return _refused(
            f"monthly budget of {_usd(limits.usd_per_month)} reached; "
            f"resets on {reset:%Y-%m-%d} at 00:00 UTC"
        )
    return None


def day_start_ms(now_ms: int) -> int:
    """The start of ``now_ms``'s UTC day: where the daily budget's spending is counted from."""
    return now_ms - now_ms % (24 * 60 * MINUTE_MS)


def month_start_ms(now_ms: int) -> int:
    """The start of ``now_ms``'s UTC month: where the monthly budget's spending is counted from."""
    now = datetime.fromtimestamp(now_ms / 1000, UTC)
    start = datetime(now.year, now.month, 1, tzinfo=UTC)
    return int(start.timestamp() * 1000)
