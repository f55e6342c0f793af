"""The protocol drift every server instance has seen, summed (``protocol_drift``, migration 18).

Why in the database: behind a balancer Cursor's requests reach every instance, and the Connect
page asking what Cursor sent that the server does not know may be served by another one. Each
instance counts in memory and adds batches (``add``): counts add up, the first sighting is the
earliest, the last the latest, so no flush overwrites another instance's. The table keeps at
most ``MAX_STORED_ROWS`` keys; past that the ones last seen longest ago go.
"""

from __future__ import annotations

from collections.abc import Sequence

import peewee

from store.base.typed_peewee import execute_sql

PROTOCOL_DRIFT = "protocol_drift"
# Keys the table keeps (client versions change with every Cursor update).
MAX_STORED_ROWS = 5000

# (kind, message_type, name, value, client_version, first_seen_ms, last_seen_ms, count)
DriftTuple = tuple[str, str, str, int, str, int, int, int]


class DriftRows:
    """The ``protocol_drift`` rows; synchronous (called off the event loop)."""

    def __init__(self, database: peewee.Database, max_rows: int = MAX_STORED_ROWS) -> None:
        self._db = database
        p = database.param
        t = f'"{PROTOCOL_DRIFT}"'
        self._add = (
            f'INSERT INTO {t} ("kind", "message_type", "name", "value", "client_version", '
            f'"first_seen_ms", "last_seen_ms", "count") VALUES ({p}, {p}, {p}, {p}, {p}, {p}, '
            f'{p}, {p}) ON CONFLICT ("kind", "message_type", "name", "value", "client_version") '
            f'DO UPDATE SET "count" = {t}."count" + excluded."count", '
            f'"first_seen_ms" = CASE WHEN excluded."first_seen_ms" < {t}."first_seen_ms" '
            f'THEN excluded."first_seen_ms" ELSE {t}."first_seen_ms" END, '
            f'"last_seen_ms" = CASE WHEN excluded."last_seen_ms" > {t}."last_seen_ms" '
            f'THEN excluded."last_seen_ms" ELSE {t}."last_seen_ms" END'
        )
        self._prune = (
            f'DELETE FROM {t} WHERE "last_seen_ms" < (SELECT "last_seen_ms" FROM {t} '
            f'ORDER BY "last_seen_ms" DESC LIMIT 1 OFFSET {int(max_rows) - 1})'
        )
        self._read = (
            f'SELECT "kind", "message_type", "name", "value", "client_version", '
            f'"first_seen_ms", "last_seen_ms", "count" FROM {t} '
            f'ORDER BY "last_seen_ms" DESC, "kind", "message_type", "name" LIMIT {p}'
        )

    def add(self, rows: Sequence[DriftTuple]) -> None:
        """Add the counts of ``rows`` (one transaction), then forget the oldest past the bound."""
        with self._db.atomic():
            for row in rows:
                execute_sql(self._db, self._add, row)
            execute_sql(self._db, self._prune)

    def read(self, limit: int) -> list[DriftTuple]:
        """At most ``limit`` rows, the latest sighting first."""
        return [
            (str(k), str(m), str(n), int(v), str(c), int(f), int(last), int(count))
            for k, m, n, v, c, f, last, count in execute_sql(
                self._db, self._read, (limit,)
            ).fetchall()
        ]
