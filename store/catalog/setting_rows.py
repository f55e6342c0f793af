"""One row of the settings table per setting: its key, and its value as a msgspec Struct in
JSON. Read with written SQL (several are read at every run's start); changed only under the
row's lock, so two partial updates at once both survive, and a model delete in flight (which
locks the row to drop the model from it) commits first or waits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
import peewee

from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql
from store.catalog.errors import Problems
from store.catalog.tables import SETTING_SQL, lock_row, tables_of

S = TypeVar("S", bound=msgspec.Struct)
C = TypeVar("C")


def _in_transaction(db: peewee.Database) -> None:
    """A lock outside a transaction is released at once (PostgreSQL's autocommit): refused."""
    if not db.in_transaction():
        raise RuntimeError("a setting row is locked only inside a transaction")


def read_setting(db: peewee.Database, key: str, type_: type[S]) -> S:
    """The stored value, or ``type_()`` (its defaults) when none was saved."""
    row = execute_sql(db, SETTING_SQL.format(param=db.param), (key,)).fetchone()
    return type_() if row is None else msgspec.json.decode(row[0], type=type_)


def locked_setting(db: peewee.Database, key: str, type_: type[S]) -> S:
    """In a transaction: the row made to exist, locked, and read."""
    _in_transaction(db)
    setting = tables_of(db).setting
    default = msgspec.json.encode(type_()).decode()
    setting.insert(
        key=key, value_json=default, updated_at_ms=now_ms()
    ).on_conflict_ignore().execute()
    lock_row(setting.select().where(setting.key == key), db).first()
    return read_setting(db, key, type_)


def locked_saved_setting(db: peewee.Database, key: str, type_: type[S]) -> S | None:
    """In a transaction: the row locked and read, or None when it was never saved."""
    _in_transaction(db)
    setting = tables_of(db).setting
    row = lock_row(setting.select().where(setting.key == key), db).first()
    return None if row is None else msgspec.json.decode(row.value_json, type=type_)


def write_setting(db: peewee.Database, key: str, value: msgspec.Struct) -> None:
    """Replace the row's value (made to exist by ``locked_setting`` in the same transaction)."""
    setting = tables_of(db).setting
    value_json = msgspec.json.encode(value).decode()
    setting.update(value_json=value_json, updated_at_ms=now_ms()).where(
        setting.key == key
    ).execute()


def model_public_ids(db: peewee.Database) -> set[str]:
    """Every model's public id, enabled or not: what a setting may name (read in the setting's
    locked transaction, so a model deleted meanwhile is either gone here or waits)."""
    rows = execute_sql(db, 'SELECT "public_id" FROM "models"').fetchall()
    return {str(public_id) for (public_id,) in rows}


def update_setting(
    db: peewee.Database,
    key: str,
    type_: type[S],
    context: Callable[[peewee.Database], C],
    **parts: tuple[Any, Callable[[Any, C], Any]],
) -> S:
    """Replace the given parts of a setting and return the result. Each part is its value
    (None leaves it as it is) and its check, which answers the value to store or raises
    ``Invalid``; a check is also given what ``context`` reads under the row's lock (the models
    a setting may name). One ``Invalid`` names every broken part; nothing is written then."""
    with db.atomic():
        current = locked_setting(db, key, type_)
        found = context(db)
        problems = Problems()
        checked = {
            name: problems.check(check, value, found)
            for name, (value, check) in parts.items()
            if value is not None
        }
        problems.raise_any()
        result = msgspec.structs.replace(current, **checked)
        write_setting(db, key, result)
    return result
