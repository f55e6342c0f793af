"""Console API for LLM call records: ``GET /console/api/calls`` (newest first, paged, filtered by
provider, model, status, run, conversation, time and user) and ``/console/api/calls/{id}``.

Reads only; the ProviderActor writes the records. Store calls run in a worker thread so the
event loop never waits on the database.

Beside each record the answers derive what the console shows of it: the estimated cost by the
dashboard's rule (``store.call_stats.call_costs``, the one rule), how many attempts its model
call made (``attempts``: its retries and fallbacks are records of their own, sharing its
``model_call_id``), whether it was one of the console's model tests (``test``: made outside any
run, under a ``console:`` model call id, ``console.provider_call.console_call_id``), and in the
detail, a verbose call's answer put together from its chunks (``console.call_answer``), scrubbed
of the credentials its provider has now (every key of its pool and its sealed header values;
a provider whose secrets do not open gets no answer shown: nothing could be scrubbed).
"""

from __future__ import annotations

import asyncio

import msgspec
import peewee
from aiohttp import web

from console.call_answer import assembled_answer
from console.numbers import MAX_BIGINT, bigint_of
from console.provider_call import is_console_call
from console.user_filter import user_query
from store.call_stats import call_costs
from store.catalog import KeyUnreadable, provider_connection
from store.llm_calls import CallDetail, CallFilter, CallRecords, CallStatus, CallSummary
from wire.http.responses import json_error
from wire.providers.redaction import credential_strings

DEFAULT_LIMIT = 100
MAX_LIMIT = 500


class ListedCall(CallSummary, frozen=True):
    """A listed call with its estimated cost (USD at today's prices; null when unknown or not
    billed, as on the dashboard), its model call's number of attempts, and whether it was a
    console test."""

    cost_usd: float | None = None
    attempts: int = 1
    test: bool = False


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


def provider_secrets(database: peewee.Database, provider_id: int | None) -> tuple[str, ...] | None:
    """The credentials provider ``provider_id`` has now: every key of its pool and its sealed
    header values (none for a deleted provider); None when they do not open."""
    if provider_id is None:
        return ()
    try:
        found = provider_connection(database, provider_id)
    except KeyUnreadable:
        return None
    if found is None:
        return ()
    keys = (found.api_key, *(key.api_key for key in found.keys))
    return credential_strings(keys, found.headers.items(), found.public_headers)


def _detail_json(
    detail: CallDetail, call: ListedCall, secrets: tuple[str, ...] | None
) -> dict[str, object]:
    return {
        "call": call,
        "request": detail.request,
        "answer": (
            None if secrets is None else assembled_answer(detail.call, detail.chunks, secrets)
        ),
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

    def _listed_calls(self, calls: list[CallSummary]) -> list[ListedCall]:
        costs = call_costs(self._database, [c.id for c in calls])
        attempts = self._records.attempts(c.model_call_id for c in calls)
        return [
            ListedCall(
                **msgspec.structs.asdict(c),
                cost_usd=costs.get(c.id),
                attempts=attempts.get(c.model_call_id, 1),
                test=is_console_call(c.model_call_id),
            )
            for c in calls
        ]

    def _listed(self, limit: int, before: int | None, only: CallFilter) -> list[ListedCall]:
        return self._listed_calls(self._records.list(limit, before, only))

    def _detail(self, call_id: int) -> dict[str, object] | None:
        detail = self._records.get(call_id)
        if detail is None:
            return None
        (listed,) = self._listed_calls([detail.call])
        secrets = provider_secrets(self._database, detail.call.provider_id)
        return _detail_json(detail, listed, secrets)

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
        detail = await asyncio.to_thread(self._detail, call_id)
        if detail is None:
            return json_error(404, "not_found", f"call not found: {raw}")
        return web.Response(body=msgspec.json.encode(detail), content_type="application/json")
