"""Small real HTTP servers on loopback for the web tools: pages to fetch, and search backends
in the shapes of SearXNG's, Tavily's and Brave Search's JSON APIs.

Each records what it was asked (method, path, query, headers, JSON body) and answers what the
test set: a status, a JSON body, and optionally a delay before answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.client_left import client_left_quietly


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """``app`` on a free loopback port; its base URL (``http://127.0.0.1:PORT``)."""
    runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


@dataclass
class Asked:
    """One request a fake received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class FakeBackend:
    """Answers every request with ``status`` and ``answer`` (JSON) after ``delay_s``."""

    answer: Any = field(default_factory=dict)
    status: int = 200
    delay_s: float = 0.0
    asked: list[Asked] = field(default_factory=list)
    base_url: str = ""

    async def _handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        self.asked.append(
            Asked(
                request.method,
                request.path,
                dict(request.query),
                dict(request.headers),
                json.loads(raw) if raw else None,
            )
        )
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return web.json_response(self.answer, status=self.status)

    def app(self) -> web.Application:
        app = web.Application(middlewares=[client_left_quietly])
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app


def searxng_answer(*hits: tuple[str, str, str]) -> dict[str, Any]:
    """SearXNG's ``format=json`` answer for (title, url, content) hits."""
    results = [
        {"title": t, "url": u, "content": c, "engine": "fake", "score": 1.0} for t, u, c in hits
    ]
    return {"query": "q", "number_of_results": len(results), "results": results}


def tavily_answer(*hits: tuple[str, str, str]) -> dict[str, Any]:
    """Tavily's ``/search`` answer for (title, url, content) hits."""
    results = [{"title": t, "url": u, "content": c, "score": 0.9} for t, u, c in hits]
    return {"query": "q", "answer": None, "images": [], "results": results, "response_time": 0.1}


def brave_answer(*hits: tuple[str, str, str]) -> dict[str, Any]:
    """Brave Search's ``/res/v1/web/search`` answer for (title, url, description) hits."""
    results = [
        {"title": t, "url": u, "description": d, "type": "search_result"} for t, u, d in hits
    ]
    return {
        "type": "search",
        "query": {"original": "q"},
        "web": {"type": "search", "results": results},
    }


@dataclass
class FakePages:
    """Pages by path: (status, text, content type)."""

    pages: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    base_url: str = ""

    async def _handle(self, request: web.Request) -> web.Response:
        status, text, content_type = self.pages.get(
            request.path, (404, "no such page", "text/plain")
        )
        return web.Response(status=status, text=text, content_type=content_type)

    def app(self) -> web.Application:
        app = web.Application(middlewares=[client_left_quietly])
        app.router.add_get("/{tail:.*}", self._handle)
        return app
