"""The server's web search: the ``ServerWork`` handler of WebSearch's ``WebSearchRequest``.

It reads the backend the console saved (``store.catalog.web_search_config``, off the loop) at
each search, so a change applies to the next search, and asks it over HTTP:

- SearXNG: ``GET {url}/search?q=…&format=json`` → ``results[]`` of ``{title, url, content}``
  (the instance must have the JSON format enabled);
- Tavily: ``POST https://api.tavily.com/search`` with ``Authorization: Bearer <key>`` and
  ``{"query", "max_results"}`` → ``results[]`` of ``{title, url, content}``;
- Brave Search: ``GET https://api.search.brave.com/res/v1/web/search?q=…&count=…`` with
  ``X-Subscription-Token: <key>`` → ``web.results[]`` of ``{title, url, description}``.

A search takes at most ``WEB_SEARCH_TIMEOUT_S`` and reads at most ``WEB_SEARCH_MAX_BODY_BYTES``.
Every failure (no backend, a timeout, a refused connection, an HTTP error status, an answer it
cannot read) is a ``ServerWorkFailed`` in our own words, which the model reads: never the key, the
backend's URL or its error body (a backend may echo the key), and the log names only the
backend's kind and what went wrong.
"""

from __future__ import annotations

import asyncio
import html
import logging
import re

import httpx
import msgspec
import peewee

from store.catalog import KeyUnreadable, WebSearchConfig, web_search_config
from wire.json_input import decode_json
from wire.log import log_event
from wire.tools.base import ServerWorkFailed
from wire.tools.web_search import SearchHit, SearchHits, WebSearchRequest

logger = logging.getLogger("cursor_server.web_search")

# One search, connection and whole answer included, must finish within this many seconds.
WEB_SEARCH_TIMEOUT_S = 15.0
# An answer larger than this is refused rather than read into memory.
WEB_SEARCH_MAX_BODY_BYTES = 4 * 1024 * 1024
TAVILY_SEARCH_URL = "https://api.tavily.com/search"
BRAVE_SEARCH_URL = "https://api.search.brave.com/res/v1/web/search"
BACKEND_NAMES = {"searxng": "the SearXNG instance", "tavily": "Tavily", "brave": "Brave Search"}

_TAG = re.compile(r"<[^>]*>")


class SearchEndpoints(msgspec.Struct, frozen=True):
    """Where the keyed backends answer (their public APIs; tests point them at a fake)."""

    tavily: str = TAVILY_SEARCH_URL
    brave: str = BRAVE_SEARCH_URL


PUBLIC_ENDPOINTS = SearchEndpoints()


# ---- the backends' answers (only the fields we read; null is as good as absent) ----


class _Item(msgspec.Struct, frozen=True):
    title: str | None = None
    url: str | None = None
    content: str | None = None  # SearXNG, Tavily
    description: str | None = None  # Brave


class _Results(msgspec.Struct, frozen=True):
    results: list[_Item] | None = None


class _BraveAnswer(msgspec.Struct, frozen=True):
    web: _Results | None = None


class _Refused(Exception):
    """The search failed; ``message`` is for the model, ``reason`` for the log."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason


def _plain(text: str | None) -> str:
    """A backend's snippet as text: tags (Brave marks matches with ``<strong>``) and entities
    gone, whitespace collapsed."""
    return " ".join(html.unescape(_TAG.sub("", text or "")).split())


def _hits(items: list[_Item] | None, limit: int) -> tuple[SearchHit, ...]:
    hits = []
    for item in items or ():
        if item.url:
            snippet = item.content if item.content is not None else item.description
            hits.append(SearchHit(_plain(item.title), item.url, _plain(snippet)))
    return tuple(hits[:limit])


def parse_answer(backend: str, body: bytes, limit: int) -> tuple[SearchHit, ...]:
    """The hits of one backend's JSON answer; ``msgspec`` errors for one we cannot read."""
    if backend == "brave":
        web = decode_json(body, type=_BraveAnswer).web
        return _hits(web.results if web is not None else None, limit)
    return _hits(decode_json(body, type=_Results).results, limit)


def search_request(
    config: WebSearchConfig, request: WebSearchRequest, endpoints: SearchEndpoints
) -> httpx.Request:
    """The HTTP request that asks ``config``'s backend for ``request``."""
    accept = {"Accept": "application/json"}
    term, count = request.search_term, request.max_results
    match config.backend:
        case "searxng":
            params = {"q": term, "format": "json"}
            return httpx.Request("GET", f"{config.url}/search", params=params, headers=accept)
        case "tavily":
            auth = {**accept, "Authorization": f"Bearer {config.api_key}"}
            body = {"query": term, "max_results": count, "search_depth": "basic"}
            return httpx.Request("POST", endpoints.tavily, json=body, headers=auth)
        case "brave":
            token = {**accept, "X-Subscription-Token": config.api_key}
            params = {"q": term, "count": str(count)}
            return httpx.Request("GET", endpoints.brave, params=params, headers=token)
        case other:
            raise _Refused("the configured search backend is unknown", f"unknown backend {other}")


class WebSearcher:
    """Runs one ``WebSearchRequest`` on the configured backend (a coroutine on the loop)."""

    def __init__(
        self,
        database: peewee.Database,
        client: httpx.AsyncClient,
        endpoints: SearchEndpoints = PUBLIC_ENDPOINTS,
        timeout_s: float = WEB_SEARCH_TIMEOUT_S,
    ) -> None:
        self._db = database
        self._client = client
        self._endpoints = endpoints
        self._timeout_s = timeout_s

    async def __call__(self, request: WebSearchRequest) -> SearchHits | ServerWorkFailed:
        try:
            config = await asyncio.to_thread(web_search_config, self._db)
        except KeyUnreadable as exc:
            log_event(logger, logging.WARNING, "web search key unreadable", reason=exc.message)
            return ServerWorkFailed(exc.message)
        if config is None:
            return ServerWorkFailed("web search is not set up on this server")
        try:
            hits = await self._search(config, request)
        except _Refused as exc:
            log_event(
                logger,
                logging.WARNING,
                "web search failed",
                backend=config.backend,
                reason=exc.reason,
            )
            return ServerWorkFailed(exc.message)
        log_event(
            logger, logging.DEBUG, "web search answered", backend=config.backend, hits=len(hits)
        )
        return SearchHits(hits)

    async def _search(
        self, config: WebSearchConfig, request: WebSearchRequest
    ) -> tuple[SearchHit, ...]:
        name = BACKEND_NAMES.get(config.backend, "the search backend")
        http_request = search_request(config, request, self._endpoints)
        try:
            async with asyncio.timeout(self._timeout_s):
                status, body = await self._send(http_request, name)
        except TimeoutError:
            seconds = f"{self._timeout_s:g}"
            raise _Refused(f"{name} did not answer within {seconds} s", "timeout") from None
        except httpx.HTTPError as exc:
            kind = type(exc).__name__
            raise _Refused(f"{name} could not be reached ({kind})", kind) from None
        if status != 200:
            raise _Refused(f"{name} answered HTTP {status}", f"HTTP {status}")
        try:
            return parse_answer(config.backend, body, request.max_results)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise _Refused(f"{name} sent an answer this server cannot read", "unreadable") from None

    async def _send(self, request: httpx.Request, name: str) -> tuple[int, bytes]:
        response = await self._client.send(request, stream=True)
        try:
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > WEB_SEARCH_MAX_BODY_BYTES:
                    limit = WEB_SEARCH_MAX_BODY_BYTES // (1024 * 1024)
                    raise _Refused(f"{name} sent more than {limit} MiB", "answer too large")
            return response.status_code, bytes(body)
        finally:
            await response.aclose()
