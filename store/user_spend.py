"""Each user's estimated spend today and this UTC month, by the dashboard's cost rule
(``store.call_stats.cost_sql``): the one grouped query the budget counters re-read off the hot
path, so every instance's calls on this database count against a user's budgets."""

from __future__ import annotations

import msgspec
import peewee

from store.call_stats import cost_sql, month_days, scoped_rows

# Per user and day: the calls of unknown cost are left out, as everywhere the cost is shown.
_COST = cost_sql('"user_id"', "bucket")


class UserSpend(msgspec.Struct, frozen=True):
    """One user's estimated USD since today's and since this month's UTC start."""

    today: float = 0.0
    month: float = 0.0


def user_spend(db: peewee.Database, now_ms: int) -> dict[str, UserSpend]:
    """user id -> their spend today and this month (users with no priced call left out)."""
    days = month_days(now_ms)
    today_bucket = (days.end_ms - days.start_ms) // days.bucket_ms - 1
    spend: dict[str, list[float]] = {}
    for user, bucket, _unknown, _priced, micro_usd in scoped_rows(db, _COST, days):
        if user is None or not micro_usd:
            continue
        usd = float(micro_usd) / 1e6
        totals = spend.setdefault(str(user), [0.0, 0.0])
        totals[1] += usd
        if int(bucket) == today_bucket:
            totals[0] += usd
    return {user: UserSpend(today, month) for user, (today, month) in spend.items()}
