"""Group commit (store/group_commit.py): write blocks share one connection and one COMMIT.

Real threads on a SQLite file under tmp_path and on PostgreSQL when CURSOR_TEST_POSTGRES_URL is
set. What is checked is what callers rely on: a block's ``atomic()`` returns only once its writes
are committed and visible to every other connection; a block that fails leaves nothing while the
blocks grouped with it keep theirs; a failed COMMIT fails its blocks; reads never wait for the
writer; and writes arriving together share transactions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from store import Store, blob_id_of, connect_store
from store.base.typed_peewee import execute_sql
from store.group_commit import GroupCommit, GroupCommitFailed
from tests.conftest import run_in_thread

THREADS = 20


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = connect_store(db_url)
    yield opened
    opened.close()


def group_commit(store: Store) -> GroupCommit:
    assert isinstance(store.database, GroupCommit)
    return store.database


def test_the_writes_that_waited_through_a_commit_share_the_next_one_and_are_visible(
    store: Store,
) -> None:
    """The first block holds the writer until every other thread waits for its turn; then at
    most two transactions take all of them, and each write is visible to any other connection
    as soon as its call returns."""
    inside, release = threading.Event(), threading.Event()
    seen: list[bool] = []
    errors: list[BaseException] = []
    before = group_commit(store).group_commits

    def first() -> None:
        with store.database.atomic():
            store.blobs.put(blob_id_of(b"first"), b"first")
            inside.set()
            assert release.wait(30)

    def writer(i: int) -> None:
        try:
            payload = f"blob {i}".encode()
            store.blobs.put(blob_id_of(payload), payload)
            seen.append(run_in_thread(lambda: store.blobs.has(blob_id_of(payload))))
        except BaseException as exc:
            errors.append(exc)

    holder = threading.Thread(target=first)
    holder.start()
    assert inside.wait(30)
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    committer = group_commit(store).committer()
    deadline = time.monotonic() + 30
    while committer._waiting < THREADS and time.monotonic() < deadline:
        time.sleep(0.001)
    release.set()
    for thread in [holder, *threads]:
        thread.join(timeout=60)
    assert errors == []
    assert seen == [True] * THREADS
    commits = group_commit(store).group_commits - before
    assert 1 <= commits <= 2, commits


def test_a_failing_block_leaves_nothing_and_the_blocks_grouped_with_it_keep_theirs(
    store: Store,
) -> None:
    """The first block holds the writer until the other two wait for it, so they run in the
    transaction it opened: the failing one rolls back to its savepoint only."""
    inside, release = threading.Event(), threading.Event()
    good, bad, first = b"kept", b"rolled back", b"first"
    outcomes: dict[str, BaseException | None] = {}

    def first_block() -> None:
        with store.database.atomic():
            store.blobs.put(blob_id_of(first), first)
            inside.set()
            assert release.wait(30)

    def good_block() -> None:
        store.blobs.put(blob_id_of(good), good)

    def bad_block() -> None:
        with store.database.atomic():
            store.blobs.put(blob_id_of(bad), bad)
            raise ValueError("the caller's own error")

    def run(name: str, fn: object) -> threading.Thread:
        def target() -> None:
            try:
                assert callable(fn)
                fn()
                outcomes[name] = None
            except BaseException as exc:
                outcomes[name] = exc

        thread = threading.Thread(target=target)
        thread.start()
        return thread

    threads = [run("first", first_block)]
    assert inside.wait(30)
    threads += [run("good", good_block), run("bad", bad_block)]
    release.set()
    for thread in threads:
        thread.join(timeout=30)
    assert outcomes["first"] is None and outcomes["good"] is None
    assert isinstance(outcomes["bad"], ValueError)
    assert run_in_thread(lambda: store.blobs.has(blob_id_of(first)))
    assert run_in_thread(lambda: store.blobs.has(blob_id_of(good)))
    assert not run_in_thread(lambda: store.blobs.has(blob_id_of(bad)))


def test_reads_never_wait_for_a_write_in_progress(store: Store) -> None:
    inside, release = threading.Event(), threading.Event()
    payload = b"being written"

    def slow_write() -> None:
        with store.database.atomic():
            store.blobs.put(blob_id_of(payload), payload)
            inside.set()
            assert release.wait(30)

    writer = threading.Thread(target=slow_write)
    writer.start()
    try:
        assert inside.wait(30)
        reads: list[bool] = []
        reader = threading.Thread(target=lambda: reads.append(store.blobs.has(blob_id_of(payload))))
        reader.start()
        reader.join(timeout=10)
        assert not reader.is_alive(), "a read waited for the writer"
        assert reads == [False]  # the write is not committed yet
    finally:
        release.set()
        writer.join(timeout=30)
    assert run_in_thread(lambda: store.blobs.has(blob_id_of(payload)))


def test_a_failed_commit_fails_the_block_and_the_store_goes_on(store: Store) -> None:
    """A deferred foreign key is checked only at COMMIT: the block's atomic() raises then, its
    rows are gone, and the next write commits."""
    db = store.database
    with db.atomic():
        execute_sql(db, "CREATE TABLE gc_parent (id INTEGER PRIMARY KEY)")
        execute_sql(
            db,
            "CREATE TABLE gc_child (id INTEGER PRIMARY KEY, parent INTEGER"
            " REFERENCES gc_parent (id) DEFERRABLE INITIALLY DEFERRED)",
        )

    def orphan() -> None:
        with db.atomic():
            execute_sql(db, "INSERT INTO gc_child (id, parent) VALUES (1, 999)")

    with pytest.raises(GroupCommitFailed):
        run_in_thread(orphan)
    orphans = run_in_thread(lambda: execute_sql(db, "SELECT count(*) FROM gc_child").fetchone())
    assert orphans == (0,)
    store.blobs.put(blob_id_of(b"after"), b"after")
    assert run_in_thread(lambda: store.blobs.has(blob_id_of(b"after")))


def test_a_nested_block_is_a_savepoint_inside_the_group(store: Store) -> None:
    outer, inner = b"outer", b"inner"
    with store.database.atomic():
        store.blobs.put(blob_id_of(outer), outer)
        with pytest.raises(ValueError), store.database.atomic():
            store.blobs.put(blob_id_of(inner), inner)
            raise ValueError("undo the inner block only")
    assert run_in_thread(lambda: store.blobs.has(blob_id_of(outer)))
    assert not run_in_thread(lambda: store.blobs.has(blob_id_of(inner)))


def test_a_write_after_close_starts_a_new_writer(db_url: str) -> None:
    store = connect_store(db_url)
    store.close()
    store.blobs.put(blob_id_of(b"late"), b"late")
    assert run_in_thread(lambda: store.blobs.has(blob_id_of(b"late")))
    store.close()


def test_a_lone_block_commits_on_its_own_thread_without_waking_the_writer(store: Store) -> None:
    """With nobody else writing, the block's own thread makes the COMMIT: the writer thread is
    never woken for it (its COMMITs are counted apart from the block's)."""
    db = store.database
    assert isinstance(db, GroupCommit)
    committer = db.committer()
    commits_on: list[str] = []
    original = committer._finish

    def finish(group: Any) -> None:
        commits_on.append(threading.current_thread().name)
        original(group)

    committer._finish = finish  # type: ignore[method-assign]
    blob = b"lone"
    store.blobs.put(blob_id_of(blob), blob)
    assert store.blobs.get(blob_id_of(blob)) == blob
    assert commits_on == [threading.current_thread().name]


def test_an_observer_is_told_each_commit_until_it_stops_observing(store: Store) -> None:
    """The server's metrics hear every COMMIT's duration, on the committing thread."""
    told: list[float] = []
    database = group_commit(store)
    database.observe_commits(told.append)
    before = database.group_commits
    store.blobs.put(blob_id_of(b"one"), b"one")
    store.blobs.put(blob_id_of(b"two"), b"two")
    assert len(told) == database.group_commits - before == 2
    assert all(0 <= seconds < 5 for seconds in told)
    database.stop_observing(told.append)
    store.blobs.put(blob_id_of(b"three"), b"three")
    assert len(told) == 2
