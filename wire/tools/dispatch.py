"""From a model tool call to its execution, and from an outcome to the card the UI keeps."""

from __future__ import annotations

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import ExecContext, InvalidCall, ToolDefinition, ToolExecution
from wire.tools.dynamic_mcp import definition_of
from wire.tools.registry import tool_definition


def prepare_tool_call(
    name: str, call_id: str, arguments: str, context: ExecContext | None = None
) -> ToolExecution:
    """The execution of one model tool call; ``UnsupportedTool`` for a name we do not run.

    Arguments that do not fit give an ``InvalidCall`` (an error result), never an exception.
    A dynamic MCP tool the run offers is matched by its exact name, before the built-ins.
    """
    context = context or ExecContext()
    definition = call_definition(name, context)
    try:
        return definition.execution(call_id, ToolArgs(arguments), context)
    except ToolArgumentError as exc:
        return InvalidCall(definition, call_id, str(exc))


# What the model reads for a call whose arguments its output limit cut (our own words).
CUT_ARGUMENTS = (
    "your output reached its token limit before the arguments of this call were complete, so "
    "nothing was run. Make the call again with less in it: a smaller edit, or the content "
    "split over several calls."
)


def call_definition(name: str, context: ExecContext) -> ToolDefinition:
    """The definition a model call names: a dynamic MCP tool the run offers (exact name)
    before the built-ins; ``UnsupportedTool`` for neither."""
    dynamic = context.dynamic.find(name)
    return definition_of(name, dynamic) if dynamic is not None else tool_definition(name)


def cut_tool_call(name: str, call_id: str, context: ExecContext) -> ToolExecution:
    """A call the output limit cut: it ends at once with an error asking for a smaller call
    (its card, shown while it streamed, closes as that error)."""
    return InvalidCall(call_definition(name, context), call_id, CUT_ARGUMENTS)


def stamp_tool_call(
    tool_call: agent.ToolCall,
    call_id: str,
    started_at_ms: int,
    completed_at_ms: int | None = None,
) -> agent.ToolCall:
    """A copy with the call id and the real start (and end) times the UI needs."""
    stamped = agent.ToolCall()
    stamped.CopyFrom(tool_call)
    stamped.tool_call_id = call_id
    stamped.started_at_ms = started_at_ms
    if completed_at_ms is not None:
        stamped.completed_at_ms = completed_at_ms
    return stamped
