"""Group commit: every write transaction of the process shares one connection and one COMMIT.

Before this, each ``atomic()`` block opened ``BEGIN IMMEDIATE`` on its thread's own connection:
with 50 runs at once their threads queued on SQLite's write lock (whose busy handler sleeps and
polls), and every block paid a COMMIT and its fsync. Now a write block does not open a
transaction of its own. It waits for its turn on the one write connection (a condition, FIFO
enough and without polling), runs its statements there inside the transaction that is open, and
then waits for the COMMIT of that transaction. The writer commits whatever blocks ran while the
previous commit was in progress: one transaction and one fsync for all of them. A block that
finds its group due and the connection free (nobody else in or waiting: every block, at low
concurrency) makes the COMMIT itself, on its own thread, and the writer thread is not woken:
two thread switches fewer per transaction.

What callers keep:

- ``with db.atomic():`` returns only once its writes are committed (durably, by the database's
  ``synchronous`` setting), so everything that waited for a commit before still does (a turn's
  first checkpoint, a round's settling).
- A block that raises leaves nothing behind: the first block of a transaction rolls the
  transaction back; a later one rolls back to the SAVEPOINT taken when it entered, so the
  blocks before it in the group keep their writes. A failed COMMIT fails every block of the
  group with the error.
- Blocks run one at a time in the order they got their turn, and each sees the writes of the
  blocks before it (the same connection), as when each waited for the lock and committed.
- Reads outside ``atomic()`` run on a pooled read connection (``store.database``; WAL), which
  never waits for the writer and sees only committed data.

Not for ``:memory:`` SQLite (each connection is its own database).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import peewee

import store.base.typed_peewee as typed_peewee
from store.base import waits

logger = logging.getLogger(__name__)

# A driver connection: sqlite3.Connection or a psycopg connection.
DriverConnection = Any
# Told how long a COMMIT took, in seconds, on the thread that made it.
CommitObserver = Callable[[float], None]
SAVEPOINT = "group_commit_block"


class GroupCommitFailed(peewee.OperationalError):
    """The transaction holding this block's writes failed to commit; nothing of it was kept."""


class _Group:
    """One transaction on the write connection: the blocks that ran in it, and its outcome."""

    __slots__ = ("begun", "blocks", "committed", "error")

    def __init__(self) -> None:
        self.begun = False
        self.blocks = 0
        self.committed = threading.Event()
        self.error: BaseException | None = None


def _execute(conn: DriverConnection, sql: str) -> None:
    """A statement straight on the driver (sqlite3 and psycopg both take ``cursor().execute``);
    a driver error is raised as peewee's type of the same name, as peewee's own statements are,
    so the store's callers see one family (a locked database is ``peewee.OperationalError``)."""
    cursor = conn.cursor()
    try:
        with typed_peewee.EXCEPTION_WRAPPER:
            cursor.execute(sql)
    finally:
        cursor.close()


class GroupCommitter:
    """The write connection, whose turn it is, and the writer thread that commits.

    Holds no reference to the database (finalizers point here)."""

    def __init__(
        self,
        connect: Callable[[], DriverConnection],
        give_back: Callable[[DriverConnection], None],
        begin_sql: str,
        observers: list[CommitObserver] | None = None,
    ) -> None:
        # Told each COMMIT's duration in seconds (the server's metrics); shared with the
        # database, so an observer added later is told too.
        self._observers = observers if observers is not None else []
        self._connect = connect
        self._give_back = give_back
        self._begin_sql = begin_sql
        self._conn: DriverConnection | None = None
        # One lock, two conditions: blocks wait for their turn on ``_turn`` (woken one at a
        # time: only one can have it), the writer waits on ``_writer`` for a group to be due.
        lock = threading.Lock()
        self._turn = threading.Condition(lock)
        self._writer = threading.Condition(lock)
        self._busy = False  # a block or a commit uses the connection
        self._commit_wanted = False
        self._waiting = 0  # blocks waiting for their turn
        self._owed = 0  # blocks that waited through the last commit: the next group's share
        self._stopping = False
        self._group = _Group()
        self.commits = 0  # transactions committed, for measurements
        self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
        self._thread.start()

    # ---- a block's side ----

    def enter(self) -> tuple[_Group, DriverConnection, bool]:
        """Wait for the connection; returns the group joined, the connection, and whether the
        block took a savepoint (it is not the transaction's first block)."""
        with self._turn:
            self._waiting += 1
            try:
                while self._busy or self._commit_wanted or self._group.error is not None:
                    if self._stopping:
                        raise peewee.InterfaceError("the store's writer is closed")
                    waits.about_to_wait()
                    self._turn.wait()
            finally:
                self._waiting -= 1
            if self._stopping:
                raise peewee.InterfaceError("the store's writer is closed")
            self._busy = True
            group = self._group
        try:
            if self._conn is None:
                self._conn = self._connect()
            conn = self._conn
            savepoint = group.begun
            _execute(conn, f'SAVEPOINT "{SAVEPOINT}"' if savepoint else self._begin_sql)
        except BaseException:
            self._release()
            raise
        group.begun = True
        group.blocks += 1
        return group, conn, savepoint

    def leave(
        self, group: _Group, savepoint: bool, failed: bool, *, orphaned: bool = False
    ) -> None:
        """The block is done: keep or undo its writes, and give the connection back.

        ``orphaned``: its thread ended inside the block. Its writes are undone as for a failure,
        and a connection holding nobody else's writes goes back to the free list for the next
        thread, rolled back (as a thread's own connection would), the next group taking another.
        """
        assert self._conn is not None
        try:
            if not failed:
                if savepoint:
                    _execute(self._conn, f'RELEASE "{SAVEPOINT}"')
            elif savepoint:
                _execute(self._conn, f'ROLLBACK TO "{SAVEPOINT}"')
                _execute(self._conn, f'RELEASE "{SAVEPOINT}"')
            else:
                _execute(self._conn, "ROLLBACK")
                group.begun = False
                group.blocks -= 1
                if orphaned:
                    conn, self._conn = self._conn, None
                    self._give_back(conn)
        except Exception as exc:  # the transaction is broken: the whole group fails
            logger.warning("a write transaction broke and is rolled back: %r", exc)
            group.error = exc
            failed = True
        finally:
            # A block that succeeded commits next itself (``wait_committed``), or wakes the
            # writer then; one that failed leaves its group's fate to the writer now.
            self._release(wake_writer=failed)

    def connection(self) -> DriverConnection:
        """The write connection (opened if none is), for measurements that hook it (a SQLite
        progress handler); statements must go through a block."""
        with self._turn:
            if self._conn is None:
                self._conn = self._connect()
            return self._conn

    def wait_committed(self, group: _Group) -> None:
        """Commit the group on this thread when it is due and the connection is free (the
        writer thread is not woken at all: at low concurrency, every block); else wake the
        writer and block until it committed the group. Raise if the group was not committed."""
        if not group.committed.is_set():
            with self._writer:
                here = (
                    group is self._group
                    and not self._busy
                    and not self._commit_wanted
                    and not self._stopping
                    and self._due()
                )
                if here:
                    self._busy = True
                    self._group = _Group()
                else:
                    self._writer.notify()
            if here:
                waits.about_to_wait()  # the COMMIT syncs: as long a wait as the writer's
                self._finish(group)
                self._committed()
            else:
                waits.about_to_wait()
                group.committed.wait()
        if group.error is not None:
            raise GroupCommitFailed(f"the write transaction failed: {group.error!r}") from (
                group.error
            )

    def _release(self, wake_writer: bool = True) -> None:
        """A block is done with the connection: the writer may commit, else the next block."""
        with self._turn:
            self._busy = False
            if wake_writer:
                self._writer.notify()
            if not self._commit_wanted:
                self._turn.notify()

    # ---- the writer's side ----

    def _due(self) -> bool:
        """Whether the open group should commit now: it holds a block, and either a block broke
        it, or every block that waited through the last commit has had its turn (so one
        transaction takes all of them), or nobody is waiting."""
        group = self._group
        if not group.blocks:
            return group.error is not None
        return group.error is not None or self._waiting == 0 or group.blocks >= self._owed

    def _run(self) -> None:
        while True:
            with self._writer:
                while not self._stopping and not self._due():
                    self._writer.wait()
                if self._stopping and not self._group.begun:
                    break
                self._commit_wanted = True
                while self._busy:
                    self._writer.wait()
                self._busy, self._commit_wanted = True, False
                group, self._group = self._group, _Group()
            self._finish(group)
            self._committed()
        self._close_connection()

    def _committed(self) -> None:
        """A commit is done: the blocks that waited through it are the next group's share."""
        with self._writer:
            self._owed = self._waiting
            self._busy = False
            self._turn.notify()

    def _finish(self, group: _Group) -> None:
        """COMMIT the group's transaction (ROLLBACK if a block broke it), then wake its blocks."""
        conn = self._conn
        if conn is not None and group.begun:
            try:
                began = time.perf_counter()
                _execute(conn, "ROLLBACK" if group.error is not None else "COMMIT")
                if group.error is None:
                    self.commits += 1
                    self._observe(time.perf_counter() - began)
            except Exception as exc:
                logger.warning("a group commit failed: %r", exc)
                group.error = group.error or exc
                self._rollback_quietly(conn)
        group.committed.set()

    def _observe(self, seconds: float) -> None:
        for observer in tuple(self._observers):
            try:
                observer(seconds)
            except Exception:  # an observer's failure is not the commit's
                logger.exception("a commit observer failed")

    def _rollback_quietly(self, conn: DriverConnection) -> None:
        try:
            _execute(conn, "ROLLBACK")
        except Exception as exc:
            logger.warning("rolling back after a failed commit failed: %r", exc)

    def _close_connection(self) -> None:
        """Hand the connection back to the free list (closed there if the store is closed)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            self._give_back(conn)

    def stop(self) -> None:
        """Commit what is pending, hand the write connection back and end the writer thread."""
        with self._writer:
            self._stopping = True
            self._writer.notify_all()
            self._turn.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join()


_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def _writes(sql: str) -> bool:
    return sql.lstrip()[:7].upper().startswith(_WRITES)


class BufferedCursor:
    """A cursor read out at once: a write statement's inside its block (rows of a RETURNING
    included), so nothing of it is pending when the group commits; a pooled read's before its
    connection goes back (``store.database``)."""

    def __init__(self, cursor: Any) -> None:
        self.description = cursor.description
        self.rowcount = cursor.rowcount
        self.lastrowid = getattr(cursor, "lastrowid", None)
        self._rows = list(cursor.fetchall()) if cursor.description else []
        self._next = 0
        cursor.close()

    def fetchone(self) -> Any:
        if self._next >= len(self._rows):
            return None
        row = self._rows[self._next]
        self._next += 1
        return row

    def fetchmany(self, size: int = 1) -> list[Any]:
        rows = self._rows[self._next : self._next + size]
        self._next += len(rows)
        return rows

    def fetchall(self) -> list[Any]:
        rows = self._rows[self._next :]
        self._next = len(self._rows)
        return rows

    def __iter__(self) -> Any:
        while (row := self.fetchone()) is not None:
            yield row

    def close(self) -> None:
        pass


class _InBlock:
    """Sits in the thread's peewee state while it runs a block: if the thread ends inside the
    block, Python drops that state, and the finalizer undoes the block and frees the writer."""

    __slots__ = ("__weakref__", "finalizer")

    def __init__(self, committer: GroupCommitter, group: _Group, savepoint: bool) -> None:
        self.finalizer = weakref.finalize(
            self, committer.leave, group, savepoint, True, orphaned=True
        )
        self.finalizer.atexit = False


class _GroupAtomic(peewee._callable_context_manager):
    """``atomic()`` at depth 0 on a group-commit database: see the module docstring."""

    def __init__(self, db: GroupCommit) -> None:
        self.db = db

    def __enter__(self) -> _GroupAtomic:
        committer = self.db.committer()
        self._committer = committer
        self._group, conn, self._savepoint = committer.enter()
        state = self.db._state
        self._saved = (state.conn, state.closed)
        state.conn, state.closed = conn, False
        state.group_block = _InBlock(committer, self._group, self._savepoint)
        self.db.push_transaction(self)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.db.pop_transaction()
        state = self.db._state
        block = state.group_block
        assert block is not None  # set by __enter__, on this thread
        block.finalizer.detach()
        state.group_block = None
        state.conn, state.closed = self._saved
        self._committer.leave(self._group, self._savepoint, failed=exc_type is not None)
        if exc_type is None:
            self._committer.wait_committed(self._group)


class GroupCommit(typed_peewee.Database):
    """Mixin for a peewee database whose write transactions go through one ``GroupCommitter``."""

    _group_lock: threading.Lock
    _committer: GroupCommitter | None
    _commit_observers: list[CommitObserver]
    begin_statement = "BEGIN"  # what opens a group's transaction

    # Defined by the database class it is mixed into: how the writer takes a connection and
    # hands it back; neither may refer to the database (the committer must not keep it alive).
    _write_connections: Callable[
        [], tuple[Callable[[], DriverConnection], Callable[[DriverConnection], None]]
    ]

    def init(self, database: str | None, *args: Any, **kwargs: Any) -> None:
        super().init(database, *args, **kwargs)
        previous = getattr(self, "_committer", None)
        self._group_lock = threading.Lock()
        self._committer = None
        self._commit_observers = getattr(self, "_commit_observers", [])
        if previous is not None:
            previous.stop()

    def atomic(self, *args: Any, **kwargs: Any) -> Any:
        if self.transaction_depth() == 0:
            return _GroupAtomic(self)
        return super().atomic(*args, **kwargs)

    def execute_sql(self, sql: str, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        """A write statement outside any block (an autocommit INSERT, UPDATE or DELETE) is a
        block of its own, so it too joins a group instead of taking the lock and an fsync."""
        if self.transaction_depth() or not _writes(sql):
            return super().execute_sql(sql, params, *args, **kwargs)
        with _GroupAtomic(self):
            return BufferedCursor(super().execute_sql(sql, params, *args, **kwargs))

    def committer(self) -> GroupCommitter:
        """The running committer, started with the first write."""
        with self._group_lock:
            if self._committer is None:
                committer = GroupCommitter(
                    *self._write_connections(), self.begin_statement, self._commit_observers
                )
                weakref.finalize(self, committer.stop).atexit = False
                self._committer = committer
            return self._committer

    def observe_commits(self, observer: CommitObserver) -> None:
        """Tell ``observer`` every later COMMIT's duration (seconds), on the committing thread."""
        self._commit_observers.append(observer)

    def stop_observing(self, observer: CommitObserver) -> None:
        with contextlib.suppress(ValueError):
            self._commit_observers.remove(observer)

    def stop_writer(self) -> None:
        """Commit what is pending and close the write connection; a later write starts anew."""
        with self._group_lock:
            committer, self._committer = self._committer, None
        if committer is not None:
            committer.stop()

    def write_connection(self) -> DriverConnection:
        """The connection every write block runs on (see ``GroupCommitter.connection``)."""
        return self.committer().connection()

    @property
    def group_commits(self) -> int:
        """Transactions the current writer committed (for tests and measurements)."""
        committer = self._committer
        return 0 if committer is None else committer.commits
