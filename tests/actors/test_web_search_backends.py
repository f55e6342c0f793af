"""The server's web search against fakes of each backend's HTTP API on loopback: the request
each is sent (SearXNG's query string, Tavily's body and bearer key, Brave's token header), the
hits read from each answer shape, and every failure (no backend, HTTP 500, a timeout, nothing
listening, an answer it cannot read) as a ``ServerWorkFailed`` in our words with no key or URL."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import httpx
import pytest

from actors.services.web_search import SearchEndpoints, WebSearcher
from store import Store
from store.catalog import WebSearchInput, update_web_search
from tests.support.web_fakes import (
    FakeBackend,
    brave_answer,
    searxng_answer,
    serving,
    tavily_answer,
)
from wire.tools.base import ServerWorkFailed
from wire.tools.web_search import SearchHit, SearchHits, WebSearchRequest

KEY = "tvly-secret-key-0123456789"
HITS = (
    ("Python 3.13 released", "https://python.org/313", "The <b>new</b> release &amp; notes"),
    ("What's new", "https://docs.python.org/whatsnew", "Changes in\n  3.13"),
)
EXPECTED = (
    SearchHit("Python 3.13 released", "https://python.org/313", "The new release & notes"),
    SearchHit("What's new", "https://docs.python.org/whatsnew", "Changes in 3.13"),
)


@pytest.fixture
async def backend() -> AsyncIterator[FakeBackend]:
    fake = FakeBackend()
    async with serving(fake.app()) as base_url:
        fake.base_url = base_url
        yield fake


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=None, follow_redirects=False) as shared:
        yield shared


def searcher(
    store: Store, client: httpx.AsyncClient, backend: FakeBackend, timeout_s: float = 5.0
) -> WebSearcher:
    endpoints = SearchEndpoints(
        tavily=f"{backend.base_url}/search", brave=f"{backend.base_url}/res/v1/web/search"
    )
    return WebSearcher(store.database, client, endpoints, timeout_s)


async def test_searxng_is_asked_for_json_and_its_hits_are_read(
    server_store: Store, client: httpx.AsyncClient, backend: FakeBackend
) -> None:
    update_web_search(server_store.database, WebSearchInput("searxng", f"{backend.base_url}/sx/"))
    backend.answer = searxng_answer(*HITS, ("no url", "", "dropped"))
    answer = await searcher(server_store, client, backend)(WebSearchRequest("python 3.13", 5))
    assert answer == SearchHits(EXPECTED)
    (asked,) = backend.asked
    assert (asked.method, asked.path) == ("GET", "/sx/search")
    assert asked.query == {"q": "python 3.13", "format": "json"}


async def test_the_hit_count_is_bounded_by_the_request(
    server_store: Store, client: httpx.AsyncClient, backend: FakeBackend
) -> None:
    update_web_search(server_store.database, WebSearchInput("searxng", backend.base_url))
    backend.answer = searxng_answer(*[(f"t{n}", f"https://e.org/{n}", "") for n in range(30)])
    answer = await searcher(server_store, client, backend)(WebSearchRequest("many", 3))
    assert isinstance(answer, SearchHits)
    assert [hit.url for hit in answer.hits] == [
        "https://e.org/0",
        "https://e.org/1",
        "https://e.org/2",
    ]


async def test_tavily_gets_the_query_in_its_body_and_the_key_as_a_bearer(
    server_store: Store, client: httpx.AsyncClient, backend: FakeBackend
) -> None:
    update_web_search(server_store.database, WebSearchInput("tavily", api_key=KEY))
    backend.answer = tavily_answer(*HITS)
    answer = await searcher(server_store, client, backend)(WebSearchRequest("python 3.13", 4))
    assert answer == SearchHits(EXPECTED)
    (asked,) = backend.asked
    assert (asked.method, asked.path) == ("POST", "/search")
    assert asked.headers["Authorization"] == f"Bearer {KEY}"
    assert asked.body == {"query": "python 3.13", "max_results": 4, "search_depth": "basic"}


async def test_brave_gets_the_query_string_and_its_token_header(
    server_store: Store, client: httpx.AsyncClient, backend: FakeBackend
) -> None:
    update_web_search(server_store.database, WebSearchInput("brave", api_key="BSA-token-123"))
    backend.answer = brave_answer(*HITS)
    answer = await searcher(server_store, client, backend)(WebSearchRequest("python 3.13", 6))
    assert answer == SearchHits(EXPECTED)
    (asked,) = backend.asked
    assert (asked.method, asked.path) == ("GET", "/res/v1/web/search")
    assert asked.query == {"q": "python 3.13", "count": "6"}
    assert asked.headers["X-Subscription-Token"] == "BSA-token-123"
    assert asked.headers["Accept"] == "application/json"
    # An answer without web results is no hits, not a failure.
    backend.answer = {"type": "search", "query": {"original": "x"}}
    assert await searcher(server_store, client, backend)(WebSearchRequest("x")) == SearchHits(())


async def test_no_backend_is_a_failure_the_model_can_read(
    server_store: Store, client: httpx.AsyncClient, backend: FakeBackend
) -> None:
    answer = await searcher(server_store, client, backend)(WebSearchRequest("x"))
    assert answer == ServerWorkFailed("web search is not set up on this server")
    assert backend.asked == []


async def test_failures_are_ours_and_leak_neither_key_nor_url(
    server_store: Store,
    client: httpx.AsyncClient,
    backend: FakeBackend,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    update_web_search(server_store.database, WebSearchInput("tavily", api_key=KEY))
    search = searcher(server_store, client, backend, timeout_s=0.3)
    # A backend that echoes the key in its error body.
    backend.status, backend.answer = 500, {"detail": f"bad key {KEY}"}
    assert await search(WebSearchRequest("x")) == ServerWorkFailed("Tavily answered HTTP 500")
    backend.status, backend.answer = 200, ["not", "an", "object"]
    assert await search(WebSearchRequest("x")) == ServerWorkFailed(
        "Tavily sent an answer this server cannot read"
    )
    backend.answer, backend.delay_s = tavily_answer(*HITS), 2.0
    assert await search(WebSearchRequest("x")) == ServerWorkFailed(
        "Tavily did not answer within 0.3 s"
    )
    update_web_search(server_store.database, WebSearchInput("searxng", "http://127.0.0.1:9"))
    assert await search(WebSearchRequest("x")) == ServerWorkFailed(
        "the SearXNG instance could not be reached (ConnectError)"
    )
    assert KEY not in caplog.text  # no log line at all, httpx's debug lines included
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("cursor_server"))
    assert ours.count("web search failed") == 4
    assert "127.0.0.1:9" not in ours and backend.base_url not in ours
