"""WebFetch end to end: the real server, the fake Cursor client approving (or refusing) the
fetch and then fetching the page for real from a loopback page server, and the fake provider
in each of the three formats. The approval is never a result; the page text is."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import msgspec
import pytest

from store import Store
from tests.conftest import TEST_LIMITS, StartServer
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    approve_queries,
    cancel_message,
    fetch_over_http,
    queries,
    updates,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from tests.support.web_fakes import FakePages, serving
from wire.http.limits import MIB
from wire.proto import agent_v1_pb2 as agent
from wire.tools.web_fetch import WEB_FETCH_MAX_CHARS

PAGE = "# Release notes\n\nVersion 2.0 drops Python 3.8.\n"


@pytest.fixture
async def pages() -> AsyncIterator[FakePages]:
    fake = FakePages({"/notes": (200, PAGE, "text/markdown")})
    async with serving(fake.app()) as base_url:
        fake.base_url = base_url
        yield fake


def fetch(url: str, call_id: str = "call_fetch") -> FakeToolCall:
    text = json.dumps({"url": url})
    return FakeToolCall(call_id, "WebFetch", (text[:5], text[5:]))


def execs(log: TurnLog) -> list[agent.ExecServerMessage]:
    return [m.exec_server_message for m in log.messages if m.HasField("exec_server_message")]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_an_approved_fetch_runs_under_a_fresh_id_and_the_model_reads_the_page(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    pages: FakePages,
) -> None:
    model = fmt.add_model(server_store, fake)
    url = f"{pages.base_url}/notes"
    fake.enqueue(fmt.tool_round([fetch(url)], text=["Let me read them."]))
    fake.enqueue(fmt.answer("2.0 drops Python 3.8."))
    session = CursorSession(
        cursor, "turn-fetch", answer_query=approve_queries(), answer_fetch=fetch_over_http
    )
    log = await session.run(user_turn_message("what changed in 2.0?", model))
    assert log.end == {}
    # The approval query takes the run's first wire id, the fetch a fresh one after it.
    (query,) = queries(log)
    assert query.id == 1
    assert query.web_fetch_request_query.args == agent.WebFetchArgs(
        url=url, tool_call_id="call_fetch"
    )
    (request,) = execs(log)
    assert request.id == 2
    assert request.exec_id == "call_fetch"
    assert request.fetch_args == agent.FetchArgs(url=url, tool_call_id="call_fetch")
    # Started card, then the query, then the fetch, then one completed card: the approval
    # completed nothing.
    kinds = log.kinds()
    assert (
        kinds.index("tool_call_started")
        < kinds.index("interaction_query")
        < kinds.index("exec_server_message")
        < kinds.index("tool_call_completed")
    )
    (started,) = updates(log, "tool_call_started")
    assert started.tool_call.web_fetch_tool_call.args.url == url
    (completed,) = updates(log, "tool_call_completed")
    card = completed.tool_call.web_fetch_tool_call
    assert card.result.success == agent.WebFetchSuccess(url=url, markdown=PAGE)
    assert fmt.tool_results(fake.requests[1].json) == {"call_fetch": PAGE}
    assert "turn_ended" in kinds


async def test_a_big_page_is_cut_at_the_bound_and_the_model_is_told_where(
    fake: FakeProvider, server_store: Store, make_server: StartServer, pages: FakePages
) -> None:
    # The page's append is bigger than the test limits' 64 KiB body.
    server = await make_server(limits=msgspec.structs.replace(TEST_LIMITS, max_body_bytes=MIB))
    cursor = FakeCursor(f"http://{server.address}")
    fmt = FORMATS[1]
    model = fmt.add_model(server_store, fake)
    big = "".join(f"line {n:06d}\n" for n in range(15_000))  # 180 000 characters
    assert len(big) > WEB_FETCH_MAX_CHARS
    pages.pages["/big"] = (200, big, "text/plain")
    fake.enqueue(fmt.tool_round([fetch(f"{pages.base_url}/big")]))
    fake.enqueue(fmt.answer("long page"))
    session = CursorSession(
        cursor, "turn-big", answer_query=approve_queries(), answer_fetch=fetch_over_http
    )
    try:
        log = await session.run(user_turn_message("read it", model))
    finally:
        await cursor.aclose()
    assert log.end == {}
    read = fmt.tool_results(fake.requests[1].json)["call_fetch"]
    kept, note = read.rsplit("\n", 1)
    assert kept == big[:WEB_FETCH_MAX_CHARS].rstrip("\n")
    assert note == (
        f"[the page was cut here: only its first {WEB_FETCH_MAX_CHARS:,} of {len(big):,} "
        "characters are shown]"
    )
    (completed,) = updates(log, "tool_call_completed")
    assert completed.tool_call.web_fetch_tool_call.result.success.markdown == read


async def test_a_refused_fetch_is_the_reason_for_the_model_and_nothing_is_fetched(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, pages: FakePages
) -> None:
    fmt = FORMATS[2]
    model = fmt.add_model(server_store, fake)
    url = f"{pages.base_url}/notes"
    fake.enqueue(fmt.tool_round([fetch(url)]))
    fake.enqueue(fmt.answer("ok, I will not"))
    session = CursorSession(
        cursor,
        "turn-refused",
        answer_query=approve_queries(reject="not that site"),
        answer_fetch=fetch_over_http,
    )
    log = await session.run(user_turn_message("read it", model))
    assert log.end == {}
    assert execs(log) == []
    assert fmt.tool_results(fake.requests[1].json) == {
        "call_fetch": f"the user did not allow fetching {url}: not that site"
    }
    (completed,) = updates(log, "tool_call_completed")
    assert completed.tool_call.web_fetch_tool_call.result.rejected.reason == "not that site"


async def test_a_failed_fetch_and_an_error_page_are_errors_the_model_reads(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, pages: FakePages
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    # Nothing listens on port 9 of loopback: the editor's fetch fails.
    unreachable = "http://127.0.0.1:9/nothing"
    fake.enqueue(
        fmt.tool_round([fetch(unreachable, "call_a"), fetch(f"{pages.base_url}/gone", "call_b")])
    )
    fake.enqueue(fmt.answer("both failed"))
    session = CursorSession(
        cursor, "turn-fail", answer_query=approve_queries(), answer_fetch=fetch_over_http
    )
    log = await session.run(user_turn_message("read them", model))
    assert log.end == {}
    results = fmt.tool_results(fake.requests[1].json)
    assert results["call_a"].startswith(f"fetching {unreachable} failed: ")
    assert results["call_b"] == f"{pages.base_url}/gone answered HTTP 404:\nno such page"
    cards = {
        c.tool_call.tool_call_id: c.tool_call.web_fetch_tool_call
        for c in updates(log, "tool_call_completed")
    }
    assert cards["call_a"].result.error.url == unreachable
    assert cards["call_b"].result.success.markdown == "no such page"
    # Two approvals (ids 1, 2), then the two fetches under fresh ids.
    assert [q.id for q in queries(log)] == [1, 2]
    assert sorted(e.id for e in execs(log)) == [3, 4]


async def test_a_url_that_is_not_http_is_an_argument_error_and_asks_nothing(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(
        fmt.tool_round([fetch("file:///etc/passwd", "call_file"), fetch(" ", "call_empty")])
    )
    fake.enqueue(fmt.answer("sorry"))
    log = await CursorSession(cursor, "turn-bad-url", answer_query=approve_queries()).run(
        user_turn_message("read it", model)
    )
    assert log.end == {}
    assert queries(log) == []
    assert fmt.tool_results(fake.requests[1].json) == {
        "call_file": "invalid arguments for WebFetch: 'url' must be an http:// or https:// URL",
        "call_empty": "invalid arguments for WebFetch: 'url' must not be empty",
    }


async def test_cancel_while_the_approval_is_pending_ends_canceled_with_no_abort(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, pages: FakePages
) -> None:
    fmt = FORMATS[1]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([fetch(f"{pages.base_url}/notes")]))
    session = CursorSession(cursor, "turn-fetch-cancel", answer_fetch=fetch_over_http)
    task = asyncio.create_task(session.run(user_turn_message("read it", model)))
    for _ in range(200):
        if queries(session.log):
            break
        await asyncio.sleep(0.02)
    assert queries(session.log), "the approval was never asked"
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    assert not any(m.HasField("exec_server_control_message") for m in log.messages)
    assert execs(log) == []
    assert updates(log, "tool_call_completed") == []
    assert len(fake.requests) == 1
