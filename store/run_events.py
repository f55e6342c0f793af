"""Run events: the spans of each run (the run, its checkpoint jobs, its tool calls) in
``run_events``, written by the RunEventRecorderActor alone and read by the console.

Why spans written open: a span's row is inserted when it starts and its end set when it ends,
so a run that stalls shows the span it is waiting in (a checkpoint submitted and never
published, a tool call with no result). ``detail_json`` is a small JSON object; an end merges
its keys into the start's. Retention counts runs: the events of the newest ``keep`` runs stay,
older runs' go, all of a run's rows together.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

import msgspec
import peewee

from store.base.typed_peewee import execute_sql

RUN_EVENTS = "run_events"

# A detail value: what the spans' facts are made of (ids, names, codes, counts, flags).
DetailValue = str | int | bool | None | tuple[int, ...] | list[int]
Detail = Mapping[str, DetailValue]


class EventKind(StrEnum):
    RUN = "run"
    CHECKPOINT = "checkpoint"
    TOOL = "tool"


class RunEventRecord(msgspec.Struct, frozen=True):
    """One stored span; ``ended_at_ms`` is None while it runs (or if its run never ended it)."""

    id: int
    run_id: str
    conversation_id: str
    kind: EventKind
    started_at_ms: int
    ended_at_ms: int | None
    detail: dict[str, object]


def encode_detail(detail: Detail) -> str:
    return msgspec.json.encode(dict(detail)).decode()


def decode_detail(text: str) -> dict[str, object]:
    """A stored detail; one that is not a JSON object reads as empty (never a crash)."""
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class _Statements:
    """The recorder's SQL, written once per placeholder style (``?`` SQLite, ``%s`` PostgreSQL)."""

    def __init__(self, p: str, returning: bool) -> None:
        self.returning = returning
        columns = (
            '"run_id", "conversation_id", "kind", "started_at_ms", "ended_at_ms", "detail_json"'
        )
        self.insert = (
            f'INSERT INTO "{RUN_EVENTS}" ({columns}) VALUES ({p}, {p}, {p}, {p}, {p}, {p})'
            + (' RETURNING "id"' if returning else "")
        )
        self.close = (
            f'UPDATE "{RUN_EVENTS}" SET "started_at_ms" = {p}, "ended_at_ms" = {p}, '
            f'"detail_json" = {p} WHERE "id" = {p}'
        )
        # The id of the ``keep``-th newest run span: older runs' events go.
        self.prune_cutoff = (
            f'SELECT "id" FROM "{RUN_EVENTS}" WHERE "kind" = \'run\' '
            f'ORDER BY "id" DESC LIMIT 1 OFFSET {p}'
        )
        # Every older row whose run has no kept span (a run retried under the same id keeps
        # all of its rows while its newest span is kept).
        self.prune = (
            f'DELETE FROM "{RUN_EVENTS}" WHERE "id" < {p} AND "run_id" NOT IN '
            f'(SELECT "run_id" FROM "{RUN_EVENTS}" WHERE "kind" = \'run\' AND "id" >= {p})'
        )
        self.events_of = (
            'SELECT "id", "run_id", "conversation_id", "kind", "started_at_ms", "ended_at_ms", '
            f'"detail_json" FROM "{RUN_EVENTS}" WHERE "run_id" = {p} ORDER BY "id"'
        )


_STATEMENTS: dict[tuple[str, bool], _Statements] = {}


def _statements_for(database: peewee.Database) -> _Statements:
    key = (database.param, bool(database.returning_clause))
    statements = _STATEMENTS.get(key)
    if statements is None:
        statements = _STATEMENTS[key] = _Statements(*key)
    return statements


class RunEvents:
    """Reads and writes ``run_events``; safe to share between threads (one connection each)."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        self._sql = _statements_for(database)

    def atomic(self) -> Any:
        """One transaction for a batch of writes (one commit, not one per span)."""
        return self._db.atomic()

    def insert(
        self,
        run_id: str,
        conversation_id: str,
        kind: EventKind,
        started_at_ms: int,
        ended_at_ms: int | None,
        detail: Detail,
    ) -> int:
        """A new span (open when ``ended_at_ms`` is None); returns its row id."""
        params = (run_id, conversation_id, kind.value, started_at_ms, ended_at_ms)
        cursor = execute_sql(self._db, self._sql.insert, (*params, encode_detail(detail)))
        return int(cursor.fetchone()[0] if self._sql.returning else cursor.lastrowid)

    def close(self, row_id: int, started_at_ms: int, ended_at_ms: int, detail: Detail) -> None:
        """End an open span: its (possibly corrected) start, its end and its whole detail."""
        params = (started_at_ms, ended_at_ms, encode_detail(detail), row_id)
        execute_sql(self._db, self._sql.close, params)

    def prune(self, keep_runs: int) -> int:
        """Delete the events of every run but the newest ``keep_runs`` (by when they started);
        returns how many rows went. Nothing is deleted while there are at most that many."""
        cutoff = execute_sql(self._db, self._sql.prune_cutoff, (keep_runs - 1,)).fetchone()
        if cutoff is None:
            return 0
        with self._db.atomic():
            deleted = execute_sql(self._db, self._sql.prune, (cutoff[0], cutoff[0]))
            return int(deleted.rowcount)

    def events_of(self, run_id: str) -> list[RunEventRecord]:
        """A run's spans in the order they started (row order)."""
        rows = execute_sql(self._db, self._sql.events_of, (run_id,)).fetchall()
        return [record_of(row) for row in rows]


def record_of(row: tuple[Any, ...]) -> RunEventRecord:
    """A ``run_events`` row (its columns in table order) as a record."""
    row_id, run_id, conversation_id, kind, started, ended, detail = row
    return RunEventRecord(
        id=int(row_id),
        run_id=str(run_id),
        conversation_id=str(conversation_id),
        kind=EventKind(kind),
        started_at_ms=int(started),
        ended_at_ms=None if ended is None else int(ended),
        detail=decode_detail(str(detail)),
    )
