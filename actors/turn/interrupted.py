"""A round a new user message interrupted: each pending call gets the result the client chose.

When the user sends a message while a tool round is still pending (its stream dropped), the
client's ``UserMessageAction.interrupted_pending_tool_call_resolutions`` says what became of
each pending call: a ``shell_result`` is the Shell call's result, read as the Shell tool reads
one; a call it gives no result for was interrupted, and the model reads that as an error
result. The history then stays a sequence of call -> result pairs, followed by the new user
message. A resolution for a call that is not pending, twice for one call, of a kind the call
cannot have, or of a kind this server does not read is the client's error.
"""

from __future__ import annotations

from google.protobuf import unknown_fields

from actors.conversation.model import CanonicalMessage, CanonicalToolCall
from actors.protocols.tool_runtime import ToolCompleted
from actors.turn.tool_round import ToolRound
from wire.errors import protocol_error
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import ToolOutcome
from wire.tools.dispatch import prepare_tool_call
from wire.tools.registry import find_tool
from wire.tools.shell import SHELL

INTERRUPTED_RESULT = (
    "the user sent a new message while this call was still pending; it was interrupted and "
    "has no result"
)


def interrupted_pairs(
    round_: ToolRound,
    resolutions: agent.InterruptedPendingToolCallResolutions | None,
    at_ms: int,
) -> tuple[CanonicalMessage, ...]:
    """The pairs closing ``round_``'s pending calls, in index order (the first carries the
    round's text when no pair of it was committed before)."""
    chosen = _by_call(round_, resolutions)
    messages: list[CanonicalMessage] = []
    for call in sorted(round_.pending, key=lambda c: c.index):
        content, is_error = _result(call, chosen.get(call.call_id))
        completed = ToolCompleted(
            round_.round_id,
            call.call_id,
            call.name,
            call.model_call_id,
            content,
            is_error,
            b"",
            at_ms,
            at_ms,
        )
        pair = round_.pair_for(completed)
        round_.committed(pair, completed)
        messages.extend((pair.assistant, pair.result))
    return tuple(messages)


def refuse_resolutions_without_round(
    resolutions: agent.InterruptedPendingToolCallResolutions | None,
) -> None:
    """No round is pending, so a resolution names a call that is not (the client's error)."""
    if resolutions is not None and resolutions.resolutions:
        call_id = resolutions.resolutions[0].tool_call_id
        raise protocol_error(
            f"interrupted_pending_tool_call_resolutions: {call_id!r} is not a pending call "
            "(no tool round is pending)"
        )


def _by_call(
    round_: ToolRound, resolutions: agent.InterruptedPendingToolCallResolutions | None
) -> dict[str, agent.InterruptedPendingToolCallResolution]:
    pending = {call.call_id for call in round_.pending}
    chosen: dict[str, agent.InterruptedPendingToolCallResolution] = {}
    for resolution in resolutions.resolutions if resolutions is not None else ():
        call_id = resolution.tool_call_id
        if call_id not in pending:
            raise protocol_error(
                f"interrupted_pending_tool_call_resolutions: {call_id!r} is not a pending call"
            )
        if call_id in chosen:
            raise protocol_error(
                f"interrupted_pending_tool_call_resolutions: {call_id!r} is resolved twice"
            )
        chosen[call_id] = resolution
    return chosen


def _result(
    call: CanonicalToolCall, resolution: agent.InterruptedPendingToolCallResolution | None
) -> tuple[str, bool]:
    """What the model reads for one pending call: its resolution, or that it was cut off."""
    if resolution is None:
        return INTERRUPTED_RESULT, True
    kind = resolution.WhichOneof("resolution")
    if kind is None:
        if len(unknown_fields.UnknownFieldSet(resolution)):
            raise protocol_error(
                f"the resolution of tool call {call.call_id} is of a kind this server does not read"
            )
        return INTERRUPTED_RESULT, True  # named, but with no result
    if find_tool(call.name) is not SHELL:
        raise protocol_error(f"a {kind} resolves tool call {call.call_id}, a {call.name} call")
    execution = prepare_tool_call(call.name, call.call_id, call.arguments)
    step = execution.feed(agent.ExecClientMessage(shell_result=resolution.shell_result))
    if not isinstance(step, ToolOutcome):  # bad arguments: the call never ran
        return INTERRUPTED_RESULT, True
    return step.content, step.is_error
