"""GetMcpTools: ask the editor for its MCP servers' live tools (``mcp_state_exec_args``).

The answer is always the editor's live state, never the request's snapshot. It fills the run's
catalog (``wire.tools.mcp_catalog``: with ``server``, that server's entries are replaced;
without, all of them), then is filtered by ``server``, ``toolName`` and ``pattern`` (a regular
expression searched in the server identifier or the tool name, compiled with the ``regex``
package and bounded by ``PATTERN_TIMEOUT_S``, as AwaitShell's is) and shown to the model as a
JSON list of ``{server, toolName, description, inputSchema}``, at most
``MAX_TOOLS_TEXT_CHARS`` of it (the tools that do not fit are counted in a note). A server the
editor reports in error or waiting for authentication is named with its status; when it is the
server asked for, the call is an error result.
"""

from __future__ import annotations

import json

import regex

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    SendExec,
    ToolChannel,
    ToolDefinition,
    ToolExecution,
    ToolOutcome,
    WrongResult,
    new_exec,
)
from wire.tools.mcp_catalog import McpTool, McpToolsUpdate, mcp_tool
from wire.tools.text import plural

MAX_TOOLS_TEXT_CHARS = 60_000
PATTERN_TIMEOUT_S = 0.05
# Words in a server's status that mean its tools cannot be called now.
_UNAVAILABLE_WORDS = ("error", "fail", "auth", "disconnect")


def server_problem(server: agent.McpStateServer) -> str | None:
    """Why a server's tools cannot be used now (its error, or a status saying it needs
    authentication or failed), or None when it is usable."""
    status = server.status if server.HasField("status") else ""
    message = server.error_message if server.HasField("error_message") else ""
    if not message and not any(word in status.lower() for word in _UNAVAILABLE_WORDS):
        return None
    name = server.server_identifier or server.server_name
    detail = "; ".join(part for part in (status and f"status {status}", message) if part)
    return f"MCP server {name} is not available ({detail})"


def _pattern(args: ToolArgs) -> regex.Pattern[str] | None:
    text = args.string("pattern")
    if not text:
        return None
    try:
        return regex.compile(text)
    except regex.error as exc:
        raise ToolArgumentError(f"'pattern' is not a valid regular expression ({exc})") from exc


def tools_text(tools: list[McpTool], limit: int = MAX_TOOLS_TEXT_CHARS) -> str:
    """The JSON list the model reads, cut to whole entries within ``limit`` characters."""
    entries: list[str] = []
    used = 2
    for tool in tools:
        entry = json.dumps(
            {
                "server": tool.server,
                "toolName": tool.tool_name,
                "description": tool.description,
                "inputSchema": tool.input_schema,
            },
            ensure_ascii=False,
        )
        if used + len(entry) + 2 > limit:
            break
        entries.append(entry)
        used += len(entry) + 2
    text = "[" + ",\n ".join(entries) + "]"
    left = len(tools) - len(entries)
    if left:
        text += (
            f"\n[{plural(left, 'more tool')} not listed: the list is cut at {limit} "
            "characters; narrow it with server, toolName or pattern]"
        )
    return text


class GetMcpToolsExecution(ToolExecution):
    """One live look at the editor's MCP servers."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(GET_MCP_TOOLS, call_id)
        self.server = args.string("server") or None
        self.tool_name = args.string("toolName") or None
        self.pattern = _pattern(args)
        if self.tool_name is not None and self.server is None:
            raise ToolArgumentError("'toolName' needs 'server': tool names are per server")

    def _args(self) -> agent.GetMcpToolsArgs:
        return agent.GetMcpToolsArgs(
            server=self.server,
            tool_name=self.tool_name,
            pattern=self.pattern.pattern if self.pattern is not None else None,
            tool_call_id=self.call_id,
        )

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(get_mcp_tools_tool_call=agent.GetMcpToolsToolCall(args=self._args()))

    def begin(self) -> SendExec:
        state = agent.McpStateExecArgs(server_identifiers=[self.server] if self.server else [])
        # The MCP state is not the tool's answer to a hook: no hook context belongs on it.
        return SendExec(
            new_exec(self.call_id, accept_hook_additional_contexts=False, mcp_state_exec_args=state)
        )

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant != "mcp_state_exec_result":
            return WrongResult(variant)
        result = message.mcp_state_exec_result
        match result.WhichOneof("result"):
            case "success":
                return self._listed(list(result.success.servers))
            case "error":
                return self._error(result.error.error or "the editor could not list MCP tools")
            case "rejected":
                reason = result.rejected.reason
                return self._error(
                    "listing MCP tools was rejected" + (f": {reason}" if reason else "")
                )
            case _:
                return self._error("the editor returned no MCP state")

    def _listed(self, servers: list[agent.McpStateServer]) -> ToolOutcome:
        if self.server is not None:
            servers = [s for s in servers if s.server_identifier == self.server]
        learnt: list[McpTool] = []
        problems: list[str] = []
        for server in servers:
            problem = server_problem(server)
            if problem is not None:
                problems.append(problem)
                continue
            for definition in server.tools:
                tool = mcp_tool(server.server_identifier, definition)
                if tool is not None:
                    learnt.append(tool)
        update = McpToolsUpdate(self.server, tuple(learnt))
        if self.server is not None and not servers:
            return self._error(f"there is no MCP server {self.server}", update)
        if self.server is not None and problems:
            return self._error(problems[0], update)
        try:
            shown = [tool for tool in learnt if self._wanted(tool)]
        except TimeoutError:
            return self._error(
                f"the pattern took over {int(PATTERN_TIMEOUT_S * 1000)} ms to match, so the "
                "listing stopped; use a simpler pattern (a word of the tool's name)",
                update,
            )
        text = tools_text(shown)
        if problems:
            text += "\n" + "\n".join(problems)
        card = agent.GetMcpToolsAgentResult(success=agent.GetMcpToolsSuccess(content=text))
        return ToolOutcome(text, False, self._card(card), mcp_update=update)

    def _wanted(self, tool: McpTool) -> bool:
        if self.tool_name is not None and tool.tool_name != self.tool_name:
            return False
        if self.pattern is None:
            return True
        return any(
            self.pattern.search(text, timeout=PATTERN_TIMEOUT_S) is not None
            for text in (tool.server, tool.tool_name)
        )

    def _card(self, result: agent.GetMcpToolsAgentResult) -> agent.ToolCall:
        call = agent.GetMcpToolsToolCall(args=self._args(), result=result)
        return agent.ToolCall(get_mcp_tools_tool_call=call)

    def _error(self, text: str, update: McpToolsUpdate | None = None) -> ToolOutcome:
        result = agent.GetMcpToolsAgentResult(error=agent.GetMcpToolsError(error=text))
        return ToolOutcome(text, True, self._card(result), mcp_update=update)


# The registry row (``wire.tools.registry.REGISTRY``).
GET_MCP_TOOLS = ToolDefinition(
    name="GetMcpTools",
    channel=ToolChannel.EXEC,
    tool_call_field="get_mcp_tools_tool_call",
    execution=GetMcpToolsExecution,
    error_path="result.error",
    error_fields=("error",),
)
