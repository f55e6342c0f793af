"""``peewee.Database.connection()`` typed for the tests that compare the driver connections a
thread is given (peewee's stubs leave the method untyped; the store's own statements go through
``store.base.typed_peewee``). Typing only: the same call, unchanged."""

from __future__ import annotations

from typing import Any, Protocol

import peewee


class _Connects(Protocol):
    def connection(self) -> Any: ...


def connection(db: peewee.Database) -> Any:
    """``db.connection()``: the calling thread's driver connection (sqlite3's or psycopg2's, so
    ``Any`` as the store's ``DriverConnection``), opened if it has none."""
    holder: _Connects = db
    return holder.connection()
