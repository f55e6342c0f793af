"""WebFetch: the user approves the fetch of a URL, then the editor fetches it.

Two phases under two wire ids: an interaction query (``web_fetch_request_query``) the user
approves or rejects, then, once approved, an Exec ``fetch_args`` request under a fresh id that
the editor answers with ``fetch_result``. The approval is never a result: it only leads to the
fetch. The model reads the page text, cut at ``WEB_FETCH_MAX_CHARS`` with a note saying where;
a rejection or a failed fetch is an error it reads.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    InteractionExecution,
    SendExec,
    ToolChannel,
    ToolDefinition,
    ToolOutcome,
    WrongResult,
    new_exec,
)
from wire.tools.text import join_note

# The most page text the model reads from one fetch; the rest is cut, and the text says so.
WEB_FETCH_MAX_CHARS = 100_000


def checked_url(raw: str) -> str:
    """The URL the model asked for, if it is an absolute http(s) URL with a host."""
    url = raw.strip()
    if not url:
        raise ToolArgumentError("'url' must not be empty")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise ToolArgumentError(f"'url' is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ToolArgumentError("'url' must be an http:// or https:// URL")
    if not host:
        raise ToolArgumentError("'url' has no host name")
    if any(char.isspace() for char in url):
        raise ToolArgumentError("'url' must not contain spaces (percent-encode them)")
    return url


def bounded_page(content: str, limit: int = WEB_FETCH_MAX_CHARS) -> str:
    """The page text as the model reads it: at most ``limit`` characters, then a note."""
    if len(content) <= limit:
        return content
    note = (
        f"[the page was cut here: only its first {limit:,} of {len(content):,} characters "
        "are shown]"
    )
    return join_note(content[:limit], note)


def page_text(url: str, success: agent.FetchSuccess) -> tuple[str, bool]:
    """What the model reads of a fetched page, and whether it is an error (HTTP 4xx/5xx)."""
    status = success.status_code
    failed = status >= 400
    content = bounded_page(success.content)
    if not content:
        kind = f", {success.content_type}" if success.content_type else ""
        return f"the page at {url} is empty (HTTP {status}{kind})", failed
    if failed:
        return join_note(f"{url} answered HTTP {status}:", content), True
    return content, False


class WebFetchExecution(InteractionExecution):
    """An approval query, then the editor's fetch under a new wire id."""

    query_field = "web_fetch_request_query"

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(WEB_FETCH, call_id)
        self.url = checked_url(args.required_string("url"))

    def _args(self) -> agent.WebFetchArgs:
        return agent.WebFetchArgs(url=self.url, tool_call_id=self.call_id)

    def _card(self, result: agent.WebFetchResult) -> agent.ToolCall:
        return agent.ToolCall(
            web_fetch_tool_call=agent.WebFetchToolCall(args=self._args(), result=result)
        )

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(web_fetch_tool_call=agent.WebFetchToolCall(args=self._args()))

    def _query(self) -> Any:
        return agent.WebFetchRequestQuery(args=self._args())

    def _on_answer(self, answer: Any) -> ExecStep:
        match answer.WhichOneof("result"):
            case "approved":
                fetch = agent.FetchArgs(url=self.url, tool_call_id=self.call_id)
                return SendExec(
                    new_exec(self.call_id, accept_hook_additional_contexts=True, fetch_args=fetch)
                )
            case "rejected":
                reason = answer.rejected.reason
                text = f"the user did not allow fetching {self.url}" + (
                    f": {reason}" if reason else ""
                )
                rejected = agent.WebFetchRejected(reason=reason)
                return ToolOutcome(text, True, self._card(agent.WebFetchResult(rejected=rejected)))
            case _:
                return WrongResult("WebFetchRequestResponse with no result")

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant != "fetch_result":
            return WrongResult(variant)
        result = message.fetch_result
        match result.WhichOneof("result"):
            case "success":
                text, is_error = page_text(self.url, result.success)
                page = bounded_page(result.success.content)
                success = agent.WebFetchSuccess(url=result.success.url or self.url, markdown=page)
                card = agent.WebFetchResult(success=success)
            case "error":
                error = result.error.error or "the editor could not fetch the page"
                text, is_error = f"fetching {self.url} failed: {error}", True
                card = agent.WebFetchResult(error=agent.WebFetchError(url=self.url, error=error))
            case _:
                text, is_error = f"the editor returned no fetch result for {self.url}", True
                card = agent.WebFetchResult(error=agent.WebFetchError(url=self.url, error=text))
        return ToolOutcome(text, is_error, self._card(card))


# The registry row (``wire.tools.registry.REGISTRY``).
WEB_FETCH = ToolDefinition(
    name="WebFetch",
    channel=ToolChannel.INTERACTION,
    tool_call_field="web_fetch_tool_call",
    execution=WebFetchExecution,
    error_path="result.error",
    error_fields=("error",),
)
