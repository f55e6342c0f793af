"""Console API for conversations and run timelines, read from the runs' events
(``store.run_history``):

- ``GET /console/api/conversations?limit=&before=``: most recently active first, paged by the
  ``next_before`` cursor of the previous page;
- ``GET /console/api/conversations/{id}``: its runs, newest first;
- ``GET /console/api/runs/{run_id}/timeline``: one run's lanes (run, provider, tools,
  checkpoints).

Reads only; the RunEventRecorderActor and the CallRecorderActor write. Store calls run in a
worker thread so the event loop never waits on the database.
"""

from __future__ import annotations

import asyncio

import msgspec
import peewee
from aiohttp import web

from console.numbers import bigint_of
from store.run_history import ConversationSummary, PageCursor, RunHistory
from wire.http.responses import json_error

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


class ConversationList(msgspec.Struct, frozen=True):
    conversations: list[ConversationSummary]
    next_before: str | None


class BadQuery(ValueError):
    """A query parameter the API cannot read (answered 400)."""


def page_limit(request: web.Request) -> int:
    raw = request.query.get("limit", "")
    if raw == "":
        return DEFAULT_LIMIT
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_LIMIT:
        raise BadQuery(f"limit must be an integer from 1 to {MAX_LIMIT}, got {raw!r}")
    return int(raw)


def encode_cursor(summary: ConversationSummary) -> str:
    """``<last activity ms>:<conversation id>``: ties on the time page on by id."""
    return f"{summary.last_activity_ms}:{summary.conversation_id}"


def decode_cursor(raw: str | None) -> PageCursor | None:
    if raw is None or raw == "":
        return None
    ms, separator, conversation_id = raw.partition(":")
    last_activity_ms = bigint_of(ms)
    if not separator or last_activity_ms is None:
        raise BadQuery(f"before must be a next_before value of a previous page, got {raw!r}")
    return PageCursor(last_activity_ms, conversation_id)


def _json(value: object) -> web.Response:
    return web.Response(body=msgspec.json.encode(value), content_type="application/json")


class ConversationsApi:
    """The conversation and timeline routes, registered before the console's catch-all."""

    def __init__(self, database: peewee.Database) -> None:
        self._history = RunHistory(database)

    def register(self, app: web.Application) -> None:
        router = app.router
        router.add_get("/console/api/conversations", self.list_conversations, allow_head=False)
        router.add_get(
            "/console/api/conversations/{conversation_id}", self.get_conversation, allow_head=False
        )
        router.add_get("/console/api/runs/{run_id}/timeline", self.get_timeline, allow_head=False)

    async def list_conversations(self, request: web.Request) -> web.Response:
        try:
            limit = page_limit(request)
            before = decode_cursor(request.query.get("before"))
        except BadQuery as exc:
            return json_error(400, "invalid_argument", str(exc))
        page = await asyncio.to_thread(self._history.conversations, limit, before)
        next_before = encode_cursor(page[-1]) if len(page) == limit else None
        return _json(ConversationList(page, next_before))

    async def get_conversation(self, request: web.Request) -> web.Response:
        conversation_id = request.match_info["conversation_id"]
        detail = await asyncio.to_thread(self._history.conversation, conversation_id)
        if detail is None:
            return json_error(404, "not_found", f"conversation not found: {conversation_id}")
        return _json(detail)

    async def get_timeline(self, request: web.Request) -> web.Response:
        run_id = request.match_info["run_id"]
        timeline = await asyncio.to_thread(self._history.timeline, run_id)
        if timeline is None:
            return json_error(404, "not_found", f"run not found: {run_id}")
        return _json(timeline)
