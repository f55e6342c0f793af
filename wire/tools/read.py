"""Read: one ``read_args`` request; the model reads the file text, the card its range and size."""

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
    ToolOutcome,
    WrongResult,
    new_exec,
)
from wire.tools.text import join_note, plural


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
        content, is_error, result = self._render(getattr(message, variant))
        tool_call = agent.ToolCall(
            read_tool_call=agent.ReadToolCall(args=self._ui_args(), result=result)
        )
        return ToolOutcome(content, is_error, tool_call)

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
            size = success.file_size or len(success.data)
            text = f"{path} is a binary file ({plural(size, 'byte')}); it cannot be shown as text"
            return text, False, agent.ReadToolResult(success=ui)
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
