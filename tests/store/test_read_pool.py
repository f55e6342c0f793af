"""Reads run on a bounded pool of connections (store/database.py), on SQLite and PostgreSQL.

Many threads reading at once, each staying alive until all have read (as a run's actor threads
do), open at most ``MAX_READ_CONNECTIONS`` connections between them; a thread that holds a
connection of its own or is inside a transaction keeps using that one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import peewee
import pytest

from store import Store, blob_id_of, connect_store
from store.base.typed_peewee import execute_sql
from store.database import MAX_READ_CONNECTIONS, ConnectionReuse
from tests.conftest import run_in_thread

THREADS = 40


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = connect_store(db_url)
    yield opened
    opened.close()


def reusing(store: Store) -> ConnectionReuse:
    assert isinstance(store.database, ConnectionReuse)
    return store.database


def read_together(store: Store, reads: int) -> None:
    """``THREADS`` threads each make ``reads`` reads, then wait until every thread has."""
    barrier = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(reads):
                store.blobs.has(blob_id_of(b"nothing"))
            barrier.wait(timeout=30)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    assert errors == []


def test_many_reading_threads_share_a_bounded_set_of_connections(store: Store) -> None:
    db = reusing(store)
    before = db.opened_connections
    read_together(store, reads=20)
    assert db.opened_connections - before <= MAX_READ_CONNECTIONS
    assert db.idle_connections <= MAX_READ_CONNECTIONS
    # A second wave opens nothing new: the pool's connections serve it.
    opened = db.opened_connections
    read_together(store, reads=5)
    assert db.opened_connections == opened


def test_a_read_sees_what_was_committed_and_a_write_inside_its_own_transaction(
    store: Store,
) -> None:
    blob = b"pooled read"
    assert run_in_thread(lambda: store.blobs.has(blob_id_of(blob))) is False
    store.blobs.put(blob_id_of(blob), blob)
    assert run_in_thread(lambda: store.blobs.has(blob_id_of(blob))) is True

    def inside_a_transaction() -> bool:
        with store.database.atomic():
            store.blobs.put(blob_id_of(b"not yet committed"), b"not yet committed")
            # Read in the same transaction, on its connection: it sees its own write.
            return store.blobs.has(blob_id_of(b"not yet committed"))

    assert run_in_thread(inside_a_transaction) is True


def test_a_failing_read_raises_and_gives_its_connection_back(store: Store) -> None:
    db = reusing(store)

    def bad_read() -> None:
        db.execute_sql("SELECT no_such_column FROM blobs")

    with pytest.raises(peewee.DatabaseError):
        run_in_thread(bad_read)
    opened, idle = db.opened_connections, db.idle_connections
    assert run_in_thread(lambda: store.blobs.has(blob_id_of(b"x"))) is False
    assert (db.opened_connections, db.idle_connections) == (opened, idle)


def test_a_pooled_connection_the_server_dropped_is_replaced(db_url: str) -> None:
    if not db_url.startswith("postgres"):
        pytest.skip("the server drops connections on PostgreSQL only")
    store = connect_store(db_url)
    try:
        db = reusing(store)
        store.blobs.put(blob_id_of(b"before the drop"), b"before the drop")
        run_in_thread(lambda: store.blobs.has(blob_id_of(b"x")))
        pids = [conn.info.backend_pid for conn in db._idle._idle]  # the pool's idle ones
        assert pids
        for pid in pids:
            execute_sql(store.database, "SELECT pg_terminate_backend(%s)", (pid,))
        found = run_in_thread(lambda: store.blobs.has(blob_id_of(b"before the drop")))
        assert found is True
    finally:
        store.close()
