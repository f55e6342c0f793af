"""The Connect page's record of Cursor's agent requests, shared by every server instance.

Why in the database: behind a round-robin balancer Cursor's requests reach every instance, and
the console page asking whether Cursor has connected may be served by another one. The row is
one (``id`` 1): how many requests, the last one's time and the last client version seen. Each
instance counts in memory and adds what it counted since its last flush (``add``), so no agent
request waits on a write and no flush overwrites another instance's count.

The client version is replaced only by a flush whose latest versioned request is no older than
the row's last request: a late flush of an older request does not undo a newer version.
"""

from __future__ import annotations

import peewee

from store.base.typed_peewee import execute_sql

AGENT_ACTIVITY = "agent_activity"
_ROW_ID = 1


class ActivityRows:
    """The ``agent_activity`` row; synchronous (called off the event loop)."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        p = database.param
        t = f'"{AGENT_ACTIVITY}"'
        self._add = (
            f'INSERT INTO {t} ("id", "last_request_ms", "client_version", "requests") '
            f"VALUES ({_ROW_ID}, {p}, {p}, {p}) "
            'ON CONFLICT ("id") DO UPDATE SET '
            f'"requests" = {t}."requests" + excluded."requests", '
            f'"last_request_ms" = CASE WHEN {t}."last_request_ms" IS NULL '
            f'OR {t}."last_request_ms" < excluded."last_request_ms" '
            f'THEN excluded."last_request_ms" ELSE {t}."last_request_ms" END, '
            f'"client_version" = CASE WHEN excluded."client_version" IS NOT NULL '
            f'AND ({t}."last_request_ms" IS NULL OR {p} >= {t}."last_request_ms") '
            f'THEN excluded."client_version" ELSE {t}."client_version" END'
        )
        self._read = (
            f'SELECT "last_request_ms", "client_version", "requests" FROM {t} '
            f'WHERE "id" = {_ROW_ID}'
        )

    def add(
        self,
        requests: int,
        last_request_ms: int,
        client_version: str | None,
        version_ms: int | None,
    ) -> None:
        """Add ``requests`` more, the latest at ``last_request_ms``; ``client_version``: the
        version of the latest of them that sent one (at ``version_ms``), or None."""
        params = (last_request_ms, client_version, requests, version_ms)
        with self._db.atomic():
            execute_sql(self._db, self._add, params)

    def read(self) -> tuple[int | None, str | None, int]:
        """(last request's time in ms since the epoch, client version, requests); no request
        yet is (None, None, 0)."""
        row = execute_sql(self._db, self._read).fetchone()
        if row is None:
            return None, None, 0
        last, version, requests = row
        return (
            None if last is None else int(last),
            None if version is None else str(version),
            int(requests),
        )
