"""OpenRouter's reasoning fields in the Chat adapter, against the fake over real HTTP.

OpenRouter streams ``delta.reasoning`` (text) and ``delta.reasoning_details`` (typed objects in
fragments sharing an ``index``); the text is thinking, the joined details go back on the
assistant message as ``reasoning_details``, only to the endpoint that streamed them.
"""

from __future__ import annotations

from typing import Any

import pytest

from actors.conversation.events import ThinkingDelta
from actors.conversation.model import ReplayState
from actors.conversation.request import (
    AssistantMessage,
    ProjectedMessage,
    ProviderType,
    ToolResultMessage,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, chat_events, openrouter_events
from tests.support.request_schemas import request_problems
from tests.wire.test_provider_adapters import HISTORY, fake, make_request, make_route, play
from wire.providers.errors import FailureKind, ProviderFailure
from wire.providers.openai_chat import OpenAiChatAdapter, origin

__all__ = ["fake"]

CHAT = ProviderType.OPENAI_CHAT
CALL = FakeToolCall("call_1", "read_file", ('{"path":"/a"}',))
DETAILS = [
    [{"type": "reasoning.text", "text": "Let me ", "format": "anthropic-claude-v1", "index": 0}],
    [{"type": "reasoning.text", "text": "think.", "format": "anthropic-claude-v1", "index": 0}],
    [
        {
            "type": "reasoning.text",
            "text": "",
            "signature": "sig-abc",
            "format": "anthropic-claude-v1",
            "index": 0,
        },
        {"type": "reasoning.encrypted", "data": "opaque==", "format": "x", "index": 1},
    ],
]
JOINED = [
    {
        "type": "reasoning.text",
        "text": "Let me think.",
        "format": "anthropic-claude-v1",
        "index": 0,
        "signature": "sig-abc",
    },
    {"type": "reasoning.encrypted", "data": "opaque==", "format": "x", "index": 1},
]


async def round_one(fake: FakeProvider, **events: Any) -> AssistantMessage:
    outcome = await play(fake, CHAT, openrouter_events(tools=[CALL], **events))
    return outcome.result.assistant_message()


def next_history(assistant: AssistantMessage) -> tuple[ProjectedMessage, ...]:
    return (*HISTORY, assistant, ToolResultMessage("call_1", "read_file", "contents"))


async def test_openrouter_reasoning_is_thinking_and_details_are_joined_per_index(
    fake: FakeProvider,
) -> None:
    outcome = await play(
        fake, CHAT, openrouter_events(reasoning=["Let me ", "think."], details=DETAILS, text=["ok"])
    )
    deltas = [e for e in outcome.events if isinstance(e, ThinkingDelta)]
    assert deltas == [ThinkingDelta("Let me "), ThinkingDelta("think.")]
    here = origin(make_route(CHAT, fake.base_url))
    assert outcome.result.replay == ReplayState(
        "openai_chat", {"origin": here, "reasoning": "Let me think.", "reasoning_details": JOINED}
    )


async def test_openrouter_details_go_back_exactly_in_their_native_field(
    fake: FakeProvider,
) -> None:
    assistant = await round_one(fake, reasoning=["Let me ", "think."], details=DETAILS)
    await play(fake, CHAT, chat_events(text=["done"]), make_request(next_history(assistant)))
    recorded = fake.requests[-1]
    message = recorded.json["messages"][2]
    assert message["reasoning_details"] == JOINED
    assert "reasoning" not in message and "reasoning_content" not in message
    assert message["tool_calls"][0]["id"] == "call_1"
    assert recorded.problems == ()  # the strict schema pass allows the field on assistants only


async def test_openrouter_reasoning_without_details_goes_back_as_reasoning(
    fake: FakeProvider,
) -> None:
    assistant = await round_one(fake, reasoning=["plain ", "text"])
    await play(fake, CHAT, chat_events(text=["done"]), make_request(next_history(assistant)))
    message = fake.requests[-1].json["messages"][2]
    assert message["reasoning"] == "plain text"
    assert "reasoning_details" not in message


async def test_openrouter_details_go_only_to_the_endpoint_that_streamed_them(
    fake: FakeProvider,
) -> None:
    assistant = await round_one(fake, reasoning=["r"], details=DETAILS)
    request = make_request(next_history(assistant))
    other = OpenAiChatAdapter().build_call(request, make_route(CHAT, "http://other.example/v1"))
    assert b"reasoning" not in other.body
    off = make_route(CHAT, fake.base_url, replay_reasoning=False)
    assert b"reasoning" not in OpenAiChatAdapter().build_call(request, off).body
    mine = OpenAiChatAdapter().build_call(request, make_route(CHAT, fake.base_url))
    assert b'"reasoning_details":[' in mine.body


async def test_reasoning_content_wins_over_a_duplicate_reasoning_field(
    fake: FakeProvider,
) -> None:
    events = chat_events(thinking=["why"], text=["ok"])
    events[1] = type(events[1]).json(
        {"choices": [{"index": 0, "delta": {"reasoning_content": "why", "reasoning": "why"}}]}
    )
    outcome = await play(fake, CHAT, events)
    assert outcome.result.thinking == "why"
    replay = outcome.result.replay
    assert replay is not None and set(replay.value) == {"origin", "reasoning_content"}


@pytest.mark.parametrize(
    "value", [{"reasoning_details": "not a list"}, {"reasoning": 3}, {"origin": "x"}]
)
def test_malformed_openrouter_replay_state_is_refused(value: dict[str, Any]) -> None:
    assistant = AssistantMessage(text="x", replay=ReplayState("openai_chat", value))
    with pytest.raises(ProviderFailure) as raised:
        OpenAiChatAdapter().build_call(
            make_request((*HISTORY, assistant)), make_route(CHAT, "http://x")
        )
    assert raised.value.kind is FailureKind.PROTOCOL


def test_reasoning_details_on_a_user_message_breaks_the_schema_pass() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi", "reasoning_details": []}],
    }
    problems = request_problems("/v1/chat/completions", body)
    assert any("messages[0].reasoning_details" in p for p in problems), problems
