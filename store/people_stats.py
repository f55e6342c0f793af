"""The console's People page: per user, runs, calls, tokens and estimated cost over one of
the dashboard's ranges (``GET /console/api/people``), computed in SQL.

A user is the ``user_id`` a run and its call records were kept with (``wire.identity``: a
claim of the editor's login token, ``anonymous`` when it named no one); runs and calls stored
before users were kept, and calls outside a run (the console's model checks), have none and
are not counted here. The scope is the range's as on the dashboard (``store.call_stats``,
``range_scope``): the runs *created* and the calls *started* in ``[start_ms, end_ms)``.

Tokens are the dashboard's four disjoint buckets (``input`` uncached, ``output`` with
reasoning, ``cache_read``, ``cache_write``). Cost is the dashboard's rule (``cost_sql``):
only calls answered 2xx, at the models' prices now, unknown-cost calls counted and never
priced at 0, ``cost_usd`` null when no call of the user had a known cost; unlike the
dashboard's daily series it covers the range's scope exactly, not whole UTC days.

Shape::

    {"range": "day", "start_ms", "end_ms", "now_ms",
     "people": [{"user_id", "runs", "calls", "errors",
                 "tokens": {"input", "output", "cache_read", "cache_write"},
                 "cost_usd": 0.25 | null, "priced_calls", "unknown_cost_calls"}]}

``people`` is ordered by estimated cost, then calls, then runs (most first), then user id.
"""

from __future__ import annotations

from typing import Any

import msgspec
import peewee

from store.base.typed_peewee import execute_sql
from store.call_stats import Scope, TokenCounts, cost_sql, month_days, range_scope, scoped_rows

_CALLS = """WITH scoped AS ({scoped})
SELECT "user_id", COUNT(*), SUM(CASE WHEN "status" = 'failed' THEN 1 ELSE 0 END),
    SUM(uncached_input), SUM("output_tokens"), SUM("cache_read_tokens"), SUM("cache_write_tokens")
FROM scoped WHERE "user_id" IS NOT NULL GROUP BY "user_id"
"""
_COST = cost_sql('"user_id"')
_RUNS = """SELECT "user_id", COUNT(*) FROM "runs"
WHERE "created_at_ms" >= {p} AND "created_at_ms" < {p} AND "user_id" IS NOT NULL
GROUP BY "user_id"
"""


class Person(msgspec.Struct, frozen=True):
    user_id: str
    runs: int
    calls: int
    errors: int
    tokens: TokenCounts
    cost_usd: float | None
    priced_calls: int
    unknown_cost_calls: int


class People(msgspec.Struct, frozen=True):
    range: str
    start_ms: int
    end_ms: int
    now_ms: int
    people: list[Person]


def _int(value: Any) -> int:
    """A sum as an int: NULL is 0; PostgreSQL sums BIGINTs as NUMERIC."""
    return 0 if value is None else int(value)


def people_stats(db: peewee.Database, range_name: str, now_ms: int) -> People:
    """Each user's totals over ``range_name`` (a ``RANGES`` key; ``UnknownRange`` otherwise)
    ending at ``now_ms``."""
    scope = range_scope(range_name, now_ms)
    return People(range_name, scope.start_ms, scope.end_ms, now_ms, people_in(db, scope))


class PeriodPeople(msgspec.Struct, frozen=True):
    """Each user's totals today and this month (UTC), as ``people_in`` orders them."""

    today: list[Person]
    month: list[Person]


def period_people(db: peewee.Database, now_ms: int) -> PeriodPeople:
    """Each user's totals since today's and since this month's UTC start (for the per-user
    families of ``GET /metrics``, read once per scrape)."""
    month = month_days(now_ms)
    today = msgspec.structs.replace(month, start_ms=month.end_ms - month.bucket_ms)
    return PeriodPeople(people_in(db, today), people_in(db, month))


def people_in(db: peewee.Database, scope: Scope) -> list[Person]:
    """Each user's totals over ``scope``, most costly first."""
    # One bucket over the whole scope: the scoped calls' bucket column is then always 0.
    whole = msgspec.structs.replace(scope, bucket_ms=scope.end_ms - scope.start_ms)
    calls = {str(row[0]): row[1:] for row in scoped_rows(db, _CALLS, whole)}
    # The cost rule's groups include the calls of no user (NULL): left out as everywhere here.
    costs = {str(r[0]): r[1:] for r in scoped_rows(db, _COST, whole) if r[0] is not None}
    sql = _RUNS.format(p=db.param)
    runs = {
        str(user): _int(count)
        for user, count in execute_sql(db, sql, (scope.start_ms, scope.end_ms)).fetchall()
    }
    people = []
    for user in calls.keys() | costs.keys() | runs.keys():
        count, errors, uncached, output, read, write = calls.get(user, (0,) * 6)
        unknown, priced, micro_usd = costs.get(user, (0, 0, 0))
        people.append(
            Person(
                user_id=user,
                runs=runs.get(user, 0),
                calls=_int(count),
                errors=_int(errors),
                tokens=TokenCounts(_int(uncached), _int(output), _int(read), _int(write)),
                cost_usd=float(micro_usd) / 1e6 if _int(priced) else None,
                priced_calls=_int(priced),
                unknown_cost_calls=_int(unknown),
            )
        )
    people.sort(key=lambda p: (-(p.cost_usd or 0.0), -p.calls, -p.runs, p.user_id))
    return people
