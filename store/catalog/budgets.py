"""The budgets and limits per person: a default for everyone and overrides by user id. One row
of the settings table (``budgets``), read by the server's budget counters off the hot path
(``actors.run.budget_counters``) and by the console.

The decision itself is pure and lives in ``wire.budgets`` (the store may not import the wire);
this module stores the same shape in JSON and checks it: USD amounts non-negative and finite,
counts positive integers, allowed models existing public ids, each ``None`` meaning no limit.
An override replaces the default as a whole. Deleting a model drops it from every allowed list
in the same transaction (:func:`forget_budget_models`), so a saved setting never names a model
that is gone; a list left empty allows no model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import partial
from typing import Final

import msgspec
import peewee

from store.catalog.checks import check_length
from store.catalog.errors import Invalid, Problems
from store.catalog.limits import INT32_MAX, MAX_MODEL_ID_CHARS
from store.catalog.setting_rows import (
    locked_saved_setting,
    model_public_ids,
    read_setting,
    update_setting,
    write_setting,
)

BUDGETS_KEY: Final = "budgets"
# Per-user overrides one installation may hold (all are read by every refresh of the counters).
MAX_BUDGET_OVERRIDES: Final = 1000
# Models one allowed list may name.
MAX_ALLOWED_MODELS: Final = 200
# The largest USD amount a budget may be (beyond it, say "no limit": null).
MAX_BUDGET_USD: Final = 1e9
# A user id is what ``wire.identity`` reads from a token: at most this long.
MAX_BUDGET_USER_ID_CHARS: Final = 254


class Limits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One user's limits (``wire.budgets.UserLimits`` in JSON); ``None``: no limit."""

    usd_per_day: float | None = None
    usd_per_month: float | None = None
    turns_per_minute: int | None = None
    concurrent_runs: int | None = None
    allowed_models: tuple[str, ...] | None = None


class BudgetsSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The stored budgets: the default for everyone and the overrides by user id."""

    default: Limits = Limits()
    overrides: dict[str, Limits] = {}


def get_budgets(db: peewee.Database) -> BudgetsSettings:
    """The stored budgets, or no limit for anyone when none were saved."""
    return read_setting(db, BUDGETS_KEY, BudgetsSettings)


def _check_usd(field: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Invalid(field, "must be a number of USD or null")
    if not math.isfinite(value) or not 0 <= value <= MAX_BUDGET_USD:
        raise Invalid(field, f"must be a finite amount of USD from 0 to {MAX_BUDGET_USD:g}")
    return float(value)


def _check_count(field: str, value: int | None) -> int | None:
    if value is None:
        return None
    if type(value) is not int or not 1 <= value <= INT32_MAX:
        raise Invalid(field, f"must be an integer from 1 to {INT32_MAX} or null")
    return value


def _check_models(
    field: str, models: Iterable[str] | None, known: set[str]
) -> tuple[str, ...] | None:
    if models is None:
        return None
    checked: list[str] = []
    for index, public_id in enumerate(models):
        if index >= MAX_ALLOWED_MODELS:
            raise Invalid(field, f"at most {MAX_ALLOWED_MODELS} models")
        check_length(f"{field}[{index}]", public_id, MAX_MODEL_ID_CHARS)
        if public_id not in known:
            raise Invalid(f"{field}[{index}]", f"there is no model {public_id!r}")
        if public_id not in checked:
            checked.append(public_id)
    return tuple(checked)


def _check_limits(field: str, limits: Limits, known: set[str]) -> Limits:
    """The limits checked; ``Invalid`` names every broken one (``default.usd_per_day``)."""
    problems = Problems()
    checked = Limits(
        usd_per_day=problems.check(_check_usd, f"{field}.usd_per_day", limits.usd_per_day),
        usd_per_month=problems.check(_check_usd, f"{field}.usd_per_month", limits.usd_per_month),
        turns_per_minute=problems.check(
            _check_count, f"{field}.turns_per_minute", limits.turns_per_minute
        ),
        concurrent_runs=problems.check(
            _check_count, f"{field}.concurrent_runs", limits.concurrent_runs
        ),
        allowed_models=problems.check(
            _check_models, f"{field}.allowed_models", limits.allowed_models, known
        ),
    )
    problems.raise_any()
    return checked


def _check_overrides(overrides: dict[str, Limits], known: set[str]) -> dict[str, Limits]:
    if len(overrides) > MAX_BUDGET_OVERRIDES:
        raise Invalid("overrides", f"at most {MAX_BUDGET_OVERRIDES} users")
    checked: dict[str, Limits] = {}
    problems = Problems()  # every user's problems at once
    for user_id, limits in overrides.items():
        if not user_id or not user_id.isprintable():
            problems.add("overrides", "a user id must be printable and not empty")
            continue
        try:
            check_length("overrides", user_id, MAX_BUDGET_USER_ID_CHARS)
        except Invalid as exc:
            # Named once: a too-long id is never made part of its limits' field names.
            problems.add(exc.field, exc.problems[0][1])
            continue
        checked_limits = problems.check(_check_limits, f"overrides[{user_id!r}]", limits, known)
        if checked_limits is not None:
            checked[user_id] = checked_limits
    problems.raise_any()
    return checked


def update_budgets(
    db: peewee.Database,
    *,
    default: Limits | None = None,
    overrides: dict[str, Limits] | None = None,
) -> BudgetsSettings:
    """Replace the default and/or the whole set of overrides (None leaves one as it is) and
    return the result. ``Invalid`` names the field: a negative, infinite or too large amount,
    a count below 1, a model that does not exist, too many overrides or models."""
    # Checked under the row's lock: a model delete in flight commits first or waits, so no
    # deleted model is named.
    return update_setting(
        db,
        BUDGETS_KEY,
        BudgetsSettings,
        model_public_ids,
        default=(default, partial(_check_limits, "default")),
        overrides=(overrides, _check_overrides),
    )


def forget_budget_models(db: peewee.Database, public_ids: Iterable[str]) -> None:
    """Drop the models being deleted (in their transaction) from every allowed list."""
    gone = set(public_ids)
    if not gone:
        return
    current = locked_saved_setting(db, BUDGETS_KEY, BudgetsSettings)
    if current is None:
        return

    def kept(limits: Limits) -> Limits:
        if limits.allowed_models is None:
            return limits
        models = tuple(m for m in limits.allowed_models if m not in gone)
        return msgspec.structs.replace(limits, allowed_models=models)

    result = BudgetsSettings(
        kept(current.default), {user: kept(limits) for user, limits in current.overrides.items()}
    )
    if result != current:
        write_setting(db, BUDGETS_KEY, result)
