"""The per-user budget and limit decision (``wire.budgets``): which limit refuses a run, with
the message the editor shows, and when it lets the run start."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from wire.budgets import (
    BudgetSettings,
    UserLimits,
    UserUsage,
    day_start_ms,
    month_start_ms,
    refusal,
    turns_in_window,
)
from wire.errors import Code


def at(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


NOW = at("2026-12-06T09:30:00")


def message(limits: UserLimits, usage: UserUsage, model: str = "m1", now: int = NOW) -> str | None:
    refused = refusal(limits, usage, model, now)
    if refused is None:
        return None
    assert refused.code is Code.RESOURCE_EXHAUSTED
    return refused.message


def test_no_limits_never_refuse() -> None:
    heavy = UserUsage(1e9, 1e9, tuple(range(NOW - 1000, NOW)), 1000)
    assert message(UserLimits(), heavy) is None


def test_the_daily_budget_refuses_once_reached_and_says_when_it_resets() -> None:
    limits = UserLimits(usd_per_day=5.0)
    assert message(limits, UserUsage(usd_today=4.99)) is None
    assert message(limits, UserUsage(usd_today=5.0)) == (
        "daily budget of $5.00 reached; resets at 00:00 UTC"
    )


def test_the_monthly_budget_names_the_first_of_next_month_even_in_december() -> None:
    limits = UserLimits(usd_per_month=1234.5)
    assert message(limits, UserUsage(usd_this_month=1234.49)) is None
    assert message(limits, UserUsage(usd_this_month=2000.0)) == (
        "monthly budget of $1,234.50 reached; resets on 2027-01-01 at 00:00 UTC"
    )
    june = at("2026-06-30T23:59:59")
    assert message(limits, UserUsage(usd_this_month=2000.0), now=june) == (
        "monthly budget of $1,234.50 reached; resets on 2026-07-01 at 00:00 UTC"
    )


def test_turns_per_minute_slide_and_say_how_long_to_wait() -> None:
    limits = UserLimits(turns_per_minute=3)
    old = NOW - 60_000  # left the window exactly now
    assert message(limits, UserUsage(recent_turns_ms=(old, NOW - 50_000, NOW - 1_000))) is None
    full = (NOW - 45_500, NOW - 30_000, NOW - 1_000)
    assert message(limits, UserUsage(recent_turns_ms=full)) == (
        "limit of 3 turns per minute reached; try again in 15 s"
    )
    assert turns_in_window((old, NOW - 1, NOW, NOW + 5), NOW) == (NOW - 1, NOW)


def test_runs_at_once_and_allowed_models() -> None:
    limits = UserLimits(concurrent_runs=2, allowed_models=frozenset({"m1", "m2"}))
    assert message(limits, UserUsage(active_runs=1)) is None
    assert message(limits, UserUsage(active_runs=2)) == (
        "limit of 2 runs at once reached; start this one when another has ended"
    )
    assert message(limits, UserUsage(), model="m3") == (
        "model m3 is not allowed for you (allowed: m1, m2)"
    )
    nothing = UserLimits(allowed_models=frozenset())
    assert message(nothing, UserUsage()) == "model m1 is not allowed for you (allowed: none)"


def test_the_first_failing_check_in_the_fixed_order_answers() -> None:
    limits = UserLimits(
        usd_per_day=1.0, usd_per_month=1.0, turns_per_minute=1, concurrent_runs=1,
        allowed_models=frozenset({"m1"}),
    )  # fmt: skip
    over = UserUsage(usd_today=9, usd_this_month=9, recent_turns_ms=(NOW,), active_runs=9)
    expected = ["not allowed", "runs at once", "turns per minute", "daily", "monthly"]
    for word in expected:
        text = message(limits, over, model="m1" if word != "not allowed" else "m9")
        assert text is not None and word in text
        if word == "not allowed":
            continue
        # Lift this one; the next in the order answers.
        over = {
            "runs at once": lambda u: UserUsage(u.usd_today, u.usd_this_month, u.recent_turns_ms),
            "turns per minute": lambda u: UserUsage(u.usd_today, u.usd_this_month),
            "daily": lambda u: UserUsage(0, u.usd_this_month),
            "monthly": lambda u: UserUsage(),
        }[word](over)
    assert message(limits, over) is None


def test_an_override_replaces_the_default_as_a_whole() -> None:
    settings = BudgetSettings(
        default=UserLimits(usd_per_day=5.0, turns_per_minute=10),
        overrides={"boss@example.com": UserLimits()},
    )
    assert settings.limits_for("someone") == UserLimits(usd_per_day=5.0, turns_per_minute=10)
    assert settings.limits_for("boss@example.com") == UserLimits()


@pytest.mark.parametrize(
    ("now", "day", "month"),
    [
        ("2026-12-06T09:30:00", "2026-12-06T00:00:00", "2026-12-01T00:00:00"),
        ("2027-01-01T00:00:00", "2027-01-01T00:00:00", "2027-01-01T00:00:00"),
        ("2028-02-29T23:59:59", "2028-02-29T00:00:00", "2028-02-01T00:00:00"),
    ],
)
def test_day_and_month_starts_are_utc(now: str, day: str, month: str) -> None:
    assert day_start_ms(at(now)) == at(day)
    assert month_start_ms(at(now)) == at(month)
