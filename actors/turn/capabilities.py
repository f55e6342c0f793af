"""Which tools a run offers: the mode's list, less the tools this server cannot carry out.

A tool that needs something of the server besides the editor (WebSearch needs a search
backend set in the console, GenerateImage an image model marked there) is left out of the
tools sent to the model when the server lacks it, rather than offered and then failing every
call. The run decides once, at its start; the checkpoint's allowed tools follow the same list.

The request's MCP tools (dynamic MCP tools, ``wire.tools.dynamic_mcp``) come after the mode's
tools, sorted by their offered name, so a later request of the same conversation with the same
set still starts with the same tools; a mode offers them when it lets the model call MCP tools
(CallMcpTool is in its list: every mode but Ask, which stays read-only).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import msgspec

from actors.conversation.request import ToolSpec
from prompt.assets import ModeAssets
from wire.log import log_event
from wire.tools.call_mcp_tool import CALL_MCP_TOOL
from wire.tools.dynamic_mcp import description_of, offered, parameters_of
from wire.tools.mcp_catalog import McpCatalog
from wire.tools.mcp_names import DynamicMcpTools

logger = logging.getLogger("cursor_server.run")


class ServerCapabilities(msgspec.Struct, frozen=True):
    """What the server can do for tools, read when a run starts."""

    web_search: bool = False  # a web search backend is configured
    image_generation: bool = False  # an image model is marked


# The tools only some servers can carry out: tool name -> whether these capabilities can.
_NEEDS: dict[str, Callable[[ServerCapabilities], bool]] = {
    "WebSearch": lambda capabilities: capabilities.web_search,
    "GenerateImage": lambda capabilities: capabilities.image_generation,
}


def offered_tools(mode: ModeAssets, capabilities: ServerCapabilities) -> ModeAssets:
    """``mode`` with only the tools the server can carry out, in the manifest's order."""
    tools = tuple(
        tool for tool in mode.tools if (need := _NEEDS.get(tool.name)) is None or need(capabilities)
    )
    if len(tools) == len(mode.tools):
        return mode
    return msgspec.structs.replace(mode, tools=tools)


def offered_dynamic_tools(tool_names: tuple[str, ...], catalog: McpCatalog) -> DynamicMcpTools:
    """The request's MCP tools offered as tools of their own in a mode offering ``tool_names``:
    none without CallMcpTool. A definition whose schema is not an object schema is left out,
    and the log says so (the provider would refuse the whole request for it)."""
    if CALL_MCP_TOOL.name not in tool_names:
        return DynamicMcpTools()
    tools = offered(catalog)
    for tool in tools.left_out:
        log_event(
            logger,
            logging.WARNING,
            "dynamic MCP tool left out: its input schema is not an object schema",
            server=tool.server,
            tool=tool.tool_name,
        )
    return tools.tools


def with_dynamic_tools(mode: ModeAssets, dynamic: DynamicMcpTools) -> ModeAssets:
    """``mode`` with ``dynamic``'s tools after its own, in ``dynamic``'s order (by name)."""
    if not dynamic.tools:
        return mode
    specs: list[ToolSpec] = []
    for entry in dynamic.tools:
        parameters = parameters_of(entry.tool)
        if parameters is None:  # ``offered`` never keeps one
            raise ValueError(f"dynamic MCP tool {entry.name} has no object schema")
        specs.append(ToolSpec(entry.name, description_of(entry.tool), parameters))
    return msgspec.structs.replace(mode, tools=(*mode.tools, *specs))
