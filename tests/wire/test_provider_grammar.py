"""The canonical stream grammar: every rule refuses its violation; valid streams assemble."""

from __future__ import annotations

import pytest

from actors.conversation.events import (
    CallDone,
    CallStarted,
    FinishReason,
    ProviderEvent,
    ReplayStateReported,
    TextDelta,
    TextEnded,
    TextStarted,
    ThinkingDelta,
    ThinkingEnded,
    ThinkingStarted,
    ToolCallArgumentsDelta,
    ToolCallEnded,
    ToolCallStarted,
    Usage,
    UsageReported,
)
from actors.conversation.model import ReplayState
from actors.conversation.request import AssistantMessage, ProviderToolCall
from wire.providers.errors import FailureKind, ProviderFailure
from wire.providers.grammar import CallResult, StreamGrammar

START = CallStarted("run-1:0")
STOP = CallDone(FinishReason.STOP)
TOOL_USE = CallDone(FinishReason.TOOL_USE)
REPLAY = ReplayStateReported(ReplayState("anthropic", {"blocks": []}))
USAGE = UsageReported(Usage(input_tokens=3))


def run(events: list[ProviderEvent]) -> StreamGrammar:
    grammar = StreamGrammar()
    for event in events:
        grammar.accept(event)
    return grammar


def call(index: int = 0, call_id: str = "call_a", args: str = "{}") -> list[ProviderEvent]:
    return [
        ToolCallStarted(index, call_id, "read_file"),
        ToolCallArgumentsDelta(index, args),
        ToolCallEnded(index),
    ]


def test_valid_sequence_is_accepted_and_assembled() -> None:
    grammar = run(
        [
            START,
            ThinkingStarted(),
            ThinkingDelta("I should "),
            ThinkingDelta("look."),
            ThinkingEnded(),
            TextStarted(),
            TextDelta("Reading "),
            TextDelta("both."),
            # Chat streams parallel calls interleaved, with sparse provider indexes.
            ToolCallStarted(7, "call_b", "grep"),
            ToolCallStarted(2, "call_a", "read_file"),
            ToolCallArgumentsDelta(7, '{"pat'),
            ToolCallArgumentsDelta(2, '{"path"'),
            ToolCallArgumentsDelta(7, 'tern":"x"}'),
            ToolCallArgumentsDelta(2, ':"/tmp/\u00e9"}'),
            TextEnded(),
            ToolCallEnded(7),
            ToolCallEnded(2),
            USAGE,
            REPLAY,
            TOOL_USE,
        ]
    )
    grammar.end_of_stream()
    result = grammar.result()
    assert result == CallResult(
        text="Reading both.",
        thinking="I should look.",
        calls=(
            ProviderToolCall(2, "call_a", "read_file", '{"path":"/tmp/\u00e9"}'),
            ProviderToolCall(7, "call_b", "grep", '{"pattern":"x"}'),
        ),
        replay=REPLAY.state,
        usage=USAGE.usage,
        finish=FinishReason.TOOL_USE,
    )
    assert result.assistant_message() == AssistantMessage(
        text="Reading both.", thinking="I should look.", replay=REPLAY.state, calls=result.calls
    )


def test_text_may_reopen_and_length_needs_no_calls() -> None:
    grammar = run(
        [
            START,
            TextStarted(),
            TextDelta("a"),
            TextEnded(),
            TextStarted(),
            TextDelta("b"),
            TextEnded(),
            CallDone(FinishReason.LENGTH),
        ]
    )
    assert grammar.result().text == "ab"
    assert grammar.result().usage is None and grammar.result().replay is None


def test_minimal_stream_is_valid() -> None:
    grammar = run([START, STOP])
    assert grammar.result().finish is FinishReason.STOP


def rejects(events: list[ProviderEvent], phrase: str) -> None:
    grammar = StreamGrammar()
    for event in events[:-1]:
        grammar.accept(event)
    with pytest.raises(ProviderFailure) as raised:
        grammar.accept(events[-1])
    assert raised.value.kind is FailureKind.PROTOCOL
    assert phrase in raised.value.message


def test_event_before_call_started() -> None:
    rejects([TextStarted()], "TextStarted before CallStarted")


def test_second_call_started() -> None:
    rejects([START, START], "a second CallStarted")


def test_text_delta_outside_text() -> None:
    rejects([START, TextDelta("x")], "TextDelta outside")


def test_text_ended_without_text() -> None:
    rejects([START, TextEnded()], "TextEnded without")


def test_text_opened_twice() -> None:
    rejects([START, TextStarted(), TextStarted()], "TextStarted while text is open")


def test_text_delta_after_text_ended() -> None:
    rejects([START, TextStarted(), TextEnded(), TextDelta("x")], "TextDelta outside")


def test_thinking_delta_outside_thinking() -> None:
    rejects([START, TextStarted(), ThinkingDelta("x")], "ThinkingDelta outside")


def test_thinking_ended_without_thinking() -> None:
    rejects([START, ThinkingEnded()], "ThinkingEnded without")


def test_thinking_opened_twice() -> None:
    rejects([START, ThinkingStarted(), ThinkingStarted()], "ThinkingStarted while")


def test_done_while_text_open() -> None:
    rejects([START, TextStarted(), STOP], "CallDone while text is open")


def test_done_while_thinking_open() -> None:
    rejects([START, ThinkingStarted(), STOP], "CallDone while thinking is open")


def test_done_while_tool_call_open() -> None:
    rejects([START, ToolCallStarted(4, "c", "t"), TOOL_USE], "tool call index 4 is open")


def test_anything_after_done() -> None:
    rejects([START, STOP, USAGE], "UsageReported after CallDone")


def test_second_done() -> None:
    rejects([START, STOP, STOP], "CallDone after CallDone")


def test_duplicate_tool_index() -> None:
    rejects([START, *call(0, "a"), ToolCallStarted(0, "b", "t")], "index 0 started twice")


def test_duplicate_tool_call_id() -> None:
    rejects([START, *call(0, "a"), ToolCallStarted(1, "a", "t")], "id 'a' started twice")


def test_empty_tool_call_id() -> None:
    rejects([START, ToolCallStarted(0, "", "t")], "empty call id or name")


def test_argument_delta_for_unknown_index() -> None:
    rejects([START, *call(0), ToolCallArgumentsDelta(1, "{}")], "unknown tool call index 1")


def test_argument_delta_after_the_call_ended() -> None:
    rejects([START, *call(0), ToolCallArgumentsDelta(0, "{}")], "index 0 after it ended")


def test_tool_call_ended_twice() -> None:
    rejects([START, *call(0), ToolCallEnded(0)], "ToolCallEnded for tool call index 0 after")


def test_tool_call_ended_for_unknown_index() -> None:
    rejects([START, ToolCallEnded(3)], "ToolCallEnded for unknown tool call index 3")


@pytest.mark.parametrize("arguments", ["", '{"a":', "{'a': 1}", "nul", "[]", "1", '"text"', "null"])
def test_arguments_that_are_not_a_json_object_are_the_models_to_hear_about(
    arguments: str,
) -> None:
    """Not a provider failure: the call is kept verbatim and its tool result says why it did
    not run (``wire.tools.args``)."""
    grammar = StreamGrammar()
    for event in [START, *call(0, args=arguments), TOOL_USE]:
        grammar.accept(event)
    (kept,) = grammar.result().calls
    assert kept.arguments_json == arguments


def test_second_replay_state() -> None:
    rejects([START, REPLAY, REPLAY], "a second ReplayStateReported")


def test_second_usage() -> None:
    rejects([START, USAGE, USAGE], "a second UsageReported")


def test_tool_use_without_calls() -> None:
    rejects([START, TOOL_USE], "CallDone(tool_use) without any tool call")


def test_stop_with_calls() -> None:
    rejects([START, *call(0), STOP], "CallDone(stop) after tool calls")


def test_end_of_stream_before_done_is_a_provider_failure() -> None:
    grammar = run([START, TextStarted(), TextDelta("partial")])
    with pytest.raises(ProviderFailure) as raised:
        grammar.end_of_stream()
    assert raised.value.kind is FailureKind.PROVIDER
    assert raised.value.message == "provider stream ended before done"
    assert grammar.text == "partial"  # partial output stays readable for diagnostics


def test_end_of_stream_with_nothing_at_all() -> None:
    with pytest.raises(ProviderFailure) as raised:
        StreamGrammar().end_of_stream()
    assert raised.value.kind is FailureKind.PROVIDER


def test_result_before_done_is_refused() -> None:
    with pytest.raises(RuntimeError):
        run([START]).result()
