"""The MCP tools' state machines without IO: the catalog's updates, GetMcpTools' filters and
bound, CallMcpTool's request from the known definition, every terminal ``McpResult`` as the
model's text, ``approved`` as not terminal, and FetchMcpResource's contents."""

from __future__ import annotations

import json
from typing import Any

import pytest

from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import (
    ExecContext,
    InvalidCall,
    ModeTools,
    SendExec,
    ToolExecution,
    ToolOutcome,
    Waiting,
)
from wire.tools.dispatch import prepare_tool_call
from wire.tools.get_mcp_tools import tools_text
from wire.tools.mcp_catalog import McpCatalog, McpTool, McpToolsUpdate

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


def tool(server: str, name: str) -> McpTool:
    return McpTool(server, name, f"full-{server}-{name}", f"prov-{server}")


EMPTY = ExecContext()


def prep(name: str, context: ExecContext = EMPTY, **args: Any) -> ToolExecution:
    return prepare_tool_call(name, "call-1", json.dumps(args), context)


def finished(step: object) -> ToolOutcome:
    """The call's outcome: the step must end the call."""
    assert isinstance(step, ToolOutcome), step
    return step


def state(*servers: agent.McpStateServer) -> agent.ExecClientMessage:
    success = agent.McpStateSuccess(servers=servers)
    return agent.ExecClientMessage(
        id=1, mcp_state_exec_result=agent.McpStateExecResult(success=success)
    )


def server(identifier: str, *names: str, **extra: Any) -> agent.McpStateServer:
    definitions = [
        agent.McpToolDefinition(name=f"n-{n}", provider_identifier="p", tool_name=n) for n in names
    ]
    return agent.McpStateServer(server_identifier=identifier, tools=definitions, **extra)


def test_a_named_server_replaces_its_entries_and_no_server_replaces_all() -> None:
    catalog = McpCatalog((tool("a", "x"), tool("b", "y")))
    one = catalog.updated(McpToolsUpdate("a", (tool("a", "z"),)))
    assert [(t.server, t.tool_name) for t in one.tools] == [("b", "y"), ("a", "z")]
    everything = one.updated(McpToolsUpdate(None, (tool("c", "w"),)))
    assert [(t.server, t.tool_name) for t in everything.tools] == [("c", "w")]


def test_get_mcp_tools_asks_the_editor_and_filters_by_server_tool_and_pattern() -> None:
    execution = prep("GetMcpTools", server="a", toolName="read")
    step = execution.begin()
    assert isinstance(step, SendExec)
    assert list(step.message.mcp_state_exec_args.server_identifiers) == ["a"]
    outcome = execution.feed(state(server("a", "read", "write")))
    assert isinstance(outcome, ToolOutcome) and not outcome.is_error
    assert [t["toolName"] for t in json.loads(outcome.content)] == ["read"]
    # The cache learns every tool of the server, not only the ones shown.
    assert outcome.mcp_update is not None
    assert [t.tool_name for t in outcome.mcp_update.tools] == ["read", "write"]
    by_pattern = prep("GetMcpTools", pattern="^wr")
    by_pattern.begin()
    listed = finished(by_pattern.feed(state(server("a", "read", "write"), server("b", "x"))))
    assert [t["toolName"] for t in json.loads(listed.content)] == ["write"]


def test_get_mcp_tools_argument_mistakes_are_the_models() -> None:
    assert isinstance(prep("GetMcpTools", toolName="x"), InvalidCall)
    assert isinstance(prep("GetMcpTools", pattern="("), InvalidCall)


def test_a_server_in_error_is_an_error_when_asked_for_and_a_note_otherwise() -> None:
    broken = server("b", "x", status="needs_auth", error_message="sign in first")
    asked = prep("GetMcpTools", server="b")
    asked.begin()
    outcome = finished(asked.feed(state(broken)))
    assert outcome.is_error and "sign in first" in outcome.content
    assert outcome.mcp_update is not None and outcome.mcp_update.tools == ()
    every = prep("GetMcpTools")
    every.begin()
    listed = finished(every.feed(state(server("a", "r"), broken)))
    assert not listed.is_error and "MCP server b is not available" in listed.content


def test_the_listing_is_cut_at_whole_entries_and_says_how_many_are_left() -> None:
    text = tools_text([tool("s", f"t{i}") for i in range(50)], limit=400)
    assert len(text.split("\n[")[0]) <= 400
    head = text[: text.index("]\n") + 1]
    shown = len(json.loads(head))
    assert f"{50 - shown} more tools not listed" in text


def test_call_mcp_tool_sends_the_known_definition_and_waits_after_approval() -> None:
    context = ExecContext(mcp=McpCatalog((tool("s", "t"),)))
    execution = prep("CallMcpTool", context, server="s", toolName="t", arguments={"n": 2})
    step = execution.begin()
    assert isinstance(step, SendExec)
    args = step.message.mcp_args
    assert (args.name, args.provider_identifier, args.tool_name) == ("full-s-t", "prov-s", "t")
    assert args.server_identifier == "s" and args.args["n"].number_value == 2
    approved = agent.McpResult(approved=agent.McpApproved())
    assert isinstance(execution.feed(agent.ExecClientMessage(mcp_result=approved)), Waiting)
    image = agent.McpToolResultContentItem(
        image=agent.McpImageContent(data=PNG, mime_type="image/png")
    )
    success = agent.McpResult(success=agent.McpSuccess(content=[image], is_error=False))
    outcome = execution.feed(agent.ExecClientMessage(mcp_result=success))
    assert isinstance(outcome, ToolOutcome) and outcome.images[0].data == PNG


DENIED = agent.McpPermissionDenied(error="ro")
NO_TOOL = agent.McpToolNotFound(name="t", available_tools=["u"])
NO_SERVER = agent.McpServerNotFound(name="s", available_servers=["v"])


@pytest.mark.parametrize(
    ("result", "words"),
    [
        (agent.McpResult(error=agent.McpError(error="boom")), "boom"),
        (agent.McpResult(rejected=agent.McpRejected(reason="no")), "rejected the call of t: no"),
        (agent.McpResult(permission_denied=DENIED), "permission denied"),
        (agent.McpResult(tool_not_found=NO_TOOL), "its tools: u"),
        (agent.McpResult(server_not_found=NO_SERVER), "servers: v"),
    ],
)
def test_every_terminal_failure_is_a_clear_error_result(
    result: agent.McpResult, words: str
) -> None:
    context = ExecContext(mcp=McpCatalog((tool("s", "t"),)))
    execution = prep("CallMcpTool", context, server="s", toolName="t")
    execution.begin()
    outcome = finished(execution.feed(agent.ExecClientMessage(mcp_result=result)))
    assert outcome.is_error and words in outcome.content


def test_an_unknown_tool_points_at_get_mcp_tools_only_where_the_mode_has_it() -> None:
    agent_mode = ExecContext(mode=ModeTools("Agent", ("GetMcpTools", "CallMcpTool")))
    outcome = prep("CallMcpTool", agent_mode, server="s", toolName="t").begin()
    assert isinstance(outcome, ToolOutcome) and outcome.is_error
    assert "Call GetMcpTools" in outcome.content
    plan_mode = ExecContext(mode=ModeTools("Plan", ("CallMcpTool",)))
    outcome = finished(prep("CallMcpTool", plan_mode, server="s", toolName="t").begin())
    assert "GetMcpTools" not in outcome.content


def test_a_resource_is_text_an_image_or_described() -> None:
    def read(success: agent.ReadMcpResourceSuccess) -> ToolOutcome:
        execution = prep("FetchMcpResource", server="s", uri="u://1")
        assert isinstance(execution.begin(), SendExec)
        result = agent.ReadMcpResourceExecResult(success=success)
        return finished(
            execution.feed(agent.ExecClientMessage(read_mcp_resource_exec_result=result))
        )

    assert read(agent.ReadMcpResourceSuccess(uri="u://1", text="hi")).content == "hi"
    shown = read(agent.ReadMcpResourceSuccess(uri="u://1", blob=PNG))
    assert shown.images[0].mime_type == "image/png"
    other = read(agent.ReadMcpResourceSuccess(uri="u://1", blob=b"\x00\x01", mime_type="x/y"))
    assert "binary content (x/y, 2 bytes)" in other.content and other.images == ()
