"""A subagent's UpdateCurrentStep state as the checkpoint keeps it, folded from the history:
its steps at the index each had in its turn, the last summary and subtitle, and nothing from a
call that failed."""

from __future__ import annotations

import json

from actors.codecs.checkpoint_state import build_state, progress_state
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    Role,
    TextPart,
    ToolResultContent,
)
from actors.turn.tool_round import message_indexes
from wire.proto import agent_v1_pb2 as agent


def user(text: str) -> CanonicalMessage:
    return CanonicalMessage(f"u:{text}", Role.USER, Origin.RUNTIME, PartsContent((TextPart(text),)))


def update(index: int, call_id: str, **arguments: str) -> CanonicalToolCall:
    return CanonicalToolCall(index, call_id, "UpdateCurrentStep", json.dumps(arguments), "m:1")


def pair(
    round_id: str, call: CanonicalToolCall, *, text: str = "", error: bool = False
) -> tuple[CanonicalMessage, CanonicalMessage]:
    assistant = AssistantContent(text=text, tool_round_id=round_id, tool_calls=(call,))
    result = ToolResultContent(call.call_id, call.name, "shown", error)
    return (
        CanonicalMessage(f"{call.call_id}:a", Role.ASSISTANT, Origin.ASSISTANT, assistant),
        CanonicalMessage(f"{call.call_id}:r", Role.TOOL, Origin.TOOL, result),
    )


def read(index: int, call_id: str) -> CanonicalToolCall:
    return CanonicalToolCall(index, call_id, "Read", '{"path": "a.txt"}', "m:1")


def test_steps_get_the_index_the_call_had_in_its_turn_whatever_the_completion_order() -> None:
    # Round 1: text, then (provider indexes 1 and 2, as Anthropic numbers blocks after a text
    # block) a Read and an update; the update completed first, so its pair comes first.
    step = update(2, "c_step", current_step="reading")
    first = AssistantContent(
        text="Starting.", tool_round_id="r1", tool_calls=(read(1, "c_read"), step)
    )
    history = (
        user("old turn"),
        CanonicalMessage("old", Role.ASSISTANT, Origin.ASSISTANT, AssistantContent(text="Done.")),
        user("check it"),
        *pair("r1", step, text="Starting."),
        *pair("r1", read(1, "c_read")),
        *pair("r2", update(0, "c_fail", current_step="never shown"), error=True),
        *pair("r3", update(0, "c_sum", final_summary="All read.", completed_subtitle="1 file")),
        *pair("r4", update(0, "c_sum2", final_summary="All read twice.")),
    )
    state = progress_state(history)
    assert state is not None
    assert [(e.step, e.message_index) for e in state.history] == [("reading", 3)]
    assert (state.final_summary, state.completed_subtitle) == ("All read twice.", "1 file")
    # The same index the running call was given.
    assert message_indexes(history[:3], "r1", first) == {"c_step": 3}


def test_no_successful_update_is_no_state() -> None:
    assert progress_state((user("hi"),)) is None
    failed = pair("r1", update(0, "c", current_step="x"), error=True)
    assert progress_state((user("hi"), *failed)) is None


def test_build_state_replaces_the_whole_map_and_keeps_it_without_progress() -> None:
    base = agent.ConversationStateStructure()
    base.communicate_update_states_by_parent_tool_call_id["other"].final_summary = "stale"
    turn = agent.CommunicateUpdateTurnState(final_summary="now")
    kept = build_state(base, roots=(), turns=(), pending=(), mode=1)
    assert set(kept.communicate_update_states_by_parent_tool_call_id) == {"other"}
    replaced = build_state(base, roots=(), turns=(), pending=(), mode=1, progress=("call_p", turn))
    assert dict(replaced.communicate_update_states_by_parent_tool_call_id) == {"call_p": turn}
    cleared = build_state(base, roots=(), turns=(), pending=(), mode=1, progress=("call_p", None))
    assert not cleared.communicate_update_states_by_parent_tool_call_id
