"""Canonical messages -> provider-neutral projection: tool-pair regrouping and prefix stability."""

from __future__ import annotations

import itertools

import pytest

from actors.conversation import request as neutral
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    ReplayState,
    Role,
    TextPart,
    ToolResultContent,
)
from actors.conversation.projection import ProjectionError, project

REPLAY = ReplayState("anthropic", {"blocks": [{"type": "thinking", "signature": "s"}]})


def user(text: str, mid: str = "u") -> CanonicalMessage:
    return CanonicalMessage(mid, Role.USER, Origin.RUNTIME, PartsContent((TextPart(text),)))


def call(index: int, call_id: str) -> CanonicalToolCall:
    return CanonicalToolCall(index, call_id, "Read", f'{{"path": "/{call_id}"}}', "run:0")


def pair(round_id: str, c: CanonicalToolCall, first: bool) -> list[CanonicalMessage]:
    """One committed pair; the round's first pair carries its text, thinking and replay."""
    assistant = AssistantContent(
        text="let me look" if first else "",
        thinking="hmm" if first else "",
        tool_round_id=round_id,
        replay_state=REPLAY if first else None,
        tool_calls=(c,),
    )
    return [
        CanonicalMessage(f"{round_id}:{c.call_id}:a", Role.ASSISTANT, Origin.ASSISTANT, assistant),
        CanonicalMessage(
            f"{round_id}:{c.call_id}:r",
            Role.TOOL,
            Origin.TOOL,
            ToolResultContent(c.call_id, "Read", f"contents of {c.call_id}", False),
        ),
    ]


def final(text: str, mid: str) -> CanonicalMessage:
    return CanonicalMessage(mid, Role.ASSISTANT, Origin.ASSISTANT, AssistantContent(text=text))


def test_round_completed_in_reverse_order_projects_as_one_assistant_then_results() -> None:
    calls = [call(0, "a"), call(1, "b"), call(2, "c")]
    # Results arrived c, b, a: pairs are stored in that completion order.
    history = [user("read three files")]
    for position, c in enumerate(reversed(calls)):
        history += pair("r1", c, first=position == 0)
    projected = project(history)
    assert projected[0] == neutral.UserMessage((neutral.ProviderTextPart("read three files"),))
    assistant = projected[1]
    assert isinstance(assistant, neutral.AssistantMessage)
    assert [c.call_id for c in assistant.calls] == ["a", "b", "c"]  # by provider index
    assert assistant.text == "let me look" and assistant.thinking == "hmm"
    assert assistant.replay == REPLAY
    assert all(isinstance(m, neutral.ToolResultMessage) for m in projected[2:])
    results = [m for m in projected[2:] if isinstance(m, neutral.ToolResultMessage)]
    assert [m.call_id for m in results] == ["c", "b", "a"]


def test_each_settled_projection_is_a_prefix_of_the_next() -> None:
    history = [user("go")]
    history += pair("r1", call(0, "a"), True) + pair("r1", call(1, "b"), False)
    history += [final("done", "f1"), user("again", "u2")]
    history += pair("r2", call(0, "c"), True)
    history += [final("done again", "f2")]
    settled_lengths = [1, 5, 6, 7, 9, 10]
    projections = [project(history[:n]) for n in settled_lengths]
    for shorter, longer in itertools.pairwise(projections):
        assert longer[: len(shorter)] == shorter


def test_a_call_without_its_result_is_refused() -> None:
    history = [user("go"), *pair("r1", call(0, "a"), True)[:1]]
    with pytest.raises(ProjectionError, match="tool call a has no result"):
        project(history)


def test_a_result_outside_its_round_is_refused() -> None:
    orphan = pair("r1", call(0, "a"), True)[1]
    with pytest.raises(ProjectionError, match="outside its tool round"):
        project([user("go"), orphan])


def test_a_duplicate_result_is_refused() -> None:
    messages = pair("r1", call(0, "a"), True)
    with pytest.raises(ProjectionError, match="duplicate result"):
        project([user("go"), *messages, messages[1]])


def test_a_round_with_two_replay_states_is_refused() -> None:
    history = [user("go"), *pair("r1", call(0, "a"), True), *pair("r1", call(1, "b"), True)]
    with pytest.raises(ProjectionError, match="repeats its replay state"):
        project(history)


def test_distinct_rounds_never_merge() -> None:
    history = [user("go"), *pair("r1", call(0, "a"), True), *pair("r2", call(0, "b"), True)]
    projected = project(history)
    assistants = [m for m in projected if isinstance(m, neutral.AssistantMessage)]
    assert [[c.call_id for c in a.calls] for a in assistants] == [["a"], ["b"]]


def test_system_messages_never_enter_the_history() -> None:
    system = CanonicalMessage(
        "system", Role.SYSTEM, Origin.PROMPT, PartsContent((TextPart("You are…"),))
    )
    with pytest.raises(ProjectionError, match="system message"):
        project([system, user("go")])
