"""Fuzzing the provider stream decoders: the SSE decoder, the three adapters' decoders and the
canonical grammar behind them, fed mutated recorded streams (bytes flipped, events dropped,
repeated or swapped, JSON values replaced by values of other types). Whatever the stream, only
``ProviderFailure`` escapes, and the result of a stream that passes is well-formed."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from actors.conversation.events import CallStarted
from actors.conversation.request import ModelRoute, ProviderType
from actors.conversation.secret import Secret
from actors.providers.adapter import adapter_for
from actors.providers.errors import ProviderFailure
from actors.providers.grammar import StreamGrammar
from actors.providers.sse import SseDecoder
from tests.support.fake_provider import (
    FakeRedactedThinking,
    FakeThinking,
    FakeToolCall,
    SseEvent,
    anthropic_events,
    anthropic_usage,
    chat_events,
    chat_usage,
    encode_events,
    responses_events,
    responses_usage,
)
from tests.support.fuzz import chunked, fuzz_settings, mutated

TOOLS = (
    FakeToolCall("call_a", "Read", ('{"path"', ': "a.py"}')),
    FakeToolCall("call_b", "Grep", ('{"pattern": "x"}',)),
)


def _route(provider_type: ProviderType) -> ModelRoute:
    return ModelRoute(
        provider_id=1,
        provider_name="fuzz",
        provider_type=provider_type,
        base_url="http://127.0.0.1:9/v1",
        api_key=Secret("sk-fuzz"),
        headers=(),
        public_id="fuzz0001",
        model_id="fuzz-model",
        display_name="Fuzz",
        max_output_tokens=1024,
    )


RECORDED: dict[ProviderType, list[list[SseEvent]]] = {
    ProviderType.OPENAI_CHAT: [
        chat_events(text=["Hel", "lo"], thinking=["hm"], usage=chat_usage(10, 5)),
        chat_events(text=["a"], tools=TOOLS, usage=chat_usage(10, 5, cached=3, reasoning=1)),
    ],
    ProviderType.OPENAI_RESPONSES: [
        responses_events(text=["Hel", "lo"], thinking=["hm"], encrypted_reasoning="enc"),
        responses_events(text=["a"], tools=TOOLS, usage=responses_usage(10, 5)),
        responses_events(text=["cut"], tools=TOOLS[:1], terminal="incomplete"),
    ],
    ProviderType.ANTHROPIC: [
        anthropic_events(
            text=["Hel", "lo"],
            thinking=[FakeThinking(("hm",), "sig"), FakeRedactedThinking("opaque")],
            start_usage=anthropic_usage(input=10, output=1),
            delta_usage=anthropic_usage(output=5),
        ),
        anthropic_events(text=["a"], tools=TOOLS),
    ],
}

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["", "[DONE]", "stop", "tool_use", "function_call", "text", "thinking"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a decoded JSON document (the root excluded)."""
    found: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found.append((*prefix, key))
        found.extend(_paths(child, (*prefix, key)))
    return found


@st.composite
def value_mutation(draw: st.DrawFn, event: SseEvent) -> SseEvent:
    """The event with one JSON value replaced, or one key removed."""
    try:
        document = json.loads(event.data)
    except ValueError:
        return event
    paths = _paths(document)
    if not paths:
        return event
    path = draw(st.sampled_from(paths))
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(JSON_VALUES)
    return SseEvent.json(document, event=event.event)


@st.composite
def mutated_stream(draw: st.DrawFn, provider_type: ProviderType) -> bytes:
    events = list(draw(st.sampled_from(RECORDED[provider_type])))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(("value", "value", "drop", "repeat", "swap")))
        at = draw(st.integers(0, len(events) - 1)) if events else 0
        if not events:
            break
        if op == "value":
            events[at] = draw(value_mutation(events[at]))
        elif op == "drop":
            del events[at]
        elif op == "repeat":
            events.insert(at, events[at])
        elif op == "swap" and at + 1 < len(events):
            events[at], events[at + 1] = events[at + 1], events[at]
    newline = draw(st.sampled_from(("\n", "\r\n", "\r")))
    body = encode_events(events, newline)
    return draw(mutated(body, max_ops=2)) if draw(st.booleans()) else body


def _play(provider_type: ProviderType, chunks: list[bytes]) -> None:
    """What the transport does with a body; only ``ProviderFailure`` may come out of it."""
    decoder = adapter_for(provider_type).new_decoder(_route(provider_type))
    grammar = StreamGrammar()
    grammar.accept(CallStarted("call-fuzz"))
    try:
        for chunk in chunks:
            for event in decoder.feed(chunk):
                grammar.accept(event)
        for event in decoder.finish():
            grammar.accept(event)
        grammar.end_of_stream()
    except ProviderFailure:
        return
    result = grammar.result()
    assert all(call.call_id and call.name for call in result.calls)


def _fuzz(provider_type: ProviderType) -> Any:
    @fuzz_settings()
    @given(mutated_stream(provider_type).flatmap(chunked))
    def run(chunks: list[bytes]) -> None:
        _play(provider_type, chunks)

    return run


test_openai_chat_streams_fail_only_with_provider_failures = _fuzz(ProviderType.OPENAI_CHAT)
test_openai_responses_streams_fail_only_with_provider_failures = _fuzz(
    ProviderType.OPENAI_RESPONSES
)
test_anthropic_streams_fail_only_with_provider_failures = _fuzz(ProviderType.ANTHROPIC)


def test_the_recorded_streams_pass_unmutated() -> None:
    """The seeds are valid: a fuzz run starts from streams the decoders accept."""
    for provider_type, streams in RECORDED.items():
        for events in streams:
            decoder = adapter_for(provider_type).new_decoder(_route(provider_type))
            grammar = StreamGrammar()
            grammar.accept(CallStarted("call-fuzz"))
            for event in decoder.feed(encode_events(events)):
                grammar.accept(event)
            decoder.finish()
            grammar.end_of_stream()
            assert grammar.done


@fuzz_settings()
@given(st.binary(max_size=512).flatmap(chunked))
def test_sse_decoder_on_random_bytes_fails_only_with_provider_failures(
    chunks: list[bytes],
) -> None:
    decoder = SseDecoder(max_line_bytes=256)
    try:
        for chunk in chunks:
            for event in decoder.feed(chunk):
                assert len(event.data) <= 256
        decoder.finish()
    except ProviderFailure:
        pass


def test_a_stream_without_line_ends_is_refused_at_the_limit() -> None:
    """Memory stays bounded: a runaway line is refused once it passes the limit."""
    decoder = SseDecoder(max_line_bytes=1024)
    try:
        for _ in range(100):
            decoder.feed(b"data: " + b"x" * 100)
    except ProviderFailure as failure:
        assert "longer than 1024" in failure.message
    else:
        raise AssertionError("a 10 KB line was accepted under a 1 KB limit")
