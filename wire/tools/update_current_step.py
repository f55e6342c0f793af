"""UpdateCurrentStep: a subagent tells the user what it is doing; a local tool.

Nothing is sent to the editor but the card (``communicate_update_tool_call``), whose result
carries the step and where it stands in the turn: ``message_index``, 1-based over the
turn's steps as Cursor counts them (each thinking, each text, each tool call; see
``actors.turn.tool_round.message_indexes``), given per call through ``ExecContext``.
"""

from __future__ import annotations

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

_FIELDS = ("current_step", "final_summary", "completed_subtitle")


class UpdateCurrentStepExecution(ToolExecution):
    """One update: the card at once, and a line for the model saying what the user sees."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(UPDATE_CURRENT_STEP, call_id)
        values: dict[str, str | None] = {}
        for field in _FIELDS:
            value = args.string(field)
            if value is not None and not value.strip():
                raise ToolArgumentError(f"'{field}' must not be empty (leave it out instead)")
            values[field] = value
        self.values = values
        self.message_index = context.message_index

    def _args(self) -> agent.CommunicateUpdateArgs:
        return agent.CommunicateUpdateArgs(**self.values)

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(
            communicate_update_tool_call=agent.CommunicateUpdateToolCall(args=self._args())
        )

    def begin(self) -> ToolOutcome:
        step = self.values["current_step"]
        result = agent.CommunicateUpdateResult(
            success=agent.CommunicateUpdateSuccess(
                current_step=step or "", message_index=self.message_index
            )
        )
        card = agent.ToolCall(
            communicate_update_tool_call=agent.CommunicateUpdateToolCall(
                args=self._args(), result=result
            )
        )
        shown = [
            f"{label}: {self.values[field]}"
            for field, label in zip(
                _FIELDS, ("current step", "final summary", "completed subtitle"), strict=True
            )
            if self.values[field] is not None
        ]
        text = (
            "The user now sees " + "; ".join(shown) if shown else "Nothing to show: no field given."
        )
        return ToolOutcome(text, False, card)

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        return WrongResult(variant)


# The registry row (``wire.tools.registry.REGISTRY``).
UPDATE_CURRENT_STEP = ToolDefinition(
    name="UpdateCurrentStep",
    channel=ToolChannel.LOCAL,
    tool_call_field="communicate_update_tool_call",
    execution=UpdateCurrentStepExecution,
    error_path="result.error",
    error_fields=("error",),
)
