"""TodoWrite: a local tool; the list is the call's own arguments, echoed back to the model."""

from __future__ import annotations

import msgspec

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    ToolChannel,
    ToolDefinition,
    ToolExecution,
    ToolOutcome,
    WrongResult,
)

TODO_STATUSES = {
    "pending": agent.TODO_STATUS_PENDING,
    "in_progress": agent.TODO_STATUS_IN_PROGRESS,
    "completed": agent.TODO_STATUS_COMPLETED,
    "cancelled": agent.TODO_STATUS_CANCELLED,
}


class TodoWriteExecution(ToolExecution):
    """Finishes on the server: the list is the call's own arguments, echoed back."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(TODO_WRITE, call_id)
        raw = args.raw.get("todos")
        if not isinstance(raw, list):
            raise ToolArgumentError("'todos' is required (an array of items)")
        merge = args.boolean("merge", required=True)
        self.merge = bool(merge)
        self.todos: list[dict[str, str]] = []
        for position, item in enumerate(raw):
            if not isinstance(item, dict):
                raise ToolArgumentError(f"todos[{position}] must be an object")
            fields: dict[str, str] = {}
            for key in ("id", "content", "status"):
                value = item.get(key)
                if not isinstance(value, str):
                    raise ToolArgumentError(f"todos[{position}].{key} is required (a string)")
                fields[key] = value
            if fields["status"] not in TODO_STATUSES:
                allowed = ", ".join(TODO_STATUSES)
                raise ToolArgumentError(f"todos[{position}].status must be one of {allowed}")
            self.todos.append(fields)

    def _items(self) -> list[agent.TodoItem]:
        return [
            agent.TodoItem(id=t["id"], content=t["content"], status=TODO_STATUSES[t["status"]])
            for t in self.todos
        ]

    def _ui_args(self) -> agent.UpdateTodosArgs:
        return agent.UpdateTodosArgs(todos=self._items(), merge=self.merge)

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(
            update_todos_tool_call=agent.UpdateTodosToolCall(args=self._ui_args())
        )

    def begin(self) -> ToolOutcome:
        success = agent.UpdateTodosSuccess(
            todos=self._items(), total_count=len(self.todos), was_merge=self.merge
        )
        update = agent.UpdateTodosToolCall(
            args=self._ui_args(), result=agent.UpdateTodosResult(success=success)
        )
        # Key order fixed by construction, so the same list is the same text (prefix caches).
        content = msgspec.json.encode({"todos": self.todos, "merge": self.merge}).decode()
        return ToolOutcome(content, False, agent.ToolCall(update_todos_tool_call=update))

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        return WrongResult(variant)


# The registry row (``wire.tools.registry.REGISTRY``).
TODO_WRITE = ToolDefinition(
    name="TodoWrite",
    channel=ToolChannel.LOCAL,
    tool_call_field="update_todos_tool_call",
    execution=TodoWriteExecution,
    error_path="result.error",
    error_fields=("error",),
)
