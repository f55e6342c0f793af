"""FetchMcpResource: read one resource of one of the editor's MCP servers
(``read_mcp_resource_exec_args``).

The model reads a text resource (cut at ``MAX_RESOURCE_CHARS`` with a note); a binary one that
is a PNG, JPEG, GIF or WebP image within ``MAX_READ_IMAGE_BYTES`` is shown as an image, any
other is described (its type, size and where the editor saved it, with ``downloadPath``).
The server needs no known definition: resources are named by URI.
"""

from __future__ import annotations

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs
from wire.tools.base import (
    ExecContext,
    ExecStep,
    SendExec,
    ToolChannel,
    ToolDefinition,
    ToolExecution,
    ToolImage,
    ToolOutcome,
    WrongResult,
    new_exec,
)
from wire.tools.read import MAX_READ_IMAGE_BYTES, image_type
from wire.tools.text import join_note, plural

MAX_RESOURCE_CHARS = 100_000


def resource_text(success: agent.ReadMcpResourceSuccess) -> tuple[str, ToolImage | None]:
    """What the model reads of a resource, and the image it is shown, if any."""
    uri = success.uri
    saved = f"; saved to {success.download_path}" if success.HasField("download_path") else ""
    if success.WhichOneof("content") == "blob":
        data = success.blob
        size = plural(len(data), "byte")
        mime = image_type(data)
        if mime is not None and len(data) <= MAX_READ_IMAGE_BYTES:
            return f"{uri} is an image ({mime}, {size}){saved}; it is attached", ToolImage(
                mime, data
            )
        kind = success.mime_type if success.HasField("mime_type") else "binary"
        return f"{uri} is binary content ({kind}, {size}){saved}; it cannot be shown as text", None
    text = success.text
    if not text:
        return f"{uri} is empty{saved}", None
    if len(text) > MAX_RESOURCE_CHARS:
        note = f"[cut at {MAX_RESOURCE_CHARS} of {len(text)} characters{saved}]"
        return join_note(text[:MAX_RESOURCE_CHARS], note), None
    return (join_note(text, f"[{saved[2:]}]") if saved else text), None


def resource_error_text(result: agent.ReadMcpResourceExecResult, uri: str) -> str:
    match result.WhichOneof("result"):
        case "error":
            return result.error.error or f"could not read MCP resource {uri}"
        case "rejected":
            reason = result.rejected.reason
            return f"reading MCP resource {uri} was rejected" + (f": {reason}" if reason else "")
        case "not_found":
            return f"MCP resource not found: {uri}"
        case _:
            return f"the editor returned no result for MCP resource {uri}"


class FetchMcpResourceExecution(ToolExecution):
    """One resource read."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(FETCH_MCP_RESOURCE, call_id)
        self.server = args.required_string("server")
        self.uri = args.required_string("uri")
        self.download_path = args.string("downloadPath") or None

    def _args(self) -> agent.ReadMcpResourceExecArgs:
        return agent.ReadMcpResourceExecArgs(
            server=self.server,
            uri=self.uri,
            download_path=self.download_path,
            tool_call_id=self.call_id,
        )

    def _card(self, result: agent.ReadMcpResourceExecResult | None = None) -> agent.ToolCall:
        call = agent.ReadMcpResourceToolCall(args=self._args(), result=result)
        return agent.ToolCall(read_mcp_resource_tool_call=call)

    def started(self) -> agent.ToolCall:
        return self._card()

    def begin(self) -> SendExec:
        return SendExec(
            new_exec(
                self.call_id,
                accept_hook_additional_contexts=True,
                read_mcp_resource_exec_args=self._args(),
            )
        )

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant != "read_mcp_resource_exec_result":
            return WrongResult(variant)
        result = message.read_mcp_resource_exec_result
        if result.WhichOneof("result") == "success":
            text, image = resource_text(result.success)
            return ToolOutcome(text, False, self._card(result), () if image is None else (image,))
        return ToolOutcome(resource_error_text(result, self.uri), True, self._card(result))


# The registry row (``wire.tools.registry.REGISTRY``).
FETCH_MCP_RESOURCE = ToolDefinition(
    name="FetchMcpResource",
    channel=ToolChannel.EXEC,
    tool_call_field="read_mcp_resource_tool_call",
    execution=FetchMcpResourceExecution,
    error_path="result.error",
    error_fields=("error",),
)
