"""Delete: one ``delete_args`` request; the card shows the editor's result as it came."""

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
    ToolOutcome,
    WrongResult,
    new_exec,
)


class DeleteExecution(ToolExecution):
    """One delete; the card keeps the editor's DeleteResult, the model a one-line summary."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(DELETE, call_id)
        self.path = args.required_string("path")

    def _args(self) -> agent.DeleteArgs:
        return agent.DeleteArgs(path=self.path, tool_call_id=self.call_id)

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(delete_tool_call=agent.DeleteToolCall(args=self._args()))

    def begin(self) -> SendExec:
        return SendExec(
            new_exec(self.call_id, accept_hook_additional_contexts=True, delete_args=self._args())
        )

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant != "delete_result":
            return WrongResult(variant)
        result = message.delete_result
        path = self.path
        match result.WhichOneof("result"):
            case "success":
                text, is_error = f"deleted {path}", False
            case "file_not_found":
                text, is_error = f"file not found: {path}", True
            case "not_file":
                kind = result.not_file.actual_type
                text = f"not a file: {path}" + (f" (it is a {kind})" if kind else "")
                is_error = True
            case "permission_denied":
                text = result.permission_denied.client_visible_error
                text, is_error = text or f"permission denied: {path}", True
            case "file_busy":
                text, is_error = f"file busy: {path}", True
            case "rejected":
                reason = result.rejected.reason
                text = f"deleting {path} was rejected" + (f": {reason}" if reason else "")
                is_error = True
            case "error":
                text, is_error = result.error.error or f"could not delete {path}", True
            case _:
                text, is_error = f"the editor returned no delete result for {path}", True
        tool_call = agent.ToolCall(
            delete_tool_call=agent.DeleteToolCall(args=self._args(), result=result)
        )
        return ToolOutcome(text, is_error, tool_call)


# The registry row (``wire.tools.registry.REGISTRY``).
DELETE = ToolDefinition(
    name="Delete",
    channel=ToolChannel.EXEC,
    tool_call_field="delete_tool_call",
    execution=DeleteExecution,
    error_path="result.error",
    error_fields=("error",),
)
