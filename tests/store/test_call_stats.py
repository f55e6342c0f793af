"""The dashboard's aggregates (``store.call_stats``) over call records written by the store's own
functions (``store.llm_calls.CallRecords``), and migration 8 that they need.

Each test runs on a SQLite file and, when CURSOR_TEST_POSTGRES_URL is set, on PostgreSQL. The
records' clock (``store.llm_calls.now_ms``) is set per call, so each call starts where the test
puts it; the aggregates are asked for at a fixed ``NOW``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec
import peewee
import pytest

from store import Store, apply_migrations, llm_calls, open_database
from store import catalog as cat
from store.base.typed_peewee import execute_sql
from store.call_stats import (
    DAY_MS,
    HOUR_MS,
    MINUTE_MS,
    RANGES,
    CacheHitRate,
    CallStats,
    ModelDayCost,
    ModelLabel,
    StatsUnavailable,
    TokenCounts,
    UnknownRange,
    call_costs,
    call_stats,
    period_cost,
)
from store.catalog.urls import public_model_id
from store.llm_calls import CallEnd, CallRecords, CallStatus, NewCall
from store.migrations import model_prices_and_time_to_first_token, registered_migrations
from tests.store.test_conversation_store import rows

# 2025-06-15 12:34:30.000 UTC: not on a minute, hour or day boundary.
NOW = 1_749_990_870_000
HOUR_END = NOW - NOW % MINUTE_MS + MINUTE_MS  # the hour range's scope ends with this minute
HOUR_START = HOUR_END - 60 * MINUTE_MS
MONTH_END = NOW - NOW % DAY_MS + DAY_MS
MONTH_START = MONTH_END - 30 * DAY_MS


class Clock:
    """The call records' clock, set by the test before each write."""

    def __init__(self) -> None:
        self.ms = NOW

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fixed = Clock()
    monkeypatch.setattr(llm_calls, "now_ms", fixed)
    return fixed


@pytest.fixture
def db(opened: Store) -> peewee.Database:
    return opened.database


class Calls:
    """Writes call records through ``CallRecords`` at chosen start times."""

    def __init__(self, db: peewee.Database, clock: Clock) -> None:
        self.records = CallRecords(db)
        self.clock = clock

    def add(
        self,
        at_ms: int,
        model: cat.ModelRecord,
        status: CallStatus | None = CallStatus.COMPLETED,
        /,
        *,
        http_status: int | None = 200,
        ttft_ms: float | None = None,
        **usage: int,
    ) -> int:
        """One call started at ``at_ms``; ``status`` None leaves it running."""
        self.clock.ms = at_ms
        call = NewCall(
            run_id="run",
            model_call_id=f"run:{at_ms}",
            provider_id=model.provider_id,
            provider_name=model.provider_name,
            provider_type=model.provider_type,
            provider_url="http://127.0.0.1:9/v1",
            public_id=model.public_id,
            model_id=model.model_id,
            display_name=model.display_name,
            verbose=False,
        )
        call_id = self.records.start(call)
        if status is not None:
            end = CallEnd(
                status,
                duration_ms=5.0,
                response_bytes=10,
                usage=usage,
                http_status=http_status,
                ttft_ms=ttft_ms,
            )
            assert self.records.finish(call_id, end)
        return call_id


@pytest.fixture
def calls(db: peewee.Database, clock: Clock) -> Calls:
    return Calls(db, clock)


def add_model(
    db: peewee.Database, provider_type: str, model_id: str, **prices: float | None
) -> cat.ModelRecord:
    """A model under its own provider (one per type and id), with the given prices."""
    provider = cat.create_provider(
        db,
        cat.ProviderInput(
            name=f"{provider_type} provider",
            type=provider_type,
            base_url=f"https://{model_id}.example/v1",
        ),
    )
    fields: dict[str, Any] = {"model_id": model_id, "display_name": model_id.title(), **prices}
    if provider_type == cat.ANTHROPIC:
        fields["max_output_tokens"] = 1024
    (saved,) = cat.save_models(db, provider.id, [msgspec.convert(fields, cat.ModelInput)])
    return saved


def minute(index: int, offset_ms: int = 0) -> int:
    """A time inside the hour range's bucket ``index`` (0 is the oldest, 59 holds NOW)."""
    return HOUR_START + index * MINUTE_MS + offset_ms


def day(index: int, offset_ms: int = 0) -> int:
    """A time inside the month range's day ``index`` (0 is the oldest, 29 is today)."""
    return MONTH_START + index * DAY_MS + offset_ms


# --- buckets -------------------------------------------------------------------------------------


def test_ranges_have_aligned_contiguous_buckets_ending_with_now(db: peewee.Database) -> None:
    expected = {
        "hour": (MINUTE_MS, 60),
        "day": (HOUR_MS, 24),
        "week": (6 * HOUR_MS, 28),
        "month": (DAY_MS, 30),
    }
    assert {name: (r.bucket_ms, r.buckets) for name, r in RANGES.items()} == expected
    for name, (size, count) in expected.items():
        stats = call_stats(db, name, NOW)
        assert (stats.range, stats.bucket_ms, stats.now_ms) == (name, size, NOW)
        starts = [bucket.start_ms for bucket in stats.buckets]
        assert len(starts) == count
        assert all(start % size == 0 for start in starts)
        assert starts == list(range(stats.start_ms, stats.end_ms, size))
        assert starts[-1] <= NOW < stats.end_ms == starts[-1] + size


def test_counts_errors_and_empty_buckets(db: peewee.Database, calls: Calls) -> None:
    gpt = add_model(db, "openai-chat", "gpt")
    calls.add(minute(0), gpt)  # the scope's first instant
    calls.add(minute(0, 59_999), gpt, CallStatus.FAILED, http_status=500)
    calls.add(minute(0, 30_000), gpt)
    calls.add(minute(59), gpt, CallStatus.CANCELLED)
    calls.add(minute(59, 1), gpt, None)  # still running
    calls.add(HOUR_START - 1, gpt, CallStatus.FAILED)  # before the scope
    calls.add(HOUR_END, gpt, CallStatus.FAILED)  # after it

    stats = call_stats(db, "hour", NOW)
    first, last = stats.buckets[0], stats.buckets[-1]
    assert (first.calls, first.errors) == (3, 1)
    assert first.error_rate == pytest.approx(1 / 3)
    assert (last.calls, last.errors, last.error_rate) == (2, 0, 0.0)
    assert [b.calls for b in stats.buckets[1:-1]] == [0] * 58
    empty = stats.buckets[30]
    assert (empty.calls, empty.errors, empty.error_rate) == (0, 0, None)
    assert (empty.ttft_p50_ms, empty.ttft_p95_ms, empty.tokens) == (None, None, {})
    assert sum(b.errors for b in stats.buckets) == 1


def test_ttft_percentiles_are_exact_linear_interpolation(db: peewee.Database, calls: Calls) -> None:
    """p = v[lo] + (h - lo) * (v[lo+1] - v[lo]) with h = (n - 1) * p over the sorted times
    (PostgreSQL's percentile_cont), whatever the insertion order; calls without one skip."""
    gpt = add_model(db, "openai-chat", "gpt")
    cases = {
        3: [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0],  # 55, 95.5
        4: [5.0, 1.0, 4.0, 2.0, 3.0],  # 3, 4.8
        5: [42.5],  # 42.5, 42.5
        6: [7.0, 7.0, 1.0, 1000.0],  # 7, 851.05
    }
    shuffled = random.Random(8)
    for index, values in cases.items():
        order = values[:]
        shuffled.shuffle(order)
        for position, value in enumerate(order):
            calls.add(minute(index, position), gpt, ttft_ms=value)
        calls.add(minute(index, 500), gpt, CallStatus.FAILED)  # no first token: not counted
    stats = call_stats(db, "hour", NOW)
    got = {i: (stats.buckets[i].ttft_p50_ms, stats.buckets[i].ttft_p95_ms) for i in cases}
    assert got == {
        3: (pytest.approx(55.0), pytest.approx(95.5)),
        4: (pytest.approx(3.0), pytest.approx(4.8)),
        5: (42.5, 42.5),
        6: (pytest.approx(7.0), pytest.approx(851.05)),
    }
    assert stats.buckets[7].ttft_p50_ms is None
    if isinstance(db, peewee.PostgresqlDatabase):  # the same as the database's own definition
        for index in cases:
            start = minute(index)
            (p50, p95) = execute_sql(
                db,
                "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ttft_ms), "
                "percentile_cont(0.95) WITHIN GROUP (ORDER BY ttft_ms) FROM llm_calls "
                "WHERE started_at_ms >= %s AND started_at_ms < %s",
                (start, start + MINUTE_MS),
            ).fetchone()
            assert got[index] == pytest.approx((p50, p95))


def test_the_ttft_series_has_finer_buckets_so_a_long_range_draws_a_line(
    db: peewee.Database, calls: Calls
) -> None:
    """Calls ten minutes apart within one hour fall in one bucket of the day range, but in
    separate 5-minute TTFT buckets: the series has a point for each, in time order."""
    gpt = add_model(db, "openai-chat", "gpt")
    day_end = NOW - NOW % HOUR_MS + HOUR_MS
    base = day_end - 3 * HOUR_MS  # the start of an hour bucket, 5-minute aligned
    for index, ttft in enumerate((100.0, 300.0, 200.0, 400.0)):
        calls.add(base + index * 10 * MINUTE_MS, gpt, ttft_ms=ttft)
    calls.add(base + 2 * MINUTE_MS, gpt, ttft_ms=500.0)  # shares the first point's bucket
    calls.add(base + 5 * MINUTE_MS, gpt, CallStatus.FAILED)  # no first token: no point
    expected_buckets = {"hour": MINUTE_MS, "day": 5 * MINUTE_MS, "week": 30 * MINUTE_MS}
    assert {name: RANGES[name].ttft_bucket_ms for name in expected_buckets} == expected_buckets
    stats = call_stats(db, "day", NOW)
    assert stats.ttft_bucket_ms == 5 * MINUTE_MS
    assert [(p.start_ms, p.p50_ms) for p in stats.ttft] == [
        (base, pytest.approx(300.0)),
        (base + 10 * MINUTE_MS, 300.0),
        (base + 20 * MINUTE_MS, 200.0),
        (base + 30 * MINUTE_MS, 400.0),
    ]
    assert stats.ttft[0].p95_ms == pytest.approx(480.0)
    # The coarse bucket still has its own percentiles over all five.
    (hour,) = [b for b in stats.buckets if b.start_ms == base]
    assert hour.ttft_p50_ms == 300.0
    # The month range: 2-hour buckets, one point for the lot.
    month = call_stats(db, "month", NOW)
    assert month.ttft_bucket_ms == 2 * HOUR_MS
    assert [p.start_ms for p in month.ttft] == [base - base % (2 * HOUR_MS)]


# --- tokens and cache hits -----------------------------------------------------------------------


def test_tokens_per_model_count_cached_input_and_reasoning_once(
    db: peewee.Database, calls: Calls
) -> None:
    """OpenAI's input includes its cache reads and its output the reasoning; Anthropic's input
    excludes cache reads and writes: the four buckets are disjoint in both."""
    gpt = add_model(db, "openai-chat", "gpt")
    claude = add_model(db, cat.ANTHROPIC, "claude")
    calls.add(
        minute(10),
        gpt,
        input_tokens=100,
        output_tokens=20,
        cache_read_tokens=80,
        reasoning_tokens=12,
    )
    calls.add(minute(10, 1), gpt, input_tokens=50, output_tokens=5)
    calls.add(
        minute(10, 2),
        claude,
        input_tokens=10,
        output_tokens=20,
        cache_read_tokens=80,
        cache_write_tokens=5,
    )
    calls.add(minute(11), claude, CallStatus.FAILED, http_status=529)  # no usage at all
    stats = call_stats(db, "hour", NOW)
    assert stats.buckets[10].tokens == {
        gpt.public_id: TokenCounts(input=70, output=25, cache_read=80, cache_write=0),
        claude.public_id: TokenCounts(input=10, output=20, cache_read=80, cache_write=5),
    }
    assert stats.buckets[11].tokens == {claude.public_id: TokenCounts(0, 0, 0, 0)}
    assert stats.models[gpt.public_id] == ModelLabel(
        display_name="Gpt", model_id="gpt", provider_name="openai-chat provider", deleted=False
    )


def test_cache_hit_rate_counts_only_calls_that_reported_a_cache_field(
    db: peewee.Database, calls: Calls
) -> None:
    gpt = add_model(db, "openai-chat", "gpt")
    claude = add_model(db, cat.ANTHROPIC, "claude")
    local = add_model(db, "openai-chat", "local")  # a server that never reports caching
    calls.add(minute(1), gpt, input_tokens=100, output_tokens=20, cache_read_tokens=80)
    calls.add(minute(2), gpt, input_tokens=900, output_tokens=1)  # no cache field: not counted
    calls.add(
        minute(3),
        claude,
        input_tokens=10,
        output_tokens=20,
        cache_read_tokens=80,
        cache_write_tokens=5,
    )
    calls.add(minute(4), local, input_tokens=7, output_tokens=2)
    rate = call_stats(db, "hour", NOW).cache_hit_rate
    assert rate.models == {
        gpt.public_id: pytest.approx(80 / 100),
        claude.public_id: pytest.approx(80 / 95),
        local.public_id: None,
    }
    assert rate.overall == pytest.approx(160 / 195)


def test_cache_hit_rate_is_na_without_cache_fields_and_zero_when_reported_as_zero(
    db: peewee.Database, calls: Calls
) -> None:
    local = add_model(db, "openai-chat", "local")
    calls.add(minute(1), local, input_tokens=7, output_tokens=2)
    rate = call_stats(db, "hour", NOW).cache_hit_rate
    assert (rate.overall, rate.models) == (None, {local.public_id: None})
    assert call_stats(db, "hour", HOUR_START - DAY_MS).cache_hit_rate == CacheHitRate(None, {})

    claude = add_model(db, cat.ANTHROPIC, "claude")
    calls.add(minute(2), claude, input_tokens=40, output_tokens=2, cache_read_tokens=0)
    rate = call_stats(db, "hour", NOW).cache_hit_rate
    assert rate.models == {local.public_id: None, claude.public_id: 0.0}
    assert rate.overall == 0.0


# --- cost ----------------------------------------------------------------------------------------

FULL_PRICES = {
    "price_input_per_mtok": 3.0,
    "price_output_per_mtok": 15.0,
    "price_cache_read_per_mtok": 0.3,
    "price_cache_write_per_mtok": 3.75,
}


def test_cost_per_day_and_model_with_full_prices(db: peewee.Database, calls: Calls) -> None:
    claude = add_model(db, cat.ANTHROPIC, "claude", **FULL_PRICES)
    gpt = add_model(
        db,
        "openai-chat",
        "gpt",
        price_input_per_mtok=2.0,
        price_output_per_mtok=8.0,
        price_cache_read_per_mtok=0.5,
    )
    usage = {
        "input_tokens": 1_000_000,
        "output_tokens": 100_000,
        "cache_read_tokens": 2_000_000,
        "cache_write_tokens": 400_000,
    }
    calls.add(day(0, HOUR_MS), claude, **usage)  # 3 + 1.5 + 0.6 + 1.5 = 6.6
    calls.add(day(29), claude, output_tokens=1_000_000)  # 15
    # OpenAI: 1.5 M input of which 0.5 M cached, 0.25 M output (reasoning inside): 2 + 2 + 0.25
    calls.add(
        day(29, 1),
        gpt,
        input_tokens=1_500_000,
        output_tokens=250_000,
        cache_read_tokens=500_000,
        reasoning_tokens=200_000,
    )
    calls.add(day(29, 2), gpt, CallStatus.FAILED, http_status=429)  # no stream, no cost
    calls.add(day(29, 3), gpt, None)  # running: counted once it ends

    cost = call_stats(db, "month", NOW).cost
    assert (cost.day_ms, cost.start_ms, cost.end_ms) == (DAY_MS, MONTH_START, MONTH_END)
    assert [d.start_ms for d in cost.days] == list(range(MONTH_START, MONTH_END, DAY_MS))
    assert cost.days[0].models == {claude.public_id: day_cost(6.6, 1)}
    assert cost.days[29].models == {
        claude.public_id: day_cost(15.0, 1),
        gpt.public_id: day_cost(4.25, 1),
    }
    assert all(d.models == {} for d in cost.days[1:29])
    assert cost.total_usd == pytest.approx(25.85)
    assert (cost.priced_calls, cost.unknown_cost_calls) == (3, 0)

    # Prices are read at query time: a new price re-prices history.
    cheaper = cat.ModelInput(
        model_id="gpt",
        display_name="Gpt",
        price_input_per_mtok=1.0,
        price_output_per_mtok=8.0,
        price_cache_read_per_mtok=0.5,
    )
    cat.save_models(db, gpt.provider_id, [cheaper])
    cost = call_stats(db, "month", NOW).cost
    assert cost.days[29].models[gpt.public_id] == day_cost(3.25, 1)


def day_cost(usd: float | None, priced: int, unknown: int = 0) -> ModelDayCost:
    """A ModelDayCost whose ``usd`` compares approximately."""
    approx: Any = None if usd is None else pytest.approx(usd)
    return ModelDayCost(approx, priced, unknown)


def test_unknown_cost_for_a_missing_price_a_deleted_model_and_missing_usage(
    db: peewee.Database, calls: Calls
) -> None:
    no_output_price = {**FULL_PRICES, "price_output_per_mtok": None}
    partly = add_model(db, cat.ANTHROPIC, "partly", **no_output_price)
    gone = add_model(db, cat.ANTHROPIC, "gone", **FULL_PRICES)
    priced = add_model(db, cat.ANTHROPIC, "priced", **FULL_PRICES)
    calls.add(day(29), partly, input_tokens=1_000_000, output_tokens=10)  # unknown
    calls.add(day(29, 1), partly, input_tokens=1_000_000, output_tokens=0)  # 3: no output used
    calls.add(day(29, 2), gone, input_tokens=1_000_000, output_tokens=10)  # unknown
    calls.add(day(29, 3), priced, CallStatus.CANCELLED)  # a 200 stream without usage: unknown
    calls.add(day(29, 4), priced, CallStatus.FAILED, http_status=None)  # never reached it
    cat.delete_model(db, gone.public_id)

    stats = call_stats(db, "month", NOW)
    assert stats.cost.days[29].models == {
        partly.public_id: day_cost(3.0, 1, 1),
        gone.public_id: day_cost(None, 0, 1),
        priced.public_id: day_cost(None, 0, 1),
    }
    assert stats.cost.total_usd == pytest.approx(3.0)
    assert (stats.cost.priced_calls, stats.cost.unknown_cost_calls) == (1, 3)
    assert stats.models[gone.public_id].deleted is True
    assert stats.models[gone.public_id].display_name == "Gone"  # the call's snapshot
    assert stats.models[partly.public_id].deleted is False


def test_the_cost_series_covers_whole_days_for_a_short_range(
    db: peewee.Database, calls: Calls
) -> None:
    """For ``hour`` the cost covers today from midnight (UTC): a call earlier today counts in
    the cost but in no bucket; an empty scope has no cost at all (null, not 0)."""
    priced = add_model(db, cat.ANTHROPIC, "priced", **FULL_PRICES)
    today = NOW - NOW % DAY_MS
    assert call_stats(db, "hour", NOW).cost.total_usd is None
    calls.add(today + 1, priced, output_tokens=1_000_000)
    stats = call_stats(db, "hour", NOW)
    assert sum(b.calls for b in stats.buckets) == 0
    assert (stats.cost.start_ms, stats.cost.end_ms) == (today, HOUR_END)
    assert [d.start_ms for d in stats.cost.days] == [today]
    assert stats.cost.total_usd == pytest.approx(15.0)
    assert priced.public_id in stats.models


# --- refusals ------------------------------------------------------------------------------------


def test_an_unknown_range_is_refused(db: peewee.Database) -> None:
    with pytest.raises(UnknownRange, match="hour, day, week, month"):
        call_stats(db, "year", NOW)


def test_an_sqlite_without_window_functions_is_refused(tmp_path: Path) -> None:
    store_db = open_database(f"sqlite://{tmp_path / 'old.db'}")
    try:
        apply_migrations(store_db)
        store_db.server_version = (3, 24, 0)
        with pytest.raises(StatsUnavailable, match=r"3\.25"):
            call_stats(store_db, "day", NOW)
    finally:
        store_db.close()


# --- migration 8 ---------------------------------------------------------------------------------


def test_migration_8_keeps_models_and_calls_and_is_re_runnable(db_url: str) -> None:
    """A database at version 7 with a model and a finished call: after migration 8 the model
    has null prices and the call a null TTFT, every other value kept; a second run changes
    nothing; the new columns then take values (through the store, once the later migrations,
    which its reads and writes need, have run too)."""
    database = open_database(db_url)
    try:
        apply_migrations(database, registered_migrations()[:7])
        public_id = public_model_id("http://h/v1", "openai-chat", "old-model")
        p = database.param
        execute_sql(
            database,
            "INSERT INTO providers (name, type, base_url, api_key, headers_json, created_at_ms, "
            f"updated_at_ms) VALUES ({p}, {p}, {p}, {p}, {p}, 0, 0)",
            ("old", "openai-chat", "http://h/v1", "", "{}"),
        )
        (provider_id,) = execute_sql(database, "SELECT id FROM providers").fetchone()
        execute_sql(
            database,
            "INSERT INTO models (public_id, provider_id, model_id, display_name, enabled, "
            "sort_order, max_output_tokens, context_window_tokens, reasoning_enabled, "
            f"reasoning_effort, created_at_ms, updated_at_ms) VALUES ({p}, {p}, {p}, {p}, "
            f"{p}, 3, 64, 1000, {p}, {p}, 0, 0)",
            (public_id, provider_id, "old-model", "Old", True, True, "high"),
        )
        # A finished call as version 7 wrote it.
        execute_sql(
            database,
            "INSERT INTO llm_calls (run_id, model_call_id, provider_id, provider_name, "
            "provider_type, provider_url, public_id, model_id, display_name, status, "
            "finish_reason, started_at_ms, ended_at_ms, duration_ms, http_status, input_tokens, "
            'output_tokens, "verbose", response_bytes) VALUES '
            f"(NULL, 'm:0', {p}, 'old', 'openai-chat', 'http://h/v1', {p}, 'old-model', 'Old', "
            f"'completed', 'stop', 1, 2, 5.0, 200, 9, 4, {p}, 10)",
            (provider_id, public_id, False),
        )
        before = {table: rows(database, table) for table in ("models", "llm_calls")}

        assert apply_migrations(database, registered_migrations()[:8]) == [8]
        after = {table: rows(database, table) for table in ("models", "llm_calls")}
        # The new columns come last: every earlier value is as it was, the new ones NULL.
        assert [row[:-4] for row in after["models"]] == before["models"]
        assert [row[-4:] for row in after["models"]] == [(None,) * 4]
        assert [row[:-1] for row in after["llm_calls"]] == before["llm_calls"]
        assert [row[-1] for row in after["llm_calls"]] == [None]
        assert "llm_calls_started_at_ms" in {i.name for i in database.get_indexes("llm_calls")}

        model_prices_and_time_to_first_token(database)  # re-runnable
        assert {table: rows(database, table) for table in ("models", "llm_calls")} == after

        # This version's reads and writes, on the whole schema.
        apply_migrations(database)
        (old,) = cat.all_models(database)
        assert (old.public_id, old.model_id, old.sort_order, old.reasoning_effort) == (
            public_id,
            "old-model",
            3,
            "high",
        )
        assert [getattr(old, f) for f in cat.PRICE_FIELDS] == [None] * 4
        records = CallRecords(database)
        (listed,) = records.list(10)
        assert listed.ttft_ms is None
        assert (listed.input_tokens, listed.output_tokens, listed.http_status) == (9, 4, 200)
        call = NewCall(
            run_id=None,
            model_call_id="m:1",
            provider_id=provider_id,
            provider_name="old",
            provider_type="openai-chat",
            provider_url="http://h/v1",
            public_id=public_id,
            model_id="old-model",
            display_name="Old",
            verbose=False,
        )
        priced = cat.ModelInput(
            model_id="old-model", display_name="Old", price_output_per_mtok=10.0
        )
        (saved,) = cat.save_models(database, provider_id, [priced])
        assert (saved.price_output_per_mtok, saved.price_input_per_mtok) == (10.0, None)
        second = records.start(call)
        end = CallEnd(CallStatus.COMPLETED, 5.0, 10, "stop", {}, None, 200, 1.5, 3.25)
        records.finish(second, end)
        detail = records.get(second)
        assert detail is not None and detail.call.ttft_ms == 3.25
    finally:
        database.close()


def test_stats_answer_is_plain_json(db: peewee.Database) -> None:
    """The Structs encode to the documented keys (what the endpoint sends)."""
    encoded = msgspec.json.decode(msgspec.json.encode(call_stats(db, "hour", NOW)))
    assert set(encoded) == set(CallStats.__struct_fields__)
    assert set(encoded["cost"]) == {
        "day_ms",
        "start_ms",
        "end_ms",
        "total_usd",
        "priced_calls",
        "unknown_cost_calls",
        "days",
    }


def test_each_calls_cost_follows_the_daily_costs_rule(
    db: peewee.Database, calls: Calls, clock: Clock
) -> None:
    """The calls listing's per-call cost: the same prices and the same unknowns as the day's."""
    priced = add_model(
        db,
        "openai-chat",
        "priced",
        price_input_per_mtok=2.0,
        price_output_per_mtok=10.0,
        price_cache_read_per_mtok=0.5,
        price_cache_write_per_mtok=None,
    )
    unpriced = add_model(db, "anthropic", "unpriced")
    known = calls.add(1_000, priced, input_tokens=1_000, output_tokens=100, cache_read_tokens=400)
    no_price = calls.add(2_000, unpriced, input_tokens=10, output_tokens=1)
    refused = calls.add(3_000, priced, CallStatus.FAILED, http_status=429)
    no_usage = calls.add(4_000, priced)
    costs = call_costs(db, [known, no_price, refused, no_usage])
    # 600 uncached input * 2 + 100 output * 10 + 400 cache read * 0.5, per million tokens.
    assert costs[known] == pytest.approx((600 * 2.0 + 100 * 10.0 + 400 * 0.5) / 1e6)
    assert costs[no_price] is None and costs[refused] is None and costs[no_usage] is None
    assert call_costs(db, []) == {}
    clock.ms = 5_000
    day = call_stats(db, "month", 5_000).cost
    assert day.total_usd == pytest.approx(costs[known])
    assert day.unknown_cost_calls == 2  # the unpriced model's and the one without usage


def test_period_cost_is_today_and_this_calendar_month_by_the_daily_rule(
    db: peewee.Database, calls: Calls
) -> None:
    """``GET /metrics``' cost: the daily cost's rule summed over today and over the UTC month so
    far (NOW is June 15: May 31 is not in it, June 1 is); unknown-cost calls counted apart."""
    gpt = add_model(db, "openai-chat", "gpt", price_input_per_mtok=2.0, price_output_per_mtok=8.0)
    unpriced = add_model(db, "openai-chat", "free")
    calls.add(day(14), gpt, input_tokens=1_000_000)  # May 31: not this month
    calls.add(day(15), gpt, input_tokens=1_000_000)  # June 1: 2
    calls.add(day(29), gpt, output_tokens=500_000)  # today: 4
    calls.add(day(29, 1), unpriced, input_tokens=10)  # today, unknown
    cost = period_cost(db, NOW)
    assert cost.today == {gpt.public_id: day_cost(4.0, 1), unpriced.public_id: day_cost(None, 0, 1)}
    assert cost.month == {
        gpt.public_id: day_cost(6.0, 2),
        unpriced.public_id: day_cost(None, 0, 1),
    }
