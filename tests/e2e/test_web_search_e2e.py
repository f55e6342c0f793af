"""WebSearch end to end: the real server searching a fake SearXNG (and a fake Tavily) over
HTTP on loopback after the fake Cursor client approved, and the fake provider in each of the
three formats. Without a backend, WebSearch is not offered at all."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator

import httpx
import pytest

from actors.server.compose import ServerConfig, start_server
from actors.services.web_search import SearchEndpoints
from prompt import load_prompt_assets
from store import Store
from store.base.typed_peewee import execute_sql
from store.catalog import WebSearchInput, update_web_search
from tests.conftest import TEST_LIMITS
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    approve_queries,
    cancel_message,
    queries,
    updates,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from tests.support.web_fakes import FakeBackend, searxng_answer, serving, tavily_answer
from wire.proto import agent_v1_pb2 as agent

HITS = (
    ("aiohttp 3.10 changelog", "https://docs.aiohttp.org/changes", "Bug fixes and <em>speed</em>"),
    ("Release v3.10.0", "https://github.com/aio-libs/aiohttp/releases", "Tagged last week."),
)
RESULTS_TEXT = (
    "Web search results for 'aiohttp 3.10 changes':\n"
    "\n"
    "1. aiohttp 3.10 changelog\n"
    "   https://docs.aiohttp.org/changes\n"
    "   Bug fixes and speed\n"
    "\n"
    "2. Release v3.10.0\n"
    "   https://github.com/aio-libs/aiohttp/releases\n"
    "   Tagged last week."
)


@pytest.fixture
async def searxng() -> AsyncIterator[FakeBackend]:
    fake = FakeBackend(answer=searxng_answer(*HITS))
    async with serving(fake.app()) as base_url:
        fake.base_url = base_url
        yield fake


def use_searxng(store: Store, searxng: FakeBackend) -> None:
    update_web_search(store.database, WebSearchInput("searxng", searxng.base_url))


def search(term: str = "aiohttp 3.10 changes", call_id: str = "call_search") -> FakeToolCall:
    text = json.dumps({"search_term": term, "explanation": "to see what changed"})
    return FakeToolCall(call_id, "WebSearch", (text[:9], text[9:]))


def agent_tools() -> list[str]:
    return [tool.name for tool in load_prompt_assets().mode("agent").tools]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_an_approved_search_runs_on_the_server_and_its_results_reach_card_and_model(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    searxng: FakeBackend,
) -> None:
    use_searxng(server_store, searxng)
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([search()], text=["Searching."]))
    fake.enqueue(fmt.answer("3.10 brings bug fixes."))
    session = CursorSession(cursor, "turn-search", answer_query=approve_queries())
    log = await session.run(user_turn_message("what changed in aiohttp 3.10?", model))
    assert log.end == {}
    # With a backend, WebSearch is offered, in the manifest's place (after Delete).
    offered = fmt.tool_names(fake.requests[0].json)
    assert offered == [n for n in agent_tools() if n != "GenerateImage"]  # no image model
    assert offered.index("WebSearch") == offered.index("Delete") + 1
    (query,) = queries(log)
    assert query.id == 1
    assert query.web_search_request_query.args == agent.WebSearchArgs(
        search_term="aiohttp 3.10 changes", tool_call_id="call_search"
    )
    # The server searched (after the approval), the editor ran nothing.
    (asked,) = searxng.asked
    assert asked.query == {"q": "aiohttp 3.10 changes", "format": "json"}
    assert not any(m.HasField("exec_server_message") for m in log.messages)
    (completed,) = updates(log, "tool_call_completed")
    card = completed.tool_call.web_search_tool_call
    assert card.args.search_term == "aiohttp 3.10 changes"
    assert [(r.title, r.url, r.chunk) for r in card.result.success.references] == [
        ("aiohttp 3.10 changelog", "https://docs.aiohttp.org/changes", "Bug fixes and speed"),
        ("Release v3.10.0", "https://github.com/aio-libs/aiohttp/releases", "Tagged last week."),
    ]
    assert fmt.tool_results(fake.requests[1].json) == {"call_search": RESULTS_TEXT}


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_without_a_backend_websearch_is_not_offered(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.answer("I cannot search."))
    log = await CursorSession(cursor, "turn-no-search").run(user_turn_message("search", model))
    assert log.end == {}
    manifest = agent_tools()
    assert "WebSearch" in manifest
    unavailable = {"WebSearch", "GenerateImage"}  # no backend, and no image model either
    assert fmt.tool_names(fake.requests[0].json) == [n for n in manifest if n not in unavailable]


async def test_a_failing_backend_is_an_error_result_and_the_turn_goes_on(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, searxng: FakeBackend
) -> None:
    use_searxng(server_store, searxng)
    searxng.status, searxng.answer = 500, {"error": "engines down"}
    fmt = FORMATS[2]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([search()]))
    fake.enqueue(fmt.answer("The search failed; from memory: ..."))
    log = await CursorSession(cursor, "turn-500", answer_query=approve_queries()).run(
        user_turn_message("search", model)
    )
    assert log.end == {}
    text = "The web search failed: the SearXNG instance answered HTTP 500"
    assert fmt.tool_results(fake.requests[1].json) == {"call_search": text}
    (completed,) = updates(log, "tool_call_completed")
    assert completed.tool_call.web_search_tool_call.result.error.error == (
        "the SearXNG instance answered HTTP 500"
    )
    assert "turn_ended" in log.kinds()


async def test_a_refused_search_is_not_run_and_the_model_reads_the_reason(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, searxng: FakeBackend
) -> None:
    use_searxng(server_store, searxng)
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([search()]))
    fake.enqueue(fmt.answer("fine"))
    log = await CursorSession(
        cursor, "turn-refused", answer_query=approve_queries(reject="no browsing today")
    ).run(user_turn_message("search", model))
    assert log.end == {}
    assert searxng.asked == []
    assert fmt.tool_results(fake.requests[1].json) == {
        "call_search": "the user did not allow this web search: no browsing today"
    }
    (completed,) = updates(log, "tool_call_completed")
    assert completed.tool_call.web_search_tool_call.result.rejected.reason == "no browsing today"


async def test_cancel_while_the_approval_is_pending_ends_canceled(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, searxng: FakeBackend
) -> None:
    use_searxng(server_store, searxng)
    fmt = FORMATS[1]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([search()]))
    session = CursorSession(cursor, "turn-search-cancel")  # the user never answers
    task = asyncio.create_task(session.run(user_turn_message("search", model)))
    for _ in range(200):
        if queries(session.log):
            break
        await asyncio.sleep(0.02)
    assert queries(session.log), "the approval was never asked"
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    assert not any(m.HasField("exec_server_control_message") for m in log.messages)
    assert updates(log, "tool_call_completed") == []
    assert searxng.asked == []
    assert len(fake.requests) == 1


async def test_the_tavily_key_is_sent_to_tavily_and_nowhere_else(
    fake: FakeProvider,
    server_store: Store,
    upstream: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="cursor_server")
    key = "tvly-e2e-secret-0123456789"
    tavily = FakeBackend(answer=tavily_answer(*HITS))
    async with serving(tavily.app()) as tavily_url:
        config = ServerConfig(
            host="127.0.0.1",
            port=0,
            upstream_url=upstream,
            limits=TEST_LIMITS,
            search_endpoints=SearchEndpoints(tavily=f"{tavily_url}/search"),
        )
        server = await start_server(config, store=server_store)
        base = f"http://{server.address}"
        answers: list[str] = []
        try:
            async with httpx.AsyncClient(base_url=f"{base}/console/api") as console:
                saved = await console.put(
                    "/settings/web-search", json={"backend": "tavily", "api_key": key}
                )
                assert saved.json() == {"backend": "tavily", "url": None, "has_api_key": True}
                await console.put("/settings/observability", json={"verbose": True})
                fmt = FORMATS[0]
                model = fmt.add_model(server_store, fake)
                fake.enqueue(fmt.tool_round([search()]))
                fake.enqueue(fmt.answer("done"))
                cursor = FakeCursor(base)
                try:
                    log = await CursorSession(
                        cursor, "turn-tavily", answer_query=approve_queries()
                    ).run(user_turn_message("search", model))
                finally:
                    await cursor.aclose()
                assert log.end == {}
                assert fmt.tool_results(fake.requests[1].json) == {"call_search": RESULTS_TEXT}
                calls = (await console.get("/calls")).json()
                for path in ("/settings/web-search", "/calls", "/conversations"):
                    answers.append((await console.get(path)).text)
                for call in calls["calls"]:
                    answers.append((await console.get(f"/calls/{call['id']}")).text)
                answers.append(saved.text)
        finally:
            await server.stop()
    (asked,) = tavily.asked
    assert asked.headers["Authorization"] == f"Bearer {key}"
    assert len(answers) >= 5 and not any(key in answer for answer in answers)
    assert key not in caplog.text
    assert not any(key in request.body.decode() for request in fake.requests)
    assert key not in "".join(str(m) for m in log.messages)
    # In the database nothing holds it in plaintext: the setting keeps it sealed.
    db = server_store.database
    holders = []
    for table in db.get_tables():
        for row in execute_sql(db, f'SELECT * FROM "{table}"').fetchall():
            if key in repr(row):
                holders.append((table, row[0]))
    assert holders == []
