"""Read: one ``read_args`` request; the model reads the file text, the card its range and size.

A binary file whose bytes are a PNG, JPEG, GIF or WebP image (by their magic bytes) of at most
``MAX_READ_IMAGE_BYTES`` is shown to the model as an image beside the result's text; any other
binary file, or a larger image, is only described in words.
"""

from __future__ import annotations

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs
from wire.tools.base import (
    INT32_MAX,
    UINT32_MAX,
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
from wire.tools.text import join_note, plural

# 3.75 MiB: its base64 is 5 MiB, the most Anthropic takes for one image (OpenAI takes more).
MAX_READ_IMAGE_BYTES = 3_932_160


def image_type(data: bytes) -> str | None:
    """The mime type of an image format every provider reads, from its magic bytes."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


class ReadExecution(ToolExecution):
    """One read; the model gets the text (or why not), the card the range and file size."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(READ, call_id)
        self.path = args.required_string("path")
        self.offset = args.integer("offset", minimum=-INT32_MAX, maximum=INT32_MAX)
        self.limit = args.integer("limit", minimum=0, maximum=INT32_MAX)

    def _ui_args(self) -> agent.ReadToolArgs:
        return agent.ReadToolArgs(path=self.path, offset=self.offset, limit=self.limit)

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(read_tool_call=agent.ReadToolCall(args=self._ui_args()))

    def begin(self) -> SendExec:
        read = agent.ReadArgs(
            path=self.path, tool_call_id=self.call_id, offset=self.offset, limit=self.limit
        )
        return SendExec(
            new_exec(self.call_id, accept_hook_additional_contexts=True, read_args=read)
        )

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant not in ("read_result", "redacted_read_result"):
            return WrongResult(variant)
        read = getattr(message, variant)
        content, is_error, result = self._render(read)
        tool_call = agent.ToolCall(
            read_tool_call=agent.ReadToolCall(args=self._ui_args(), result=result)
        )
        image = _shown_image(read) if not is_error else None
        return ToolOutcome(content, is_error, tool_call, () if image is None else (image,))

    def _render(self, read: agent.ReadResult) -> tuple[str, bool, agent.ReadToolResult]:
        kind = read.WhichOneof("result")
        if kind != "success":
            text = read_error_text(self.path, read)
            return text, True, agent.ReadToolResult(error=agent.ReadToolError(error_message=text))
        success = read.success
        path = success.path or self.path
        ui = agent.ReadToolSuccess(
            path=path,
            exceeded_limit=success.truncated,
            total_lines=max(success.total_lines, 0),
            file_size=min(max(success.file_size, 0), UINT32_MAX),
        )
        if self.limit is not None and (self.offset or 0) >= 0:
            start = self.offset or 0
            ui.read_range.CopyFrom(
                agent.ReadRange(start_line=start, end_line=min(start + self.limit, UINT32_MAX))
            )
        output = success.WhichOneof("output")
        if output == "data":
            ui.data = success.data
            ui.is_empty = not success.data
            return _binary_text(path, success), False, agent.ReadToolResult(success=ui)
        content = success.content
        ui.content = content
        ui.is_empty = not content
        if not content:
            if success.range_applied or self.offset is not None or self.limit is not None:
                text = f"no lines of {path} in the requested range"
                if success.total_lines > 0:
                    text += f" (the file has {plural(success.total_lines, 'line')})"
            else:
                text = f"{path} is empty"
        elif success.truncated:
            note = f"[output truncated: read the rest of {path} with offset and limit]"
            if success.total_lines > 0:
                note = (
                    f"[output truncated: {path} has {plural(success.total_lines, 'line')}; "
                    "read the rest with offset and limit]"
                )
            text = join_note(content, note)
        else:
            text = content
        return text, False, agent.ReadToolResult(success=ui)


def _shown_image(read: agent.ReadResult) -> ToolImage | None:
    """The image a successful read shows the model, if its data is one within the bound."""
    if read.WhichOneof("result") != "success" or read.success.WhichOneof("output") != "data":
        return None
    data = read.success.data
    mime_type = image_type(data)
    if mime_type is None or len(data) > MAX_READ_IMAGE_BYTES:
        return None
    return ToolImage(mime_type, data)


def _binary_text(path: str, success: agent.ReadSuccess) -> str:
    """What the model reads of a binary file: the image follows, or why nothing does."""
    data = success.data
    size = plural(len(data), "byte")
    mime_type = image_type(data)
    if mime_type is None:
        size = plural(success.file_size or len(data), "byte")
        return f"{path} is a binary file ({size}); it cannot be shown as text"
    if len(data) > MAX_READ_IMAGE_BYTES:
        return (
            f"{path} is an image ({mime_type}, {size}), larger than the "
            f"{plural(MAX_READ_IMAGE_BYTES, 'byte')} an image may have to be shown to you"
        )
    return f"{path} is an image ({mime_type}, {size}); it is attached to this result"


def read_error_text(path: str, read: agent.ReadResult) -> str:
    """The message of a failed ReadResult (any variant but success)."""
    match read.WhichOneof("result"):
        case "error":
            return read.error.error or f"could not read {path}"
        case "rejected":
            reason = read.rejected.reason
            return f"reading {path} was rejected" + (f": {reason}" if reason else "")
        case "file_not_found":
            return f"file not found: {path}"
        case "permission_denied":
            return f"permission denied: {path}"
        case "invalid_file":
            return read.invalid_file.reason or f"not a readable file: {path}"
        case _:
            return f"the editor returned no read result for {path}"


# The registry row (``wire.tools.registry.REGISTRY``).
READ = ToolDefinition(
    name="Read",
    channel=ToolChannel.EXEC,
    tool_call_field="read_tool_call",
    execution=ReadExecution,
    error_path="result.error",
    error_fields=("error_message",),
)
