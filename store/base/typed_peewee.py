"""peewee as the store uses it, typed: the few calls peewee's own stubs leave untyped
(``Database.execute_sql`` and ``execute``), the attributes peewee sets at run time, which no
stub can list (a ``Table``'s columns, the fields of a model class built per database), and the
private hooks the store's databases extend (``_state``, ``_connect``, ``pop_transaction``).

Typing only: every class here is peewee's own at run time (the typed declarations exist for the
type checker alone) and each function calls peewee's method unchanged, so nothing the store
does changes; ``mypy --strict`` reads the store through this module instead of ignored lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import peewee


class Cursor(Protocol):
    """What the store reads of a DB-API cursor (sqlite3's, psycopg's or ``BufferedCursor``).
    A row is the driver's tuple of values as the driver decodes them, so rows are ``Any``, as
    typeshed types sqlite3's own cursor; so is ``lastrowid``, whose meaning is the driver's
    (SQLite's row id after an INSERT, an OID or None on PostgreSQL, where the store reads
    ``RETURNING`` instead)."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class _RunsStatements(Protocol):
    """``peewee.Database``'s statement methods, with the types peewee's stubs leave out."""

    def execute_sql(self, sql: str, params: Sequence[object] | None = None) -> Cursor: ...

    def execute(self, query: peewee.Node) -> Cursor: ...


def execute_sql(db: peewee.Database, sql: str, params: Sequence[object] | None = None) -> Cursor:
    """``db.execute_sql(sql, params)``: the statement on the thread's connection (or a pooled
    read connection, ``store.database``), its cursor typed."""
    runner: _RunsStatements = db
    return runner.execute_sql(sql, params)


def execute(db: peewee.Database, query: peewee.Node) -> Cursor:
    """``db.execute(query)``: a query peewee builds (an index, a DDL statement) run on ``db``."""
    runner: _RunsStatements = db
    return runner.execute(query)


# peewee's context manager that raises a driver's exception as peewee's type of the same name
# (``peewee.OperationalError`` for a locked database): the module attribute its stubs leave out.
EXCEPTION_WRAPPER: peewee.ExceptionWrapper = vars(peewee)["__exception_wrapper__"]


class Detachable(Protocol):
    def detach(self) -> object: ...


class GroupBlock(Protocol):
    """What the thread's state holds while it runs a group-commit block."""

    @property
    def finalizer(self) -> Detachable: ...


if TYPE_CHECKING:

    class _RuntimeModelBase(peewee.ModelBase):
        def __getattr__(cls, name: str) -> peewee.Field: ...

    class RuntimeModel(peewee.Model, metaclass=_RuntimeModelBase):
        """A model class built at run time, one per database (a class binds one database): on
        the class an attribute mypy cannot list is one of its fields, on a row its value."""

        def __getattr__(self, name: str) -> Any: ...

    class Table(peewee.Table):
        """A ``peewee.Table`` built with ``columns``: peewee sets one ``Column`` attribute per
        name at run time, so an attribute mypy cannot list is a column."""

        def __getattr__(self, name: str) -> peewee.Column: ...

    class ConnectionState(peewee._ConnectionState):
        """A thread's peewee state (its connection, whether closed, its transactions) with the
        two slots the store's databases keep in it: the lease on a pooled connection
        (``store.database``) and the group-commit block the thread is inside
        (``store.group_commit``). Both are there for their finalizers, which act when the thread
        ends; only the block's is detached by hand."""

        lease: object | None
        group_block: GroupBlock | None

    class Database(peewee.Database):
        """``peewee.Database`` with the private hooks the store's databases override or call."""

        _state: ConnectionState

        def execute_sql(self, sql: str, params: Sequence[object] | None = None) -> Cursor: ...

        def _connect(self) -> Any: ...

        def _close(self, conn: Any) -> None: ...

        def pop_transaction(self) -> object: ...

else:
    RuntimeModel = peewee.Model
    Table = peewee.Table
    Database = peewee.Database
