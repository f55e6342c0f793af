"""Console API for the People page: ``GET /console/api/people?range=hour|day|week|month``.

Each user's runs, calls, tokens and estimated cost over the dashboard's ranges
(``store.people_stats``, documented there). ``range`` defaults to ``day``; another value is a
400 ``{code,message}``. The queries run in a worker thread so the event loop never waits on
the database. Also the ``user`` query parameter the Calls and Dashboard routes share.
"""

from __future__ import annotations

import asyncio

import msgspec
import peewee
from aiohttp import web

from console.stats_api import DEFAULT_RANGE
from store.base.clock import now_ms
from store.call_stats import UnknownRange
from store.people_stats import people_stats
from wire.http.responses import json_error


class PeopleApi:
    """The People route, bound to one database."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database

    def register(self, app: web.Application) -> None:
        app.router.add_get("/console/api/people", self.get_people, allow_head=False)

    async def get_people(self, request: web.Request) -> web.Response:
        range_name = request.query.get("range", DEFAULT_RANGE)
        try:
            people = await asyncio.to_thread(people_stats, self._db, range_name, now_ms())
        except UnknownRange as exc:
            return json_error(400, "invalid_argument", str(exc))
        return web.Response(body=msgspec.json.encode(people), content_type="application/json")
