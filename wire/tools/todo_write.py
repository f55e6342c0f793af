"""TodoWrite: a local tool; the call replaces the list, or with ``merge`` updates it by id.

The list a call merges onto is the one its history derives (the checkpoint's owner,
``actors.codecs.checkpoint_state.todo_list``, folds every successful call with
``apply_todo_update``);
the run hands it to the call through ``ExecContext.todos``. The card's result and the text the
model reads show the list as it stands after the call, so the model never has to redo a merge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    Todo,
    ToolChannel,
    ToolDefinition,
    ToolExecution,
    ToolOutcome,
    WrongResult,
)
from wire.tools.text import plural

TODO_STATUSES = {
    "pending": agent.TODO_STATUS_PENDING,
    "in_progress": agent.TODO_STATUS_IN_PROGRESS,
    "completed": agent.TODO_STATUS_COMPLETED,
    "cancelled": agent.TODO_STATUS_CANCELLED,
}


class TodoUpdate(msgspec.Struct, frozen=True):
    """One call's items and whether they merge into the list (by id) or replace it."""

    todos: tuple[Todo, ...]
    merge: bool


def parse_todo_update(args: ToolArgs, *, merge_required: bool = True) -> TodoUpdate:
    """The call's update; ``ToolArgumentError`` when it does not fit the schema.

    Every item needs ``id``, ``content`` and ``status`` (the schema requires all three, with
    merge too); ``dependencies``, outside our schema, is read when it is a list of strings.
    ``merge_required`` is off for calls already in a history (another server's may omit it).
    """
    raw = args.raw.get("todos")
    if not isinstance(raw, list):
        raise ToolArgumentError("'todos' is required (an array of items)")
    merge = args.boolean("merge", required=merge_required)
    todos = tuple(_todo(position, item) for position, item in enumerate(raw))
    return TodoUpdate(todos, bool(merge))


def _todo(position: int, item: Any) -> Todo:
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
    dependencies = item.get("dependencies")
    if not isinstance(dependencies, list):
        dependencies = []
    depends = tuple(d for d in dependencies if isinstance(d, str))
    return Todo(fields["id"], fields["content"], fields["status"], depends)


def apply_todo_update(current: Sequence[Todo], update: TodoUpdate) -> tuple[Todo, ...]:
    """The list after ``update``: without merge its items, as given; with merge each item
    replaces the one with its id where it stands, a new id joins at the end, and the items
    it does not name stay as they were, in place."""
    if not update.merge:
        return update.todos
    merged = list(current)
    where = {todo.id: position for position, todo in enumerate(merged)}
    for todo in update.todos:
        position = where.get(todo.id)
        if position is None:
            where[todo.id] = len(merged)
            merged.append(todo)
        else:
            merged[position] = todo
    return tuple(merged)


def todo_item(todo: Todo) -> agent.TodoItem:
    """The card's and the checkpoint's ``TodoItem`` (no timestamps: a call has none)."""
    return agent.TodoItem(
        id=todo.id,
        content=todo.content,
        status=TODO_STATUSES[todo.status],
        created_at=0,
        updated_at=0,
        dependencies=todo.dependencies,
    )


def todo_list_text(todos: Sequence[Todo], update: TodoUpdate) -> str:
    """What the model reads: what the call did, then the whole list as it now stands."""
    if update.merge:
        named = {todo.id for todo in update.todos}
        head = f"Merged {plural(len(named), 'item')} into the todo list by id"
    else:
        head = "Replaced the todo list"
    if not todos:
        return f"{head}; it is now empty."
    lines = [f"{head}; it now holds {plural(len(todos), 'item')}:"]
    lines.extend(f"- [{todo.status}] {todo.id}: {todo.content}" for todo in todos)
    return "\n".join(lines)


class TodoWriteExecution(ToolExecution):
    """Finishes on the server: the list after the call, shown to the model and on the card."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(TODO_WRITE, call_id)
        self.update = parse_todo_update(args)
        self.todos = apply_todo_update(context.todos, self.update)

    def _ui_args(self) -> agent.UpdateTodosArgs:
        items = [todo_item(todo) for todo in self.update.todos]
        return agent.UpdateTodosArgs(todos=items, merge=self.update.merge)

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(
            update_todos_tool_call=agent.UpdateTodosToolCall(args=self._ui_args())
        )

    def begin(self) -> ToolOutcome:
        success = agent.UpdateTodosSuccess(
            todos=[todo_item(todo) for todo in self.todos],
            total_count=len(self.todos),
            was_merge=self.update.merge,
        )
        update = agent.UpdateTodosToolCall(
            args=self._ui_args(), result=agent.UpdateTodosResult(success=success)
        )
        content = todo_list_text(self.todos, self.update)
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
