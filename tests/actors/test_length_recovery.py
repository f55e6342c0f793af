"""Length recovery's pure parts: counting a turn's continuations, which calls the limit cut,
one text step for a continued answer, and a continuation request that is not a new turn."""

from __future__ import annotations

from actors.codecs.checkpoint_state import switched_mode
from actors.conversation.events import (
    TextDelta,
    TextEnded,
    TextStarted,
    ThinkingDelta,
    ThinkingEnded,
    ThinkingStarted,
)
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    Role,
    TextPart,
    ToolResultContent,
    starts_turn,
)
from actors.protocols.checkpoint import AssistantStep, ThinkingStep
from actors.protocols.provider import ProviderEventsReceived
from actors.turn.length import MAX_CONTINUATIONS, continuation, continuations, cut_calls
from actors.turn.model_call import ModelCall
from wire.proto import agent_v1_pb2 as agent


def user(text: str, message_id: str = "runtime:run-request:r1") -> CanonicalMessage:
    return CanonicalMessage(message_id, Role.USER, Origin.RUNTIME, PartsContent((TextPart(text),)))


def test_a_continuation_request_is_a_runtime_message_inside_the_turn() -> None:
    history = [user("go")]
    pair = continuation("r1", 0, AssistantContent(text="half"), history)
    assert pair is not None  # the first cut is continued
    answer, ask = pair
    assert answer.role is Role.ASSISTANT and answer.content == AssistantContent(text="half")
    assert ask.role is Role.USER and ask.origin is Origin.RUNTIME
    assert ask.message_id == f"runtime:{ask.runtime_event_id}"
    assert starts_turn(history[0]) and not starts_turn(ask)


def test_the_limit_counts_the_continuations_of_the_current_turn_only() -> None:
    history = [user("go")]
    for index in range(MAX_CONTINUATIONS):
        assert continuations(history) == index
        added = continuation("r1", index, AssistantContent(text="x"), history)
        assert added is not None
        history.extend(added)
    assert continuation("r1", 9, AssistantContent(text="x"), history) is None
    # A new user turn starts counting again.
    history.append(user("again", "runtime:run-request:r2"))
    assert continuations(history) == 0


def test_only_calls_whose_arguments_are_not_a_whole_object_are_cut() -> None:
    calls = [
        CanonicalToolCall(0, "a", "Read", '{"path": "/a"}', "m"),
        CanonicalToolCall(1, "b", "Write", '{"path": "/b", "contents": "li', "m"),
        CanonicalToolCall(2, "c", "Write", "", "m"),
    ]
    assert cut_calls(calls) == ("b", "c")


def test_a_continued_answer_is_one_text_step_and_thinking_stays_its_own() -> None:
    first = ModelCall("r1:0", 0)
    first.release()
    first.receive(
        ProviderEventsReceived("r1:0", (TextStarted(), TextDelta("The start"), TextEnded())), 0.0
    )
    second = ModelCall("r1:1", 1, after=first)
    step = second.receive(
        ProviderEventsReceived("r1:1", (TextStarted(), TextDelta(", the end."), TextEnded())), 1.0
    )
    assert step.frames  # not held: no checkpoint comes between the two calls
    assert second.steps == [AssistantStep("The start, the end.")]
    third = ModelCall("r1:2", 2, after=second)
    thought = (ThinkingStarted(), ThinkingDelta("hmm"), ThinkingEnded())
    third.receive(ProviderEventsReceived("r1:2", thought), 2.0)
    third.receive(ProviderEventsReceived("r1:2", (TextStarted(), TextDelta("!"), TextEnded())), 3.0)
    assert [type(s) for s in third.steps] == [AssistantStep, ThinkingStep, AssistantStep]


def test_an_approved_switch_still_counts_after_a_continuation() -> None:
    call = CanonicalToolCall(0, "s1", "SwitchMode", '{"target_mode_id": "plan"}', "m")
    switch = AssistantContent(tool_round_id="round-s1", tool_calls=(call,))
    result = ToolResultContent("s1", "SwitchMode", "ok", False)
    history = [
        user("go"),
        CanonicalMessage("s1:a", Role.ASSISTANT, Origin.ASSISTANT, switch),
        CanonicalMessage("s1:r", Role.TOOL, Origin.TOOL, result),
    ]
    added = continuation("r1", 3, AssistantContent(text="cut"), history)
    assert added is not None
    assert switched_mode([*history, *added]) == agent.AGENT_MODE_PLAN
