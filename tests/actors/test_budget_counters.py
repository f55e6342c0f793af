"""``BudgetCounters`` on a real store (SQLite and PostgreSQL), its clock given: runs open and
turn starts counted in memory, the spend and the settings only what the last re-read saw."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.run.budget_counters import BudgetCounters
from store import Store
from store.catalog import (
    Limits,
    ModelInput,
    ProviderInput,
    create_provider,
    save_models,
    update_budgets,
)
from store.database import connect_store
from store.llm_calls import CallEnd, CallRecords, CallStatus, NewCall

# 2026-03-15 12:00 UTC, in ms.
NOON = 1_773_576_000_000
DAY = 86_400_000


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = connect_store(db_url)
    yield opened
    opened.close()


class Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def priced(store: Store) -> str:
    provider = create_provider(
        store.database, ProviderInput(name="p", type="openai-chat", base_url="https://p.example")
    )
    model = ModelInput(model_id="m", display_name="M", price_input_per_mtok=1000.0)
    return save_models(store.database, provider.id, [model])[0].public_id


def spend(store: Store, user: str, public_id: str, usd: float, at_ms: int) -> None:
    """A call of ``user``'s costing ``usd`` (1000 input tokens per $1), started at ``at_ms``."""
    records = CallRecords(store.database)
    call = NewCall(
        None, f"{user}:{at_ms}", 1, "p", "openai-chat", "https://p.example", public_id, "m",
        "M", False, user_id=user,
    )  # fmt: skip
    call_id = records.start(call, started_at_ms=at_ms)
    usage = {"input_tokens": round(usd * 1000), "output_tokens": 0}
    records.finish(call_id, CallEnd(CallStatus.COMPLETED, 1.0, 1, usage=usage, http_status=200))


def test_spend_counts_from_the_last_refresh_by_day_and_month(store: Store) -> None:
    model = priced(store)
    update_budgets(store.database, default=Limits(usd_per_day=2.0, usd_per_month=5.0))
    clock = Clock(NOON)
    counters = BudgetCounters(store.database, clock)
    spend(store, "alice", model, 1.5, NOON - 14 * DAY)  # this month, not today
    spend(store, "alice", model, 2.0, NOON - 1000)  # today
    spend(store, "bob", model, 1.0, NOON - 20 * DAY)  # last month
    # Nothing read yet: no limit is known, no spend either.
    assert counters.admit("alice", model) is None
    counters.release("alice")
    counters.refresh()
    refused = counters.admit("alice", model)
    assert refused is not None and refused.message == (
        "daily budget of $2.00 reached; resets at 00:00 UTC"
    )
    assert counters.admit("bob", model) is None
    counters.release("bob")
    # The next day: today's spend is none, the month's $3.50 is under $5.
    clock.now = NOON + DAY
    counters.refresh()
    assert counters.admit("alice", model) is None
    counters.release("alice")
    spend(store, "alice", model, 1.5, NOON + DAY - 1)
    assert counters.admit("alice", model) is None  # not re-read yet
    counters.release("alice")
    counters.refresh()
    refused = counters.admit("alice", model)
    assert refused is not None
    assert refused.message == ("monthly budget of $5.00 reached; resets on 2026-04-01 at 00:00 UTC")


def test_open_runs_and_turns_of_the_last_minute_are_counted_here(store: Store) -> None:
    model = priced(store)
    update_budgets(
        store.database,
        default=Limits(concurrent_runs=2, turns_per_minute=3),
        overrides={"bob": Limits()},
    )
    clock = Clock(NOON)
    counters = BudgetCounters(store.database, clock)
    counters.refresh()
    assert counters.admit("alice", model) is None
    assert counters.admit("alice", model) is None
    refused = counters.admit("alice", model)
    assert refused is not None and "2 runs at once" in refused.message
    counters.release("alice")
    clock.now += 10_000
    assert counters.admit("alice", model) is None  # a third turn within the minute
    counters.release("alice")
    counters.release("alice")
    clock.now += 10_000
    refused = counters.admit("alice", model)
    assert refused is not None
    assert refused.message == "limit of 3 turns per minute reached; try again in 40 s"
    clock.now = NOON + 60_000  # the first turn has left the window
    assert counters.admit("alice", model) is None
    for _ in range(10):  # an override with no limit
        assert counters.admit("bob", model) is None
