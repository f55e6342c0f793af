"""Fuzzing the provider stream decoders: the SSE decoder, the three adapters' decoders and the
canonical grammar behind them, fed mutated recorded streams (bytes flipped, events dropped,
repeated or swapped, JSON values replaced by values of other types). Whatever the stream, only
``ProviderFailure`` escapes, and the result of a stream that passes is well-formed."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from actors.conversation.events import CallStarted
from actors.conversation.request import ModelRoute, ProviderType
from actors.conversation.secret import Secret
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
from tests.support.fuzz import DEEP_MARK, chunked, deepen, fuzz_settings, json_paths, mutated
from wire.providers.adapter import MAX_TOKEN_COUNT
from wire.providers.errors import FailureKind, ProviderFailure
from wire.providers.formats import adapter_for
from wire.providers.grammar import StreamGrammar
from wire.providers.sse import SseDecoder

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
    | st.sampled_from([-1, 0, 2**31, 2**63, 2**64, 10**30])
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(
        ["", "[DONE]", "stop", "tool_use", "function_call", "text", "thinking", DEEP_MARK]
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)


EDGE_NUMBERS = st.sampled_from([-1, 2**31, 2**53 + 1, 2**63, 2**64, 10**30, 1.5, True])


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        document = document[key]
    return document


@st.composite
def value_mutation(draw: st.DrawFn, event: SseEvent) -> SseEvent:
    """The event with one JSON value replaced, or one key removed."""
    try:
        document = json.loads(event.data)
    except ValueError:
        return event
    paths = json_paths(document)
    if not paths:
        return event
    numbers = [p for p in paths if type(_at(document, p)) is int]
    if len(numbers) > 0 and draw(st.booleans()):
        # Counts and indexes at their edges: negative, 32- and 64-bit overflow.
        path = draw(st.sampled_from(numbers))
        _at(document, path[:-1])[path[-1]] = draw(EDGE_NUMBERS)
        return SseEvent.json(document, event=event.event)
    path = draw(st.sampled_from(paths))
    parent = _at(document, path[:-1])
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
    events = [SseEvent(deepen(e.data), e.event, e.id) for e in events]
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
    if result.usage is not None:
        # Counts go to 64-bit columns and TurnEndedUpdate's int64 fields, summed per turn.
        counts = [getattr(result.usage, f) for f in result.usage.__struct_fields__]
        assert all(c is None or 0 <= c <= MAX_TOKEN_COUNT for c in counts), result.usage


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


@pytest.mark.parametrize(
    ("provider_type", "field"),
    [
        (ProviderType.OPENAI_CHAT, b'"prompt_tokens":10'),
        (ProviderType.OPENAI_RESPONSES, b'"input_tokens":10'),
        (ProviderType.ANTHROPIC, b'"input_tokens":10'),
    ],
)
def test_a_token_count_beyond_2_to_the_53_is_a_protocol_failure(
    provider_type: ProviderType, field: bytes
) -> None:
    """Found by the fuzzer: 2**63 passed as usage and ``turn_ended``'s int64 field raised
    ValueError in the run (and the call record could not store it)."""
    body = next(
        encode_events(events)
        for events in RECORDED[provider_type]
        if field in encode_events(events)
    )
    huge = field.replace(b"10", str(2**63).encode())
    decoder = adapter_for(provider_type).new_decoder(_route(provider_type))
    with pytest.raises(ProviderFailure) as caught:
        decoder.feed(body.replace(field, huge))
    assert caught.value.kind is FailureKind.PROTOCOL
    assert "out-of-range" in caught.value.message
