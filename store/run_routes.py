"""Which instance holds each agent request id, so any instance can pass a request to it.

Why: behind a balancer that sends every request to the next instance, one run's RunSSE and
BidiAppends reach different processes, but a run lives in the memory of one (its frames, its
inbox, its actors). The first instance to hear of a request id claims it here
(``INSERT … ON CONFLICT DO NOTHING``: of two claiming at once, one row wins and both read it);
every other instance forwards that id's requests to the owner's ``internal_url`` (its lease
row, ``store.instances``). An owner whose lease is no longer live has died: the next instance
to hear of its id takes the row over by compare-and-set, as a standby takes a failed server's
traffic, and serves what the editor sends next (its runs' rows were or will be swept).
"""

from __future__ import annotations

import msgspec
import peewee

from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql
from store.instances import INSTANCES

ROUTES = "run_routes"

# A route older than this is forgotten by the sweep: no run is held that long in memory.
ROUTE_TTL_MS = 24 * 3600 * 1000


class RunRoute(msgspec.Struct, frozen=True):
    """Who holds a request id: ``owner``'s instance id, where it takes forwarded requests
    (None: it takes none), and whether its lease is live now."""

    owner: str
    internal_url: str | None
    live: bool


class RunRoutes:
    """The route rows: claimed once per request id, read by every instance that hears of it."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        p = database.param
        self._claim = (
            f'INSERT INTO "{ROUTES}" ("request_id", "instance_id", "claimed_at_ms") '
            f'VALUES ({p}, {p}, {p}) ON CONFLICT ("request_id") DO NOTHING '
            'RETURNING "instance_id"'
        )
        self._read = (
            f'SELECT r."instance_id", i."internal_url", i."lease_expires_at_ms" '
            f'FROM "{ROUTES}" r LEFT JOIN "{INSTANCES}" i ON i."instance_id" = r."instance_id" '
            f'WHERE r."request_id" = {p}'
        )
        self._take_over = (
            f'UPDATE "{ROUTES}" SET "instance_id" = {p}, "claimed_at_ms" = {p} '
            f'WHERE "request_id" = {p} AND "instance_id" = {p}'
        )
        self._run_owner = (
            f'SELECT i."instance_id", i."internal_url", i."lease_expires_at_ms" '
            f'FROM "runs" r JOIN "{INSTANCES}" i ON i."instance_id" = r."instance_id" '
            f'WHERE r."run_id" = {p}'
        )
        self._forget = (
            f'DELETE FROM "{ROUTES}" WHERE "claimed_at_ms" < {p} OR "instance_id" NOT IN '
            f'(SELECT "instance_id" FROM "{INSTANCES}" WHERE "lease_expires_at_ms" >= {p})'
        )

    def claim(self, request_id: str, instance_id: str) -> RunRoute:
        """Claim ``request_id`` for ``instance_id`` unless another instance has; its route.
        A route already there is read without a write (the usual case of every instance but
        the first to hear of the run); a claim that wins names no URL (the caller holds it)."""
        now = now_ms()
        row = execute_sql(self._db, self._read, (request_id,)).fetchone()
        if row is not None:
            return _route(row, now)
        with self._db.atomic():
            inserted = execute_sql(self._db, self._claim, (request_id, instance_id, now))
            if inserted.fetchone() is not None:
                return RunRoute(instance_id, None, True)
        row = execute_sql(self._db, self._read, (request_id,)).fetchone()
        if row is None:  # forgotten between the two statements (its owner died): claim again
            return self.claim(request_id, instance_id)
        return _route(row, now)

    def take_over(self, request_id: str, dead_owner: str, instance_id: str) -> bool:
        """Move the route from ``dead_owner`` to ``instance_id``; False if it had moved already
        (another instance took it over first: read it again)."""
        with self._db.atomic():
            cursor = execute_sql(
                self._db, self._take_over, (instance_id, now_ms(), request_id, dead_owner)
            )
            return bool(cursor.rowcount == 1)

    def run_owner(self, run_id: str) -> RunRoute | None:
        """The instance that opened the run row ``run_id`` (every run kind writes one), if
        that instance has a lease row."""
        row = execute_sql(self._db, self._run_owner, (run_id,)).fetchone()
        return None if row is None else _route(row, now_ms())

    def forget_stale(self) -> int:
        """Drop the routes of instances with no live lease and those older than
        ``ROUTE_TTL_MS``; how many."""
        now = now_ms()
        with self._db.atomic():
            return int(execute_sql(self._db, self._forget, (now - ROUTE_TTL_MS, now)).rowcount)


def _route(row: tuple[object, ...], now: int) -> RunRoute:
    owner, url, expires = row
    live = isinstance(expires, int) and expires >= now
    return RunRoute(str(owner), None if url is None else str(url), live)
