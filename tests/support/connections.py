"""What the tests reach of peewee that its stubs leave untyped: ``Database.connection()``, for
the tests that compare the driver connections a thread is given, and a SQLite database's
``_pragmas``, which peewee runs on each new connection (the full-database tests add a page
limit there). The store's own statements go through ``store.base.typed_peewee``. Typing only:
the same calls and attributes, unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import peewee


class _Connects(Protocol):
    def connection(self) -> Any: ...


def connection(db: peewee.Database) -> Any:
    """``db.connection()``: the calling thread's driver connection (sqlite3's or psycopg2's, so
    ``Any`` as the store's ``DriverConnection``), opened if it has none."""
    holder: _Connects = db
    return holder.connection()


Pragma = tuple[str, object]


def sqlite_pragmas(db: peewee.SqliteDatabase) -> list[Pragma]:
    """``db._pragmas``: what peewee sets on each new connection, in order."""
    pragmas: Sequence[Pragma] = vars(db)["_pragmas"]
    return list(pragmas)


def set_sqlite_pragmas(db: peewee.SqliteDatabase, pragmas: Sequence[Pragma]) -> None:
    """``db._pragmas = pragmas``: connections opened from now on get these."""
    vars(db)["_pragmas"] = list(pragmas)
