"""The ``InteractionUpdate`` frames of a turn (the Cursor UI direction), sans-IO.

Each builder returns one Connect data frame. Counts are clamped to the protobuf field's range;
a usage field the provider never reported is left absent, never sent as 0.
"""

from __future__ import annotations

from wire.connect import data_frame
from wire.proto import agent_v1_pb2 as agent

INT32_MAX = 2**31 - 1
THINKING_STYLE_DEFAULT = 1


def _frame(update: agent.InteractionUpdate) -> bytes:
    return data_frame(agent.AgentServerMessage(interaction_update=update))


def text_delta_frame(text: str) -> bytes:
    return _frame(agent.InteractionUpdate(text_delta=agent.TextDeltaUpdate(text=text)))


def thinking_delta_frame(text: str) -> bytes:
    update = agent.ThinkingDeltaUpdate(text=text, thinking_style=THINKING_STYLE_DEFAULT)  # type: ignore[arg-type]
    return _frame(agent.InteractionUpdate(thinking_delta=update))


def thinking_completed_frame(duration_ms: int) -> bytes:
    """The duration is clamped to 1..INT32_MAX: the client treats 0 as "no thinking"."""
    clamped = min(max(duration_ms, 1), INT32_MAX)
    update = agent.ThinkingCompletedUpdate(thinking_duration_ms=clamped)
    return _frame(agent.InteractionUpdate(thinking_completed=update))


def token_delta_frame(output_tokens: int) -> bytes:
    update = agent.TokenDeltaUpdate(tokens=min(output_tokens, INT32_MAX))
    return _frame(agent.InteractionUpdate(token_delta=update))


def turn_ended_frame(
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read_tokens: int | None,
    cache_write_tokens: int | None,
    reasoning_tokens: int | None,
) -> bytes:
    """``turn_ended`` with the turn's summed usage; unknown fields stay absent."""
    update = agent.TurnEndedUpdate()
    for name, value in (
        ("input_tokens", input_tokens),
        ("output_tokens", output_tokens),
        ("cache_read_tokens", cache_read_tokens),
        ("cache_write_tokens", cache_write_tokens),
        ("reasoning_tokens", reasoning_tokens),
    ):
        if value is not None:
            setattr(update, name, value)
    return _frame(agent.InteractionUpdate(turn_ended=update))


def summary_started_frame() -> bytes:
    """A compaction of the conversation has started."""
    return _frame(agent.InteractionUpdate(summary_started=agent.SummaryStartedUpdate()))


def summary_frame(text: str) -> bytes:
    """The summary a compaction wrote."""
    return _frame(agent.InteractionUpdate(summary=agent.SummaryUpdate(summary=text)))


def summary_completed_frame(*, failed: bool = False) -> bytes:
    """The compaction is over (``failed``: no summary came back)."""
    update = agent.SummaryCompletedUpdate(failed=True) if failed else agent.SummaryCompletedUpdate()
    return _frame(agent.InteractionUpdate(summary_completed=update))
