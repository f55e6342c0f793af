"""The console dashboard's aggregates over the call records (``llm_calls``), computed in SQL.

``call_stats(db, range_name, now_ms)`` answers one ``CallStats`` (``GET /console/api/stats``);
a handful of grouped queries, never the rows themselves. Times are UTC ms since the epoch, from
each call's ``started_at_ms`` (a call belongs to the bucket it started in).

**Ranges and buckets.** Buckets are aligned to multiples of their size since the epoch (minute,
hour, 00/06/12/18 h, midnight UTC); the last one holds ``now`` (still filling):

=========  ===========  =======  ==========================================
``range``  bucket       buckets  scope ``[start_ms, end_ms)``
=========  ===========  =======  ==========================================
``hour``   1 min        60       the current minute and the 59 before
``day``    1 h          24       the current hour and the 23 before
``week``   6 h          28       the current quarter day and the 27 before
``month``  1 day (UTC)  30       today and the 29 days before
=========  ===========  =======  ==========================================

Every bucket is present, in time order; one without calls has ``calls`` and ``errors`` 0, an
empty ``tokens`` map and null rates and percentiles (a rate of nothing is not 0).

**The TTFT series** (``ttft``, over the same scope) has finer buckets of its own
(``ttft_bucket_ms``: 1 min for ``hour``, 5 min for ``day``, 30 min for ``week``, 2 h for
``month``), so calls a few minutes apart still draw a line on a long range; only the buckets
that hold a time to first token are listed, each with its p50 and p95 computed as below.

**Per bucket.** ``calls`` (every status, running included), ``errors`` (status ``failed``;
cancelled calls are not errors), ``error_rate`` = errors / calls. ``ttft_p50_ms`` and
``ttft_p95_ms``: percentiles of the time to first token over the bucket's calls that have one,
by linear interpolation between the two nearest ranks (the definition of PostgreSQL's
``percentile_cont`` and numpy's default), computed the same way on both databases with window
functions (``ROW_NUMBER``/``COUNT`` over the bucket: SQLite 3.25 or later; an older SQLite gets
``StatsUnavailable``); only the two ranks each percentile needs leave the database.
``tokens``: per model (public id), the four disjoint usage buckets ``input`` (uncached input),
``output`` (reasoning included), ``cache_read``, ``cache_write``; a model without calls in the
bucket is absent; unreported counts add 0.

**How usage is read.** OpenAI (Chat and Responses) reports ``prompt_tokens``/``input_tokens``
*including* the cached tokens and ``completion_tokens``/``output_tokens`` *including* the
reasoning tokens; Anthropic reports ``input_tokens`` *excluding* cache reads and writes, and
its ``output_tokens`` include thinking. So ``input`` is the reported input minus the cache
reads for the OpenAI formats (by the call's recorded ``provider_type``) and the reported input
for Anthropic; ``reasoning_tokens`` is never added (it is already inside ``output``).

**Cache-hit rate** (``cache_hit_rate``, over the scope): cache read / (input + cache read +
cache write), per model and overall, counted over the calls that reported a cache field (read
or write, 0 included). Null ("n/a") when no call in scope reported one (OpenAI-compatible
servers often do not), or when those calls counted no input at all: never 0 %, which means
cache fields were reported as 0.

**Cost** (``cost``): per UTC day and model, the estimated USD cost = sum over the four buckets
of tokens * the model's price per million tokens / 1e6, with the prices the model has *now*
(a later price change re-prices history; a model is found by public id, so a model deleted and
saved again under the same provider URL, type and id is priced again). The cost series covers
whole UTC days, from the day the scope starts to today (its ``end_ms`` is the scope's), so for
``hour``/``day``/``week`` its first day may hold calls before the scope's ``start_ms``. Only
calls the provider answered 2xx count (an error answer or a connection failure produced no
tokens); such a call has an *unknown cost* when its model no longer exists, when it reported
no usage (say, cancelled mid-stream), or when it used a bucket (more than 0 tokens) whose
price is null. Unknown-cost calls are counted (``unknown_cost_calls``), never priced at 0;
``usd`` sums only the calls of known cost and is null where there is none. A running call is
counted once it has ended.

Shape (``msgspec`` Structs below; every map is keyed by public model id)::

    {"range": "day", "bucket_ms": 3600000, "start_ms": …, "end_ms": …, "now_ms": …,
     "ttft_bucket_ms": 300000, "ttft": [{"start_ms", "p50_ms", "p95_ms"}],
     "models": {"f246010a": {"display_name", "model_id", "provider_name", "deleted"}},
     "buckets": [{"start_ms", "calls", "errors", "error_rate", "ttft_p50_ms", "ttft_p95_ms",
                  "tokens": {"f246010a": {"input", "output", "cache_read", "cache_write"}}}],
     "cache_hit_rate": {"overall": 0.8 | null, "models": {"f246010a": 0.8 | null}},
     "cost": {"day_ms": 86400000, "start_ms", "end_ms", "total_usd": 1.25 | null,
              "priced_calls", "unknown_cost_calls",
              "days": [{"start_ms", "models": {"f246010a": {"usd", "priced_calls",
                                                             "unknown_cost_calls"}}}]}}

``models`` labels every public id the answer names (the catalog's display name when the model
still exists, else the newest call's snapshot; ``deleted`` when it no longer exists). The
queries are separate reads, not one snapshot: a call ending meanwhile may show in one part only.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import msgspec
import peewee

from store.base.typed_peewee import execute_sql
from store.catalog import ANTHROPIC

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS


class StatsRange(msgspec.Struct, frozen=True):
    bucket_ms: int
    buckets: int
    # The TTFT series' finer buckets (a divisor of ``bucket_ms``): a few hundred at most.
    ttft_bucket_ms: int


RANGES: dict[str, StatsRange] = {
    "hour": StatsRange(MINUTE_MS, 60, MINUTE_MS),
    "day": StatsRange(HOUR_MS, 24, 5 * MINUTE_MS),
    "week": StatsRange(6 * HOUR_MS, 28, 30 * MINUTE_MS),
    "month": StatsRange(DAY_MS, 30, 2 * HOUR_MS),
}
# The percentiles of the time to first token, in percent.
P50, P95 = 50, 95
# Window functions came with SQLite 3.25.
SQLITE_WINDOW_FUNCTIONS = (3, 25, 0)


class StatsUnavailable(Exception):
    """The database cannot compute the statistics (an SQLite without window functions)."""


class UnknownRange(ValueError):
    """``range`` is not one of ``RANGES``."""


# --- the answer ----------------------------------------------------------------------------------


class TokenCounts(msgspec.Struct, frozen=True):
    input: int
    output: int
    cache_read: int
    cache_write: int


class Bucket(msgspec.Struct, frozen=True):
    start_ms: int
    calls: int
    errors: int
    error_rate: float | None
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    tokens: dict[str, TokenCounts]


class TtftPoint(msgspec.Struct, frozen=True):
    """One TTFT bucket that holds a time to first token (ms)."""

    start_ms: int
    p50_ms: float
    p95_ms: float


class ModelLabel(msgspec.Struct, frozen=True):
    display_name: str
    model_id: str
    provider_name: str
    deleted: bool


class CacheHitRate(msgspec.Struct, frozen=True):
    overall: float | None
    models: dict[str, float | None]


class ModelDayCost(msgspec.Struct, frozen=True):
    usd: float | None
    priced_calls: int
    unknown_cost_calls: int


class CostDay(msgspec.Struct, frozen=True):
    start_ms: int
    models: dict[str, ModelDayCost]


class Cost(msgspec.Struct, frozen=True):
    day_ms: int
    start_ms: int
    end_ms: int
    total_usd: float | None
    priced_calls: int
    unknown_cost_calls: int
    days: list[CostDay]


class CallStats(msgspec.Struct, frozen=True):
    range: str
    bucket_ms: int
    start_ms: int
    end_ms: int
    now_ms: int
    models: dict[str, ModelLabel]
    buckets: list[Bucket]
    cache_hit_rate: CacheHitRate
    cost: Cost
    user: str | None = None  # the user whose calls these are; None: everyone's
    ttft_bucket_ms: int = MINUTE_MS
    ttft: list[TtftPoint] = []


# --- SQL -----------------------------------------------------------------------------------------

# The input tokens no cache served: the OpenAI formats count cached tokens inside the input.
_UNCACHED_INPUT = f"""CASE
    WHEN "provider_type" = '{ANTHROPIC}' OR "cache_read_tokens" IS NULL THEN "input_tokens"
    WHEN "input_tokens" > "cache_read_tokens" THEN "input_tokens" - "cache_read_tokens"
    ELSE 0 END"""

# The calls started in [origin, end), each with its bucket index (origin, size, origin, end,
# then the user when the scope names one).
_SCOPED = """SELECT
    ("started_at_ms" - {p}) / {p} AS bucket, "id", "status", "ttft_ms", "public_id",
    "http_status", {uncached} AS uncached_input, "input_tokens", "output_tokens",
    "cache_read_tokens", "cache_write_tokens", "user_id"
FROM "llm_calls" WHERE "started_at_ms" >= {p} AND "started_at_ms" < {p}{user}"""

_COUNTS = """WITH scoped AS ({scoped})
SELECT bucket, COUNT(*), SUM(CASE WHEN "status" = 'failed' THEN 1 ELSE 0 END)
FROM scoped GROUP BY bucket"""


def _rank_pick(percent: int, offset: int) -> str:
    """The time at 0-based rank floor((n - 1) * percent / 100) + offset of the bucket."""
    return f"MAX(CASE WHEN r = ((n - 1) * {percent}) / 100 + {offset} THEN ttft_ms END)"


_PERCENTILES = f"""WITH scoped AS ({{scoped}}), ranked AS (
    SELECT bucket, ttft_ms,
        ROW_NUMBER() OVER (PARTITION BY bucket ORDER BY ttft_ms) - 1 AS r,
        COUNT(*) OVER (PARTITION BY bucket) AS n
    FROM scoped WHERE ttft_ms IS NOT NULL)
SELECT bucket, MAX(n), {_rank_pick(P50, 0)}, {_rank_pick(P50, 1)},
    {_rank_pick(P95, 0)}, {_rank_pick(P95, 1)}
FROM ranked GROUP BY bucket"""

_REPORTS_CACHE = '("cache_read_tokens" IS NOT NULL OR "cache_write_tokens" IS NOT NULL)'

_TOKENS = f"""WITH scoped AS ({{scoped}})
SELECT bucket, "public_id",
    SUM(uncached_input), SUM("output_tokens"), SUM("cache_read_tokens"),
    SUM("cache_write_tokens"),
    SUM(CASE WHEN {_REPORTS_CACHE} THEN 1 ELSE 0 END),
    SUM(CASE WHEN {_REPORTS_CACHE} THEN COALESCE(uncached_input, 0)
        + COALESCE("cache_read_tokens", 0) + COALESCE("cache_write_tokens", 0) ELSE 0 END)
FROM scoped GROUP BY bucket, "public_id"
"""


def _used_without_price(tokens: str, price: str) -> str:
    return f"(COALESCE(c.{tokens}, 0) > 0 AND m.{price} IS NULL)"


def _priced(tokens: str, price: str) -> str:
    return f"COALESCE(c.{tokens} * m.{price}, 0)"


_BUCKET_PRICES = (
    ("uncached_input", '"price_input_per_mtok"'),
    ('"output_tokens"', '"price_output_per_mtok"'),
    ('"cache_read_tokens"', '"price_cache_read_per_mtok"'),
    ('"cache_write_tokens"', '"price_cache_write_per_mtok"'),
)
_NO_USAGE = (
    'c."input_tokens" IS NULL AND c."output_tokens" IS NULL '
    'AND c."cache_read_tokens" IS NULL AND c."cache_write_tokens" IS NULL'
)
_UNKNOWN = " OR ".join(
    ['m."public_id" IS NULL', f"({_NO_USAGE})"]
    + [_used_without_price(t, p) for t, p in _BUCKET_PRICES]
)


def cost_sql(*keys: str) -> str:
    """The cost rule over the scope's calls the provider answered 2xx, grouped by ``keys``
    (columns of the scoped calls): per group, how many have an unknown cost, how many a known
    one, and the known ones' cost in USD * 1e6. ``{scoped}`` is left to fill in."""
    grouped = ", ".join(keys)
    return f"""WITH scoped AS ({{scoped}}), billed AS (
    SELECT {", ".join(f"c.{key}" for key in keys)},
        CASE WHEN {_UNKNOWN} THEN 1 ELSE 0 END AS unknown,
        {" + ".join(_priced(t, p) for t, p in _BUCKET_PRICES)} AS micro_usd
    FROM scoped AS c LEFT JOIN "models" AS m ON m."public_id" = c."public_id"
    WHERE c."http_status" >= 200 AND c."http_status" < 300)
SELECT {grouped}, SUM(unknown), SUM(1 - unknown),
    SUM(CASE WHEN unknown = 0 THEN micro_usd ELSE 0 END)
FROM billed GROUP BY {grouped}
"""


# Per day (bucket) and model.
_COST = cost_sql("bucket", '"public_id"')

# One estimated cost per call (USD * 1e6), by the same rule as the daily cost: NULL when the
# call's cost is unknown or it was not billed (no 2xx answer). The ids are bound as parameters.
_CALL_COSTS = f"""WITH picked AS (
    SELECT "id", "public_id", "http_status", {_UNCACHED_INPUT} AS uncached_input,
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"
    FROM "llm_calls" WHERE "id" IN ({{ids}}))
SELECT c."id", CASE
    WHEN c."http_status" IS NULL OR c."http_status" < 200 OR c."http_status" >= 300 THEN NULL
    WHEN {_UNKNOWN} THEN NULL
    ELSE {" + ".join(_priced(t, p) for t, p in _BUCKET_PRICES)} END
FROM picked AS c LEFT JOIN "models" AS m ON m."public_id" = c."public_id"
"""


def call_costs(db: peewee.Database, call_ids: Sequence[int]) -> dict[int, float | None]:
    """Each call's estimated cost in USD at today's prices (None: unknown, or not billed), by
    the rule the dashboard's daily cost uses."""
    if not call_ids:
        return {}
    sql = _CALL_COSTS.format(ids=", ".join([db.param] * len(call_ids)))
    rows = execute_sql(db, sql, tuple(call_ids)).fetchall()
    return {int(i): None if micro is None else float(micro) / 1e6 for i, micro in rows}


class PeriodCost(msgspec.Struct, frozen=True):
    """Estimated USD per model (public id) over today and this month (UTC), by the daily cost's
    rule: ``usd`` only where a call of known cost exists; unknown-cost calls counted apart."""

    today: dict[str, ModelDayCost]
    month: dict[str, ModelDayCost]


def period_cost(db: peewee.Database, now_ms: int) -> PeriodCost:
    """Today's and this UTC month's cost per model: the one grouped query the daily cost runs,
    over the days from the month's first to today (for ``GET /metrics``, once per scrape)."""
    cost = _cost(db, month_days(now_ms))
    month: dict[str, ModelDayCost] = {}
    for day in cost.days:
        for public_id, entry in day.models.items():
            month[public_id] = _added(month.get(public_id), entry)
    return PeriodCost(today=cost.days[-1].models, month=month)


def _added(total: ModelDayCost | None, entry: ModelDayCost) -> ModelDayCost:
    if total is None:
        return entry
    usd = None if total.usd is None and entry.usd is None else (total.usd or 0) + (entry.usd or 0)
    return ModelDayCost(
        usd,
        total.priced_calls + entry.priced_calls,
        total.unknown_cost_calls + entry.unknown_cost_calls,
    )


# The newest call of each public id in the scope, with the catalog's current name if any.
_LABELS = """WITH scoped AS ({scoped}), newest AS (
    SELECT MAX("id") AS id FROM scoped GROUP BY "public_id")
SELECT c."public_id", COALESCE(m."display_name", c."display_name"), c."model_id",
    c."provider_name", m."public_id" IS NULL
FROM "llm_calls" AS c JOIN newest ON newest.id = c."id"
LEFT JOIN "models" AS m ON m."public_id" = c."public_id"
"""


class Scope(msgspec.Struct, frozen=True):
    """Calls started in ``[start_ms, end_ms)``, bucketed by ``bucket_ms`` from ``start_ms``;
    only ``user``'s when given."""

    start_ms: int
    end_ms: int
    bucket_ms: int
    user: str | None = None

    def params(self) -> tuple[int | str, ...]:
        user = () if self.user is None else (self.user,)
        return (self.start_ms, self.bucket_ms, self.start_ms, self.end_ms, *user)

    @property
    def count(self) -> int:
        """How many buckets, the last one possibly cut short by ``end_ms``."""
        return -(-(self.end_ms - self.start_ms) // self.bucket_ms)


def scoped_rows(db: peewee.Database, template: str, scope: Scope) -> list[tuple[Any, ...]]:
    """``template``'s rows, its ``{scoped}`` the calls of ``scope``."""
    user = "" if scope.user is None else f' AND "user_id" = {db.param}'
    scoped = _SCOPED.format(p=db.param, uncached=_UNCACHED_INPUT, user=user)
    sql = template.format(scoped=scoped)
    return [tuple(row) for row in execute_sql(db, sql, scope.params()).fetchall()]


# --- the aggregation -----------------------------------------------------------------------------


def month_days(now_ms: int) -> Scope:
    """This UTC month's days up to today's end, one bucket per day: the last bucket is today
    (the periods of the budgets and of ``GET /metrics``)."""
    today = now_ms - now_ms % DAY_MS
    moment = datetime.datetime.fromtimestamp(today / 1000, datetime.UTC)
    return Scope(today - (moment.day - 1) * DAY_MS, today + DAY_MS, DAY_MS)


def range_scope(range_name: str, now_ms: int, user: str | None = None) -> Scope:
    """The scope of ``range_name`` (a ``RANGES`` key) ending at ``now_ms``: its buckets, the
    last one holding ``now_ms``."""
    spec = RANGES.get(range_name)
    if spec is None:
        raise UnknownRange(f"range must be one of {', '.join(RANGES)}, got {range_name!r}")
    end = now_ms - now_ms % spec.bucket_ms + spec.bucket_ms
    return Scope(end - spec.buckets * spec.bucket_ms, end, spec.bucket_ms, user)


def call_stats(
    db: peewee.Database, range_name: str, now_ms: int, user: str | None = None
) -> CallStats:
    """The dashboard's aggregates for ``range_name`` (a ``RANGES`` key) ending at ``now_ms``;
    over ``user``'s calls only when given (``llm_calls.user_id``)."""
    scope = range_scope(range_name, now_ms, user)
    if isinstance(db, peewee.SqliteDatabase) and db.server_version < SQLITE_WINDOW_FUNCTIONS:
        version = ".".join(map(str, db.server_version))
        raise StatsUnavailable(f"call statistics need SQLite 3.25 or later (this is {version})")
    end = scope.end_ms
    # Whole UTC days from the one the scope starts in; the last (today) ends with the scope.
    days = Scope(scope.start_ms - scope.start_ms % DAY_MS, end, DAY_MS, user)
    buckets, tokens = _buckets(db, scope)
    fine = Scope(scope.start_ms, end, RANGES[range_name].ttft_bucket_ms, user)
    return CallStats(
        range=range_name,
        bucket_ms=scope.bucket_ms,
        start_ms=scope.start_ms,
        end_ms=scope.end_ms,
        now_ms=now_ms,
        models=_labels(db, days),
        buckets=buckets,
        cache_hit_rate=_cache_hit_rate(tokens),
        cost=_cost(db, days),
        user=user,
        ttft_bucket_ms=fine.bucket_ms,
        ttft=[
            TtftPoint(fine.start_ms + index * fine.bucket_ms, p50, p95)
            for index, (p50, p95) in sorted(_percentiles(db, fine).items())
            if p50 is not None and p95 is not None
        ],
    )


def _int(value: Any) -> int:
    """A sum as an int: NULL (nothing reported) is 0; PostgreSQL sums BIGINTs as NUMERIC."""
    return 0 if value is None else int(value)


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _interpolated(n: int, percent: int, low: float | None, high: float | None) -> float | None:
    """Linear interpolation between the ranks floor(h) and floor(h) + 1, h = (n - 1) * p."""
    if low is None:
        return None
    fraction = ((n - 1) * percent % 100) / 100
    if fraction == 0 or high is None:
        return float(low)
    return float(low) + fraction * (float(high) - float(low))


# Per (bucket, model): the four token sums, then the calls reporting a cache field and the
# denominator of their hit rate.
_TokenRow = tuple[int, str, int, int, int, int, int, int]


def _buckets(db: peewee.Database, scope: Scope) -> tuple[list[Bucket], list[_TokenRow]]:
    counts = {
        int(b): (int(calls), int(errors)) for b, calls, errors in scoped_rows(db, _COUNTS, scope)
    }
    percentiles = _percentiles(db, scope)
    token_rows: list[_TokenRow] = [
        (int(b), str(public_id), _int(i), _int(o), _int(r), _int(w), _int(calls), _int(whole))
        for b, public_id, i, o, r, w, calls, whole in scoped_rows(db, _TOKENS, scope)
    ]
    tokens: dict[int, dict[str, TokenCounts]] = {}
    for b, public_id, uncached, output, read, write, _calls, _whole in token_rows:
        tokens.setdefault(b, {})[public_id] = TokenCounts(uncached, output, read, write)
    buckets = []
    for index in range(scope.count):
        calls, errors = counts.get(index, (0, 0))
        p50, p95 = percentiles.get(index, (None, None))
        buckets.append(
            Bucket(
                start_ms=scope.start_ms + index * scope.bucket_ms,
                calls=calls,
                errors=errors,
                error_rate=_rate(errors, calls),
                ttft_p50_ms=p50,
                ttft_p95_ms=p95,
                tokens=tokens.get(index, {}),
            )
        )
    return buckets, token_rows


def _percentiles(db: peewee.Database, scope: Scope) -> dict[int, tuple[float | None, float | None]]:
    """Per bucket index holding a time to first token: its p50 and p95."""
    percentiles: dict[int, tuple[float | None, float | None]] = {}
    for b, n, p50_low, p50_high, p95_low, p95_high in scoped_rows(db, _PERCENTILES, scope):
        percentiles[int(b)] = (
            _interpolated(int(n), P50, p50_low, p50_high),
            _interpolated(int(n), P95, p95_low, p95_high),
        )
    return percentiles


def _cache_hit_rate(token_rows: Sequence[_TokenRow]) -> CacheHitRate:
    """Hits over the calls that reported a cache field; null where none did."""
    sums: dict[str, tuple[int, int, int]] = {}
    for _b, public_id, _uncached, _output, read, _write, reporting, whole in token_rows:
        had_read, had_calls, had_whole = sums.get(public_id, (0, 0, 0))
        sums[public_id] = (had_read + read, had_calls + reporting, had_whole + whole)
    models = {
        public_id: _rate(read, whole) if reporting else None
        for public_id, (read, reporting, whole) in sums.items()
    }
    read = sum(read for read, reporting, _whole in sums.values() if reporting)
    whole = sum(whole for _read, reporting, whole in sums.values() if reporting)
    reported = any(reporting for _read, reporting, _whole in sums.values())
    return CacheHitRate(overall=_rate(read, whole) if reported else None, models=models)


def _cost(db: peewee.Database, days: Scope) -> Cost:
    per_day: dict[int, dict[str, ModelDayCost]] = {}
    for b, public_id, unknown, priced, micro_usd in scoped_rows(db, _COST, days):
        priced_calls = int(priced)
        usd = float(micro_usd) / 1e6 if priced_calls else None
        per_day.setdefault(int(b), {})[str(public_id)] = ModelDayCost(
            usd, priced_calls, int(unknown)
        )
    entries = [entry for models in per_day.values() for entry in models.values()]
    priced_total = sum(entry.priced_calls for entry in entries)
    return Cost(
        day_ms=DAY_MS,
        start_ms=days.start_ms,
        end_ms=days.end_ms,
        total_usd=sum(entry.usd or 0.0 for entry in entries) if priced_total else None,
        priced_calls=priced_total,
        unknown_cost_calls=sum(entry.unknown_cost_calls for entry in entries),
        days=[
            CostDay(days.start_ms + index * DAY_MS, per_day.get(index, {}))
            for index in range(days.count)
        ],
    )


def _labels(db: peewee.Database, scope: Scope) -> dict[str, ModelLabel]:
    return {
        str(public_id): ModelLabel(str(name), str(model_id), str(provider), bool(deleted))
        for public_id, name, model_id, provider, deleted in scoped_rows(db, _LABELS, scope)
    }
