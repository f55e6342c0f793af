"""Call records: one ``llm_calls`` row per real provider request, and its verbose payloads.

Why a row per request: the console shows every LLM call, and a call must be traceable even when
it failed or was cancelled. The row starts ``running`` and is finished exactly once (the
``WHERE status = 'running'`` guard makes the first finish win). Usage columns hold only what the
provider reported: absent stays NULL, never 0. Verbose mode adds the request (headers and body,
already redacted by the caller) and the raw response chunks.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

import msgspec
import peewee

from store.base.clock import now_ms
from store.base.typed_peewee import Table, execute_sql
from store.instances import instance_of, orphaned

CALLS = "llm_calls"
REQUESTS = "llm_call_requests"
CHUNKS = "llm_call_chunks"

_CALL_COLUMNS = (
    "id",
    "run_id",
    "model_call_id",
    "provider_id",
    "provider_name",
    "provider_type",
    "provider_url",
    "public_id",
    "model_id",
    "display_name",
    "status",
    "finish_reason",
    "started_at_ms",
    "ended_at_ms",
    "ttfb_ms",
    "ttft_ms",
    "duration_ms",
    "http_status",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "error_message",
    "verbose",
    "request_bytes",
    "response_bytes",
    "key_label",
    "chain_position",
    "attempt",
    "asked_model_id",
    "user_id",
)
USAGE_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


class CallStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class NewCall(msgspec.Struct, frozen=True):
    """What is known when a call starts (a snapshot: the provider may be deleted later)."""

    run_id: str | None
    model_call_id: str
    provider_id: int
    provider_name: str
    provider_type: str
    provider_url: str
    public_id: str
    model_id: str
    display_name: str
    verbose: bool
    # The label of the pool key this attempt sent (migration 14); never the key.
    key_label: str | None = None
    # The attempt's place in its call (migration 15): 0 the model asked for, n its n-th
    # fallback; and its attempt number within that model, from 1.
    chain_position: int | None = None
    attempt: int | None = None
    # The model id the run's request asked for, as Cursor sent it (``ModelRoute``'s); None
    # for a call outside a run's request (a console check).
    asked_model_id: str | None = None
    # Who the call's run was for (``ModelRoute``'s, from ``wire.identity``: never the token);
    # None for a call outside a run.
    user_id: str | None = None


class OutgoingRequest(msgspec.Struct, frozen=True):
    """The request as recorded: its size always, headers (redacted) and body in verbose mode."""

    headers: dict[str, str]
    body: str
    byte_count: int


class CallEnd(msgspec.Struct, frozen=True):
    """How a call ended. ``usage`` maps usage column names to reported values only."""

    status: CallStatus
    duration_ms: float
    response_bytes: int
    finish_reason: str | None = None
    usage: dict[str, int] = {}
    error_message: str | None = None
    http_status: int | None = None
    ttfb_ms: float | None = None
    # From the request to the first text or thinking delta; None when none was streamed.
    ttft_ms: float | None = None


class CallSummary(msgspec.Struct, frozen=True):
    """A call record as the console lists it (times are UTC ms since the epoch)."""

    id: int
    run_id: str | None
    model_call_id: str
    provider_id: int | None
    provider_name: str
    provider_type: str
    provider_url: str
    public_id: str
    model_id: str
    display_name: str
    status: str
    finish_reason: str | None
    started_at_ms: int
    ended_at_ms: int | None
    ttfb_ms: float | None
    ttft_ms: float | None
    duration_ms: float | None
    http_status: int | None
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    reasoning_tokens: int | None
    error_message: str | None
    verbose: bool
    request_bytes: int | None
    response_bytes: int
    key_label: str | None = None
    # None for a record written before migration 15.
    chain_position: int | None = None
    attempt: int | None = None
    asked_model_id: str | None = None  # NULL for calls recorded before it was kept
    user_id: str | None = None  # NULL outside a run and for calls recorded before it was kept


class RecordedRequest(msgspec.Struct, frozen=True):
    headers: dict[str, str]
    body: str


class RecordedChunk(msgspec.Struct, frozen=True):
    seq: int
    offset_ms: float
    data: bytes


class CallFilter(msgspec.Struct, frozen=True):
    """Which calls a listing shows; every field set must hold (None: any)."""

    provider_id: int | None = None
    public_id: str | None = None
    status: CallStatus | None = None
    run_id: str | None = None
    conversation_id: str | None = None  # the calls of this conversation's runs
    since_ms: int | None = None  # started at or after
    until_ms: int | None = None  # started before
    user_id: str | None = None  # the calls of this user's runs


def _conditions(t: Table, only: CallFilter) -> list[peewee.Expression]:
    conditions: list[peewee.Expression] = []
    if only.provider_id is not None:
        conditions.append(t.provider_id == only.provider_id)
    if only.public_id is not None:
        conditions.append(t.public_id == only.public_id)
    if only.status is not None:
        conditions.append(t.status == only.status.value)
    if only.run_id is not None:
        conditions.append(t.run_id == only.run_id)
    if only.conversation_id is not None:
        runs = Table("runs", ("run_id", "conversation_id"))
        of_conversation = runs.select(runs.run_id).where(
            runs.conversation_id == only.conversation_id
        )
        conditions.append(t.run_id.in_(of_conversation))
    if only.since_ms is not None:
        conditions.append(t.started_at_ms >= only.since_ms)
    if only.until_ms is not None:
        conditions.append(t.started_at_ms < only.until_ms)
    if only.user_id is not None:
        conditions.append(t.user_id == only.user_id)
    return conditions


class CallDetail(msgspec.Struct, frozen=True):
    call: CallSummary
    request: RecordedRequest | None
    chunks: list[RecordedChunk]


# The columns ``start`` writes, in its parameters' order: NewCall's fields, then its own (then
# the instance).
_START_COLUMNS = (
    *NewCall.__struct_fields__,
    "status",
    "started_at_ms",
    "response_bytes",
    "request_bytes",
)
_RUNNING = f"'{CallStatus.RUNNING.value}'"


def _quoted(columns: Iterable[str]) -> str:
    return ", ".join(f'"{c}"' for c in columns)


class _CallStatements:
    """The SQL text of the statements every provider call runs (start, request, chunks, finish,
    prune), written once per placeholder style (``?`` SQLite, ``%s`` PostgreSQL) and run with
    ``execute_sql``: peewee would spend ~0.3 ms of Python building each one, every call.

    Identifiers are double-quoted (both backends). The new row's id comes from ``RETURNING``
    where the database has it, else from the cursor's ``lastrowid``.
    """

    def __init__(self, param: str, returning: bool, leased: bool) -> None:
        p = param
        self.param = p
        self.returning = returning
        # With a lease (``store.instances``) the row names its instance (migration 12).
        self.leased = leased
        lease = ("instance_id",) if leased else ()
        self._returning = ' RETURNING "id"' if returning else ""
        self.insert_call = self._insert((*_START_COLUMNS, *lease))
        self.insert_request = (
            f'INSERT INTO "{REQUESTS}" ("call_id", "headers_json", "body") VALUES ({p}, {p}, {p})'
        )
        self.insert_chunks = (
            f'INSERT INTO "{CHUNKS}" ("call_id", "seq", "offset_ms", "data") VALUES '
        )
        self.chunk_row = f"({p}, {p}, {p}, {p})"
        # The id of the ``keep``-th newest call: everything older goes.
        self.prune_cutoff = f'SELECT "id" FROM "{CALLS}" ORDER BY "id" DESC LIMIT 1 OFFSET {p}'
        doomed = f'SELECT "id" FROM "{CALLS}" WHERE "id" < {p}'
        self.prune_chunks = f'DELETE FROM "{CHUNKS}" WHERE "call_id" IN ({doomed})'
        self.prune_requests = f'DELETE FROM "{REQUESTS}" WHERE "call_id" IN ({doomed})'
        self.prune_calls = f'DELETE FROM "{CALLS}" WHERE "id" < {p}'
        self._finish: dict[tuple[str, ...], str] = {}

    def _insert(self, columns: tuple[str, ...]) -> str:
        marks = ", ".join([self.param] * len(columns))
        return f'INSERT INTO "{CALLS}" ({_quoted(columns)}) VALUES ({marks}){self._returning}'

    def finish(self, optional: tuple[str, ...]) -> str:
        """The finishing update that also sets ``optional`` (reported http status, ttfb, ttft and
        usage columns, in that order); one text per set of columns, written on first use (two
        threads racing on a new set both store the same text)."""
        sql = self._finish.get(optional)
        if sql is None:
            p = self.param
            columns = (
                "status",
                "finish_reason",
                "ended_at_ms",
                "duration_ms",
                "response_bytes",
                "error_message",
                *optional,
            )
            assignments = ", ".join(f'"{c}" = {p}' for c in columns)
            sql = self._finish[optional] = (
                f'UPDATE "{CALLS}" SET {assignments} WHERE "id" = {p} AND "status" = {_RUNNING}'
            )
        return sql


_STATEMENTS: dict[tuple[str, bool, bool], _CallStatements] = {}


def _statements_for(database: peewee.Database) -> _CallStatements:
    """The statements in ``database``'s dialect, written once per dialect."""
    key = (database.param, bool(database.returning_clause), instance_of(database) is not None)
    statements = _STATEMENTS.get(key)
    if statements is None:
        statements = _STATEMENTS[key] = _CallStatements(*key)
    return statements


class CallRecords:
    """Reads and writes call records; safe to share between threads (one connection each).

    The writes of every call run precompiled SQL (``_CallStatements``); the console's reads and
    the startup cleanup are rare and stay peewee queries."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        self._sql = _statements_for(database)
        instance = instance_of(database)
        self._lease = () if instance is None else (instance,)
        self._calls = Table(CALLS, _CALL_COLUMNS, _database=database)
        self._requests = Table(REQUESTS, ("call_id", "headers_json", "body"), _database=database)
        self._chunks = Table(CHUNKS, ("call_id", "seq", "offset_ms", "data"), _database=database)

    def start(
        self,
        call: NewCall,
        request: OutgoingRequest | None = None,
        started_at_ms: int | None = None,
    ) -> int:
        """Insert the ``running`` row (with the request, when given) in one transaction;
        returns its id. One commit, because the call's first events wait behind it.
        ``started_at_ms``: when the call started (now when not given).

        The request's size goes into the inserted row itself (no separate update)."""
        params = (
            *msgspec.structs.astuple(call),
            CallStatus.RUNNING.value,
            now_ms() if started_at_ms is None else started_at_ms,
            0,
            None if request is None else request.byte_count,
            *self._lease,
        )
        sql = self._sql
        with self._db.atomic():
            cursor = execute_sql(self._db, sql.insert_call, params)
            call_id = int(cursor.fetchone()[0] if sql.returning else cursor.lastrowid)
            if request is not None and call.verbose:
                self._insert_request(call_id, request)
        return call_id

    def _insert_request(self, call_id: int, request: OutgoingRequest) -> None:
        headers_json = msgspec.json.encode(request.headers).decode()
        execute_sql(self._db, self._sql.insert_request, (call_id, headers_json, request.body))

    def record_chunks(self, call_id: int, chunks: list[RecordedChunk]) -> None:
        """Store raw response chunks (verbose mode only; the caller decides), in one insert."""
        if not chunks:
            return
        sql = self._sql
        statement = sql.insert_chunks + ", ".join([sql.chunk_row] * len(chunks))
        params = [value for c in chunks for value in (call_id, c.seq, c.offset_ms, c.data)]
        with self._db.atomic():
            execute_sql(self._db, statement, params)

    def finish(self, call_id: int, end: CallEnd) -> bool:
        """Finish a running call; False if it had already finished (the first finish wins).

        Http status, times to first byte and first token and usage columns are written only
        when known, so an absent one stays NULL."""
        unknown = set(end.usage) - set(USAGE_COLUMNS)
        if unknown:
            raise ValueError(f"unknown usage columns: {sorted(unknown)}")
        optional: list[str] = []
        params: list[object] = [
            end.status.value,
            end.finish_reason,
            now_ms(),
            end.duration_ms,
            end.response_bytes,
            end.error_message,
        ]
        if end.http_status is not None:
            optional.append("http_status")
            params.append(end.http_status)
        if end.ttfb_ms is not None:
            optional.append("ttfb_ms")
            params.append(end.ttfb_ms)
        if end.ttft_ms is not None:
            optional.append("ttft_ms")
            params.append(end.ttft_ms)
        for column in USAGE_COLUMNS:
            if column in end.usage:
                optional.append(column)
                params.append(end.usage[column])
        params.append(call_id)
        cursor = execute_sql(self._db, self._sql.finish(tuple(optional)), params)
        return cursor.rowcount == 1

    def cancel_unfinished(self, reason: str) -> int:
        """Mark ``running`` rows cancelled whose process is gone: at startup and at every sweep,
        the rows of instances without a live lease (``store.instances``); a live peer's calls
        are untouched."""
        p = self._db.param
        now = now_ms()
        statement = (
            f'UPDATE "{CALLS}" SET "status" = {p}, "ended_at_ms" = {p}, "error_message" = {p} '
            f'WHERE "status" = {_RUNNING} AND {orphaned(p)}'
        )
        with self._db.atomic():
            cursor = execute_sql(
                self._db, statement, (CallStatus.CANCELLED.value, now, reason, now)
            )
            return int(cursor.rowcount)

    def prune(self, keep: int) -> int:
        """Delete all but the newest ``keep`` records (payloads go with them); returns how many.

        Nothing is deleted (and no transaction opened) while there are at most ``keep``."""
        sql = self._sql
        cutoff = execute_sql(self._db, sql.prune_cutoff, (keep - 1,)).fetchone()
        if cutoff is None:
            return 0
        oldest_kept = cutoff[0]
        with self._db.atomic():
            execute_sql(self._db, sql.prune_chunks, (oldest_kept,))
            execute_sql(self._db, sql.prune_requests, (oldest_kept,))
            return int(execute_sql(self._db, sql.prune_calls, (oldest_kept,)).rowcount)

    def list(
        self, limit: int, before: int | None = None, only: CallFilter | None = None
    ) -> list[CallSummary]:
        """Newest first; ``before`` pages backwards from a call id; ``only`` narrows it."""
        t = self._calls
        query = t.select(*[getattr(t, c) for c in _CALL_COLUMNS]).order_by(t.id.desc()).limit(limit)
        if before is not None:
            query = query.where(t.id < before)
        for condition in _conditions(t, only or CallFilter()):
            query = query.where(condition)
        return [_summary(row) for row in query.dicts()]

    def attempts(self, model_call_ids: Iterable[str]) -> dict[str, int]:
        """How many records (attempts: retries and fallbacks) each model call id has."""
        ids = sorted(set(model_call_ids))
        if not ids:
            return {}
        t = self._calls
        query = (
            t.select(t.model_call_id, peewee.fn.COUNT(t.id))
            .where(t.model_call_id.in_(ids))
            .group_by(t.model_call_id)
        )
        return {str(model_call_id): int(n) for model_call_id, n in query.tuples()}

    def get(self, call_id: int) -> CallDetail | None:
        t = self._calls
        rows = list(
            t.select(*[getattr(t, c) for c in _CALL_COLUMNS]).where(t.id == call_id).dicts()
        )
        if not rows:
            return None
        r = self._requests
        request_rows = list(r.select(r.headers_json, r.body).where(r.call_id == call_id).tuples())
        request = (
            RecordedRequest(msgspec.json.decode(request_rows[0][0]), request_rows[0][1])
            if request_rows
            else None
        )
        c = self._chunks
        chunks = [
            RecordedChunk(seq, offset, bytes(data))
            for seq, offset, data in c.select(c.seq, c.offset_ms, c.data)
            .where(c.call_id == call_id)
            .order_by(c.seq)
            .tuples()
        ]
        return CallDetail(_summary(rows[0]), request, chunks)


def _summary(row: dict[str, object]) -> CallSummary:
    row = dict(row)
    row["verbose"] = bool(row["verbose"])
    return msgspec.convert(row, CallSummary)
