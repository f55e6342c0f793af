"""WebSearch: the user approves a search, then the server runs it on its configured backend.

The editor only approves (``web_search_request_query``); the search itself is server work
(``ServerWork(WebSearchRequest)``), run by the handler the server registered for it
(``actors.services.web_search``) on the backend set in the console. Its hits reach the card as
``WebSearchSuccess.references`` and the model as a numbered list (title, URL, snippet), at
most ``WEB_SEARCH_MAX_RESULTS`` of them, each snippet cut at ``WEB_SEARCH_SNIPPET_MAX_CHARS``.
A rejection or a failed search is an error result the model reads; the turn goes on.
"""

from __future__ import annotations

from typing import Any

import msgspec

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    InteractionExecution,
    ServerWork,
    ServerWorkFailed,
    ToolChannel,
    ToolDefinition,
    ToolOutcome,
    WrongResult,
)

# The most results the model reads from one search (the backend is asked for this many).
WEB_SEARCH_MAX_RESULTS = 8
# The most characters of one result's snippet the model and the card get.
WEB_SEARCH_SNIPPET_MAX_CHARS = 600


class WebSearchRequest(msgspec.Struct, frozen=True):
    """Server work: search the web for ``search_term``, at most ``max_results`` hits."""

    search_term: str
    max_results: int = WEB_SEARCH_MAX_RESULTS


class SearchHit(msgspec.Struct, frozen=True):
    """One result as the backend gave it."""

    title: str
    url: str
    snippet: str = ""


class SearchHits(msgspec.Struct, frozen=True):
    """The search's answer: its results, best first."""

    hits: tuple[SearchHit, ...]


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= WEB_SEARCH_SNIPPET_MAX_CHARS:
        return text
    return text[: WEB_SEARCH_SNIPPET_MAX_CHARS - 1].rstrip() + "…"


def references(hits: tuple[SearchHit, ...]) -> list[agent.WebSearchReference]:
    """The card's references: the first hits, snippets cut to size."""
    return [
        agent.WebSearchReference(title=hit.title, url=hit.url, chunk=_snippet(hit.snippet))
        for hit in hits[:WEB_SEARCH_MAX_RESULTS]
    ]


def results_text(search_term: str, refs: list[agent.WebSearchReference]) -> str:
    """The numbered list the model reads: title, URL and snippet of each result."""
    if not refs:
        return f"The web search for {search_term!r} found nothing."
    lines = [f"Web search results for {search_term!r}:"]
    for number, ref in enumerate(refs, start=1):
        lines.append("")
        lines.append(f"{number}. {ref.title or '(untitled)'}")
        lines.append(f"   {ref.url}")
        if ref.chunk:
            lines.append(f"   {ref.chunk}")
    return "\n".join(lines)


class WebSearchExecution(InteractionExecution):
    """An approval query, then the server's search."""

    query_field = "web_search_request_query"

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(WEB_SEARCH, call_id)
        term = args.required_string("search_term").strip()
        if not term:
            raise ToolArgumentError("'search_term' must not be empty")
        self.search_term = term

    def _args(self) -> agent.WebSearchArgs:
        return agent.WebSearchArgs(search_term=self.search_term, tool_call_id=self.call_id)

    def _outcome(self, text: str, is_error: bool, result: agent.WebSearchResult) -> ToolOutcome:
        card = agent.WebSearchToolCall(args=self._args(), result=result)
        return ToolOutcome(text, is_error, agent.ToolCall(web_search_tool_call=card))

    def _failed(self, error: str) -> ToolOutcome:
        result = agent.WebSearchResult(error=agent.WebSearchError(error=error))
        return self._outcome(f"The web search failed: {error}", True, result)

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(web_search_tool_call=agent.WebSearchToolCall(args=self._args()))

    def _query(self) -> Any:
        return agent.WebSearchRequestQuery(args=self._args())

    def _on_answer(self, answer: Any) -> ExecStep:
        match answer.WhichOneof("result"):
            case "approved":
                return ServerWork(WebSearchRequest(self.search_term))
            case "rejected":
                reason = answer.rejected.reason
                text = "the user did not allow this web search" + (f": {reason}" if reason else "")
                rejected = agent.WebSearchRejected(reason=reason)
                return self._outcome(text, True, agent.WebSearchResult(rejected=rejected))
            case _:
                return WrongResult("WebSearchRequestResponse with no result")

    def answered(self, answer: Any) -> ExecStep:
        match answer:
            case SearchHits(hits=hits):
                refs = references(hits)
                success = agent.WebSearchSuccess(references=refs)
                text = results_text(self.search_term, refs)
                return self._outcome(text, False, agent.WebSearchResult(success=success))
            case ServerWorkFailed(error=error):
                return self._failed(error)
            case _:
                raise TypeError(f"WebSearch got {type(answer).__name__} for its search")


# The registry row (``wire.tools.registry.REGISTRY``).
WEB_SEARCH = ToolDefinition(
    name="WebSearch",
    channel=ToolChannel.INTERACTION,
    tool_call_field="web_search_tool_call",
    execution=WebSearchExecution,
    error_path="result.error",
    error_fields=("error",),
)
