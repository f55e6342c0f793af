"""WebFetch's and WebSearch's state machines without IO: what each answer leads to, the
answers of the wrong kind, and the bounds on what the model reads."""

from __future__ import annotations

import json

from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import SendExec, ServerWork, ServerWorkFailed, ToolOutcome, WrongResult
from wire.tools.dispatch import prepare_tool_call
from wire.tools.web_search import (
    WEB_SEARCH_MAX_RESULTS,
    WEB_SEARCH_SNIPPET_MAX_CHARS,
    SearchHit,
    SearchHits,
    WebSearchRequest,
)

URL = "https://example.org/page"


def approved_fetch() -> agent.InteractionResponse:
    answer = agent.WebFetchRequestResponse(approved=agent.WebFetchRequestResponse.Approved())
    return agent.InteractionResponse(id=1, web_fetch_request_response=answer)


def approved_search() -> agent.InteractionResponse:
    answer = agent.WebSearchRequestResponse(approved=agent.WebSearchRequestResponse.Approved())
    return agent.InteractionResponse(id=1, web_search_request_response=answer)


def test_an_approved_fetch_leads_to_the_fetch_and_only_its_result_completes() -> None:
    execution = prepare_tool_call("WebFetch", "c1", json.dumps({"url": URL}))
    step = execution.respond(approved_fetch())
    assert isinstance(step, SendExec)
    assert step.message.fetch_args == agent.FetchArgs(url=URL, tool_call_id="c1")
    assert step.message.exec_id == "c1" and step.message.id == 0  # the runtime sets the id
    # An answer of another tool's kind is the client's mistake.
    wrong = agent.ExecClientMessage(id=2, read_result=agent.ReadResult())
    assert execution.feed(wrong) == WrongResult("read_result")
    empty = agent.ExecClientMessage(id=2, fetch_result=agent.FetchResult())
    outcome = execution.feed(empty)
    assert isinstance(outcome, ToolOutcome) and outcome.is_error


def test_a_response_of_another_kind_or_without_a_result_is_wrong() -> None:
    fetch = prepare_tool_call("WebFetch", "c1", json.dumps({"url": URL}))
    assert fetch.respond(approved_search()) == WrongResult("web_search_request_response")
    blank = agent.InteractionResponse(id=1, web_fetch_request_response={})
    assert fetch.respond(blank) == WrongResult("WebFetchRequestResponse with no result")
    search = prepare_tool_call("WebSearch", "c2", json.dumps({"search_term": "x"}))
    assert search.respond(approved_fetch()) == WrongResult("web_fetch_request_response")


def test_an_approved_search_asks_the_server_and_its_hits_are_bounded() -> None:
    search = prepare_tool_call("WebSearch", "c2", json.dumps({"search_term": "  tokio 2  "}))
    assert search.respond(approved_search()) == ServerWork(WebSearchRequest("tokio 2"))
    long = "word " * 400
    hits = tuple(SearchHit(f"t{n}", f"https://e.org/{n}", long) for n in range(20))
    outcome = search.answered(SearchHits(hits))
    assert isinstance(outcome, ToolOutcome) and not outcome.is_error
    refs = outcome.tool_call.web_search_tool_call.result.success.references
    assert len(refs) == WEB_SEARCH_MAX_RESULTS
    assert all(len(ref.chunk) == WEB_SEARCH_SNIPPET_MAX_CHARS for ref in refs)
    assert outcome.content.count("\n   https://e.org/") == WEB_SEARCH_MAX_RESULTS
    assert f"{WEB_SEARCH_MAX_RESULTS}. t{WEB_SEARCH_MAX_RESULTS - 1}" in outcome.content


def test_a_search_that_found_nothing_or_failed_says_so() -> None:
    search = prepare_tool_call("WebSearch", "c2", json.dumps({"search_term": "zzz"}))
    nothing = search.answered(SearchHits(()))
    assert isinstance(nothing, ToolOutcome)
    assert (nothing.content, nothing.is_error) == ("The web search for 'zzz' found nothing.", False)
    outcome = search.answered(ServerWorkFailed("Tavily answered HTTP 401"))
    assert isinstance(outcome, ToolOutcome) and outcome.is_error
    assert outcome.content == "The web search failed: Tavily answered HTTP 401"
    card = outcome.tool_call.web_search_tool_call
    assert card.result.error.error == "Tavily answered HTTP 401"


def test_a_blank_search_term_is_an_argument_error() -> None:
    search = prepare_tool_call("WebSearch", "c2", json.dumps({"search_term": "   "}))
    outcome = search.begin()
    assert isinstance(outcome, ToolOutcome) and outcome.is_error
    assert outcome.content == "invalid arguments for WebSearch: 'search_term' must not be empty"
    card = outcome.tool_call.web_search_tool_call
    assert card.result.error.error == outcome.content
