"""Console API for the dashboard's aggregates: ``GET /console/api/stats?range=hour|day|week|month``.

The answer (``store.call_stats.CallStats``, documented in that module) is computed in SQL, so
the browser gets one small object per range, never the call rows. ``range`` defaults to
``day``; another value is a 400 ``{code,message}``. ``user`` narrows it to one user's calls
(``llm_calls.user_id``). The queries run in a worker thread so the
event loop never waits on the database.
"""

from __future__ import annotations

import asyncio

import msgspec
import peewee
from aiohttp import web

from console.user_filter import user_query
from store.base.clock import now_ms
from store.call_stats import StatsUnavailable, UnknownRange, call_stats
from wire.http.responses import json_error

DEFAULT_RANGE = "day"


class StatsApi:
    """The statistics route, bound to one database."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database

    def register(self, app: web.Application) -> None:
        app.router.add_get("/console/api/stats", self.get_stats, allow_head=False)

    async def get_stats(self, request: web.Request) -> web.Response:
        range_name = request.query.get("range", DEFAULT_RANGE)
        try:
            user = user_query(request)
            stats = await asyncio.to_thread(call_stats, self._db, range_name, now_ms(), user)
        except (UnknownRange, ValueError) as exc:
            return json_error(400, "invalid_argument", str(exc))
        except StatsUnavailable as exc:
            return json_error(501, "unimplemented", str(exc))
        return web.Response(body=msgspec.json.encode(stats), content_type="application/json")
