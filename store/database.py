"""Open the database named by ``CURSOR_DATABASE_URL`` and bring its schema up to date.

Accepted URLs:

- ``sqlite://rel/path.db`` (relative to the working directory at open time; the default is
  ``sqlite://cursor-server.db``), ``sqlite:///abs/path.db``, ``sqlite://:memory:``;
- ``postgresql://user:password@host:port/dbname`` (or ``postgres://``), through
  ``playhouse.db_url``; needs the optional driver (``pip install .[postgres]``).

SQLite is parsed here because ``playhouse.db_url`` reads ``sqlite://cursor-server.db`` as a host
name with no database. The database is used from several threads (pykka actors and the asyncio
thread): peewee keeps one connection per thread, and every new SQLite connection gets the pragmas
below.

**Connections outlive their threads.** Every agent run starts about five actor threads, and each
one's first query used to open a connection (and, on SQLite, apply the pragmas): ~0.7 ms+ per
thread on the path of every turn, far more on PostgreSQL. So a file database or PostgreSQL keeps a
small free list (at most ``MAX_IDLE_CONNECTIONS``): a thread's first query takes a connection from
it, and the connection goes back when the thread ends or calls ``close()``. Settings live on the
connection (pragmas, autocommit), so a reused one needs nothing re-applied. A connection is used
by one thread at a time; one handed back inside a transaction is rolled back first (a thread that
died mid-transaction never leaks it), and one that cannot be rolled back is closed.

How a thread's end is noticed: peewee keeps per-thread state in a ``threading.local``, and Python
drops a thread's slot of every ``threading.local`` when the thread ends, in that thread, before
``join()`` returns. Checking a connection out (``_connect``) puts a ``_Lease`` in that slot; a
``weakref.finalize`` on it hands the connection back when the slot is dropped, while an explicit
``close()`` (``_close``) detaches the finalizer and hands the connection back itself. This needs
nothing from the actors. Not chosen: ``playhouse.pool`` returns a connection only on an explicit
``close()``, which actor threads never call, and bounds connections in use rather than idle ones;
wrapping the driver connection in an object with ``__del__`` would change what
``database.connection()`` returns. The free list holds no reference to the database, so a database
nobody uses is still freed (with its connections) by reference counting, as before.

**Reads share a bounded pool.** A thread that holds no connection (every actor thread, as a
rule) runs each read outside a transaction on one of at most ``MAX_READ_CONNECTIONS`` pooled
connections, its rows read out before the connection goes back: before, each actor thread held a
connection for its whole life, so 50 concurrent runs needed some 250 connections and PostgreSQL
ran out of slots. Writes go through the group-commit writer's one connection; a thread inside a
transaction, or one that connected explicitly, keeps its own connection as below. A pooled
PostgreSQL connection is not pinged when taken; a read that fails on a connection the server
dropped is run once more on a new one (a read is safe to repeat).

PostgreSQL reuses connections too (psycopg connections may move between threads as long as one
uses them at a time, and the store keeps no session state: its only lock,
``pg_advisory_xact_lock``, ends with the transaction). An idle PostgreSQL connection is checked
with one ``SELECT 1`` round trip when taken, so one the server dropped meanwhile is replaced
instead of failing the thread's first query.

``sqlite://:memory:`` is not shared: each thread still gets its own private, empty database, so
use it only single-threaded; multi-threaded tests should use a file under ``tmp_path``.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import peewee
from playhouse import db_url

import store.base.typed_peewee as typed_peewee
from store.base.secrets import (
    SECRET_KEY_VARIABLE,
    SecretBox,
    bind_secret_box,
    load_key_file,
    parse_secret_key,
    process_secret_key,
)
from store.blobs import BlobStore
from store.catalog import seal_plaintext_secrets
from store.group_commit import BufferedCursor, GroupCommit
from store.migrations import apply_migrations

# peewee logs every statement with its parameters at DEBUG, provider keys included; those
# lines must never be written, whatever level the process logs at.
logging.getLogger("peewee").setLevel(logging.WARNING)
logger = logging.getLogger(__name__)

DEFAULT_DATABASE_URL = "sqlite://cursor-server.db"
SQLITE_MEMORY = ":memory:"
# How long a SQLite writer waits for another writer's lock before failing with "database is locked".
SQLITE_BUSY_TIMEOUT_MS = 5000
# Applied by peewee to every new connection (a reused one keeps them). busy_timeout comes first so
# the journal_mode switch itself waits for locks. WAL lets readers run while one thread writes;
# synchronous=FULL makes each commit durable across power loss, not only across crashes.
SQLITE_PRAGMAS: tuple[tuple[str, str | int], ...] = (
    ("busy_timeout", SQLITE_BUSY_TIMEOUT_MS),
    ("journal_mode", "wal"),
    ("synchronous", "full"),
    ("foreign_keys", 1),
)
# Idle connections kept for the next thread or read; extras are closed.
MAX_IDLE_CONNECTIONS = 8
# Reads outside a transaction, on a thread that holds no connection, run on at most this many
# connections at once (a thread that finds them all busy waits for one): N concurrent runs never
# need N connections, which PostgreSQL's connection slots could not give.
MAX_READ_CONNECTIONS = 8
POSTGRES_SCHEMES = ("postgresql", "postgres")
POSTGRES_DRIVERS = ("psycopg2", "psycopg")


class DatabaseDriverMissing(RuntimeError):
    """The URL is valid but the optional database driver is not installed."""


# A driver connection: sqlite3.Connection or a psycopg connection.
DriverConnection = Any


class IdleConnections:
    """The free list of one database's connections, shared by its threads.

    Holds no reference to the database (the check functions are plain functions), so the finalizers
    that point here never keep a dropped database alive.
    """

    def __init__(
        self,
        limit: int,
        usable: Callable[[DriverConnection], bool],
        reset: Callable[[DriverConnection], bool],
    ) -> None:
        # Reentrant: a hand-back can run from a finalizer at any allocation of the same thread.
        self._lock = threading.RLock()
        self._idle: list[DriverConnection] = []
        self._limit = limit
        self._usable = usable
        self._reset = reset
        self._closed = False
        self.opened = 0  # connections opened, for tests and measurements
        self.reused = 0  # checkouts served from the free list

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)

    def take(self, *, checked: bool = True) -> DriverConnection | None:
        """The most recently handed-back usable connection, or None (open a new one).

        Unchecked, the connection is not tested first (on PostgreSQL that costs a round trip):
        for a caller that can run its statement again on a new one if it fails."""
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if not checked or self._usable(conn):
                with self._lock:
                    self.reused += 1
                return conn
            _close_quietly(conn)

    def usable(self, conn: DriverConnection) -> bool:
        """Whether ``conn`` still works (its backend's check)."""
        try:
            return self._usable(conn)
        except Exception:
            return False

    def note_opened(self) -> None:
        with self._lock:
            self.opened += 1

    def give_back(self, conn: DriverConnection) -> None:
        """Keep ``conn`` for the next thread, rolled back; close it if it cannot be reset, the list
        is full or the store was closed. Never raises: it runs from finalizers."""
        try:
            reusable = self._reset(conn)
        except Exception as exc:  # a broken connection: nothing to keep
            logger.warning("closing a database connection that could not be reset: %r", exc)
            reusable = False
        if reusable:
            with self._lock:
                if not self._closed and len(self._idle) < self._limit:
                    self._idle.append(conn)
                    return
        _close_quietly(conn)

    def close(self) -> None:
        """Close every idle connection and keep none from now on (later hand-backs are closed)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            _close_quietly(conn)

    def forget(self) -> None:
        """Drop every idle connection without closing it (after a fork, as peewee's dispose)."""
        with self._lock:
            self._idle = []


def _close_quietly(conn: DriverConnection) -> None:
    try:
        conn.close()
    except Exception as exc:
        logger.warning("closing a database connection failed: %r", exc)


class _Lease:
    """Sits in one thread's peewee state while the thread holds ``conn``: when the thread ends,
    Python drops that state, and the finalizer hands ``conn`` back."""

    __slots__ = ("__weakref__", "_finalizer")

    def __init__(self, idle: IdleConnections, conn: DriverConnection) -> None:
        self._finalizer = weakref.finalize(self, idle.give_back, conn)
        # At interpreter exit the process closes its connections; no store work during teardown.
        self._finalizer.atexit = False

    def release(self) -> None:
        """The connection was handed back (or forgotten) explicitly: do nothing at thread end."""
        self._finalizer.detach()


class _DroppedConnection(peewee.OperationalError):
    """A pooled read failed because its idle connection had been dropped by the server."""


class ConnectionReuse(typed_peewee.Database):
    """Mixin for a peewee database: a thread takes an idle connection instead of opening one, and
    hands it back when it closes or ends (see the module docstring)."""

    _idle: IdleConnections
    # Each backend's class defines it: ``(usable, reset)`` for its connections; neither may
    # reference the database (the free list must not keep it alive).
    _connection_checks: Callable[
        [], tuple[Callable[[DriverConnection], bool], Callable[[DriverConnection], bool]]
    ]

    def init(self, database: str | None, *args: Any, **kwargs: Any) -> None:
        """Pointing the database elsewhere starts a new free list (the old one's are closed)."""
        super().init(database, *args, **kwargs)
        previous = getattr(self, "_idle", None)
        self._idle = IdleConnections(MAX_IDLE_CONNECTIONS, *self._connection_checks())
        self._read_slots = threading.BoundedSemaphore(MAX_READ_CONNECTIONS)
        if previous is not None:
            previous.close()

    def execute_sql(self, sql: str, params: Any = None) -> Any:
        """A statement of a thread that holds no connection and is in no transaction (an
        actor's read, as a rule) runs on a pooled connection, its rows read out before the
        connection goes back; any other runs on the thread's connection, as peewee does."""
        state = self._state
        if not state.closed or self.transaction_depth():
            return super().execute_sql(sql, params)
        with self._read_slots:
            try:
                return self._pooled(sql, params, self._idle.take(checked=False))
            except (peewee.DatabaseError, peewee.InterfaceError) as exc:
                if not isinstance(exc, _DroppedConnection):
                    raise
            # An idle connection the server dropped meanwhile: once more, on a new one.
            return self._pooled(sql, params, None)

    def _pooled(self, sql: str, params: Any, conn: DriverConnection | None) -> Any:
        reused = conn is not None
        if conn is None:
            conn = super()._connect()
            self._idle.note_opened()
        state = self._state
        state.conn, state.closed = conn, False
        failed = False
        try:
            return BufferedCursor(super().execute_sql(sql, params))
        except (peewee.DatabaseError, peewee.InterfaceError) as exc:
            failed = True
            if reused and not self._idle.usable(conn):
                raise _DroppedConnection(str(exc)) from exc
            raise
        finally:
            state.conn, state.closed = None, True
            if failed and not self._idle.usable(conn):
                _close_quietly(conn)
            else:
                self._idle.give_back(conn)

    def _connect(self) -> DriverConnection:
        conn = self._idle.take()
        if conn is None:
            conn = super()._connect()
            self._idle.note_opened()
        self._state.lease = _Lease(self._idle, conn)
        return conn

    def _close(self, conn: DriverConnection) -> None:
        self._release_lease()
        self._idle.give_back(conn)

    def dispose(self) -> None:
        """Forget every connection without closing it, as peewee's ``dispose`` (after a fork)."""
        self._release_lease()
        super().dispose()
        self._idle.forget()

    def _release_lease(self) -> None:
        lease: _Lease | None = getattr(self._state, "lease", None)
        self._state.lease = None
        if lease is not None:
            lease.release()

    def close_idle(self) -> None:
        """Close the idle connections and stop keeping any; connections held by live threads are
        closed when those threads end or close them. The group-commit writer commits what it
        holds and closes its connection too (a later write opens a new one)."""
        if isinstance(self, GroupCommit):
            self.stop_writer()
        self._idle.close()

    def _write_connections(
        self,
    ) -> tuple[Callable[[], DriverConnection], Callable[[DriverConnection], None]]:
        """The group-commit writer opens its own connection, set up as every other one (the
        pragmas in force when it opens), and hands it back to the free list when it stops; a
        thread that ended inside a block leaves that connection, rolled back, to the next
        thread, as it would its own. Through a weak reference: the writer must not keep the
        database alive."""
        return functools.partial(_open_counted, weakref.ref(self)), self._idle.give_back

    @property
    def opened_connections(self) -> int:
        """How many connections this database has opened (reused ones are not counted again)."""
        return self._idle.opened

    @property
    def idle_connections(self) -> int:
        """How many connections wait in the free list."""
        return len(self._idle)


def _open_counted(ref: weakref.ref[ConnectionReuse]) -> DriverConnection:
    """A new connection of the database ``ref`` names, counted as opened (not leased)."""
    database = ref()
    if database is None:
        raise peewee.InterfaceError("the database is gone")
    conn = super(ConnectionReuse, database)._connect()
    database._idle.note_opened()
    return conn


def _sqlite_usable(conn: sqlite3.Connection) -> bool:
    try:
        conn.total_changes  # noqa: B018 -- raises ProgrammingError on a closed connection
    except sqlite3.ProgrammingError:
        return False
    return True


def _sqlite_reset(conn: sqlite3.Connection) -> bool:
    if conn.in_transaction:
        conn.rollback()
    return True


class ReusingSqliteDatabase(GroupCommit, ConnectionReuse, peewee.SqliteDatabase):
    """A SQLite file whose connections move between threads (opened ``check_same_thread=False``),
    and whose write transactions are group-committed on one connection."""

    def _connection_checks(
        self,
    ) -> tuple[Callable[[DriverConnection], bool], Callable[[DriverConnection], bool]]:
        return _sqlite_usable, _sqlite_reset


def _postgres_usable(adapter: peewee._BasePsycopgAdapter, conn: DriverConnection) -> bool:
    """Open and idle (after one ``SELECT 1`` round trip), so the thread's first query works."""
    return not conn.closed and not adapter.is_connection_closed(conn)


def _postgres_reset(adapter: peewee._BasePsycopgAdapter, conn: DriverConnection) -> bool:
    """Rolled back if it was in (or failed inside) a transaction; False if the server is gone."""
    return not conn.closed and bool(adapter.is_connection_reusable(conn))


class ReusingPostgresqlDatabase(GroupCommit, ConnectionReuse, peewee.PostgresqlDatabase):
    """PostgreSQL whose connections move between threads, and whose write transactions are
    group-committed on one connection."""

    _adapter: peewee._BasePsycopgAdapter  # peewee's driver adapter (psycopg2 or 3), set by init

    def _connection_checks(
        self,
    ) -> tuple[Callable[[DriverConnection], bool], Callable[[DriverConnection], bool]]:
        adapter = self._adapter  # holds no reference to the database
        return (
            functools.partial(_postgres_usable, adapter),
            functools.partial(_postgres_reset, adapter),
        )


def open_database(url: str) -> peewee.Database:
    """Build an unconnected peewee database for ``url``; ValueError (one line) if it is invalid.

    Error messages never echo the URL, which may contain a password.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError("not a URL: expected sqlite://PATH or postgresql://USER@HOST/DB")
    if scheme == "sqlite":
        return _open_sqlite(rest)
    if scheme in POSTGRES_SCHEMES:
        return _open_postgres(url)
    raise ValueError(f"unsupported scheme {scheme!r}: use sqlite:// or postgresql://")


# The key file of a database that is not a local file (PostgreSQL): in the working directory.
SERVER_KEY_FILE = "cursor-server.key"


def key_file_for(url: str) -> str | None:
    """Where the secret key of ``url``'s database lives without ``CURSOR_SECRET_KEY``: next to
    a SQLite file (``<file>.key``), ``cursor-server.key`` in the working directory for
    PostgreSQL, and nowhere for ``sqlite://:memory:`` (nothing outlives the process anyway).
    ``ValueError`` (or ``DatabaseDriverMissing``) for a URL ``open_database`` refuses, so no
    key file is made for a database that cannot be opened."""
    open_database(url)  # unconnected: only the checks
    scheme, _, rest = url.partition("://")
    if scheme != "sqlite":
        return os.path.abspath(SERVER_KEY_FILE)
    path = sqlite_path(rest)
    # realpath: ``sqlite:////abs`` gives ``//abs``, which names the same file but reads oddly.
    return None if path == SQLITE_MEMORY else os.path.realpath(path) + ".key"


def sqlite_path(rest: str) -> str:
    """The file for the part after ``sqlite://``: made absolute, or ``:memory:``.

    Made absolute now so a later chdir cannot move the database under connections opened later by
    other threads.
    """
    if not rest:
        raise ValueError("sqlite URL has no path: use sqlite://file.db or sqlite:///abs/file.db")
    if "?" in rest or "#" in rest:
        raise ValueError("sqlite URL takes no query string or fragment")
    if rest == SQLITE_MEMORY:
        return SQLITE_MEMORY
    path = os.path.abspath(rest)
    if rest.endswith("/") or os.path.isdir(path):
        raise ValueError(f"sqlite path is a directory, not a file: {path}")
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise ValueError(f"directory for the sqlite file does not exist: {parent}")
    return path


def _open_sqlite(rest: str) -> peewee.SqliteDatabase:
    """SQLite with the store's pragmas; transactions BEGIN IMMEDIATE.

    IMMEDIATE takes the write lock when a transaction starts, so a read-then-write transaction
    waits on busy_timeout instead of failing with SQLITE_BUSY when it upgrades to a writer. A file
    reuses connections across threads; ``:memory:`` does not (each connection is its own database).
    """
    path = sqlite_path(rest)
    settings: dict[str, Any] = {
        "pragmas": list(SQLITE_PRAGMAS),
        "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
        "lock_type": "IMMEDIATE",
    }
    if path == SQLITE_MEMORY:
        return peewee.SqliteDatabase(path, **settings)
    settings["check_same_thread"] = False
    database = ReusingSqliteDatabase(path, **settings)
    database.begin_statement = "BEGIN IMMEDIATE"
    return database


def _check_postgres_url(url: str) -> None:
    """Reject a PostgreSQL URL without host or database name, or with a bad port."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 -- raises ValueError for a non-numeric or out-of-range port
    except ValueError as exc:
        raise ValueError(f"postgresql URL has a bad port: {exc}") from None
    if not parts.hostname:
        raise ValueError("postgresql URL has no host: use postgresql://USER:PASSWORD@HOST/DB")
    if not parts.path.strip("/"):
        raise ValueError("postgresql URL has no database name: use postgresql://USER@HOST/DB")


def _check_postgres_driver() -> None:
    """Fail with install instructions when no driver imports (peewee itself only fails later)."""
    errors: list[str] = []
    for name in POSTGRES_DRIVERS:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            errors.append(f"{name}: {exc}")
        else:
            return
    raise DatabaseDriverMissing(
        "PostgreSQL needs the psycopg2 driver: pip install 'cursor-server[postgres]' "
        f"(from a checkout: pip install '.[postgres]'); {'; '.join(errors)}"
    )


def _open_postgres(url: str) -> peewee.PostgresqlDatabase:
    """PostgreSQL through playhouse.db_url; needs psycopg2 (or psycopg 3) installed."""
    _check_postgres_url(url)
    _check_postgres_driver()
    params = db_url.parse(url, unquote_password=True, unquote_user=True)
    return ReusingPostgresqlDatabase(params.pop("database"), **params)


@dataclass(frozen=True)
class Store:
    """The open, migrated database and the stores built on it."""

    database: peewee.Database
    blobs: BlobStore

    def close(self) -> None:
        """Hand back the calling thread's connection, close every idle one and keep none from
        then on (connections still held by live threads are closed when those threads end).
        Called by the store's owner at shutdown; a thread that merely ends needs no call."""
        self.database.close()
        if isinstance(self.database, ConnectionReuse):
            self.database.close_idle()


@dataclass(frozen=True)
class StoreKey:
    """The key a database's secrets are sealed with and where it came from: the variable's
    name, the key file's path, or none for an in-memory database (the startup line shows it;
    no repr shows the key)."""

    key: bytes = field(repr=False)
    source: str
    created_file: str | None = None  # the key file's path, when this call wrote it


# The database holds call records and conversations (and sealed keys beside them): only its
# owner may read it. SQLite gives the files it makes (``-wal``, ``-shm``, ``-journal``) the
# mode of the database file, so making that one private first covers them all.
DATABASE_FILE_MODE = 0o600
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def make_private(path: str) -> None:
    """Create the SQLite file ``path`` with mode 0600 before SQLite opens it (so its side files
    are private too, whatever the umask), and take group and other access from a file and
    side files an older version left readable. A file we cannot change is left as it is."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, DATABASE_FILE_MODE)
    except OSError:
        return  # SQLite reports the reason when it opens the file
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, DATABASE_FILE_MODE)
    except OSError:
        pass
    finally:
        os.close(fd)
    for suffix in SQLITE_SIDE_FILES:
        side = path + suffix
        try:
            if os.stat(side).st_mode & 0o077:
                os.chmod(side, DATABASE_FILE_MODE)
        except OSError:
            pass


IN_MEMORY_KEY_SOURCE = "none (in-memory database)"


def resolve_store_key(url: str, given: str | None) -> StoreKey:
    """The key of ``url``'s database as the server finds it: ``given`` (the text of
    ``CURSOR_SECRET_KEY``) if set, else the key file next to the database (made with mode
    0600 when there is none); an in-memory database, which nothing reopens, takes this
    process's random key. ``SecretKeyInvalid`` for a bad ``given``, ``KeyFileError`` for a
    key file that cannot be used."""
    if given is not None:
        return StoreKey(parse_secret_key(given), SECRET_KEY_VARIABLE)
    path = key_file_for(url)
    if path is None:
        return StoreKey(process_secret_key(), IN_MEMORY_KEY_SOURCE)
    key, created = load_key_file(Path(path))
    return StoreKey(key, f"file {path}", path if created else None)


def connect_store(url: str, secret_key: bytes | None = None) -> Store:
    """Open ``url``, connect (so a bad path or server fails at startup), apply migrations,
    bind the key the store's secrets are sealed with and seal any an older version left as
    plaintext (``store.base.secrets``).

    Without ``secret_key`` the key is found as the server finds it (``resolve_store_key``
    with this process's ``CURSOR_SECRET_KEY``, else the key file next to the database), so a
    file database sealed by one process opens in the next, whichever opened it; only an
    in-memory database takes a random per-process key.
    """
    if secret_key is None:
        secret_key = resolve_store_key(url, os.environ.get(SECRET_KEY_VARIABLE)).key
    database = open_database(url)
    if isinstance(database, peewee.SqliteDatabase) and database.database != SQLITE_MEMORY:
        make_private(database.database)  # before SQLite makes the file or its side files
    database.connect()
    apply_migrations(database)
    bind_secret_box(database, SecretBox(secret_key))
    sealed = seal_plaintext_secrets(database)
    if sealed:
        logger.info("sealed %d secret(s) stored as plaintext by an older version", sealed)
    return Store(database=database, blobs=BlobStore(database))


# SQLite's words for a write it cannot take now: another writer held the lock past
# busy_timeout, the file (or max_page_count) is full, or the disk failed.
_SQLITE_UNAVAILABLE = ("database is locked", "database table is locked", "disk is full", "disk i/o")
# PostgreSQL SQLSTATE classes of the same kind: insufficient resources (53: disk full, out of
# memory, too many connections), connection exceptions (08), operator intervention (57).
_POSTGRES_UNAVAILABLE = ("53", "08", "57")


def unavailable_cause(exc: BaseException) -> peewee.OperationalError | None:
    """The database failure behind ``exc`` that is the database's state, not our statement: a
    locked or full database, a lost connection; None if there is none. The write did not
    happen and may work later. The chain is followed because SQLite rolls back a transaction
    itself on a full disk, and the rollback peewee then tries fails on its own ("no transaction
    is active") while the full disk is the context."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, peewee.OperationalError) and _is_unavailable(seen):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def is_unavailable(exc: BaseException) -> bool:
    return unavailable_cause(exc) is not None


def log_store_failure(
    logger: logging.Logger, exc: BaseException, message: str, *args: object
) -> None:
    """Log a failed store call: a locked or full database as one warning naming it (the
    database's state, not a bug), anything else as an error with its traceback."""
    cause = unavailable_cause(exc)
    if cause is not None:
        logger.warning(message + ": the database cannot take it now (%s)", *args, cause)
    else:
        logger.error(message, *args, exc_info=exc)


def _is_unavailable(exc: peewee.OperationalError) -> bool:
    pgcode = getattr(exc.__cause__, "pgcode", None) or getattr(exc, "pgcode", None)
    if isinstance(pgcode, str):
        return pgcode[:2] in _POSTGRES_UNAVAILABLE
    text = str(exc).lower()
    return any(words in text for words in _SQLITE_UNAVAILABLE)
