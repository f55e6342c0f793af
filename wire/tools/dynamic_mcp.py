"""Dynamic MCP tools: the MCP tools the request defines, offered to the model as tools of their
own (``AgentRunRequest.mcp_tools`` and ``RequestContext.tools``, read once by
``wire.tools.mcp_catalog.request_catalog``).

Each is offered under a name every provider takes (``wire.tools.mcp_names``), with its own
description and input schema; a call of that exact name is one ``mcp_args`` exec with the
model's whole argument object, run by CallMcpTool's execution (``McpCallExecution``, the one
path for ``mcp_args``), its card the ``mcp_tool_call`` card. As the reference does, the exec
leaves ``accept_hook_additional_contexts`` unset for these calls.

A definition whose input schema is not a JSON object schema is not offered (it would make the
provider refuse the whole request); ``offered`` says which were left out.
"""

from __future__ import annotations

from typing import Any

import msgspec

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs
from wire.tools.base import ToolChannel, ToolDefinition, ToolExecution
from wire.tools.call_mcp_tool import McpCallExecution
from wire.tools.mcp_catalog import McpCatalog, McpTool
from wire.tools.mcp_names import DynamicMcpTools, dynamic_tools
from wire.tools.registry import REGISTRY


class OfferedMcpTools(msgspec.Struct, frozen=True):
    """The dynamic tools a run offers, and the definitions left out (unusable schemas)."""

    tools: DynamicMcpTools
    left_out: tuple[McpTool, ...] = ()


def parameters_of(tool: McpTool) -> dict[str, Any] | None:
    """The JSON schema the model is given for ``tool``'s arguments: its input schema (an
    object schema; ``type`` added when absent, as MCP implies it), an empty object schema when
    it has none, None when it is not an object schema."""
    schema = tool.input_schema
    if schema is None or schema == {}:
        return {"type": "object", "properties": {}}
    if not isinstance(schema, dict):
        return None
    if "type" not in schema:
        return {"type": "object", **schema}
    return schema if schema["type"] == "object" else None


def description_of(tool: McpTool) -> str:
    """The description the model reads: the server's own, then where the tool comes from (the
    offered name may be shortened, so the exact names are said here)."""
    origin = f"MCP tool {tool.tool_name!r} of server {tool.server!r}."
    return f"{tool.description.strip()}\n\n{origin}" if tool.description.strip() else origin


def offered(catalog: McpCatalog) -> OfferedMcpTools:
    """The request's MCP definitions as dynamic tools, named against every built-in tool."""
    usable = tuple(tool for tool in catalog.tools if parameters_of(tool) is not None)
    left_out = tuple(tool for tool in catalog.tools if parameters_of(tool) is None)
    return OfferedMcpTools(dynamic_tools(usable, REGISTRY), left_out)


def definition_of(name: str, tool: McpTool) -> ToolDefinition:
    """The registry-shaped row of the dynamic tool offered as ``name``."""

    def execution(call_id: str, args: ToolArgs, _context: object) -> ToolExecution:
        return dynamic_execution(definition, call_id, tool, args.raw)

    definition = ToolDefinition(
        name=name,
        channel=ToolChannel.EXEC,
        tool_call_field="mcp_tool_call",
        execution=execution,
        error_path="result.error",
        error_fields=("error",),
    )
    return definition


def dynamic_execution(
    definition: ToolDefinition, call_id: str, tool: McpTool, arguments: dict[str, Any]
) -> McpCallExecution:
    """The call of ``tool`` with the model's whole argument object."""
    return McpCallExecution(
        definition,
        call_id,
        (tool.server, tool.tool_name),
        tool,
        arguments,
        accept_hook_additional_contexts=None,
    )


def placeholder_card(name: str, tool: McpTool, call_id: str) -> agent.ToolCall:
    """The card shown while the model streams the call's arguments (no arguments yet)."""
    card = dynamic_execution(definition_of(name, tool), call_id, tool, {}).started()
    card.tool_call_id = call_id
    return card
