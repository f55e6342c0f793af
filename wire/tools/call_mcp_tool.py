"""CallMcpTool: call one tool of one of the editor's MCP servers (``mcp_args``).

The call names a server and a tool; the run's catalog (``ExecContext.mcp``) must hold its
definition, whose full name and provider identifier the editor needs. A tool the run does not
know is the model's mistake: an error result telling it where to find the tools (GetMcpTools
when its mode offers it, else the tools the request named), and nothing is sent.

``McpResult.approved`` is the user's approval, not the result: the call waits for the next
message. Every other result is terminal and gives the model a text (``mcp_result_text``); the
images of a success reach a vision model as image parts beside it (PNG, JPEG, GIF or WebP of at
most ``MAX_READ_IMAGE_BYTES``, as Read's), other images are described in words.
"""

from __future__ import annotations

import contextlib
import json

from google.protobuf import json_format

from wire.json_input import decode_json
from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    FirstStep,
    SendExec,
    ToolChannel,
    ToolDefinition,
    ToolExecution,
    ToolImage,
    ToolOutcome,
    Waiting,
    WrongResult,
    new_exec,
)
from wire.tools.mcp_catalog import McpCatalog, McpTool, to_value
from wire.tools.read import MAX_READ_IMAGE_BYTES
from wire.tools.text import plural

SUPPORTED_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def unknown_mcp_tool_text(
    server: str, tool_name: str, catalog: McpCatalog, context: ExecContext
) -> str:
    """What the model reads after calling an MCP tool the run has no definition of."""
    text = f"Error: no MCP tool {tool_name!r} of server {server!r} is known in this run."
    known = catalog.tool_names(server)
    if known:
        text += f" Server {server} has: {', '.join(known)}."
    elif catalog.servers():
        text += f" Known servers: {', '.join(catalog.servers())}."
    if context.mode is None or "GetMcpTools" in context.mode.tools:
        hint = f'server="{server}"' if server else "no arguments"
        text += f" Call GetMcpTools ({hint}) to list the tools, then call one it lists."
    else:
        text += " Call only the MCP tools listed in your context, with their exact names."
    return text


def image_of(image: agent.McpImageContent) -> ToolImage | None:
    """An image content item the model can be shown, or None."""
    mime_type = image.mime_type.lower()
    if mime_type not in SUPPORTED_IMAGE_TYPES or len(image.data) > MAX_READ_IMAGE_BYTES:
        return None
    return ToolImage(mime_type, image.data)


def success_text(success: agent.McpSuccess) -> tuple[str, tuple[ToolImage, ...]]:
    """The text and images a successful MCP call shows the model."""
    parts: list[str] = []
    images: list[ToolImage] = []
    for item in success.content:
        match item.WhichOneof("content"):
            case "text":
                if item.text.text:
                    parts.append(item.text.text)
                if item.text.HasField("output_location"):
                    where = item.text.output_location
                    parts.append(
                        f"[output written to {where.file_path}: "
                        f"{plural(where.size_bytes, 'byte')}, {plural(where.line_count, 'line')}]"
                    )
            case "image":
                image = image_of(item.image)
                size = plural(len(item.image.data), "byte")
                if image is not None:
                    images.append(image)
                    parts.append(f"[image {image.mime_type}, {size}: attached to this result]")
                else:
                    parts.append(
                        f"[image {item.image.mime_type or 'of unknown type'}, {size}: "
                        "not shown (an unsupported type, or larger than "
                        f"{plural(MAX_READ_IMAGE_BYTES, 'byte')})]"
                    )
    if success.HasField("structured_content"):
        structured = json_format.MessageToDict(success.structured_content)
        parts.append(json.dumps(structured, indent=2, ensure_ascii=False))
    return "\n\n".join(parts) or "The MCP tool finished without output.", tuple(images)


def mcp_failure_text(result: agent.McpResult, server: str, tool_name: str) -> str:
    """The text of a terminal result that is not a success."""
    match result.WhichOneof("result"):
        case "error":
            return result.error.error or f"MCP tool {tool_name} failed"
        case "rejected":
            reason = result.rejected.reason
            return f"the user rejected the call of {tool_name}" + (f": {reason}" if reason else "")
        case "permission_denied":
            error = result.permission_denied.error
            return f"permission denied for {tool_name}" + (f": {error}" if error else "")
        case "tool_not_found":
            no_tool = result.tool_not_found
            text = f"MCP server {server} has no tool {no_tool.name or tool_name}"
            if no_tool.available_tools:
                text += f"; its tools: {', '.join(no_tool.available_tools)}"
            return text
        case "server_not_found":
            no_server = result.server_not_found
            text = f"there is no MCP server {no_server.name or server}"
            if no_server.available_servers:
                text += f"; servers: {', '.join(no_server.available_servers)}"
            return text
        case _:
            return f"the editor returned no result for MCP tool {tool_name}"


class McpCallExecution(ToolExecution):
    """One call of a known MCP tool: ``mcp_args``, then its ``mcp_result``."""

    def __init__(
        self,
        definition: ToolDefinition,
        call_id: str,
        target: tuple[str, str],
        tool: McpTool | None,
        arguments: dict[str, object],
        *,
        accept_hook_additional_contexts: bool | None,
        missing: str = "",
    ) -> None:
        super().__init__(definition, call_id)
        self.server, self.tool_name = target  # what the model named
        self.mcp = tool
        self.arguments = arguments
        self.accept_hook = accept_hook_additional_contexts
        self.missing = missing  # the error text when ``tool`` is None

    def _mcp_args(self, *, ui: bool) -> agent.McpArgs:
        tool = self.mcp
        args = agent.McpArgs(
            name=self.tool_name,
            tool_call_id=self.call_id,
            tool_name=self.tool_name,
            server_identifier=self.server,
        )
        if tool is not None:
            args.name = tool.tool_name if ui else tool.name
            args.tool_name = tool.tool_name
            args.provider_identifier = tool.provider_identifier
        for key, value in self.arguments.items():
            args.args[key].CopyFrom(to_value(value))
        return args

    def _card(self, result: agent.McpToolResult | None = None) -> agent.ToolCall:
        call = agent.McpToolCall(args=self._mcp_args(ui=True), result=result)
        return agent.ToolCall(mcp_tool_call=call)

    def started(self) -> agent.ToolCall:
        return self._card()

    def begin(self) -> FirstStep:
        if self.mcp is None:
            return self._error(self.missing)
        return SendExec(
            new_exec(
                self.call_id,
                accept_hook_additional_contexts=self.accept_hook,
                mcp_args=self._mcp_args(ui=False),
            )
        )

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant != "mcp_result":
            return WrongResult(variant)
        result = message.mcp_result
        kind = result.WhichOneof("result")
        if kind == "approved":
            return Waiting()  # the user approved; the result comes next
        if kind == "success":
            text, images = success_text(result.success)
            card = agent.McpToolResult(success=result.success)
            return ToolOutcome(text, result.success.is_error, self._card(card), images)
        text = mcp_failure_text(result, self.server, self.tool_name)
        match kind:
            case "rejected":
                card = agent.McpToolResult(rejected=result.rejected)
            case "permission_denied":
                card = agent.McpToolResult(permission_denied=result.permission_denied)
            case _:
                card = agent.McpToolResult(error=agent.McpToolError(error=text))
        return ToolOutcome(text, True, self._card(card))

    def _error(self, text: str) -> ToolOutcome:
        result = agent.McpToolResult(error=agent.McpToolError(error=text))
        return ToolOutcome(text, True, self._card(result))


def _arguments(args: ToolArgs) -> dict[str, object]:
    value = args.raw.get("arguments")
    if value is None:
        return {}
    if isinstance(value, str):  # some models send the object as JSON text
        with contextlib.suppress(ValueError):
            value = decode_json(value) if value.strip() else {}
    if not isinstance(value, dict):
        raise ToolArgumentError("'arguments' must be an object of the tool's arguments")
    return value


def call_mcp_tool_execution(call_id: str, args: ToolArgs, context: ExecContext) -> ToolExecution:
    server = args.required_string("server")
    tool_name = args.required_string("toolName")
    arguments = _arguments(args)
    tool = context.mcp.find(server, tool_name)
    missing = ""
    if tool is None:
        missing = unknown_mcp_tool_text(server, tool_name, context.mcp, context)
    return McpCallExecution(
        CALL_MCP_TOOL,
        call_id,
        (server, tool_name),
        tool,
        arguments,
        accept_hook_additional_contexts=True,
        missing=missing,
    )


# The registry row (``wire.tools.registry.REGISTRY``).
CALL_MCP_TOOL = ToolDefinition(
    name="CallMcpTool",
    channel=ToolChannel.EXEC,
    tool_call_field="mcp_tool_call",
    execution=call_mcp_tool_execution,
    error_path="result.error",
    error_fields=("error",),
)
