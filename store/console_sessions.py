"""Console login sessions in the database, so that every server instance behind one balancer
accepts a login made on any of them, and a logout on one ends the session on all.

One row per session: the hex SHA-256 digest of the cookie's session id (never the id itself, so
the table holds nothing a browser could send) and its expiry in wall-clock milliseconds since
the epoch (the instances' clocks must agree to well within a session's lifetime). A session is
live while its expiry is later than now. Expired rows are dropped at the next login, which also
ends the oldest sessions beyond the cap.
"""

from __future__ import annotations

import peewee

from store.base.typed_peewee import execute_sql

CONSOLE_SESSIONS = "console_sessions"


class ConsoleSessionRows:
    """The ``console_sessions`` table; synchronous (the console calls it off the event loop)."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        p = database.param
        table = f'"{CONSOLE_SESSIONS}"'
        self._drop_expired = f'DELETE FROM {table} WHERE "expires_at_ms" <= {p}'
        self._insert = f'INSERT INTO {table} ("digest", "expires_at_ms") VALUES ({p}, {p})'
        # The newest ``keep`` stay; ties in expiry are broken by digest, so every instance
        # that trims at once agrees on which go.
        self._trim = (
            f'DELETE FROM {table} WHERE "digest" NOT IN (SELECT "digest" FROM {table} '
            f'ORDER BY "expires_at_ms" DESC, "digest" DESC LIMIT {p})'
        )
        self._delete = f'DELETE FROM {table} WHERE "digest" = {p}'
        self._expiry = (
            f'SELECT "expires_at_ms" FROM {table} WHERE "digest" = {p} AND "expires_at_ms" > {p}'
        )

    def start(self, digest: str, expires_at_ms: int, now_ms: int, keep: int) -> None:
        """Record a new session; expired ones go, and the oldest beyond ``keep`` live ones."""
        with self._db.atomic():
            execute_sql(self._db, self._drop_expired, (now_ms,))
            execute_sql(self._db, self._insert, (digest, expires_at_ms))
            execute_sql(self._db, self._trim, (max(keep, 1),))

    def end(self, digest: str) -> None:
        """End a session (nothing happens for an unknown digest)."""
        with self._db.atomic():
            execute_sql(self._db, self._delete, (digest,))

    def expiry(self, digest: str, now_ms: int) -> int | None:
        """The live session's expiry (ms since the epoch); None if unknown or expired."""
        row = execute_sql(self._db, self._expiry, (digest, now_ms)).fetchone()
        return None if row is None else int(row[0])
