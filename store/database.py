"""Open the database named by ``CURSOR_DATABASE_URL`` and bring its schema up to date.

Accepted URLs:

- ``sqlite://rel/path.db`` (relative to the working directory at open time; the default is
  ``sqlite://cursor-server.db``), ``sqlite:///abs/path.db``, ``sqlite://:memory:``;
- ``postgresql://user:password@host:port/dbname`` (or ``postgres://``), through
  ``playhouse.db_url``; needs the optional driver (``pip install .[postgres]``).

SQLite is parsed here because ``playhouse.db_url`` reads ``sqlite://cursor-server.db`` as a host
name with no database. The database is used from several threads (pykka actors and the asyncio
thread): peewee keeps one connection per thread, and every SQLite connection gets the pragmas
below. Note that ``sqlite://:memory:`` therefore gives each thread its own private, empty database:
use it only single-threaded; multi-threaded tests should use a file under ``tmp_path``.
"""

from __future__ import annotations

import importlib
import logging
import os
from dataclasses import dataclass
from urllib.parse import urlsplit

import peewee
from playhouse import db_url

from store.blobs import BlobStore
from store.migrations import apply_migrations

# peewee logs every statement with its parameters at DEBUG, provider keys included; those
# lines must never be written, whatever level the process logs at.
logging.getLogger("peewee").setLevel(logging.WARNING)

DEFAULT_DATABASE_URL = "sqlite://cursor-server.db"
SQLITE_MEMORY = ":memory:"
# How long a SQLite writer waits for another writer's lock before failing with "database is locked".
SQLITE_BUSY_TIMEOUT_MS = 5000
# Applied by peewee to every new connection, i.e. in every thread. busy_timeout comes first so the
# journal_mode switch itself waits for locks. WAL lets readers run while one thread writes;
# synchronous=FULL makes each commit durable across power loss, not only across crashes.
SQLITE_PRAGMAS: tuple[tuple[str, str | int], ...] = (
    ("busy_timeout", SQLITE_BUSY_TIMEOUT_MS),
    ("journal_mode", "wal"),
    ("synchronous", "full"),
    ("foreign_keys", 1),
)
POSTGRES_SCHEMES = ("postgresql", "postgres")
POSTGRES_DRIVERS = ("psycopg2", "psycopg")


class DatabaseDriverMissing(RuntimeError):
    """The URL is valid but the optional database driver is not installed."""


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
    waits on busy_timeout instead of failing with SQLITE_BUSY when it upgrades to a writer.
    """
    return peewee.SqliteDatabase(
        sqlite_path(rest),
        pragmas=list(SQLITE_PRAGMAS),
        timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
        lock_type="IMMEDIATE",
    )


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
    return peewee.PostgresqlDatabase(params.pop("database"), **params)


@dataclass(frozen=True)
class Store:
    """The open, migrated database and the stores built on it."""

    database: peewee.Database
    blobs: BlobStore

    def close(self) -> None:
        """Close the calling thread's connection (peewee keeps one per thread)."""
        self.database.close()


def connect_store(url: str) -> Store:
    """Open ``url``, connect (so a bad path or server fails at startup), and apply migrations."""
    database = open_database(url)
    database.connect()
    apply_migrations(database)
    return Store(database=database, blobs=BlobStore(database))
