"""Server instances sharing one database: each process's lease, and the sweep of dead ones' rows.

Why: two servers on one PostgreSQL (active/standby behind a balancer) both start, and both
sweep. A running ``runs`` or ``llm_calls`` row may belong to a live peer, so the sweep must not
close every running row as a single server's startup could. Each process registers an instance
id and keeps a lease on it (``heartbeat``); every row it opens names that id
(``runs.instance_id``, ``llm_calls.instance_id``); a row is *orphaned* when no live lease names
its instance (expired, never written, or NULL: a row of a store used without a lease), and only
orphaned rows are closed. A process's own lease is live while it beats, so its rows never are.
A peer on the same host (same host name and process namespace) whose process is gone gives up
its lease at once (``drop_gone_local``): a restart on one machine closes what the killed
process left without waiting for the lease; a peer elsewhere is dead when its lease expires.
Times are the one clock's (``store.base.clock``): the servers' clocks must agree to well within the
lease.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import weakref
from collections.abc import Callable

import peewee

from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql

INSTANCES = "server_instances"

_BOUND: weakref.WeakKeyDictionary[peewee.Database, str] = weakref.WeakKeyDictionary()
_BOUND_LOCK = threading.Lock()


def new_instance_id() -> str:
    """A random id for this process (16 hex digits): nothing else names a process."""
    return secrets.token_hex(8)


def bind_instance(db: peewee.Database, instance_id: str) -> None:
    """Make ``instance_id`` the process that every row opened through ``db`` names."""
    with _BOUND_LOCK:
        _BOUND[db] = instance_id


def instance_of(db: peewee.Database) -> str | None:
    """The instance bound to ``db``; None (NULL rows, orphaned for any sweep) without a lease."""
    with _BOUND_LOCK:
        return _BOUND.get(db)


def orphaned(param: str) -> str:
    """The SQL condition "this row's instance holds no live lease" at the time ``param``."""
    return (
        '("instance_id" IS NULL OR "instance_id" NOT IN (SELECT "instance_id" '
        f'FROM "{INSTANCES}" WHERE "lease_expires_at_ms" >= {param}))'
    )


def this_host() -> str:
    """Where a process id means this process table: the host name and, where ``/proc`` tells
    it, the pid namespace (two containers with one host name do not share a process table)."""
    try:
        namespace = f"/pidns:{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        namespace = ""
    return socket.gethostname() + namespace


def process_alive(pid: int) -> bool:
    """Whether ``pid`` names a process of this host (signal 0 tests without sending)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


class Instances:
    """The lease rows: written by their own process only, read by every sweep."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        p = database.param
        self._insert = (
            f'INSERT INTO "{INSTANCES}" ("instance_id", "host", "pid", "started_at_ms", '
            f'"lease_expires_at_ms", "internal_url") VALUES ({p}, {p}, {p}, {p}, {p}, {p})'
        )
        self._local = f'SELECT "instance_id", "pid" FROM "{INSTANCES}" WHERE "host" = {p}'
        self._renew = (
            f'UPDATE "{INSTANCES}" SET "lease_expires_at_ms" = {p} WHERE "instance_id" = {p}'
        )
        self._advertise = f'UPDATE "{INSTANCES}" SET "internal_url" = {p} WHERE "instance_id" = {p}'
        self._delete = f'DELETE FROM "{INSTANCES}" WHERE "instance_id" = {p}'
        self._expired = f'DELETE FROM "{INSTANCES}" WHERE "lease_expires_at_ms" < {p}'
        self._live = (
            f'SELECT "instance_id" FROM "{INSTANCES}" WHERE "lease_expires_at_ms" >= {p} '
            'ORDER BY "instance_id"'
        )

    def register(
        self,
        instance_id: str,
        lease_ms: int,
        host: str | None = None,
        pid: int | None = None,
        internal_url: str | None = None,
    ) -> None:
        """Take a lease on ``instance_id`` for ``lease_ms`` from now (a new id each start), for
        the process ``pid`` on ``host`` (this one by default), which takes requests forwarded
        by its peers at ``internal_url`` (None: it takes none)."""
        now = now_ms()
        where = (this_host() if host is None else host, os.getpid() if pid is None else pid)
        row = (instance_id, *where, now, now + lease_ms, internal_url)
        with self._db.atomic():
            execute_sql(self._db, self._insert, row)

    def advertise(self, instance_id: str, internal_url: str) -> None:
        """Name where the instance takes forwarded requests (once its listener is bound)."""
        with self._db.atomic():
            execute_sql(self._db, self._advertise, (internal_url, instance_id))

    def drop_gone_local(
        self, host: str | None = None, alive: Callable[[int], bool] = process_alive
    ) -> list[str]:
        """Give up the leases of this host's instances whose process is gone; their ids."""
        rows = execute_sql(self._db, self._local, (this_host() if host is None else host,))
        gone = [str(instance) for instance, pid in rows.fetchall() if not alive(int(pid))]
        if gone:
            with self._db.atomic():
                for instance_id in gone:
                    execute_sql(self._db, self._delete, (instance_id,))
        return gone

    def heartbeat(self, instance_id: str, lease_ms: int) -> bool:
        """Extend the lease to ``lease_ms`` from now; False if the row is gone (a peer's sweep
        found it expired: this process's rows may already be closed)."""
        with self._db.atomic():
            cursor = execute_sql(self._db, self._renew, (now_ms() + lease_ms, instance_id))
            return bool(cursor.rowcount == 1)

    def release(self, instance_id: str) -> None:
        """At a clean shutdown, after the process ended its own rows."""
        with self._db.atomic():
            execute_sql(self._db, self._delete, (instance_id,))

    def forget_expired(self) -> int:
        """Drop expired leases (after their rows were swept); how many."""
        with self._db.atomic():
            return int(execute_sql(self._db, self._expired, (now_ms(),)).rowcount)

    def live(self) -> list[str]:
        """The instances whose lease has not expired."""
        return [str(row[0]) for row in execute_sql(self._db, self._live, (now_ms(),)).fetchall()]


def ping(db: peewee.Database) -> None:
    """One round trip to the database (the health check's); raises when it does not answer."""
    execute_sql(db, "SELECT 1").fetchone()
