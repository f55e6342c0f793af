"""The frames a tool call sends: its Exec request and abort, its interaction query, and its
card's interaction updates."""

from __future__ import annotations

from typing import Literal

from wire.connect import data_frame
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import empty_tool_call
from wire.tools.registry import tool_definition


def _update_frame(update: agent.InteractionUpdate) -> bytes:
    return data_frame(agent.AgentServerMessage(interaction_update=update))


def exec_request_frame(wire_id: int, request: agent.ExecServerMessage) -> bytes:
    """``exec_server_message`` with ``request`` under ``wire_id``."""
    message = agent.ExecServerMessage()
    message.CopyFrom(request)
    message.id = wire_id
    return data_frame(agent.AgentServerMessage(exec_server_message=message))


def interaction_query_frame(wire_id: int, query: agent.InteractionQuery) -> bytes:
    """``interaction_query`` with ``query`` under ``wire_id`` (the same id space as execs)."""
    message = agent.InteractionQuery()
    message.CopyFrom(query)
    message.id = wire_id
    return data_frame(agent.AgentServerMessage(interaction_query=message))


def exec_abort_frame(wire_id: int) -> bytes:
    """``exec_server_control_message.abort{id}``: the editor stops that execution."""
    control = agent.ExecServerControlMessage(abort=agent.ExecServerAbort(id=wire_id))
    return data_frame(agent.AgentServerMessage(exec_server_control_message=control))


def tool_call_started_frame(call_id: str, model_call_id: str, tool_call: agent.ToolCall) -> bytes:
    started = agent.ToolCallStartedUpdate(
        call_id=call_id, tool_call=tool_call, model_call_id=model_call_id
    )
    return _update_frame(agent.InteractionUpdate(tool_call_started=started))


def tool_call_completed_frame(
    call_id: str, model_call_id: str, tool_call: bytes | agent.ToolCall
) -> bytes:
    """The card's final state; sent once the call's result is committed, not when it arrives.

    ``tool_call`` is the completion's serialized ToolCall (args, result, both timestamps).
    """
    if isinstance(tool_call, bytes):
        tool_call = agent.ToolCall.FromString(tool_call)
    completed = agent.ToolCallCompletedUpdate(
        call_id=call_id, tool_call=tool_call, model_call_id=model_call_id
    )
    return _update_frame(agent.InteractionUpdate(tool_call_completed=completed))


def shell_delta_frame(
    call_id: str, model_call_id: str, stream: Literal["stdout", "stderr"], text: str
) -> bytes:
    """A running command's output chunk; the model call id ties it to the card."""
    if stream == "stdout":
        shell = agent.ShellToolCallDelta(stdout=agent.ShellToolCallStdoutDelta(content=text))
    else:
        shell = agent.ShellToolCallDelta(stderr=agent.ShellToolCallStderrDelta(content=text))
    delta = agent.ToolCallDeltaUpdate(
        call_id=call_id,
        tool_call_delta=agent.ToolCallDelta(shell_tool_call_delta=shell),
        model_call_id=model_call_id,
    )
    return _update_frame(agent.InteractionUpdate(tool_call_delta=delta))


def partial_tool_call_frame(
    call_id: str,
    tool_name: str,
    model_call_id: str,
    args_text_delta: str = "",
    placeholder: agent.ToolCall | None = None,
) -> bytes:
    """The placeholder card while the model streams a call: ``placeholder`` (a dynamic MCP
    tool's), else the built-in tool's empty card (``UnsupportedTool`` if unknown)."""
    tool_call = placeholder or empty_tool_call(tool_definition(tool_name))
    tool_call.tool_call_id = call_id
    partial = agent.PartialToolCallUpdate(
        call_id=call_id,
        tool_call=tool_call,
        args_text_delta=args_text_delta,
        model_call_id=model_call_id,
    )
    return _update_frame(agent.InteractionUpdate(partial_tool_call=partial))


def edit_content_delta_frame(call_id: str, model_call_id: str, text: str) -> bytes:
    """``tool_call_delta`` with ``edit_tool_call_delta.stream_content_delta``: more content."""
    delta = agent.ToolCallDelta(
        edit_tool_call_delta=agent.EditToolCallDelta(stream_content_delta=text)
    )
    update = agent.ToolCallDeltaUpdate(
        call_id=call_id, tool_call_delta=delta, model_call_id=model_call_id
    )
    return _update_frame(agent.InteractionUpdate(tool_call_delta=update))


def edit_path_partial_frame(call_id: str, model_call_id: str, path: str) -> bytes:
    """The placeholder card again, now naming the file (``EditArgs.path``, no content)."""
    tool_call = agent.ToolCall(
        tool_call_id=call_id, edit_tool_call=agent.EditToolCall(args=agent.EditArgs(path=path))
    )
    partial = agent.PartialToolCallUpdate(
        call_id=call_id, tool_call=tool_call, args_text_delta="", model_call_id=model_call_id
    )
    return _update_frame(agent.InteractionUpdate(partial_tool_call=partial))
