"""The routing settings: where Cursor's Auto goes, and which of Cursor's model ids run on which
of our models. One row of the settings table (``routing``), read when a run starts (at the
edge, and again by the run's model resolution) and by the default-model routes.

The decision itself is pure and lives in ``wire.model_routing`` (the store may not import the
wire); this module stores the same JSON shape and checks it. A model named here always
exists: deleting a model or its provider calls :func:`forget_routing` in the same transaction,
which drops the table entries naming it and sets an Auto naming it back to the first enabled
model (the default), so no run is sent to a model that is gone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

import msgspec
import peewee

from store.base.typed_peewee import execute_sql
from store.catalog.checks import check_length
from store.catalog.errors import Invalid, Problems
from store.catalog.limits import MAX_MODEL_ID_CHARS
from store.catalog.setting_rows import (
    locked_saved_setting,
    model_public_ids,
    read_setting,
    update_setting,
    write_setting,
)

ROUTING_KEY: Final = "routing"
# Routing table rows one installation may hold (each is matched per run at most once).
MAX_ROUTES: Final = 100
# Ids Cursor sends for Auto: the Auto setting decides them, so no entry may name them.
_AUTO_NAMES: Final = frozenset({"default", "auto"})

AutoKind = Literal["first-enabled", "model", "cursor"]


class AutoSetting(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where Cursor's Auto goes: ``first-enabled`` (the default: the first enabled model in
    catalog order), ``model`` (``public_id``) or ``cursor`` (relayed to Cursor's backend)."""

    kind: AutoKind = "first-enabled"
    public_id: str | None = None


class RoutingEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A Cursor model id, or a pattern with ``*``, and the public id of our model it runs on."""

    pattern: str
    public_id: str


class RoutingSettings(msgspec.Struct, frozen=True):
    """The stored routing settings (``wire.model_routing.Routing`` reads the same shape)."""

    auto: AutoSetting = AutoSetting()
    routes: tuple[RoutingEntry, ...] = ()


def get_routing(db: peewee.Database) -> RoutingSettings:
    """The stored routing settings, or the defaults (Auto to the first enabled model, no
    table) when none were saved."""
    return read_setting(db, ROUTING_KEY, RoutingSettings)


def model_ids(db: peewee.Database) -> list[tuple[str, bool]]:
    """Every model's public id and whether it is enabled, in catalog order (what the routing
    decision reads with the settings)."""
    sql = (
        'SELECT "public_id", "enabled" FROM "models"'
        ' ORDER BY "sort_order", "display_name", "public_id"'
    )
    return [(public_id, bool(enabled)) for public_id, enabled in execute_sql(db, sql).fetchall()]


def _check_auto(auto: AutoSetting, known: set[str]) -> AutoSetting:
    if auto.kind != "model":
        if auto.public_id is not None:
            raise Invalid("auto.public_id", "must be null unless auto.kind is 'model'")
        return auto
    if not auto.public_id:
        raise Invalid("auto.public_id", "name the model Auto runs on")
    check_length("auto.public_id", auto.public_id, MAX_MODEL_ID_CHARS)
    if auto.public_id not in known:
        raise Invalid("auto.public_id", f"there is no model {auto.public_id}")
    return auto


def _check_routes(routes: Iterable[RoutingEntry], known: set[str]) -> tuple[RoutingEntry, ...]:
    checked: list[RoutingEntry] = []
    seen: set[str] = set()
    problems = Problems()  # every row's problems at once, each at its cell
    for index, entry in enumerate(routes):
        if index >= MAX_ROUTES:
            raise Invalid("routes", f"at most {MAX_ROUTES} entries")
        pattern = problems.check(_check_pattern, f"routes[{index}].pattern", entry, known, seen)
        public_id = problems.check(_check_target, f"routes[{index}].public_id", entry, known)
        if pattern is not None and public_id is not None:
            checked.append(RoutingEntry(pattern, public_id))
    problems.raise_any()
    return tuple(checked)


def _check_pattern(field: str, entry: RoutingEntry, known: set[str], seen: set[str]) -> str:
    """A row's pattern, trimmed and noted in ``seen``; ``Invalid`` names ``field``."""
    pattern = entry.pattern.strip()
    if not pattern:
        raise Invalid(field, "must not be empty")
    check_length(field, pattern, MAX_MODEL_ID_CHARS)
    if "/" in pattern:
        raise Invalid(
            field,
            "must not contain '/': a CLI's /reasoning/context/fast suffixes are split off "
            "before matching",
        )
    if pattern.lower() in _AUTO_NAMES:
        raise Invalid(
            field, f"{pattern!r} is Cursor's Auto: set where it goes with the Auto setting"
        )
    if pattern in known:
        raise Invalid(field, f"{pattern} is one of your models' ids; it always runs there")
    if pattern in seen:
        raise Invalid(field, f"{pattern!r} is already in the table")
    seen.add(pattern)
    return pattern


def _check_target(field: str, entry: RoutingEntry, known: set[str]) -> str:
    """A row's model: an existing model's public id; ``Invalid`` names ``field``."""
    check_length(field, entry.public_id, MAX_MODEL_ID_CHARS)
    if entry.public_id not in known:
        raise Invalid(field, f"there is no model {entry.public_id!r}")
    return entry.public_id


def update_routing(
    db: peewee.Database,
    *,
    auto: AutoSetting | None = None,
    routes: Iterable[RoutingEntry] | None = None,
) -> RoutingSettings:
    """Replace the Auto setting and/or the whole table (None leaves one as it is) and return
    the result. ``Invalid`` names the field: a model that does not exist, an empty, repeated
    or Auto pattern, one that is a public id of ours, more than ``MAX_ROUTES`` entries."""
    return update_setting(
        db,
        ROUTING_KEY,
        RoutingSettings,
        model_public_ids,
        auto=(auto, _check_auto),
        routes=(routes, _check_routes),
    )


def forget_routing(db: peewee.Database, public_ids: Iterable[str]) -> None:
    """Drop what names the models being deleted (in their transaction): their table entries,
    and an Auto naming one goes back to the first enabled model."""
    gone = set(public_ids)
    if not gone:
        return
    # Locked: a routing save in flight, which checked its models before this delete, commits
    # first, and what it named is then dropped here (never left naming a deleted model).
    current = locked_saved_setting(db, ROUTING_KEY, RoutingSettings)
    if current is None:
        return
    auto = current.auto
    if auto.kind == "model" and auto.public_id in gone:
        auto = AutoSetting()
    routes = tuple(entry for entry in current.routes if entry.public_id not in gone)
    if auto != current.auto or routes != current.routes:
        write_setting(db, ROUTING_KEY, RoutingSettings(auto, routes))
