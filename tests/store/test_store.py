"""Tests for the store foundation: URL parsing, SQLite pragmas, migrations, blob CAS.

Real SQLite files under tmp_path; the PostgreSQL variants run when CURSOR_TEST_POSTGRES_URL is set
(see .ci/postgres.sh), each test in a fresh schema.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import peewee
import pytest
from playhouse.test_utils import count_queries

from store import (
    DEFAULT_DATABASE_URL,
    BlobHashMismatch,
    DatabaseDriverMissing,
    InvalidBlobId,
    Store,
    apply_migrations,
    blob_id_of,
    connect_store,
    latest_version,
    open_database,
)
from store.base.typed_peewee import execute_sql
from store.blobs import HAS_MANY_IDS
from store.database import SQLITE_BUSY_TIMEOUT_MS
from store.migrations import (
    MigrationError,
    applied_versions,
    create_blobs,
    migration,
    registered_migrations,
)
from tests.conftest import run_in_thread
from tests.support.connections import connection
from tests.support.process import REPO as REPO_ROOT

# --- helpers and fixtures ----------------------------------------------------------------------


def sqlite_url(path: Path) -> str:
    """sqlite:// URL for an absolute path (three slashes)."""
    return f"sqlite://{path}"


def put(store: Store, data: bytes) -> bytes:
    """Store ``data`` under its SHA-256 id; the id."""
    blob_id = blob_id_of(data)
    store.blobs.put(blob_id, data)
    return blob_id


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """A connected, migrated store."""
    opened = connect_store(db_url)
    yield opened
    opened.close()


def blob_rows(store: Store) -> list[tuple[bytes, bytes]]:
    """Every row of the blobs table, as bytes."""
    cursor = execute_sql(store.database, 'SELECT id, data FROM "blobs" ORDER BY id')
    return [(bytes(i), bytes(d)) for i, d in cursor.fetchall()]


def version_rows(db: peewee.Database) -> list[tuple[Any, ...]]:
    """Every row of schema_version, in version order."""
    sql = 'SELECT version, name, applied_at FROM "schema_version" ORDER BY version'
    return [tuple(row) for row in execute_sql(db, sql).fetchall()]


# --- URL parsing -------------------------------------------------------------------------------


def test_relative_sqlite_url_is_resolved_against_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    assert open_database("sqlite://rel.db").database == str(tmp_path / "rel.db")
    assert open_database("sqlite://sub/x.db").database == str(tmp_path / "sub" / "x.db")


def test_default_url_is_cursor_server_db_in_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    db = open_database(DEFAULT_DATABASE_URL)
    assert isinstance(db, peewee.SqliteDatabase)
    assert db.database == str(tmp_path / "cursor-server.db")


def test_relative_path_stays_put_after_chdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Connections opened later (other threads) must not follow a chdir."""
    monkeypatch.chdir(tmp_path)
    db = open_database("sqlite://pinned.db")
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    db.connect()
    execute_sql(db, "CREATE TABLE t (x)")
    db.close()
    assert (tmp_path / "pinned.db").exists()
    assert not (other / "pinned.db").exists()


def test_absolute_sqlite_url(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/abs.db"
    assert url.startswith("sqlite:///")
    assert open_database(url).database == str(tmp_path / "abs.db")


def test_memory_sqlite_url() -> None:
    db = open_database("sqlite://:memory:")
    assert isinstance(db, peewee.SqliteDatabase)
    assert db.database == ":memory:"
    store = connect_store("sqlite://:memory:")
    assert store.blobs.get(put(store, b"m")) == b"m"
    store.close()


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_postgres_url_is_accepted_without_connecting(scheme: str) -> None:
    pytest.importorskip("psycopg2", reason="psycopg2 not installed: pip install '.[postgres]'")
    db = open_database(f"{scheme}://us%40er:p%3Ass@db.example:5433/cursor?connect_timeout=3")
    assert isinstance(db, peewee.PostgresqlDatabase)
    assert db.is_closed()
    assert db.database == "cursor"
    assert db.connect_params == {
        "user": "us@er",
        "password": "p:ss",
        "host": "db.example",
        "port": 5433,
        "connect_timeout": 3,
    }


@pytest.mark.process
def test_postgres_without_driver_says_how_to_install() -> None:
    """With psycopg2 (and psycopg) unimportable, the error names the extra to install."""
    code = (
        "import sys\n"
        "sys.modules['psycopg2'] = None\n"
        "sys.modules['psycopg'] = None\n"
        "from store import open_database, DatabaseDriverMissing\n"
        "try:\n"
        "    open_database('postgresql://u:p@localhost/db')\n"
        "except DatabaseDriverMissing as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert "pip install" in result.stdout
    assert "[postgres]" in result.stdout
    assert issubclass(DatabaseDriverMissing, RuntimeError)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("mysql://u:p@h/db", "unsupported scheme 'mysql'"),
        ("http://example.com/x.db", "unsupported scheme 'http'"),
        ("cursor-server.db", "not a URL"),
        ("sqlite:/x.db", "not a URL"),
        ("", "not a URL"),
        ("sqlite://", "no path"),
        ("sqlite://x.db?mode=ro", "no query string"),
        ("sqlite:///nonexistent-dir-9f3b/x.db", "does not exist"),
        ("sqlite:///tmp/", "directory"),
        ("postgresql://host-only", "no database name"),
        ("postgresql:///db", "no host"),
        ("postgres://u@h:99999/db", "bad port"),
    ],
)
def test_bad_urls_raise_value_error_with_one_line_reason(url: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason) as info:
        open_database(url)
    assert "\n" not in str(info.value)


def test_url_errors_do_not_echo_the_password() -> None:
    for url in ("postgresql://u:s3cret@h:port/db", "postgresql://u:s3cret@h", "ftp://u:s3cret@h"):
        with pytest.raises(ValueError) as info:
            open_database(url)
        assert "s3cret" not in str(info.value)


# --- SQLite pragmas ----------------------------------------------------------------------------


def sqlite_pragmas(db: peewee.Database) -> dict[str, Any]:
    """The pragmas the store promises, as the current thread's connection reports them."""
    names = ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")
    return {name: execute_sql(db, f"PRAGMA {name}").fetchone()[0] for name in names}


EXPECTED_PRAGMAS = {
    "journal_mode": "wal",
    "synchronous": 2,  # FULL
    "foreign_keys": 1,
    "busy_timeout": SQLITE_BUSY_TIMEOUT_MS,
}


def test_pragmas_in_effect_on_file_database(tmp_path: Path) -> None:
    store = connect_store(sqlite_url(tmp_path / "p.db"))
    assert sqlite_pragmas(store.database) == EXPECTED_PRAGMAS
    assert SQLITE_BUSY_TIMEOUT_MS >= 1000
    store.close()


def test_pragmas_in_effect_on_connection_from_another_thread(tmp_path: Path) -> None:
    store = connect_store(sqlite_url(tmp_path / "p.db"))
    main_connection = connection(store.database)

    def in_thread() -> tuple[dict[str, Any], bool]:
        try:
            fresh = connection(store.database) is not main_connection
            return sqlite_pragmas(store.database), fresh
        finally:
            store.database.close()

    pragmas, fresh_connection = run_in_thread(in_thread)
    assert fresh_connection
    assert pragmas == EXPECTED_PRAGMAS
    store.close()


def test_transactions_take_the_write_lock_at_begin(tmp_path: Path) -> None:
    """BEGIN IMMEDIATE: an open transaction blocks other writers before it has written anything,
    so read-then-write transactions wait on busy_timeout instead of failing on upgrade."""
    path = tmp_path / "lock.db"
    store = connect_store(sqlite_url(path))
    in_transaction = threading.Event()
    release = threading.Event()

    def hold_transaction() -> None:
        try:
            with store.database.atomic():
                store.blobs.has(blob_id_of(b"x"))
                in_transaction.set()
                assert release.wait(timeout=10)
        finally:
            store.database.close()

    holder = threading.Thread(target=hold_transaction)
    holder.start()
    try:
        assert in_transaction.wait(timeout=10)
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
        other.close()
    finally:
        release.set()
        holder.join(timeout=10)
    store.close()


# --- migrations --------------------------------------------------------------------------------


def test_migrations_are_numbered_without_gaps() -> None:
    versions = [v for v, _ in registered_migrations()]
    assert versions == list(range(1, latest_version() + 1))
    assert versions[0] == 1
    assert registered_migrations()[0][1] is create_blobs


def test_registering_a_version_twice_is_refused() -> None:
    with pytest.raises(MigrationError, match="registered twice"):
        migration(1)(create_blobs)
    assert registered_migrations()[0][1] is create_blobs


def test_migrations_apply_once_and_record_versions(db_url: str) -> None:
    before = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    store = connect_store(db_url)
    db = store.database
    rows = version_rows(db)
    expected = [(v, fn.__name__) for v, fn in registered_migrations()]
    assert [(v, n) for v, n, _ in rows] == expected
    assert expected[0] == (1, "create_blobs")
    assert db.table_exists("blobs")
    assert db.table_exists("schema_version")
    applied_at = rows[0][2]
    if isinstance(applied_at, str):  # SQLite stores DateTimeField as text
        applied_at = datetime.datetime.fromisoformat(applied_at)
    assert before - datetime.timedelta(seconds=5) <= applied_at
    assert applied_at <= datetime.datetime.now(datetime.UTC).replace(tzinfo=None)

    assert apply_migrations(db) == []
    assert version_rows(db) == rows
    assert applied_versions(db) == [v for v, _ in expected]
    store.close()


def test_migrations_survive_reopen(db_url: str) -> None:
    first = connect_store(db_url)
    blob_id = put(first, b"kept")
    rows = version_rows(first.database)
    first.close()

    second = connect_store(db_url)
    assert version_rows(second.database) == rows
    assert second.blobs.get(blob_id) == b"kept"
    second.close()


def test_concurrent_startups_migrate_once(db_url: str) -> None:
    """Several processes/threads starting at once on a fresh database must not collide."""
    threads = 6
    barrier = threading.Barrier(threads)
    applied: list[list[int]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    db = open_database(db_url)

    def worker() -> None:
        try:
            barrier.wait(timeout=10)
            versions = apply_migrations(db)
            with lock:
                applied.append(versions)
        except BaseException as exc:
            with lock:
                errors.append(exc)
        finally:
            db.close()

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=30)
    assert errors == []
    # Each migration runs in its own transaction, so different threads may apply different
    # versions; what matters is that every version was applied exactly once, in order per thread.
    assert len(applied) == threads
    assert sorted(v for versions in applied for v in versions) == list(
        range(1, latest_version() + 1)
    )
    assert all(versions == sorted(versions) for versions in applied)
    assert [row[0] for row in version_rows(db)] == list(range(1, latest_version() + 1))
    db.close()


def test_failed_migration_rolls_back_alone_and_resumes(db_url: str) -> None:
    """Each migration is its own transaction: a failure keeps earlier ones, undoes its own."""
    db = open_database(db_url)
    assert applied_versions(db) == []

    def create_then_fail(db: peewee.Database) -> None:
        execute_sql(db, "CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("boom")

    def create_properly(db: peewee.Database) -> None:
        execute_sql(db, "CREATE TABLE half_done (x INTEGER)")

    with pytest.raises(RuntimeError, match="boom"):
        apply_migrations(db, [(1, create_blobs), (2, create_then_fail)])
    assert [row[0] for row in version_rows(db)] == [1]
    assert db.table_exists("blobs")
    assert not db.table_exists("half_done")

    assert apply_migrations(db, [(1, create_blobs), (2, create_properly)]) == [2]
    assert [row[:2] for row in version_rows(db)] == [(1, "create_blobs"), (2, "create_properly")]
    assert db.table_exists("half_done")
    db.close()


def test_blob_columns_are_binary(store: Store) -> None:
    db = store.database
    if isinstance(db, peewee.PostgresqlDatabase):
        sql = (
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'blobs' AND table_schema = current_schema() ORDER BY column_name"
        )
        assert execute_sql(db, sql).fetchall() == [("data", "bytea"), ("id", "bytea")]
    else:
        columns = {c.name: (c.data_type, c.primary_key) for c in db.get_columns("blobs")}
        assert columns == {"id": ("BLOB", True), "data": ("BLOB", False)}


# --- blob CAS ----------------------------------------------------------------------------------


def test_put_get_round_trip(store: Store) -> None:
    data = bytes(range(256)) * 100
    blob_id = hashlib.sha256(data).digest()
    assert store.blobs.get(blob_id) is None
    assert not store.blobs.has(blob_id)
    assert store.blobs.put(blob_id, data) is True
    assert store.blobs.get(blob_id) == data
    assert type(store.blobs.get(blob_id)) is bytes
    assert store.blobs.has(blob_id)
    assert blob_rows(store) == [(blob_id, data)]


def test_empty_blob_round_trip(store: Store) -> None:
    blob_id = put(store, b"")
    assert blob_id == hashlib.sha256(b"").digest()
    assert store.blobs.get(blob_id) == b""


def test_hash_mismatch_is_refused_and_nothing_stored(store: Store) -> None:
    claimed = blob_id_of(b"what the client said")
    with pytest.raises(BlobHashMismatch) as info:
        store.blobs.put(claimed, b"what it sent")
    assert info.value.blob_id == claimed
    assert info.value.actual == blob_id_of(b"what it sent")
    assert blob_rows(store) == []
    assert not store.blobs.has(claimed)


def test_repeated_put_is_a_no_op(store: Store) -> None:
    blob_id = blob_id_of(b"same")
    assert store.blobs.put(blob_id, b"same") is True
    assert store.blobs.put(blob_id, b"same") is False
    assert blob_rows(store) == [(blob_id, b"same")]


def test_put_many_stores_every_blob_across_statements_and_skips_stored_ones(
    store: Store,
) -> None:
    blobs = {blob_id_of(f"blob {i}".encode()): f"blob {i}".encode() for i in range(600)}
    first = next(iter(blobs))
    store.blobs.put(first, blobs[first])  # already stored: left as it is
    store.blobs.put_many(blobs)  # 600 rows: three INSERTs of at most 250
    assert sorted(blob_rows(store)) == sorted(blobs.items())
    store.blobs.put_many(blobs)  # all stored: nothing changes
    assert len(blob_rows(store)) == 600


def test_put_many_with_one_bad_hash_stores_nothing(store: Store) -> None:
    good = {blob_id_of(b"good"): b"good"}
    claimed = blob_id_of(b"what the client said")
    with pytest.raises(BlobHashMismatch):
        store.blobs.put_many({**good, claimed: b"what it sent"})
    assert blob_rows(store) == []


@pytest.mark.parametrize(
    "bad_id",
    [b"\x00" * 31, b"\x00" * 33, b"", blob_id_of(b"x").hex(), bytearray(blob_id_of(b"x"))],
)
def test_malformed_id_is_refused(store: Store, bad_id: Any) -> None:
    with pytest.raises(InvalidBlobId, match="32 raw bytes"):
        store.blobs.put(bad_id, b"x")
    with pytest.raises(InvalidBlobId):
        store.blobs.get(bad_id)
    with pytest.raises(InvalidBlobId):
        store.blobs.has(bad_id)
    with pytest.raises(InvalidBlobId):
        store.blobs.has_many([blob_id_of(b"x"), bad_id])
    assert blob_rows(store) == []


def test_concurrent_puts_of_one_blob_store_it_once(store: Store) -> None:
    data = os.urandom(256 * 1024)
    blob_id = blob_id_of(data)
    threads = 8
    barrier = threading.Barrier(threads)
    results: list[bool] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker() -> None:
        try:
            barrier.wait(timeout=10)
            stored = store.blobs.put(blob_id, data)
            with lock:
                results.append(stored)
        except BaseException as exc:
            with lock:
                errors.append(exc)
        finally:
            store.database.close()

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=30)
    assert errors == []
    assert sorted(results) == [False] * (threads - 1) + [True]
    assert blob_rows(store) == [(blob_id, data)]


def test_has_many_returns_stored_subset_in_one_query(store: Store) -> None:
    stored = [put(store, f"blob {i}".encode()) for i in range(50)]
    missing = [blob_id_of(f"missing {i}".encode()) for i in range(50)]
    with count_queries() as counter:
        found = store.blobs.has_many(stored[::2] + missing + stored[::2])
    assert counter.count == 1
    assert found == set(stored[::2])
    assert all(type(b) is bytes for b in found)


def test_has_many_beyond_one_query_finds_every_stored_id(store: Store) -> None:
    stored = [blob_id_of(f"blob {i}".encode()) for i in range(HAS_MANY_IDS + 100)]
    store.blobs.put_many(
        {blob_id_of(f"blob {i}".encode()): f"blob {i}".encode() for i in range(0, len(stored), 3)}
    )
    missing = [blob_id_of(f"missing {i}".encode()) for i in range(HAS_MANY_IDS)]
    with count_queries() as counter:
        found = store.blobs.has_many(stored + missing)
    assert counter.count == 3  # 1 600 distinct ids, 500 per query
    assert found == set(stored[::3])


def test_has_many_of_nothing(store: Store) -> None:
    put(store, b"something")
    assert store.blobs.has_many([]) == set()
    assert store.blobs.has_many([blob_id_of(b"nothing")]) == set()


def test_blobs_are_visible_across_threads(store: Store) -> None:
    blob_id = put(store, b"shared")

    def read() -> bytes | None:
        try:
            return store.blobs.get(blob_id)
        finally:
            store.database.close()

    assert run_in_thread(read) == b"shared"


def test_postgres_fixture_is_really_postgres(pg_url: str) -> None:
    """Guards the parametrised tests: the postgres variant must not silently run on SQLite."""
    store = connect_store(pg_url)
    assert isinstance(store.database, peewee.PostgresqlDatabase)
    schema = execute_sql(store.database, "SELECT current_schema()").fetchone()[0]
    assert schema.startswith("test_")
    store.close()
