"""What the console reads about runs: the conversations they belong to, a conversation's runs,
and one run's timeline, from ``run_events`` (written by the RunEventRecorderActor), ``runs``
(the store's status of a claimed run) and ``llm_calls`` (the provider calls, with their timing
and usage: the provider lane is read from there, never recorded twice).

A conversation is listed while the events of at least one of its runs are kept (the same
bound as call records, ``retained_calls``, counted in runs). A run id the editor retried (after
a restart) has one run span per attempt: the conversation's run shows the first start and the
last attempt's end; the timeline shows every attempt. All times are UTC ms since the epoch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import peewee

from store.base.typed_peewee import execute_sql
from store.run_events import RUN_EVENTS, EventKind, RunEventRecord, RunEvents, decode_detail

# The llm_calls columns the provider lane shows; ``ttft_ms`` joins them where the schema has it.
_CALL_COLUMNS = (
    "id",
    "model_call_id",
    "status",
    "public_id",
    "model_id",
    "display_name",
    "started_at_ms",
    "ended_at_ms",
    "ttfb_ms",
    "duration_ms",
    "http_status",
    "finish_reason",
    "error_message",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
TTFT_COLUMN = "ttft_ms"
# Columns a later migration added (8: ``ttft_ms``; 15: each attempt's place in its call's chain
# of fallbacks), read where the schema has them and null otherwise.
_LATER_CALL_COLUMNS = (TTFT_COLUMN, "chain_position", "attempt")


# ---- records ----


class ConversationSummary(msgspec.Struct, frozen=True):
    """``title``: the user's text of its first kept run (null if that run typed none);
    tokens: summed over its runs' provider calls (null when none reported any)."""

    conversation_id: str
    title: str | None
    last_activity_ms: int
    run_count: int
    input_tokens: int | None
    output_tokens: int | None


class PageCursor(msgspec.Struct, frozen=True):
    """Where a page of conversations ends: list those less recently active than this one."""

    last_activity_ms: int
    conversation_id: str


class ConversationRun(msgspec.Struct, frozen=True):
    """``status`` is the store's (``runs``) for a run that claimed its conversation, else the
    end code's; ``code`` is its EndStream's (``ok``), null while it runs."""

    run_id: str
    status: str
    started_at_ms: int
    ended_at_ms: int | None
    code: str | None
    message: str | None
    model: str | None
    resumed: bool
    asked: str | None = None  # the model id Cursor asked for (None: recorded before it was)


class ConversationDetail(msgspec.Struct, frozen=True):
    conversation_id: str
    title: str | None
    runs: list[ConversationRun]  # newest first


class RunSpan(msgspec.Struct, frozen=True):
    started_at_ms: int
    ended_at_ms: int | None
    code: str | None
    message: str | None
    model: str | None
    resumed: bool
    text: str | None
    asked: str | None = None  # the model id Cursor asked for (None: recorded before it was)


class ProviderSpan(msgspec.Struct, frozen=True):
    """One ``llm_calls`` row. ``ttfb_ms``/``ttft_ms``/``duration_ms`` are durations from the
    call's start; ``first_byte_at_ms``/``first_token_at_ms`` place them on the timeline."""

    id: int
    model_call_id: str
    status: str
    public_id: str
    model_id: str
    display_name: str
    started_at_ms: int
    ended_at_ms: int | None
    ttfb_ms: float | None
    ttft_ms: float | None
    duration_ms: float | None
    first_byte_at_ms: int | None
    first_token_at_ms: int | None
    http_status: int | None
    finish_reason: str | None
    error_message: str | None
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    reasoning_tokens: int | None
    # 0: the model the run asked for, n: its n-th fallback; the attempt within that model.
    chain_position: int | None = None
    attempt: int | None = None


class ToolSpan(msgspec.Struct, frozen=True):
    """``outcome``: success, error or aborted; null while the editor has not answered."""

    call_id: str | None
    tool: str | None
    wire_ids: list[int]
    started_at_ms: int
    ended_at_ms: int | None
    outcome: str | None


class CheckpointSpan(msgspec.Struct, frozen=True):
    """Submitted to the CheckpointActor, then published once the client ACKed its blobs (the
    span is the KV SET → ACK wait); ``outcome`` published or failed, null while waiting."""

    job_id: int | None
    kind: str | None
    submitted_at_ms: int
    published_at_ms: int | None
    ended_at_ms: int | None
    outcome: str | None
    error: str | None


class Lanes(msgspec.Struct, frozen=True):
    run: list[RunSpan]
    provider: list[ProviderSpan]
    tools: list[ToolSpan]
    checkpoints: list[CheckpointSpan]


class Timeline(msgspec.Struct, frozen=True):
    run_id: str
    conversation_id: str | None
    lanes: Lanes


# ---- reading a detail ----


def _text(detail: dict[str, object], key: str) -> str | None:
    value = detail.get(key)
    return value if isinstance(value, str) else None


def _int(detail: dict[str, object], key: str) -> int | None:
    value = detail.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ints(detail: dict[str, object], key: str) -> list[int]:
    value = detail.get(key)
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]


def _status_of_code(code: str | None) -> str:
    """A run's status from its end code, for a run the ``runs`` table does not hold."""
    if code is None:
        return "running"
    return {"ok": "completed", "canceled": "cancelled"}.get(code, "failed")


def run_span(event: RunEventRecord) -> RunSpan:
    d = event.detail
    return RunSpan(
        event.started_at_ms,
        event.ended_at_ms,
        _text(d, "code"),
        _text(d, "message"),
        _text(d, "model"),
        d.get("resumed") is True,
        _text(d, "text"),
        _text(d, "asked"),
    )


def tool_span(event: RunEventRecord) -> ToolSpan:
    d = event.detail
    return ToolSpan(
        _text(d, "call_id"),
        _text(d, "tool"),
        _ints(d, "wire_ids"),
        event.started_at_ms,
        event.ended_at_ms,
        _text(d, "outcome"),
    )


def checkpoint_span(event: RunEventRecord) -> CheckpointSpan:
    d = event.detail
    outcome = _text(d, "outcome")
    return CheckpointSpan(
        _int(d, "job_id"),
        _text(d, "kind"),
        event.started_at_ms,
        event.ended_at_ms if outcome == "published" else None,
        event.ended_at_ms,
        outcome,
        _text(d, "error"),
    )


def _at(started_at_ms: int, offset_ms: float | None) -> int | None:
    return None if offset_ms is None else round(started_at_ms + offset_ms)


def provider_span(row: dict[str, Any]) -> ProviderSpan:
    row = {**row, **{column: row.get(column) for column in _LATER_CALL_COLUMNS}}
    started = int(row["started_at_ms"])
    row["first_byte_at_ms"] = _at(started, row["ttfb_ms"])
    row["first_token_at_ms"] = _at(started, row[TTFT_COLUMN])
    return msgspec.convert(row, ProviderSpan)


def lanes_of(events: Sequence[RunEventRecord], calls: Sequence[dict[str, Any]]) -> Lanes:
    """A run's lanes from its spans (in row order) and its ``llm_calls`` rows (by id)."""
    by_kind: dict[EventKind, list[RunEventRecord]] = {kind: [] for kind in EventKind}
    for event in events:
        by_kind[event.kind].append(event)
    return Lanes(
        run=[run_span(e) for e in by_kind[EventKind.RUN]],
        provider=[provider_span(row) for row in calls],
        tools=[tool_span(e) for e in by_kind[EventKind.TOOL]],
        checkpoints=[checkpoint_span(e) for e in by_kind[EventKind.CHECKPOINT]],
    )


# ---- the queries ----

_RUN = f"'{EventKind.RUN.value}'"
_CONVERSATIONS_SQL = f"""
SELECT c.conversation_id, c.last_ms, c.run_count, c.first_id FROM (
    SELECT conversation_id,
        MAX(COALESCE(ended_at_ms, started_at_ms)) AS last_ms,
        COUNT(DISTINCT run_id) AS run_count,
        MIN(id) AS first_id
    FROM "{RUN_EVENTS}" WHERE kind = {_RUN} GROUP BY conversation_id
) AS c
{{where}}
ORDER BY c.last_ms DESC, c.conversation_id DESC
LIMIT {{p}}
"""
_BEFORE = "WHERE c.last_ms < {p} OR (c.last_ms = {p} AND c.conversation_id < {p})"
_TOKENS_SQL = f"""
SELECT r.conversation_id, SUM(c.input_tokens), SUM(c.output_tokens)
FROM (
    SELECT DISTINCT conversation_id, run_id FROM "{RUN_EVENTS}"
    WHERE kind = {_RUN} AND conversation_id IN ({{ids}})
) AS r
JOIN llm_calls AS c ON c.run_id = r.run_id
GROUP BY r.conversation_id
"""
_CONVERSATION_RUNS_SQL = f"""
SELECT e.id, e.run_id, e.started_at_ms, e.ended_at_ms, e.detail_json, r.status
FROM "{RUN_EVENTS}" AS e LEFT JOIN runs AS r ON r.run_id = e.run_id
WHERE e.conversation_id = {{p}} AND e.kind = {_RUN}
ORDER BY e.id
"""


def _int_or_none(value: object) -> int | None:
    """A SUM: PostgreSQL answers a numeric (``Decimal``), SQLite an int; NULL stays None."""
    return None if value is None else int(value)  # type: ignore[call-overload]


class RunHistory:
    """The console's reads of runs; safe to share between threads (one connection each)."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        self._events = RunEvents(database)

    def conversations(
        self, limit: int, before: PageCursor | None = None
    ) -> list[ConversationSummary]:
        """Most recently active first (then by id, descending), ``limit`` of them."""
        p = self._db.param
        where = ""
        params: list[object] = [limit]
        if before is not None:
            where = _BEFORE.format(p=p)
            cursor = before.last_activity_ms, before.last_activity_ms, before.conversation_id
            params = [*cursor, limit]
        sql = _CONVERSATIONS_SQL.format(where=where, p=p)
        rows = execute_sql(self._db, sql, params).fetchall()
        if not rows:
            return []
        titles = self._titles([int(row[3]) for row in rows])
        tokens = self._tokens([str(row[0]) for row in rows])
        return [
            ConversationSummary(
                str(conversation_id),
                titles.get(int(first_id)),
                int(last_ms),
                int(run_count),
                *tokens.get(str(conversation_id), (None, None)),
            )
            for conversation_id, last_ms, run_count, first_id in rows
        ]

    def _titles(self, first_ids: list[int]) -> dict[int, str | None]:
        """Each first run span's user text, by its row id."""
        marks = ", ".join([self._db.param] * len(first_ids))
        sql = f'SELECT id, detail_json FROM "{RUN_EVENTS}" WHERE id IN ({marks})'
        rows = execute_sql(self._db, sql, first_ids).fetchall()
        return {int(row_id): _text(decode_detail(str(detail)), "text") for row_id, detail in rows}

    def _tokens(self, conversation_ids: list[str]) -> dict[str, tuple[int | None, int | None]]:
        marks = ", ".join([self._db.param] * len(conversation_ids))
        rows = execute_sql(self._db, _TOKENS_SQL.format(ids=marks), conversation_ids).fetchall()
        return {
            str(conversation_id): (_int_or_none(input_tokens), _int_or_none(output_tokens))
            for conversation_id, input_tokens, output_tokens in rows
        }

    def conversation(self, conversation_id: str) -> ConversationDetail | None:
        """Its runs, newest first; None if no run of it has kept events."""
        sql = _CONVERSATION_RUNS_SQL.format(p=self._db.param)
        rows = execute_sql(self._db, sql, (conversation_id,)).fetchall()
        if not rows:
            return None
        first: dict[str, int] = {}  # run id -> its first start
        last: dict[str, tuple[int, int | None, dict[str, object], str | None]] = {}
        title = _text(decode_detail(str(rows[0][4])), "text")
        for row_id, run_id, started, ended, detail, status in rows:
            first.setdefault(str(run_id), int(started))
            last[str(run_id)] = (int(row_id), _int_or_none(ended), decode_detail(detail), status)
        runs = []
        # Newest first: by each run's last attempt.
        for run_id, (_, ended, detail, status) in sorted(
            last.items(), key=lambda item: item[1][0], reverse=True
        ):
            code = _text(detail, "code")
            runs.append(
                ConversationRun(
                    run_id,
                    str(status) if status is not None else _status_of_code(code),
                    first[run_id],
                    ended,
                    code,
                    _text(detail, "message"),
                    _text(detail, "model"),
                    detail.get("resumed") is True,
                    _text(detail, "asked"),
                )
            )
        return ConversationDetail(conversation_id, title, runs)

    def timeline(self, run_id: str) -> Timeline | None:
        """The run's lanes; None if neither an event nor a provider call of it is kept."""
        events = self._events.events_of(run_id)
        calls = self._calls_of(run_id)
        if not events and not calls:
            return None
        conversation_id = events[0].conversation_id if events else None
        return Timeline(run_id, conversation_id, lanes_of(events, calls))

    def _calls_of(self, run_id: str) -> list[dict[str, Any]]:
        """The run's ``llm_calls`` rows by id, with ``ttft_ms`` where the schema has it."""
        columns = list(_CALL_COLUMNS)
        present = {column.name for column in self._db.get_columns("llm_calls")}
        columns.extend(column for column in _LATER_CALL_COLUMNS if column in present)
        quoted = ", ".join(f'"{c}"' for c in columns)
        sql = f"SELECT {quoted} FROM llm_calls WHERE run_id = {self._db.param} ORDER BY id"
        cursor = execute_sql(self._db, sql, (run_id,))
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
