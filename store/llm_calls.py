"""Call records: one ``llm_calls`` row per real provider request, and its verbose payloads.

Why a row per request: the console shows every LLM call, and a call must be traceable even when
it failed or was cancelled. The row starts ``running`` and is finished exactly once (the
``WHERE status = 'running'`` guard makes the first finish win). Usage columns hold only what the
provider reported: absent stays NULL, never 0. Verbose mode adds the request (headers and body,
already redacted by the caller) and the raw response chunks.
"""

from __future__ import annotations

import time
from enum import StrEnum

import msgspec
import peewee

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


class RecordedRequest(msgspec.Struct, frozen=True):
    headers: dict[str, str]
    body: str


class RecordedChunk(msgspec.Struct, frozen=True):
    seq: int
    offset_ms: float
    data: bytes


class CallDetail(msgspec.Struct, frozen=True):
    call: CallSummary
    request: RecordedRequest | None
    chunks: list[RecordedChunk]


def utc_now_ms() -> int:
    return time.time_ns() // 1_000_000


class CallRecords:
    """Reads and writes call records; safe to share between threads (one connection each)."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        self._calls = peewee.Table(CALLS, _CALL_COLUMNS, _database=database)
        self._requests = peewee.Table(
            REQUESTS, ("call_id", "headers_json", "body"), _database=database
        )
        self._chunks = peewee.Table(
            CHUNKS, ("call_id", "seq", "offset_ms", "data"), _database=database
        )

    def start(self, call: NewCall, request: OutgoingRequest | None = None) -> int:
        """Insert the ``running`` row (with the request, when given) in one transaction;
        returns its id. One commit, because the call's first events wait behind it."""
        values = msgspec.structs.asdict(call)
        values.update(status=CallStatus.RUNNING.value, started_at_ms=utc_now_ms(), response_bytes=0)
        with self._db.atomic():
            call_id = int(self._calls.insert(**values).execute())
            if request is not None:
                self._write_request(call_id, request, verbose=call.verbose)
        return call_id

    def record_request(self, call_id: int, request: OutgoingRequest, *, verbose: bool) -> None:
        """The size of the request always; its (redacted) headers and body in verbose mode."""
        with self._db.atomic():
            self._write_request(call_id, request, verbose=verbose)

    def _write_request(self, call_id: int, request: OutgoingRequest, *, verbose: bool) -> None:
        t = self._calls
        t.update(request_bytes=request.byte_count).where(t.id == call_id).execute()
        if verbose:
            self._requests.insert(
                call_id=call_id,
                headers_json=msgspec.json.encode(request.headers).decode(),
                body=request.body,
            ).execute()

    def record_chunks(self, call_id: int, chunks: list[RecordedChunk]) -> None:
        """Store raw response chunks (verbose mode only; the caller decides)."""
        if not chunks:
            return
        rows = [
            {"call_id": call_id, "seq": c.seq, "offset_ms": c.offset_ms, "data": c.data}
            for c in chunks
        ]
        with self._db.atomic():
            self._chunks.insert(rows).execute()

    def finish(self, call_id: int, end: CallEnd) -> bool:
        """Finish a running call; False if it had already finished (the first finish wins)."""
        unknown = set(end.usage) - set(USAGE_COLUMNS)
        if unknown:
            raise ValueError(f"unknown usage columns: {sorted(unknown)}")
        t = self._calls
        query = t.update(
            status=end.status.value,
            finish_reason=end.finish_reason,
            ended_at_ms=utc_now_ms(),
            duration_ms=end.duration_ms,
            response_bytes=end.response_bytes,
            error_message=end.error_message,
            **({"http_status": end.http_status} if end.http_status is not None else {}),
            **({"ttfb_ms": end.ttfb_ms} if end.ttfb_ms is not None else {}),
            **end.usage,
        ).where((t.id == call_id) & (t.status == CallStatus.RUNNING.value))
        return query.execute() == 1

    def cancel_unfinished(self, reason: str) -> int:
        """Mark every ``running`` row cancelled (at startup: the process that ran them is gone)."""
        t = self._calls
        query = t.update(
            status=CallStatus.CANCELLED.value, ended_at_ms=utc_now_ms(), error_message=reason
        ).where(t.status == CallStatus.RUNNING.value)
        return int(query.execute())

    def prune(self, keep: int) -> int:
        """Delete all but the newest ``keep`` records (payloads go with them); returns how many."""
        t = self._calls
        newest = t.select(t.id).order_by(t.id.desc()).limit(1).offset(keep - 1).tuples()
        cutoff = next(iter(newest), None)
        if cutoff is None:
            return 0
        with self._db.atomic():
            doomed = t.select(t.id).where(t.id < cutoff[0])
            self._chunks.delete().where(self._chunks.call_id.in_(doomed)).execute()
            self._requests.delete().where(self._requests.call_id.in_(doomed)).execute()
            return int(t.delete().where(t.id < cutoff[0]).execute())

    def list(self, limit: int, before: int | None = None) -> list[CallSummary]:
        """Newest first; ``before`` pages backwards from a call id."""
        t = self._calls
        query = t.select(*[getattr(t, c) for c in _CALL_COLUMNS]).order_by(t.id.desc()).limit(limit)
        if before is not None:
            query = query.where(t.id < before)
        return [_summary(row) for row in query.dicts()]

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
