"""The three provider adapters against the fake provider over real HTTP.

Each test builds the request with the adapter, sends it with a plain ``httpx`` stream, feeds the
raw network chunks to the adapter's decoder and every event to the stream grammar, exactly as
the transport does, and checks both directions: the canonical events and the body the fake got.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec
import pytest

pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
from actors.conversation.request import (
    AssistantMessage,
    LlmRequest,
    ModelRoute,
    ProjectedMessage,
    ProviderImagePart,
    ProviderTextPart,
    ProviderToolCall,
    ProviderType,
    Reasoning,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from actors.conversation.secret import Secret
from tests.support.fake_provider import (
    FakeProvider,
    FakeRedactedThinking,
    FakeThinking,
    FakeToolCall,
    RecordedRequest,
    Script,
    SseEvent,
    anthropic_error_event,
    anthropic_events,
    anthropic_usage,
    chat_chunk,
    chat_error_chunk,
    chat_events,
    chat_usage,
    encode_events,
    responses_error_event,
    responses_events,
    responses_failed_event,
    responses_usage,
    split_at,
)
from tests.support.request_schemas import request_problems
from wire.providers.anthropic import AnthropicAdapter
from wire.providers.errors import FailureKind, ProviderFailure
from wire.providers.formats import adapter_for
from wire.providers.grammar import CallResult, StreamGrammar
from wire.providers.openai_chat import OpenAiChatAdapter, origin
from wire.providers.openai_responses import OpenAiResponsesAdapter

CHAT, RESPONSES, ANTHROPIC, GEMINI = (
    ProviderType.OPENAI_CHAT,
    ProviderType.OPENAI_RESPONSES,
    ProviderType.ANTHROPIC,
    ProviderType.GEMINI,
)
ALL = [CHAT, RESPONSES, ANTHROPIC]
KEY = "sk-test-SECRET-0123456789"
MODEL_CALL_ID = "run-1:0"
MESSAGES_KEY = {CHAT: "messages", RESPONSES: "input", ANTHROPIC: "messages"}

READ_FILE = ToolSpec(
    name="read_file",
    description="Read a file from the workspace",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
)
HISTORY: tuple[ProjectedMessage, ...] = (
    UserMessage(
        parts=(
            ProviderTextPart("What is in "),
            ProviderTextPart("this picture?"),
            ProviderImagePart(mime_type="image/png", data=b"\x01\x02\x03"),
        )
    ),
)


def make_route(provider_type: ProviderType, base_url: str, **changes: Any) -> ModelRoute:
    route = ModelRoute(
        provider_id=1,
        provider_name="fake",
        provider_type=provider_type,
        base_url=base_url,
        api_key=Secret(KEY),
        headers=(("x-team", "blue"),),
        public_id="abcd1234",
        model_id="fake-model",
        display_name="Fake Model",
        max_output_tokens=4096 if provider_type is ANTHROPIC else None,
    )
    return msgspec.structs.replace(route, **changes)


def make_request(
    messages: tuple[ProjectedMessage, ...] = HISTORY, tools: tuple[ToolSpec, ...] = (READ_FILE,)
) -> LlmRequest:
    return LlmRequest(instructions="You are terse.", tools=tools, messages=messages)


@dataclass
class Outcome:
    """One call as the transport would see it."""

    events: list[ProviderEvent] = field(default_factory=list)
    grammar: StreamGrammar = field(default_factory=StreamGrammar)
    chunks: int = 0
    failure: ProviderFailure | None = None

    @property
    def result(self) -> CallResult:
        assert self.failure is None, self.failure
        return self.grammar.result()

    def take(self, events: list[ProviderEvent]) -> None:
        for event in events:
            self.grammar.accept(event)
            self.events.append(event)


async def exchange(
    fake: FakeProvider,
    provider_type: ProviderType,
    request: LlmRequest | None = None,
    route: ModelRoute | None = None,
) -> Outcome:
    adapter = adapter_for(provider_type)
    route = route or make_route(provider_type, fake.base_url)
    call = adapter.build_call(request or make_request(), route)
    decoder = adapter.new_decoder(route)
    outcome = Outcome()
    async with (
        httpx.AsyncClient(timeout=5.0) as client,
        client.stream(
            call.method, call.url, headers=list(call.headers), content=call.body
        ) as response,
    ):
        if not response.is_success:
            body = await response.aread()
            outcome.failure = adapter.http_error(response.status_code, body, route)
            return outcome
        outcome.take([CallStarted(MODEL_CALL_ID)])
        try:
            async for chunk in response.aiter_raw():
                outcome.chunks += 1
                outcome.take(decoder.feed(chunk))
            outcome.take(decoder.finish())
            outcome.grammar.end_of_stream()
        except ProviderFailure as failure:
            outcome.failure = failure
    return outcome


async def play(
    fake: FakeProvider,
    provider_type: ProviderType,
    script: Script | list[SseEvent],
    request: LlmRequest | None = None,
    route: ModelRoute | None = None,
) -> Outcome:
    fake.enqueue(script if isinstance(script, Script) else Script.sse(script))
    return await exchange(fake, provider_type, request, route)


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as provider:
        yield provider


def failed(outcome: Outcome, kind: FailureKind, *phrases: str) -> ProviderFailure:
    assert outcome.failure is not None, f"expected a failure, got {outcome.events}"
    assert outcome.failure.kind is kind, outcome.failure
    for phrase in phrases:
        assert phrase in outcome.failure.message, outcome.failure.message
    assert KEY not in outcome.failure.message
    return outcome.failure


# ---------------------------------------------------------------------------------------------
# Streams → canonical events


TEXT = [TextStarted(), TextDelta("Hel"), TextDelta("lo"), TextEnded()]


async def test_chat_text(fake: FakeProvider) -> None:
    outcome = await play(fake, CHAT, chat_events(text=["Hel", "lo"], usage=chat_usage(5, 2)))
    assert outcome.events == [
        CallStarted(MODEL_CALL_ID),
        *TEXT,
        UsageReported(Usage(input_tokens=5, output_tokens=2)),
        CallDone(FinishReason.STOP),
    ]


async def test_responses_text(fake: FakeProvider) -> None:
    events = responses_events(text=["Hel", "lo"], usage=responses_usage(8, 3))
    outcome = await play(fake, RESPONSES, events)
    assert outcome.events == [
        CallStarted(MODEL_CALL_ID),
        *TEXT,
        UsageReported(Usage(input_tokens=8, output_tokens=3)),
        CallDone(FinishReason.STOP),
    ]


async def test_anthropic_text(fake: FakeProvider) -> None:
    events = anthropic_events(
        text=["Hel", "lo"],
        start_usage=anthropic_usage(input=9, output=1),
        delta_usage=anthropic_usage(output=2),
    )
    outcome = await play(fake, ANTHROPIC, events)
    assert outcome.events == [
        CallStarted(MODEL_CALL_ID),
        *TEXT,
        UsageReported(Usage(input_tokens=9, output_tokens=2)),
        CallDone(FinishReason.STOP),
    ]


THINKING = [ThinkingStarted(), ThinkingDelta("wh"), ThinkingDelta("y"), ThinkingEnded()]
OK_TEXT = [TextStarted(), TextDelta("ok"), TextEnded()]


async def test_chat_thinking_is_reasoning_content(fake: FakeProvider) -> None:
    outcome = await play(fake, CHAT, chat_events(thinking=["wh", "y"], text=["ok"]))
    assert outcome.events == [
        CallStarted(MODEL_CALL_ID),
        *THINKING,
        *OK_TEXT,
        ReplayStateReported(
            ReplayState(
                "openai_chat",
                {"reasoning_content": "why", "origin": origin(make_route(CHAT, fake.base_url))},
            )
        ),
        CallDone(FinishReason.STOP),
    ]


async def test_responses_thinking_keeps_the_encrypted_reasoning_item(fake: FakeProvider) -> None:
    events = responses_events(thinking=["wh", "y"], encrypted_reasoning="opaque-1", text=["ok"])
    outcome = await play(fake, RESPONSES, events)
    item = {
        "id": "rs_fake",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "why"}],
        "encrypted_content": "opaque-1",
    }
    assert outcome.events == [
        CallStarted(MODEL_CALL_ID),
        *THINKING,
        *OK_TEXT,
        ReplayStateReported(ReplayState("openai_responses", {"items": [item]})),
        CallDone(FinishReason.STOP),
    ]


async def test_anthropic_thinking_keeps_signatures_and_redacted_blocks(
    fake: FakeProvider,
) -> None:
    events = anthropic_events(
        thinking=[
            FakeThinking(("wh", "y"), signature="signature-1"),
            FakeRedactedThinking("opaque-redacted"),
            FakeThinking(("more",), signature="signature-2"),
        ],
        text=["ok"],
    )
    outcome = await play(fake, ANTHROPIC, events)
    blocks = [
        {"type": "thinking", "thinking": "why", "signature": "signature-1"},
        {"type": "redacted_thinking", "data": "opaque-redacted"},
        {"type": "thinking", "thinking": "more", "signature": "signature-2"},
    ]
    assert outcome.events == [
        CallStarted(MODEL_CALL_ID),
        *THINKING,
        ThinkingStarted(),
        ThinkingDelta("more"),
        ThinkingEnded(),
        *OK_TEXT,
        ReplayStateReported(ReplayState("anthropic", {"blocks": blocks})),
        CallDone(FinishReason.STOP),
    ]
    assert outcome.result.thinking == "whymore"


# Two parallel calls, arguments in fragments that cut through keys, escapes and a multi-byte
# character; the second call uses a sparse provider index where the format allows one.
PARALLEL = [
    FakeToolCall("call_a", "read_file", ('{"pa', 'th": "/tmp/caf', "\u00e9 \u2603", '"}')),
    FakeToolCall("call_b", "read_file", ("{", '"path":', ' "/b\\n', '"', "}")),
]
ARGS_A = '{"path": "/tmp/caf\u00e9 \u2603"}'
ARGS_B = '{"path": "/b\\n"}'


def parallel_script(provider_type: ProviderType) -> list[SseEvent]:
    if provider_type is CHAT:
        tools = [PARALLEL[0], FakeToolCall(**{**PARALLEL[1].__dict__, "index": 3})]
        return chat_events(text=["Reading."], tools=tools, usage=chat_usage(5, 9))
    if provider_type is RESPONSES:
        return responses_events(text=["Reading."], tools=PARALLEL, usage=responses_usage(5, 9))
    return anthropic_events(
        text=["Reading."], tools=PARALLEL, start_usage=anthropic_usage(input=5, output=1)
    )


EXPECTED_INDEXES = {CHAT: (0, 3), RESPONSES: (1, 2), ANTHROPIC: (1, 2)}


def assert_parallel(outcome: Outcome, provider_type: ProviderType) -> None:
    first, second = EXPECTED_INDEXES[provider_type]
    result = outcome.result
    assert result.finish is FinishReason.TOOL_USE
    assert result.text == "Reading."
    assert result.calls == (
        ProviderToolCall(first, "call_a", "read_file", ARGS_A),
        ProviderToolCall(second, "call_b", "read_file", ARGS_B),
    )
    deltas = [e for e in outcome.events if isinstance(e, ToolCallArgumentsDelta)]
    assert len(deltas) == 9  # every fragment arrives as its own delta, none merged or lost


@pytest.mark.parametrize("provider_type", ALL)
async def test_parallel_tool_calls(fake: FakeProvider, provider_type: ProviderType) -> None:
    outcome = await play(fake, provider_type, parallel_script(provider_type))
    assert_parallel(outcome, provider_type)
    starts = [e for e in outcome.events if isinstance(e, ToolCallStarted)]
    assert [s.call_id for s in starts] == ["call_a", "call_b"]


async def test_chat_parallel_tool_deltas_interleave(fake: FakeProvider) -> None:
    outcome = await play(fake, CHAT, parallel_script(CHAT))
    kinds = [
        (type(e).__name__, getattr(e, "index", None))
        for e in outcome.events
        if isinstance(e, ToolCallStarted | ToolCallArgumentsDelta | ToolCallEnded)
    ]
    assert kinds[:4] == [
        ("ToolCallStarted", 0),
        ("ToolCallStarted", 3),
        ("ToolCallArgumentsDelta", 0),
        ("ToolCallArgumentsDelta", 3),
    ]
    assert kinds[-2:] == [("ToolCallEnded", 0), ("ToolCallEnded", 3)]


@pytest.mark.parametrize("provider_type", ALL)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
async def test_parallel_tool_calls_split_at_byte_boundaries(
    fake: FakeProvider, provider_type: ProviderType, newline: str
) -> None:
    """Real network chunks cut inside lines, inside a CRLF and inside a UTF-8 character."""
    events = parallel_script(provider_type)
    body = encode_events(events, newline)
    snowman = body.index("\u2603".encode())
    cuts = [snowman + 1, snowman + 2, body.index(b"\r\n") + 1 if newline == "\r\n" else 1]
    script = Script.sse(
        events, chunk_boundaries=cuts, chunk_size=13, delay_between=0.0002, newline=newline
    )
    outcome = await play(fake, provider_type, script)
    assert outcome.chunks > 20  # the stream really arrived in pieces
    assert_parallel(outcome, provider_type)


def decode_all(provider_type: ProviderType, chunks: list[bytes]) -> list[ProviderEvent]:
    decoder = adapter_for(provider_type).new_decoder(
        make_route(provider_type, "http://127.0.0.1:9/v1")
    )
    events: list[ProviderEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.finish())
    return events


@pytest.mark.parametrize("provider_type", ALL)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.integers(min_value=0, max_value=20_000), max_size=60))
def test_decoders_give_the_same_events_for_any_chunking(
    provider_type: ProviderType, cuts: list[int]
) -> None:
    body = encode_events(parallel_script(provider_type))
    chunks = split_at(body, cuts)
    assert decode_all(provider_type, chunks) == decode_all(provider_type, [body])


async def test_anthropic_tool_without_arguments_uses_its_start_input(fake: FakeProvider) -> None:
    tools = [FakeToolCall("toolu_a", "list_dir"), FakeToolCall("toolu_b", "read_file", ("{}",))]
    outcome = await play(fake, ANTHROPIC, anthropic_events(tools=tools))
    assert outcome.result.calls == (
        ProviderToolCall(0, "toolu_a", "list_dir", "{}"),
        ProviderToolCall(1, "toolu_b", "read_file", "{}"),
    )


async def test_responses_arguments_only_in_the_done_event(fake: FakeProvider) -> None:
    """A server that streams no argument deltas still delivers the final argument text."""
    events = [
        e
        for e in responses_events(tools=[FakeToolCall("call_a", "read_file", ('{"path":"/a"}',))])
        if msgspec.json.decode(e.data)["type"] != "response.function_call_arguments.delta"
    ]
    outcome = await play(fake, RESPONSES, events)
    assert outcome.result.calls == (ProviderToolCall(0, "call_a", "read_file", '{"path":"/a"}'),)


# -- usage -----------------------------------------------------------------------------------

# Per format: events without usage, events with it (cache fields too), the usage expected.
Events = Callable[[], list[SseEvent]]
USAGE_CASES: dict[ProviderType, tuple[Events, Events, Usage]] = {
    CHAT: (
        lambda: chat_events(text=["x"]),
        lambda: chat_events(text=["x"], usage=chat_usage(100, 20, cached=80, reasoning=12)),
        Usage(input_tokens=100, output_tokens=20, cache_read_tokens=80, reasoning_tokens=12),
    ),
    RESPONSES: (
        lambda: responses_events(text=["x"]),
        lambda: responses_events(
            text=["x"], usage=responses_usage(100, 20, cached=80, reasoning=12)
        ),
        Usage(input_tokens=100, output_tokens=20, cache_read_tokens=80, reasoning_tokens=12),
    ),
    ANTHROPIC: (
        lambda: anthropic_events(text=["x"]),
        lambda: anthropic_events(
            text=["x"],
            start_usage=anthropic_usage(input=10, output=1, cache_read=80, cache_write=5),
            delta_usage=anthropic_usage(input=10, output=20),
        ),
        Usage(input_tokens=10, output_tokens=20, cache_read_tokens=80, cache_write_tokens=5),
    ),
}


@pytest.mark.parametrize("provider_type", ALL)
async def test_usage_absent_is_not_reported(
    fake: FakeProvider, provider_type: ProviderType
) -> None:
    absent, _, _ = USAGE_CASES[provider_type]
    outcome = await play(fake, provider_type, absent())
    assert outcome.result.usage is None
    assert not any(isinstance(e, UsageReported) for e in outcome.events)


@pytest.mark.parametrize("provider_type", ALL)
async def test_usage_with_cache_fields(fake: FakeProvider, provider_type: ProviderType) -> None:
    _, present, expected = USAGE_CASES[provider_type]
    outcome = await play(fake, provider_type, present())
    assert outcome.result.usage == expected


@pytest.mark.parametrize("provider_type", [CHAT, RESPONSES])
async def test_openai_usage_without_details_leaves_them_none(
    fake: FakeProvider, provider_type: ProviderType
) -> None:
    script = (
        chat_events(text=["x"], usage=chat_usage(7, 2))
        if provider_type is CHAT
        else responses_events(text=["x"], usage=responses_usage(7, 2))
    )
    usage = (await play(fake, provider_type, script)).result.usage
    assert usage == Usage(input_tokens=7, output_tokens=2)
    assert usage is not None and usage.cache_read_tokens is None


async def test_anthropic_usage_merge_keeps_the_larger_value_per_field(
    fake: FakeProvider,
) -> None:
    events = anthropic_events(
        text=["x"],
        start_usage=anthropic_usage(input=50, output=1, cache_write=7),
        delta_usage=anthropic_usage(input=3, output=40),
    )
    usage = (await play(fake, ANTHROPIC, events)).result.usage
    assert usage == Usage(input_tokens=50, output_tokens=40, cache_write_tokens=7)


# -- finishes --------------------------------------------------------------------------------


async def test_chat_length(fake: FakeProvider) -> None:
    outcome = await play(fake, CHAT, chat_events(text=["x"], finish="length"))
    assert outcome.result.finish is FinishReason.LENGTH


async def test_chat_done_without_finish_reason_is_a_provider_failure(fake: FakeProvider) -> None:
    outcome = await play(fake, CHAT, chat_events(text=["x"], finish=""))
    failed(outcome, FailureKind.PROVIDER, "[DONE] without a finish_reason")


async def test_chat_content_filter_is_a_provider_failure(fake: FakeProvider) -> None:
    outcome = await play(fake, CHAT, chat_events(text=["x"], finish="content_filter"))
    failed(outcome, FailureKind.PROVIDER, "content_filter")


async def test_chat_refusal_is_a_provider_failure(fake: FakeProvider) -> None:
    events = chat_events(text=[])
    events.insert(1, chat_chunk({"refusal": "I can't help with that."}))
    failed(await play(fake, CHAT, events), FailureKind.PROVIDER, "I can't help with that.")


async def test_responses_incomplete_is_length_and_reads_usage(fake: FakeProvider) -> None:
    events = responses_events(text=["cut"], terminal="incomplete", usage=responses_usage(10, 4096))
    outcome = await play(fake, RESPONSES, events)
    assert outcome.result.finish is FinishReason.LENGTH
    assert outcome.result.usage == Usage(input_tokens=10, output_tokens=4096)


async def test_responses_incomplete_by_content_filter_fails(fake: FakeProvider) -> None:
    events = responses_events(
        text=["cut"], terminal="incomplete", incomplete_reason="content_filter"
    )
    failed(await play(fake, RESPONSES, events), FailureKind.PROVIDER, "content_filter")


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("max_tokens", FinishReason.LENGTH),
        # The context window filled, not the output limit: the turn compacts, never continues.
        ("model_context_window_exceeded", FinishReason.CONTEXT_WINDOW),
    ],
)
async def test_anthropic_length(fake: FakeProvider, stop: str, finish: FinishReason) -> None:
    outcome = await play(fake, ANTHROPIC, anthropic_events(text=["x"], stop_reason=stop))
    assert outcome.result.finish is finish


@pytest.mark.parametrize("stop", ["refusal", "pause_turn"])
async def test_anthropic_refusal_and_pause_turn_fail_by_name(fake: FakeProvider, stop: str) -> None:
    outcome = await play(fake, ANTHROPIC, anthropic_events(text=["x"], stop_reason=stop))
    failed(outcome, FailureKind.PROVIDER, f"stop_reason {stop}")


async def test_anthropic_unknown_stop_reason_is_a_protocol_failure(fake: FakeProvider) -> None:
    outcome = await play(fake, ANTHROPIC, anthropic_events(text=["x"], stop_reason="sleepy"))
    failed(outcome, FailureKind.PROTOCOL, "'sleepy'")


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider_type", "body", "expected"),
    [
        (
            CHAT,
            {"error": {"message": f"Incorrect API key provided: {KEY}.", "type": "auth"}},
            "OpenAI Chat 401 Unauthorized: Incorrect API key provided: [redacted].",
        ),
        (
            RESPONSES,
            {"error": {"message": "You exceeded your current quota.", "code": "quota"}},
            "OpenAI Responses 401 Unauthorized: You exceeded your current quota.",
        ),
        (
            ANTHROPIC,
            {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}},
            "Anthropic 401 Unauthorized: bad key",
        ),
    ],
)
async def test_http_error_before_the_stream(
    fake: FakeProvider, provider_type: ProviderType, body: Any, expected: str
) -> None:
    outcome = await play(fake, provider_type, Script.error(401, body))
    failure = failed(outcome, FailureKind.PROVIDER)
    assert failure.message == expected
    assert failure.http_status == 401
    assert outcome.events == []  # no CallStarted for a non-2xx answer


async def test_http_error_with_a_plain_body_is_truncated(fake: FakeProvider) -> None:
    body = "<html>Bad gateway " + "x" * 2000 + f" {KEY}</html>"
    outcome = await play(fake, RESPONSES, Script.error(502, body))
    failure = failed(outcome, FailureKind.PROVIDER, "OpenAI Responses 502 Bad Gateway: <html>Bad")
    assert len(failure.message) < 600 and failure.message.endswith("…")


def test_http_error_scrubs_custom_credential_headers() -> None:
    route = make_route(CHAT, "http://x", headers=(("Authorization", "Bearer gw-token-77"),))
    body = msgspec.json.encode({"error": {"message": f"token gw-token-77 or {KEY} rejected"}})
    failure = adapter_for(CHAT).http_error(403, body, route)
    assert failure.message == "OpenAI Chat 403 Forbidden: token [redacted] or [redacted] rejected"


async def test_chat_error_chunk_mid_stream(fake: FakeProvider) -> None:
    events = [*chat_events(text=["par"], finish="", done=False), chat_error_chunk("overloaded")]
    outcome = await play(fake, CHAT, events)
    failed(outcome, FailureKind.PROVIDER, "OpenAI Chat stream error: overloaded")
    assert outcome.grammar.text == "par"


async def test_responses_failed_mid_stream(fake: FakeProvider) -> None:
    events = [*responses_events(text=["par"], terminal="none"), responses_failed_event("boom")]
    failed(await play(fake, RESPONSES, events), FailureKind.PROVIDER, "failed: boom")


async def test_responses_error_event_mid_stream(fake: FakeProvider) -> None:
    events = [
        *responses_events(text=["par"], terminal="none"),
        responses_error_event("Rate limit reached", "rate_limit_exceeded"),
    ]
    outcome = await play(fake, RESPONSES, events)
    failed(outcome, FailureKind.PROVIDER, "Rate limit reached (rate_limit_exceeded)")


async def test_anthropic_error_event_mid_stream(fake: FakeProvider) -> None:
    events = [*anthropic_events(text=["par"])[:4], anthropic_error_event("Overloaded")]
    outcome = await play(fake, ANTHROPIC, events)
    failed(outcome, FailureKind.PROVIDER, "Anthropic stream error: Overloaded (overloaded_error)")


@pytest.mark.parametrize(
    ("provider_type", "events", "terminal"),
    [
        (CHAT, chat_events(text=["x"], done=False), "[DONE]"),
        (RESPONSES, responses_events(text=["x"], terminal="none"), "response.completed"),
        (ANTHROPIC, anthropic_events(text=["x"], stop=False), "message_stop"),
    ],
)
async def test_stream_cut_before_its_terminal_event(
    fake: FakeProvider, provider_type: ProviderType, events: list[SseEvent], terminal: str
) -> None:
    outcome = await play(fake, provider_type, events)
    failed(outcome, FailureKind.PROVIDER, f"stream ended before {terminal}")


async def test_half_an_event_at_eof_is_not_taken_as_complete(fake: FakeProvider) -> None:
    body = encode_events(chat_events(text=["x"]))
    cut = body[: body.rindex(b"data: [DONE]") + len(b"data: [DONE]\n")]  # no blank line after
    failed(await play(fake, CHAT, Script.raw([cut])), FailureKind.PROVIDER, "before [DONE]")


@pytest.mark.parametrize(
    ("provider_type", "event", "phrase"),
    [
        (
            CHAT,
            chat_chunk({"tool_calls": [{"id": "c", "function": {"name": "t"}}]}),
            "missing integer index",
        ),
        (
            RESPONSES,
            SseEvent.json(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {"type": "function_call", "name": "t", "arguments": ""},
                }
            ),
            "missing string call_id",
        ),
        (
            ANTHROPIC,
            SseEvent.json(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "name": "t", "input": {}},
                },
                event="content_block_start",
            ),
            "missing string id",
        ),
        (CHAT, SseEvent("{not json"), "not JSON"),
    ],
)
async def test_missing_required_field_is_a_protocol_failure(
    fake: FakeProvider, provider_type: ProviderType, event: SseEvent, phrase: str
) -> None:
    outcome = await play(fake, provider_type, [event])
    failed(outcome, FailureKind.PROTOCOL, phrase)


async def test_anthropic_thinking_without_signature_is_refused(fake: FakeProvider) -> None:
    events = anthropic_events(thinking=[FakeThinking(("x",), signature="")], text=["y"])
    failed(await play(fake, ANTHROPIC, events), FailureKind.PROTOCOL, "without a signature")


async def test_data_after_the_terminal_event_is_refused(fake: FakeProvider) -> None:
    events = [*anthropic_events(text=["x"]), *anthropic_events(text=["again"])[:1]]
    failed(await play(fake, ANTHROPIC, events), FailureKind.PROTOCOL, "after message_stop")


# ---------------------------------------------------------------------------------------------
# Requests


def test_adapter_for_each_type() -> None:
    assert isinstance(adapter_for(CHAT), OpenAiChatAdapter)
    assert isinstance(adapter_for(RESPONSES), OpenAiResponsesAdapter)
    assert isinstance(adapter_for(ANTHROPIC), AnthropicAdapter)


@pytest.mark.parametrize("provider_type", ALL)
def test_fast_route_cannot_be_built(provider_type: ProviderType) -> None:
    route = make_route(provider_type, "http://127.0.0.1:9", fast=True)
    with pytest.raises(ProviderFailure) as raised:
        adapter_for(provider_type).build_call(make_request(), route)
    assert raised.value.kind is FailureKind.CONFIG
    assert "cannot satisfy fast latency" in raised.value.message


def test_anthropic_without_max_output_tokens_cannot_be_built() -> None:
    route = make_route(ANTHROPIC, "http://127.0.0.1:9", max_output_tokens=None)
    with pytest.raises(ProviderFailure) as raised:
        adapter_for(ANTHROPIC).build_call(make_request(), route)
    assert raised.value.kind is FailureKind.CONFIG
    assert "max_output_tokens" in raised.value.message


def stream_for(provider_type: ProviderType) -> list[SseEvent]:
    return {
        CHAT: lambda: chat_events(text=["ok"]),
        RESPONSES: lambda: responses_events(text=["ok"]),
        ANTHROPIC: lambda: anthropic_events(text=["ok"]),
    }[provider_type]()


async def sent(
    fake: FakeProvider,
    provider_type: ProviderType,
    request: LlmRequest | None = None,
    **route_changes: Any,
) -> RecordedRequest:
    route = make_route(provider_type, fake.base_url + "/", **route_changes)  # trailing slash
    outcome = await play(fake, provider_type, stream_for(provider_type), request, route)
    assert outcome.failure is None, outcome.failure
    return fake.requests[-1]


@pytest.mark.parametrize("provider_type", ALL)
async def test_key_only_in_the_auth_header(fake: FakeProvider, provider_type: ProviderType) -> None:
    recorded = await sent(fake, provider_type)
    assert KEY.encode() not in recorded.body
    assert recorded.header("content-type") == "application/json"
    assert recorded.header("accept") == "text/event-stream"
    assert recorded.header("x-team") == "blue"
    if provider_type is ANTHROPIC:
        assert recorded.header("x-api-key") == KEY
        assert recorded.header("anthropic-version") == "2023-06-01"
        assert recorded.header("authorization") is None
    else:
        assert recorded.header("authorization") == f"Bearer {KEY}"
        assert recorded.header("x-api-key") is None
    others = {k: v for k, v in recorded.headers.items() if k not in ("authorization", "x-api-key")}
    assert not any(KEY in v for v in others.values())


async def test_custom_header_replaces_ours(fake: FakeProvider) -> None:
    headers = (("Authorization", "Bearer gateway-token"), ("x-team", "red"))
    adapter = adapter_for(CHAT)
    call = adapter.build_call(make_request(), make_route(CHAT, fake.base_url, headers=headers))
    names = [name.lower() for name, _ in call.headers]
    assert names.count("authorization") == 1
    assert ("Authorization", "Bearer gateway-token") in call.headers


@pytest.mark.parametrize(
    ("provider_type", "path"),
    [(CHAT, "/v1/chat/completions"), (RESPONSES, "/v1/responses"), (ANTHROPIC, "/v1/messages")],
)
async def test_body_is_compact_json_to_the_right_path(
    fake: FakeProvider, provider_type: ProviderType, path: str
) -> None:
    recorded = await sent(fake, provider_type)
    assert recorded.method == "POST" and recorded.path == path
    assert recorded.body == msgspec.json.encode(recorded.json)
    assert recorded.json["stream"] is True
    assert recorded.json["model"] == "fake-model"


async def test_chat_body(fake: FakeProvider) -> None:
    body = (await sent(fake, CHAT)).json
    assert body["stream_options"] == {"include_usage": True}
    assert "max_completion_tokens" not in body and "max_tokens" not in body
    assert "reasoning_effort" not in body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file from the workspace",
                "parameters": READ_FILE.parameters,
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in "},
                {"type": "text", "text": "this picture?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AQID"}},
            ],
        },
    ]


async def test_chat_limits_and_effort_only_when_set(fake: FakeProvider) -> None:
    enabled_only = (await sent(fake, CHAT, reasoning=Reasoning(enabled=True))).json
    assert "reasoning_effort" not in enabled_only  # enabled alone has no Chat field
    body = (await sent(fake, CHAT, max_output_tokens=777, reasoning=Reasoning(effort="high"))).json
    assert body["max_completion_tokens"] == 777
    assert body["reasoning_effort"] == "high"


async def test_chat_text_only_user_message_is_a_string(fake: FakeProvider) -> None:
    request = make_request((UserMessage((ProviderTextPart("a"), ProviderTextPart("b"))),), tools=())
    body = (await sent(fake, CHAT, request)).json
    assert body["messages"][1] == {"role": "user", "content": "ab"}
    assert "tools" not in body  # an empty tools array is refused by OpenAI


async def test_responses_body(fake: FakeProvider) -> None:
    body = (await sent(fake, RESPONSES)).json
    assert body["store"] is False
    # No reasoning asked for and none to replay: a model without reasoning may refuse include.
    assert "include" not in body
    assert body["instructions"] == "You are terse."
    assert "reasoning" not in body and "max_output_tokens" not in body
    assert body["tools"] == [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a file from the workspace",
            "parameters": READ_FILE.parameters,
            "strict": False,
        }
    ]
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is in "},
                {"type": "input_text", "text": "this picture?"},
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,AQID",
                    "detail": "auto",
                },
            ],
        }
    ]


async def test_responses_assistant_text_is_an_easy_input_message(fake: FakeProvider) -> None:
    request = make_request(
        (*HISTORY, AssistantMessage(text="It is a cat."), UserMessage((ProviderTextPart("Sure?"),)))
    )
    body = (await sent(fake, RESPONSES, request)).json
    assert body["input"][1:] == [
        {"role": "assistant", "content": "It is a cat."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Sure?"}]},
    ]


async def test_responses_include_follows_reasoning(fake: FakeProvider) -> None:
    asked = (await sent(fake, RESPONSES, reasoning=Reasoning(enabled=True))).json
    assert asked["include"] == ["reasoning.encrypted_content"]
    # Reasoning off, but a reasoning item is replayed: its successor must be encrypted too.
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"}
    replay = ReplayState("openai_responses", {"items": [item]})
    history = (
        *HISTORY,
        AssistantMessage(text="a", replay=replay),
        UserMessage((ProviderTextPart("b"),)),
    )
    replaying = (await sent(fake, RESPONSES, make_request(history))).json
    assert replaying["include"] == ["reasoning.encrypted_content"]
    assert "reasoning" not in replaying
    assert item in replaying["input"]


async def test_responses_reasoning_item_without_encrypted_content_is_not_kept(
    fake: FakeProvider,
) -> None:
    # Without encrypted_content the item's id would name a stored item, and store is false:
    # replaying it would fail the next call.
    outcome = await play(fake, RESPONSES, responses_events(thinking=["wh", "y"], text=["ok"]))
    assert outcome.failure is None
    assert not [e for e in outcome.events if isinstance(e, ReplayStateReported)]
    assert outcome.result.thinking == "why"


async def test_responses_readable_reasoning_is_kept_and_id_only_items_are_not_replayed(
    fake: FakeProvider,
) -> None:
    # vLLM returns reasoning with readable content and never encrypts it: keep it.
    events = responses_events(text=["ok"])
    readable = {
        "id": "rs_v",
        "type": "reasoning",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "thought"}],
    }
    done = SseEvent.json(
        {"type": "response.output_item.done", "output_index": 9, "item": readable},
        event="response.output_item.done",
    )
    outcome = await play(fake, RESPONSES, [*events[:2], done, *events[2:]])
    assert outcome.result.replay == ReplayState("openai_responses", {"items": [readable]})
    # An id-only item recorded before the decoder filtered them is not sent back.
    id_only = {"type": "reasoning", "id": "rs_old", "summary": []}
    replay = ReplayState("openai_responses", {"items": [id_only, readable]})
    history = (
        *HISTORY,
        AssistantMessage(text="a", replay=replay),
        UserMessage((ProviderTextPart("b"),)),
    )
    body = (await sent(fake, RESPONSES, make_request(history))).json
    assert id_only not in body["input"] and readable in body["input"]


@pytest.mark.parametrize("provider_type", ALL)
async def test_effort_none_asks_for_no_reasoning(
    fake: FakeProvider, provider_type: ProviderType
) -> None:
    body = (await sent(fake, provider_type, reasoning=Reasoning(False, "none"))).json
    if provider_type is CHAT:
        assert body["reasoning_effort"] == "none"
    elif provider_type is RESPONSES:
        assert body["reasoning"] == {"effort": "none"} and "include" not in body
    else:  # the Messages API has no "none" effort: no thinking and no effort at all
        assert "thinking" not in body and "output_config" not in body


async def test_responses_reasoning_never_invents_an_effort(fake: FakeProvider) -> None:
    enabled = (await sent(fake, RESPONSES, reasoning=Reasoning(enabled=True))).json
    assert enabled["reasoning"] == {"summary": "auto"}
    effort = (
        await sent(fake, RESPONSES, reasoning=Reasoning(effort="low"), max_output_tokens=99)
    ).json
    assert effort["reasoning"] == {"summary": "auto", "effort": "low"}
    assert effort["max_output_tokens"] == 99


async def test_anthropic_body(fake: FakeProvider) -> None:
    body = (await sent(fake, ANTHROPIC, max_output_tokens=1234)).json
    assert body["max_tokens"] == 1234
    assert body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
    ]
    assert "thinking" not in body and "output_config" not in body
    assert body["tools"] == [
        {
            "name": "read_file",
            "description": "Read a file from the workspace",
            "input_schema": READ_FILE.parameters,
        }
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in "},
                {"type": "text", "text": "this picture?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "AQID"},
                    # the newest stable point: the next request repeats it unchanged
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        }
    ]


async def test_anthropic_thinking_is_adaptive_and_effort_is_separate(fake: FakeProvider) -> None:
    enabled = (await sent(fake, ANTHROPIC, reasoning=Reasoning(enabled=True))).json
    assert enabled["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert "output_config" not in enabled
    assert "budget_tokens" not in enabled["thinking"]
    both = (await sent(fake, ANTHROPIC, reasoning=Reasoning(enabled=True, effort="max"))).json
    assert both["output_config"] == {"effort": "max"}
    effort_only = (await sent(fake, ANTHROPIC, reasoning=Reasoning(effort="low"))).json
    assert "thinking" not in effort_only and effort_only["output_config"] == {"effort": "low"}


# -- replay and prefix stability ----------------------------------------------------------


def round_script(provider_type: ProviderType, round_no: int) -> list[SseEvent]:
    """Round 1: thinking + two calls; round 2: thinking + one call; round 3: text."""
    calls = {
        1: [
            FakeToolCall("call_1a", "read_file", ('{"path":', '"/a"}')),
            FakeToolCall("call_1b", "read_file", ('{"path":"/b"}',)),
        ],
        2: [FakeToolCall("call_2a", "read_file", ('{"path":"/c"}',))],
        3: [],
    }[round_no]
    thought = [] if round_no == 3 else ["wh", "y"]
    text = ["done"] if round_no == 3 else []
    if provider_type is CHAT:
        return chat_events(thinking=thought, text=text, tools=calls)
    if provider_type is RESPONSES:
        return responses_events(
            thinking=thought,
            encrypted_reasoning=f"opaque-{round_no}" if thought else None,
            text=text,
            tools=calls,
        )
    blocks: list[FakeThinking | FakeRedactedThinking] = []
    if thought:
        blocks = [
            FakeThinking(tuple(thought), signature=f"signature-{round_no}"),
            FakeRedactedThinking(f"redacted-{round_no}"),
        ]
    return anthropic_events(thinking=blocks, text=text, tools=calls)


def unmarked(messages: list[Any]) -> list[Any]:
    """Anthropic messages without their cache breakpoints, which move to the newest messages
    and are not content of the cached prefix (other formats are returned as they are)."""
    return [
        {
            **message,
            "content": [
                {k: v for k, v in block.items() if k != "cache_control"}
                for block in message["content"]
            ],
        }
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        else message
        for message in messages
    ]


@pytest.mark.parametrize("provider_type", ALL)
async def test_history_is_a_prefix_of_the_next_request(
    fake: FakeProvider, provider_type: ProviderType
) -> None:
    """Every request's message array starts with the previous one, byte for byte (Anthropic's
    cache breakpoints aside), so provider prompt caches keep hitting; each assistant turn goes
    back with its native reasoning."""
    history: tuple[ProjectedMessage, ...] = HISTORY
    arrays: list[list[Any]] = []
    results: list[CallResult] = []
    for round_no in (1, 2, 3):
        outcome = await play(
            fake, provider_type, round_script(provider_type, round_no), make_request(history)
        )
        result = outcome.result
        results.append(result)
        arrays.append(unmarked(fake.requests[-1].json[MESSAGES_KEY[provider_type]]))
        results_messages = tuple(
            ToolResultMessage(call.call_id, call.name, f"contents of {call.call_id}")
            for call in result.calls
        )
        history = (*history, result.assistant_message(), *results_messages)
    first, second, third = arrays
    assert second[: len(first)] == first and len(second) > len(first)
    assert third[: len(second)] == second and len(third) > len(second)
    assert results[0].finish is FinishReason.TOOL_USE and len(results[0].calls) == 2
    assert results[2].text == "done"
    check_replayed(provider_type, second[len(first) :])


def check_replayed(provider_type: ProviderType, appended: list[Any]) -> None:
    """What round 1's assistant turn and tool results became in round 2's request."""
    calls = [
        {"call_id": "call_1a", "arguments": '{"path":"/a"}'},
        {"call_id": "call_1b", "arguments": '{"path":"/b"}'},
    ]
    if provider_type is CHAT:
        assert appended == [
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "why",
                "tool_calls": [
                    {
                        "id": c["call_id"],
                        "type": "function",
                        "function": {"name": "read_file", "arguments": c["arguments"]},
                    }
                    for c in calls
                ],
            },
            {"role": "tool", "tool_call_id": "call_1a", "content": "contents of call_1a"},
            {"role": "tool", "tool_call_id": "call_1b", "content": "contents of call_1b"},
        ]
    elif provider_type is RESPONSES:
        assert appended == [
            {
                "id": "rs_fake",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "why"}],
                "encrypted_content": "opaque-1",
            },
            *({"type": "function_call", "name": "read_file", **c} for c in calls),
            {"type": "function_call_output", "call_id": "call_1a", "output": "contents of call_1a"},
            {"type": "function_call_output", "call_id": "call_1b", "output": "contents of call_1b"},
        ]
    else:
        assert appended == [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "why", "signature": "signature-1"},
                    {"type": "redacted_thinking", "data": "redacted-1"},
                    {
                        "type": "tool_use",
                        "id": "call_1a",
                        "name": "read_file",
                        "input": {"path": "/a"},
                    },
                    {
                        "type": "tool_use",
                        "id": "call_1b",
                        "name": "read_file",
                        "input": {"path": "/b"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_1a",
                        "content": "contents of call_1a",
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_1b",
                        "content": "contents of call_1b",
                    },
                ],
            },
        ]


@pytest.mark.parametrize("provider_type", ALL)
async def test_another_providers_replay_is_not_sent(
    fake: FakeProvider, provider_type: ProviderType
) -> None:
    foreign = {
        CHAT: ReplayState("anthropic", {"blocks": [{"type": "thinking", "signature": "s"}]}),
        RESPONSES: ReplayState("openai_chat", {"reasoning_content": "why"}),
        ANTHROPIC: ReplayState("openai_responses", {"items": [{"type": "reasoning"}]}),
    }[provider_type]
    assistant = AssistantMessage(text="earlier answer", thinking="why", replay=foreign)
    request = make_request((*HISTORY, assistant, UserMessage((ProviderTextPart("next"),))))
    body = (await sent(fake, provider_type, request)).body
    for marker in (b"reasoning_content", b'"signature"', b'"type":"reasoning"', b"thinking"):
        assert marker not in body
    assert b"earlier answer" in body


def chat_replay(**value: str) -> tuple[ProjectedMessage, ...]:
    call = ProviderToolCall(index=0, call_id="call_1", name="read_file", arguments_json="{}")
    assistant = AssistantMessage(replay=ReplayState("openai_chat", value), calls=(call,))
    return (*HISTORY, assistant, ToolResultMessage("call_1", "read_file", "contents"))


async def test_chat_reasoning_goes_back_only_to_the_endpoint_that_streamed_it(
    fake: FakeProvider,
) -> None:
    here = origin(make_route(CHAT, fake.base_url + "/"))
    mine = await sent(fake, CHAT, make_request(chat_replay(reasoning_content="r", origin=here)))
    assert mine.json["messages"][2]["reasoning_content"] == "r"
    other = chat_replay(reasoning_content="r", origin="0123456789abcdef")
    assert b"reasoning_content" not in (await sent(fake, CHAT, make_request(other))).body
    # A state from before origins existed is replayed, as it was then.
    legacy = chat_replay(reasoning_content="r")
    assert b"reasoning_content" in (await sent(fake, CHAT, make_request(legacy))).body


async def test_chat_reasoning_replay_can_be_turned_off_per_provider(fake: FakeProvider) -> None:
    here = origin(make_route(CHAT, fake.base_url + "/"))
    request = make_request(chat_replay(reasoning_content="r", origin=here))
    off = await sent(fake, CHAT, request, replay_reasoning=False)
    assert b"reasoning_content" not in off.body
    assert off.json["messages"][2]["tool_calls"][0]["id"] == "call_1"


# Each format's own reasoning state, as its decoder reports it.
OWN_REPLAY = {
    CHAT: ReplayState("openai_chat", {"reasoning_content": "why"}),
    RESPONSES: ReplayState(
        "openai_responses",
        {"items": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}]},
    ),
    ANTHROPIC: ReplayState("anthropic", {"blocks": [{"type": "thinking", "signature": "s"}]}),
    GEMINI: ReplayState(
        "gemini",
        {
            "parts": [
                {"functionCall": {"name": "read_file", "args": {}}, "thoughtSignature": "sig-1"}
            ]
        },
    ),
}


@pytest.mark.parametrize("provider_type", [*ALL, GEMINI])
def test_the_replay_setting_matters_exactly_where_the_adapter_says(
    provider_type: ProviderType,
) -> None:
    """The console offers ``replay_reasoning`` by ``honours_replay_reasoning``: true only where
    the setting changes what is sent."""
    adapter = adapter_for(provider_type)
    call = ProviderToolCall(index=0, call_id="call_1", name="read_file", arguments_json="{}")
    assistant = AssistantMessage(replay=OWN_REPLAY[provider_type], calls=(call,))
    request = make_request((*HISTORY, assistant, ToolResultMessage("call_1", "read_file", "x")))
    on, off = (
        adapter.build_call(
            request, make_route(provider_type, "https://x.test/v1", replay_reasoning=v)
        )
        for v in (True, False)
    )
    marker = {
        CHAT: b"reasoning_content",
        RESPONSES: b"rs_1",
        ANTHROPIC: b'"signature"',
        GEMINI: b'"sig-1"',
    }
    assert marker[provider_type] in on.body  # the state is replayed with the setting on
    assert (on.body != off.body) is adapter.honours_replay_reasoning
    assert adapter.honours_replay_reasoning is (provider_type is CHAT)


@pytest.mark.parametrize("provider_type", ALL)
def test_malformed_own_replay_state_is_refused(provider_type: ProviderType) -> None:
    kind = {CHAT: "openai_chat", RESPONSES: "openai_responses", ANTHROPIC: "anthropic"}
    assistant = AssistantMessage(text="x", replay=ReplayState(kind[provider_type], {}))
    request = make_request((*HISTORY, assistant))
    with pytest.raises(ProviderFailure) as raised:
        adapter_for(provider_type).build_call(request, make_route(provider_type, "http://x"))
    assert raised.value.kind is FailureKind.PROTOCOL


async def test_anthropic_merges_consecutive_same_role_messages(fake: FakeProvider) -> None:
    request = make_request(
        (
            UserMessage((ProviderTextPart("one"),)),
            UserMessage((ProviderTextPart(""),)),  # empty: dropped, nothing to send
            UserMessage((ProviderTextPart("two"),)),
            AssistantMessage(text="a"),
            AssistantMessage(text="b"),
        )
    )
    body = (await sent(fake, ANTHROPIC, request)).json
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "one"},
                # before the last assistant message: a cache breakpoint
                {"type": "text", "text": "two", "cache_control": {"type": "ephemeral"}},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        },
    ]


# ---------------------------------------------------------------------------------------------
# The fake provider itself (other suites rely on these behaviours for cancellation tests)


async def test_fake_notices_a_client_leaving_while_it_hangs(fake: FakeProvider) -> None:
    fake.check_bodies = False  # a test of the fake itself, with a made-up body
    fake.enqueue(Script.hang_before_headers())
    async with httpx.AsyncClient() as client:
        task = asyncio.create_task(client.post(f"{fake.base_url}/messages", json={"a": 1}))
        recorded = await fake.wait_for_request()
        assert recorded.json == {"a": 1}
        assert not fake.disconnected(0).is_set()
        task.cancel()
        await asyncio.wait_for(fake.disconnected(0).wait(), 2.0)


async def test_fake_notices_a_client_leaving_a_stalled_stream(fake: FakeProvider) -> None:
    fake.check_bodies = False  # a test of the fake itself, with a made-up body
    fake.enqueue(Script.stall(after_events=1, events=chat_events(text=["x"])))
    async with httpx.AsyncClient() as client:
        request = client.build_request("POST", f"{fake.base_url}/chat/completions", json={})
        response = await client.send(request, stream=True)
        chunks = response.aiter_raw()
        assert (await anext(chunks)).startswith(b"data: ")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(chunks), 0.1)  # nothing more comes, and no EOF
        await response.aclose()
        await asyncio.wait_for(fake.disconnected(0).wait(), 2.0)


async def test_fake_lists_models_in_both_shapes() -> None:
    async with FakeProvider(models=["m1", "m2", "m3"]) as fake, httpx.AsyncClient() as client:
        openai = (await client.get(f"{fake.base_url}/models")).json()
        assert [m["id"] for m in openai["data"]] == ["m1", "m2", "m3"]
        fake.models_style = "anthropic"
        page = (await client.get(f"{fake.base_url}/models", params={"limit": 2})).json()
        assert ([m["id"] for m in page["data"]], page["has_more"], page["last_id"]) == (
            ["m1", "m2"],
            True,
            "m2",
        )
        rest = await client.get(f"{fake.base_url}/models", params={"limit": 2, "after_id": "m2"})
        assert ([m["id"] for m in rest.json()["data"]], rest.json()["has_more"]) == (["m3"], False)


# ---- a tool result's images ----


PNG = b"\x89PNG\r\n\x1a\n pixels"
PNG_URL = "data:image/png;base64,iVBORw0KGgogcGl4ZWxz"


def image_round() -> LlmRequest:
    """A round of two Reads, the first of which showed an image, then the user again."""
    calls = (
        ProviderToolCall(0, "call_img", "Read", '{"path": "/a.png"}'),
        ProviderToolCall(1, "call_txt", "Read", '{"path": "/a.txt"}'),
    )
    image = ProviderImagePart("image/png", PNG)
    return make_request(
        (
            *HISTORY,
            AssistantMessage(calls=calls),
            ToolResultMessage("call_img", "Read", "an image", (image,)),
            ToolResultMessage("call_txt", "Read", "alpha"),
            UserMessage((ProviderTextPart("and now?"),)),
        )
    )


def built_body(provider_type: ProviderType, request: LlmRequest) -> dict[str, Any]:
    route = make_route(provider_type, "http://127.0.0.1:9/v1")
    body: dict[str, Any] = msgspec.json.decode(
        adapter_for(provider_type).build_call(request, route).body
    )
    assert request_problems_for(provider_type, body) == []
    return body


def request_problems_for(provider_type: ProviderType, body: dict[str, Any]) -> list[str]:
    path = {CHAT: "/v1/chat/completions", RESPONSES: "/v1/responses", ANTHROPIC: "/v1/messages"}
    return request_problems(path[provider_type], body)


def test_chat_puts_a_results_image_in_a_user_message_after_the_rounds_tool_messages() -> None:
    messages = built_body(CHAT, image_round())["messages"]
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "user",
    ]
    assert (messages[3]["tool_call_id"], messages[3]["content"]) == ("call_img", "an image")
    assert messages[5]["content"] == [
        {"type": "text", "text": "The image(s) returned by tool call call_img (Read):"},
        {"type": "image_url", "image_url": {"url": PNG_URL}},
    ]
    assert messages[6]["content"] == "and now?"


def test_responses_gives_a_results_image_as_function_call_output_content() -> None:
    items = built_body(RESPONSES, image_round())["input"]
    outputs = {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}
    assert outputs == {
        "call_img": [
            {"type": "input_text", "text": "an image"},
            {"type": "input_image", "image_url": PNG_URL, "detail": "auto"},
        ],
        "call_txt": "alpha",
    }


def test_anthropic_gives_a_results_image_as_an_image_block_in_the_tool_result() -> None:
    messages = built_body(ANTHROPIC, image_round())["messages"]
    results = messages[2]["content"]
    source = {"type": "base64", "media_type": "image/png", "data": PNG_URL.split(",")[1]}
    assert results[0] == {
        "type": "tool_result",
        "tool_use_id": "call_img",
        "content": [{"type": "text", "text": "an image"}, {"type": "image", "source": source}],
    }
    assert results[1] == {"type": "tool_result", "tool_use_id": "call_txt", "content": "alpha"}
    assert results[2] == {
        "type": "text",
        "text": "and now?",
        "cache_control": {"type": "ephemeral"},  # the last message's last block
    }
