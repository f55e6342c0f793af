"""CreatePlan: the model hands the editor a plan (text and todos), which the editor saves and
shows; the model reads where it was saved.

Nothing is required by the schema, and a later plan of a conversation may leave out its name:
only the plan text is needed (without it there is nothing to save). The conversation's plan
is read back from the committed messages when a checkpoint is built (the last successful
call's ``plan``, see ``actors.codecs.checkpoint_state.latest_plan``), never kept anywhere else.
"""

from __future__ import annotations

from typing import Any

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    InteractionExecution,
    ToolChannel,
    ToolDefinition,
    ToolOutcome,
    WrongResult,
)


def plan_text(arguments: ToolArgs) -> str:
    """The ``plan`` argument: the plan itself, required and not blank."""
    text = arguments.string("plan")
    if text is None or not text.strip():
        raise ToolArgumentError("'plan' is required: the plan's text (markdown)")
    return text


def _todo(raw: Any, position: int) -> agent.TodoItem:
    where = f"todos[{position}]"
    if not isinstance(raw, dict):
        raise ToolArgumentError(f"{where} must be an object")
    for key in ("id", "content"):
        value = raw.get(key)
        if not isinstance(value, str) or not value:
            raise ToolArgumentError(f"{where}.{key} is required (a non-empty string)")
    return agent.TodoItem(id=raw["id"], content=raw["content"], status=agent.TODO_STATUS_PENDING)


class CreatePlanExecution(InteractionExecution):
    """One query; the editor saves the plan and answers with its location."""

    query_field = "create_plan_request_query"

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(CREATE_PLAN, call_id)
        raw_todos = args.raw.get("todos", [])
        if not isinstance(raw_todos, list):
            raise ToolArgumentError("'todos' must be an array of {id, content} objects")
        self.args = agent.CreatePlanArgs(
            plan=plan_text(args),
            todos=[_todo(item, i) for i, item in enumerate(raw_todos)],
            overview=args.string("overview") or "",
            name=args.string("name") or "",
        )

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(create_plan_tool_call=agent.CreatePlanToolCall(args=self.args))

    def _query(self) -> Any:
        return agent.CreatePlanRequestQuery(args=self.args, tool_call_id=self.call_id)

    def _on_answer(self, answer: Any) -> ExecStep:
        result = answer.result
        match result.WhichOneof("result"):
            case "success":
                where = f" at {result.plan_uri}" if result.plan_uri else ""
                text, is_error = f"The plan was saved{where} and is shown to the user.", False
            case "error":
                text = "The plan could not be saved: " + (result.error.error or "no reason given")
                is_error = True
            case _:
                return WrongResult("CreatePlanResult with no result")
        card = agent.CreatePlanToolCall(args=self.args, result=result)
        return ToolOutcome(text, is_error, agent.ToolCall(create_plan_tool_call=card))


# The registry row (``wire.tools.registry.REGISTRY``).
CREATE_PLAN = ToolDefinition(
    name="CreatePlan",
    channel=ToolChannel.INTERACTION,
    tool_call_field="create_plan_tool_call",
    execution=CreatePlanExecution,
    error_path="result.error",
    error_fields=("error",),
)
