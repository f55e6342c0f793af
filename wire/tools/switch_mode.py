"""SwitchMode: the model proposes another mode; the user approves or declines in the editor.

The run that asked keeps its mode (its prompt and tools are fixed for the run): an approved
switch is read back from the committed messages when a checkpoint is built
(``switched_mode`` in ``actors.codecs.checkpoint_state``), so the next run that takes the
state's mode (a resume, a completion) runs in the new one. ``MODE_IDS`` is Cursor's
vocabulary of mode ids.
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

# The mode ids the model may name, and the AgentMode each stands for.
MODE_IDS: dict[str, int] = {
    "agent": agent.AGENT_MODE_AGENT,
    "ask": agent.AGENT_MODE_ASK,
    "plan": agent.AGENT_MODE_PLAN,
    "debug": agent.AGENT_MODE_DEBUG,
    "multitask": agent.AGENT_MODE_MULTITASK,
}


def target_mode(arguments: ToolArgs) -> str:
    """The ``target_mode_id`` argument, checked against ``MODE_IDS``."""
    target = arguments.required_string("target_mode_id")
    if target not in MODE_IDS:
        known = ", ".join(MODE_IDS)
        raise ToolArgumentError(f"'target_mode_id' {target!r} is not a mode; use one of {known}")
    return target


class SwitchModeExecution(InteractionExecution):
    """One query; the editor asks the user whether to switch."""

    query_field = "switch_mode_request_query"

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(SWITCH_MODE, call_id)
        self.target = target_mode(args)
        self.args = agent.SwitchModeArgs(
            target_mode_id=self.target, explanation=args.string("explanation"), tool_call_id=call_id
        )

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(switch_mode_tool_call=agent.SwitchModeToolCall(args=self.args))

    def _query(self) -> Any:
        return agent.SwitchModeRequestQuery(args=self.args)

    def _on_answer(self, answer: Any) -> ExecStep:
        mode = self.target.capitalize()
        match answer.WhichOneof("result"):
            case "approved":
                result = agent.SwitchModeResult(
                    success=agent.SwitchModeSuccess(to_mode_id=self.target)
                )
                text = (
                    f"The user approved: the conversation is now in {mode} mode. This run "
                    f"keeps the tools it started with until it ends; the next runs with {mode} "
                    "mode's."
                )
                is_error = False
            case "rejected":
                reason = answer.rejected.reason
                result = agent.SwitchModeResult(rejected=agent.SwitchModeRejected(reason=reason))
                text = f"The user declined to switch to {mode} mode" + (
                    f": {reason}" if reason else "."
                )
                is_error = True
            case _:
                return WrongResult("SwitchModeRequestResponse with no result")
        card = agent.SwitchModeToolCall(args=self.args, result=result)
        return ToolOutcome(text, is_error, agent.ToolCall(switch_mode_tool_call=card))


# The registry row (``wire.tools.registry.REGISTRY``).
SWITCH_MODE = ToolDefinition(
    name="SwitchMode",
    channel=ToolChannel.INTERACTION,
    tool_call_field="switch_mode_tool_call",
    execution=SwitchModeExecution,
    error_path="result.error",
    error_fields=("error",),
)
