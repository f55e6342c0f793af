"""Connections outlive the threads that used them (store/database.py's free list).

Real threads on a real SQLite file under tmp_path, and on PostgreSQL when
CURSOR_TEST_POSTGRES_URL is set. A thread hands its connection back as it ends, before
``join()`` returns, so every check here is made after a join: nothing is timed.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import peewee
import pytest

from store import Store, blob_id_of, connect_store
from store.base.typed_peewee import execute_sql
from store.database import (
    MAX_IDLE_CONNECTIONS,
    SQLITE_BUSY_TIMEOUT_MS,
    ConnectionReuse,
    ReusingSqliteDatabase,
)
from tests.conftest import run_in_thread
from tests.support.connections import connection

EXPECTED_PRAGMAS = {
    "busy_timeout": SQLITE_BUSY_TIMEOUT_MS,
    "journal_mode": "wal",
    "synchronous": 2,  # FULL
    "foreign_keys": 1,
}


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = connect_store(db_url)
    yield opened
    opened.close()


def reusing(store: Store) -> ConnectionReuse:
    assert isinstance(store.database, ConnectionReuse)
    return store.database


def first_query(store: Store) -> Any:
    """A thread's first query through the store; returns the connection it ran on."""
    store.blobs.has(blob_id_of(b"nothing"))
    return connection(store.database)


def is_closed(conn: Any) -> bool:
    """Whether a driver connection (sqlite3 or psycopg) has been closed."""
    if isinstance(conn, sqlite3.Connection):
        try:
            conn.total_changes  # noqa: B018 -- raises on a closed connection
        except sqlite3.ProgrammingError:
            return True
        return False
    return bool(conn.closed)


def in_transaction(conn: Any) -> bool:
    if isinstance(conn, sqlite3.Connection):
        return conn.in_transaction
    import psycopg2.extensions

    assert isinstance(conn, psycopg2.extensions.connection)  # not SQLite: PostgreSQL
    return conn.get_transaction_status() != psycopg2.extensions.TRANSACTION_STATUS_IDLE


def hold_connections(store: Store, count: int) -> list[Any]:
    """Run ``count`` threads that each hold a connection at the same time, then end."""
    barrier = threading.Barrier(count)
    conns: list[Any] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            conn = first_query(store)
            with lock:
                conns.append(conn)
            barrier.wait(timeout=30)  # nobody ends before everyone holds one
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive()
    assert errors == []
    return conns


# --- reuse -------------------------------------------------------------------------------------


def test_the_next_thread_reuses_the_connection_of_a_thread_that_ended(store: Store) -> None:
    db = reusing(store)
    opened = db.opened_connections
    first = run_in_thread(lambda: first_query(store))
    assert db.idle_connections == 1
    assert db.opened_connections == opened + 1
    second = run_in_thread(lambda: first_query(store))
    assert second is first
    assert not is_closed(second)
    assert db.opened_connections == opened + 1  # nothing new was opened
    assert db.idle_connections == 1


def test_a_thread_never_gets_a_connection_another_thread_holds(store: Store) -> None:
    conns = hold_connections(store, 4)
    main = connection(store.database)
    assert len({id(c) for c in [*conns, main]}) == 5
    # All four came back; four new threads holding one each take exactly those four.
    assert reusing(store).idle_connections == 4
    again = hold_connections(store, 4)
    assert {id(c) for c in again} == {id(c) for c in conns}


def test_an_explicit_close_in_a_thread_hands_the_connection_back(store: Store) -> None:
    def close_early() -> Any:
        conn = first_query(store)
        store.database.close()
        assert reusing(store).idle_connections == 1  # back before the thread even ends
        return conn

    first = run_in_thread(close_early)
    assert run_in_thread(lambda: first_query(store)) is first


# --- what a reused connection carries -------------------------------------------------------


def test_a_thread_that_ended_mid_transaction_does_not_leak_it(store: Store) -> None:
    def die_mid_transaction() -> Any:
        transaction = store.database.atomic()
        transaction.__enter__()
        store.blobs.put(blob_id_of(b"half-done"), b"half-done")
        conn = connection(store.database)
        assert in_transaction(conn)
        return conn  # the thread ends with the transaction open

    left = run_in_thread(die_mid_transaction)
    assert not in_transaction(left)
    assert not store.blobs.has(blob_id_of(b"half-done"))
    # The write lock went with the rollback: this thread writes at once.
    store.blobs.put(blob_id_of(b"after"), b"after")

    def next_user() -> tuple[Any, bool, bool]:
        conn = connection(store.database)
        return conn, in_transaction(conn), store.blobs.has(blob_id_of(b"half-done"))

    conn, open_transaction, sees_half_done = run_in_thread(next_user)
    assert conn is left
    assert not open_transaction
    assert not sees_half_done
    assert store.blobs.has(blob_id_of(b"after"))


def test_a_thread_that_ended_in_a_failed_transaction_hands_back_a_usable_one(
    store: Store,
) -> None:
    """PostgreSQL refuses every statement after an error until ROLLBACK; the next user must not
    inherit that state (SQLite simply rolls back)."""

    def fail_mid_transaction() -> Any:
        store.database.atomic().__enter__()
        with pytest.raises(peewee.DatabaseError):
            execute_sql(store.database, "SELECT * FROM no_such_table")
        return connection(store.database)

    left = run_in_thread(fail_mid_transaction)
    assert run_in_thread(lambda: first_query(store)) is left


def test_pragmas_are_in_force_on_a_reused_connection(tmp_path: Any) -> None:
    store = connect_store(f"sqlite://{tmp_path / 'p.db'}")
    try:
        first = run_in_thread(lambda: first_query(store))

        def pragmas() -> tuple[Any, dict[str, Any]]:
            values = {
                name: execute_sql(store.database, f"PRAGMA {name}").fetchone()[0]
                for name in EXPECTED_PRAGMAS
            }
            return connection(store.database), values

        conn, values = run_in_thread(pragmas)
        assert conn is first
        assert values == EXPECTED_PRAGMAS
    finally:
        store.close()


# --- bounds and closing ---------------------------------------------------------------------


def test_at_most_the_idle_limit_is_kept_and_the_extras_are_closed(store: Store) -> None:
    db = reusing(store)
    opened = db.opened_connections
    extra = 3
    conns = hold_connections(store, MAX_IDLE_CONNECTIONS + extra)
    assert db.opened_connections == opened + MAX_IDLE_CONNECTIONS + extra
    assert db.idle_connections == MAX_IDLE_CONNECTIONS
    assert sum(is_closed(c) for c in conns) == extra
    # The kept ones serve the next threads without opening anything.
    again = hold_connections(store, MAX_IDLE_CONNECTIONS)
    assert db.opened_connections == opened + MAX_IDLE_CONNECTIONS + extra
    assert {id(c) for c in again} == {id(c) for c in conns if not is_closed(c)}


def test_close_closes_the_idle_connections_and_later_hand_backs(db_url: str) -> None:
    store = connect_store(db_url)
    db = reusing(store)
    idle = hold_connections(store, 3)
    main = connection(store.database)
    holding = threading.Event()
    release = threading.Event()
    held: list[Any] = []

    def hold_across_close() -> None:
        held.append(first_query(store))
        holding.set()
        assert release.wait(timeout=30)

    thread = threading.Thread(target=hold_across_close)
    thread.start()
    try:
        assert holding.wait(timeout=30)
        assert db.idle_connections == 2  # the thread took one of the three
        store.close()
        assert db.idle_connections == 0
        assert all(is_closed(c) for c in [*idle, main] if c is not held[0])
        assert not is_closed(held[0])  # in use by a live thread: left alone
    finally:
        release.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert is_closed(held[0])  # closed when its thread ended, not kept
    assert db.idle_connections == 0


def test_a_connection_closed_while_idle_is_replaced(store: Store) -> None:
    """A dead idle connection (on PostgreSQL: dropped by the server) is never handed out."""
    db = reusing(store)
    first = run_in_thread(lambda: first_query(store))
    if isinstance(store.database, peewee.PostgresqlDatabase):
        execute_sql(store.database, "SELECT pg_terminate_backend(%s)", (first.get_backend_pid(),))
    else:
        first.close()
    opened = db.opened_connections
    second = run_in_thread(lambda: first_query(store))
    assert second is not first
    assert db.opened_connections == opened + 1


def test_memory_database_keeps_one_private_database_per_thread() -> None:
    store = connect_store("sqlite://:memory:")
    try:
        assert not isinstance(store.database, ConnectionReuse)
        assert store.database.table_exists("blobs")

        def other_thread() -> bool:
            try:
                return store.database.table_exists("blobs")
            finally:
                store.database.close()

        assert run_in_thread(other_thread) is False  # its own, empty database
    finally:
        store.close()


def test_file_databases_are_reusing_sqlite_databases(tmp_path: Any) -> None:
    store = connect_store(f"sqlite://{tmp_path / 'kind.db'}")
    try:
        assert isinstance(store.database, ReusingSqliteDatabase)
        assert isinstance(store.database, peewee.SqliteDatabase)
        assert store.database.connect_params == {"check_same_thread": False}
    finally:
        store.close()
