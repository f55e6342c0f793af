"""Console API for LLM call records: ``GET /console/api/calls`` (newest first, paged, filtered by
provider, model, status, run, conversation, time and user) and ``/console/api/calls/{id}``.

Reads only; the ProviderActor writes the records. Store calls run in a worker thread so the
event loop never waits on the database.
"""

from __future__ import annotations

import asyncio

import msgspec
import peewee
from aiohttp import web

from console.numbers import MAX_BIGINT, bigint_of
from console.user_filter import user_query
from store.call_stats import call_costs
from store.llm_calls import CallDetail, CallFilter, CallRecords, CallStatus, CallSummary
from wire.http.responses import json_error

DEFAULT_LIMIT = 100
MAX_LIMIT = 500


class ListedCall(CallSummary, frozen=True):
    """A listed call with its estimated cost (USD at today's prices; null when unknown or not
    billed, as on the dashboard)."""

    cost_usd: float | None = None


class CallList(msgspec.Struct, frozen=True):
    calls: list[ListedCall]
    next_before: int | None


def _query_int(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    value = bigint_of(raw)
    if value is None:
        raise ValueError(f"{name} must be an integer from 0 to {MAX_BIGINT}, got {raw!r}")
    return value


def _filter(request: web.Request) -> CallFilter:
    """The listing's filters from the query: ``provider_id``, ``model`` (a public id),
    ``status``, ``run_id``, ``conversation_id``, ``since`` and ``until`` (ms since the epoch),
    ``user`` (a user id, ``llm_calls.user_id``)."""
    status = request.query.get("status") or None
    if status is not None and status not in CallStatus.__members__.values():
        allowed = ", ".join(s.value for s in CallStatus)
        raise ValueError(f"status must be one of {allowed}, got {status!r}")
    return CallFilter(
        provider_id=_query_int(request, "provider_id"),
        public_id=request.query.get("model") or None,
        status=CallStatus(status) if status is not None else None,
        run_id=request.query.get("run_id") or None,
        conversation_id=request.query.get("conversation_id") or None,
        since_ms=_query_int(request, "since"),
        until_ms=_query_int(request, "until"),
        user_id=user_query(request),
    )


def _detail_json(detail: CallDetail) -> dict[str, object]:
    return {
        "call": detail.call,
        "request": detail.request,
        "chunks": [
            {
                "seq": c.seq,
                "offset_ms": c.offset_ms,
                "byte_count": len(c.data),
                "text": c.data.decode("utf-8", "replace"),
            }
            for c in detail.chunks
        ],
    }


class CallsApi:
    """The call-record routes: ``GET /console/api/calls`` and ``/console/api/calls/{id}``."""

    def __init__(self, database: peewee.Database) -> None:
        self._database = database
        self._records = CallRecords(database)

    def register(self, app: web.Application) -> None:
        app.router.add_get("/console/api/calls", self.list_calls, allow_head=False)
        app.router.add_get("/console/api/calls/{call_id}", self.get_call, allow_head=False)

    def _listed(self, limit: int, before: int | None, only: CallFilter) -> list[ListedCall]:
        calls = self._records.list(limit, before, only)
        costs = call_costs(self._database, [c.id for c in calls])
        return [ListedCall(**msgspec.structs.asdict(c), cost_usd=costs.get(c.id)) for c in calls]

    async def list_calls(self, request: web.Request) -> web.Response:
        try:
            limit = _query_int(request, "limit")
            before = _query_int(request, "before")
            only = _filter(request)
        except ValueError as exc:
            return json_error(400, "invalid_argument", str(exc))
        if limit is None:
            limit = DEFAULT_LIMIT
        if not 1 <= limit <= MAX_LIMIT:
            return json_error(400, "invalid_argument", f"limit must be 1 to {MAX_LIMIT}")
        calls = await asyncio.to_thread(self._listed, limit, before, only)
        next_before = calls[-1].id if len(calls) == limit else None
        return web.Response(
            body=msgspec.json.encode(CallList(calls, next_before)), content_type="application/json"
        )

    async def get_call(self, request: web.Request) -> web.Response:
        raw = request.match_info["call_id"]
        call_id = bigint_of(raw)
        if call_id is None:
            return json_error(400, "invalid_argument", f"call id must be an integer, got {raw!r}")
        detail = await asyncio.to_thread(self._records.get, call_id)
        if detail is None:
            return json_error(404, "not_found", f"call not found: {raw}")
        return web.Response(
            body=msgspec.json.encode(_detail_json(detail)), content_type="application/json"
        )
