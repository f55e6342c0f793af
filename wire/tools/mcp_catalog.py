"""The MCP tool definitions a run knows, keyed by (server identifier, tool name).

``McpCatalog`` is an immutable value held in the run's ``ExecContext``. A run starts with the
definitions its request carries (``AgentRunRequest.mcp_tools`` and ``RequestContext.tools``,
full ``McpToolDefinition``s, keyed by their ``provider_identifier``), which is all a mode
without GetMcpTools (Plan, Debug, Multitask) ever has. A successful GetMcpTools asks the
editor for the live state and its outcome carries an ``McpToolsUpdate``: with a server named,
that server's entries are replaced; without, the whole catalog is. The ToolRuntimeActor, which
owns the run's context, applies the update, so a later call in the run sees it.

The request's ``mcp_meta_tool_options`` descriptors name servers and tool names but not the
full definition name the editor's ``McpArgs.name`` needs, so they never make a tool callable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
from google.protobuf import json_format, struct_pb2

from wire.json_input import decode_json
from wire.proto import agent_v1_pb2 as agent


class McpTool(msgspec.Struct, frozen=True):
    """One tool of one MCP server, as the editor described it."""

    server: str  # the server identifier the model names
    tool_name: str
    name: str  # the editor's full name of the tool (``McpArgs.name``)
    provider_identifier: str
    description: str = ""
    input_schema: Any = None  # a JSON value, or the schema text when it is not JSON


class McpToolsUpdate(msgspec.Struct, frozen=True):
    """What one successful GetMcpTools learnt: ``server``'s tools, or every server's (None)."""

    server: str | None
    tools: tuple[McpTool, ...]


class McpCatalog(msgspec.Struct, frozen=True):
    """The definitions a run can call, in the order they were learnt."""

    tools: tuple[McpTool, ...] = ()

    def find(self, server: str, tool_name: str) -> McpTool | None:
        for tool in self.tools:
            if tool.server == server and tool.tool_name == tool_name:
                return tool
        return None

    def servers(self) -> list[str]:
        """The server identifiers with a known tool, in first-seen order."""
        return list(dict.fromkeys(tool.server for tool in self.tools))

    def tool_names(self, server: str) -> list[str]:
        return [tool.tool_name for tool in self.tools if tool.server == server]

    def updated(self, update: McpToolsUpdate) -> McpCatalog:
        """This catalog with ``update`` applied (one server's entries, or all, replaced)."""
        if update.server is None:
            return McpCatalog(_unique(update.tools))
        kept = tuple(tool for tool in self.tools if tool.server != update.server)
        return McpCatalog(_unique(kept + update.tools))


def _unique(tools: Iterable[McpTool]) -> tuple[McpTool, ...]:
    """One entry per (server, tool name), the last one given winning."""
    by_key: dict[tuple[str, str], McpTool] = {}
    for tool in tools:
        by_key.pop((tool.server, tool.tool_name), None)
        by_key[(tool.server, tool.tool_name)] = tool
    return tuple(by_key.values())


def schema_of(definition: agent.McpToolDefinition) -> Any:
    """A definition's input schema as JSON: ``input_schema_json`` parsed (kept as text when it
    is not JSON), else the ``input_schema`` value, else an empty object."""
    if definition.HasField("input_schema_json") and definition.input_schema_json.strip():
        try:
            return decode_json(definition.input_schema_json)
        except ValueError:
            return definition.input_schema_json
    if definition.HasField("input_schema"):
        return json_format.MessageToDict(definition.input_schema)
    return {}


def mcp_tool(server: str, definition: agent.McpToolDefinition) -> McpTool | None:
    """The catalog entry of a definition under ``server``; None when it names no tool."""
    tool_name = definition.tool_name or definition.name
    if not server or not tool_name:
        return None
    return McpTool(
        server=server,
        tool_name=tool_name,
        name=definition.name or tool_name,
        provider_identifier=definition.provider_identifier or server,
        description=definition.description,
        input_schema=schema_of(definition),
    )


def request_catalog(
    request: agent.AgentRunRequest, context: agent.RequestContext | None
) -> McpCatalog:
    """The definitions a run's request carries: ``mcp_tools``, then the context's ``tools``."""
    definitions = list(request.mcp_tools.mcp_tools)
    if context is not None:
        definitions += list(context.tools)
    tools = (mcp_tool(definition.provider_identifier, definition) for definition in definitions)
    return McpCatalog(_unique(tool for tool in tools if tool is not None))


def to_value(value: Any) -> struct_pb2.Value:
    """A JSON value as a ``google.protobuf.Value`` (numbers become doubles)."""
    return json_format.ParseDict(value, struct_pb2.Value())
