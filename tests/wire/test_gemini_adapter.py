"""The Gemini adapter against the fake provider's Gemini SSE server over real HTTP.

Same harness as ``test_provider_adapters``: the adapter builds the request, httpx sends it, the
raw network chunks go through the decoder and the stream grammar, and both directions are
checked. The signature tests compare the replayed parts with the bytes the fake streamed.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from actors.conversation.events import (
    CallDone,
    CallStarted,
    FinishReason,
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
    ProjectedMessage,
    ProviderImagePart,
    ProviderTextPart,
    ProviderToolCall,
    ProviderType,
    Reasoning,
    ToolResultMessage,
    UserMessage,
)
from tests.support.fake_provider import (
    FakeProvider,
    FakeToolCall,
    RecordedRequest,
    Script,
    SseEvent,
    encode_events,
    gemini_chunk,
    gemini_events,
    gemini_usage,
    split_at,
)
from tests.wire.test_provider_adapters import (
    HISTORY,
    KEY,
    MODEL_CALL_ID,
    READ_FILE,
    exchange,
    failed,
    fake,
    make_request,
    make_route,
    play,
)
from wire.providers.errors import FailureKind, ProviderFailure
from wire.providers.formats import adapter_for
from wire.providers.gemini import GeminiAdapter
from wire.providers.grammar import CallResult

__all__ = ["fake"]  # the fixture, shared with the other adapters' tests

GEMINI = ProviderType.GEMINI
CALLS = [
    FakeToolCall("call_a", "read_file", ('{"path":"/a"}',)),
    FakeToolCall("call_b", "read_file", ('{"path":"/b"}',)),
]


async def sent(
    fake: FakeProvider, request: LlmRequest | None = None, **route_changes: Any
) -> RecordedRequest:
    route = make_route(GEMINI, fake.base_url + "/", **route_changes)
    outcome = await play(fake, GEMINI, gemini_events(text=["ok"]), request, route)
    assert outcome.failure is None, outcome.failure
    return fake.requests[-1]


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def streamed_parts(events: list[SseEvent]) -> list[dict[str, Any]]:
    """The parts the fake streamed, decoded from the very SSE bytes it sent."""
    parts: list[dict[str, Any]] = []
    for line in encode_events(events).decode().splitlines():
        if line.startswith("data: "):
            content = json.loads(line[6:])["candidates"][0].get("content")
            parts += content["parts"] if content else []
    return parts


# ---------------------------------------------------------------------------------------------
# Streams → canonical events


async def test_gemini_text_and_usage_with_cache_and_thought_counts(fake: FakeProvider) -> None:
    usage = gemini_usage(100, 7, cached=60, thoughts=30)
    outcome = await play(fake, GEMINI, gemini_events(text=["Hel", "lo"], usage=usage))
    parts = [{"text": "Hel"}, {"text": "lo", "thoughtSignature": "sig-text"}]
    assert outcome.events == [
        CallStarted(MODEL_CALL_ID),
        TextStarted(),
        TextDelta("Hel"),
        TextDelta("lo"),
        TextEnded(),
        UsageReported(
            Usage(input_tokens=100, output_tokens=37, cache_read_tokens=60, reasoning_tokens=30)
        ),
        ReplayStateReported(ReplayState("gemini", {"parts": parts})),
        CallDone(FinishReason.STOP),
    ]


async def test_gemini_unsigned_text_keeps_no_replay_state(fake: FakeProvider) -> None:
    outcome = await play(fake, GEMINI, gemini_events(text=["ok"], signatures=None))
    assert not any(isinstance(e, ReplayStateReported) for e in outcome.events)
    assert outcome.result.text == "ok"


async def test_gemini_thinking_then_calls_with_the_api_ids(fake: FakeProvider) -> None:
    events = gemini_events(thinking=["wh", "y"], text=["let me look"], tools=CALLS)
    outcome = await play(fake, GEMINI, events)
    assert outcome.events[:9] == [
        CallStarted(MODEL_CALL_ID),
        ThinkingStarted(),
        ThinkingDelta("wh"),
        ThinkingDelta("y"),
        ThinkingEnded(),
        TextStarted(),
        TextDelta("let me look"),
        TextEnded(),
        ToolCallStarted(index=0, call_id="call_a", name="read_file"),
    ]
    assert outcome.events[9:12] == [
        ToolCallArgumentsDelta(0, '{"path":"/a"}'),
        ToolCallEnded(0),
        ToolCallStarted(index=1, call_id="call_b", name="read_file"),
    ]
    result = outcome.result
    assert result.finish is FinishReason.TOOL_USE  # Gemini says STOP beside function calls
    assert result.thinking == "why"
    assert [c.call_id for c in result.calls] == ["call_a", "call_b"]
    assert result.replay == ReplayState("gemini", {"parts": streamed_parts(events)})


async def test_gemini_calls_without_ids_get_distinct_ids_of_ours(fake: FakeProvider) -> None:
    outcome = await play(fake, GEMINI, gemini_events(tools=CALLS, call_ids=False))
    ids = [call.call_id for call in outcome.result.calls]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)
    assert "call_a" not in ids


async def test_gemini_call_without_args_is_an_empty_object(fake: FakeProvider) -> None:
    chunk = gemini_chunk([{"functionCall": {"name": "list_dir"}}], finish="STOP")
    outcome = await play(fake, GEMINI, [chunk])
    assert outcome.result.calls[0].arguments_json == "{}"


async def test_gemini_any_chunking_gives_the_same_events(fake: FakeProvider) -> None:
    body = encode_events(gemini_events(thinking=["a"], text=["b"], tools=CALLS))
    whole = await play(fake, GEMINI, Script.raw([body]))
    split = await play(fake, GEMINI, Script.raw(split_at(body, range(7, len(body), 7))))
    assert split.chunks > whole.chunks
    assert split.events == whole.events


async def test_gemini_max_tokens_is_length(fake: FakeProvider) -> None:
    outcome = await play(fake, GEMINI, gemini_events(text=["cut"], finish="MAX_TOKENS"))
    assert outcome.result.finish is FinishReason.LENGTH


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL"])
async def test_gemini_other_finish_reasons_fail_by_name(fake: FakeProvider, reason: str) -> None:
    outcome = await play(fake, GEMINI, gemini_events(text=["x"], finish=reason))
    failed(outcome, FailureKind.PROVIDER, f"finishReason {reason}")


async def test_gemini_stream_without_a_finish_reason_is_cut(fake: FakeProvider) -> None:
    outcome = await play(fake, GEMINI, gemini_events(text=["x"], finish=None))
    failed(outcome, FailureKind.PROVIDER, "ended before a finishReason")


async def test_gemini_usage_after_the_finish_reason_is_taken(fake: FakeProvider) -> None:
    events = [
        gemini_chunk([{"text": "ok"}], finish="STOP"),
        SseEvent.json({"usageMetadata": gemini_usage(3, 1)}),
    ]
    outcome = await play(fake, GEMINI, events)
    assert outcome.result.usage == Usage(input_tokens=3, output_tokens=1)


async def test_gemini_parts_after_the_finish_reason_are_refused(fake: FakeProvider) -> None:
    events = [gemini_chunk(finish="STOP"), gemini_chunk([{"text": "late"}])]
    failed(await play(fake, GEMINI, events), FailureKind.PROTOCOL, "after its finishReason")


async def test_gemini_blocked_prompt_and_stream_error_fail(fake: FakeProvider) -> None:
    blocked = SseEvent.json({"promptFeedback": {"blockReason": "SAFETY"}})
    failed(await play(fake, GEMINI, [blocked]), FailureKind.PROVIDER, "blockReason SAFETY")
    error = SseEvent.json({"error": {"code": 503, "message": "overloaded", "status": "X"}})
    failed(await play(fake, GEMINI, [error]), FailureKind.PROVIDER, "overloaded")


async def test_gemini_http_error_is_scrubbed(fake: FakeProvider) -> None:
    body = {"error": {"code": 400, "message": f"API key {KEY} not valid", "status": "BAD"}}
    fake.enqueue(Script.error(400, body))
    outcome = await exchange(fake, GEMINI)
    failure = failed(outcome, FailureKind.PROVIDER, "Gemini 400 Bad Request", "not valid")
    assert failure.http_status == 400


# ---------------------------------------------------------------------------------------------
# Requests


async def test_gemini_body_url_and_key(fake: FakeProvider) -> None:
    recorded = await sent(fake, max_output_tokens=2048)
    assert recorded.path == "/v1/models/fake-model:streamGenerateContent"
    assert recorded.query == {"alt": "sse"}
    assert recorded.header("x-goog-api-key") == KEY
    assert recorded.header("authorization") is None
    assert KEY.encode() not in recorded.body
    assert recorded.body == msgspec.json.encode(recorded.json)
    assert recorded.json == {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "What is in "},
                    {"text": "this picture?"},
                    {"inlineData": {"mimeType": "image/png", "data": "AQID"}},
                ],
            }
        ],
        "systemInstruction": {"parts": [{"text": "You are terse."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "read_file",
                        "description": READ_FILE.description,
                        "parametersJsonSchema": READ_FILE.parameters,
                    }
                ]
            }
        ],
        "generationConfig": {"maxOutputTokens": 2048},
    }


@pytest.mark.parametrize(
    ("reasoning", "config"),
    [
        (Reasoning(), None),
        (Reasoning(enabled=True), {"includeThoughts": True}),
        (Reasoning(enabled=True, effort="low"), {"includeThoughts": True, "thinkingLevel": "low"}),
        (Reasoning(enabled=False, effort="none"), {"thinkingBudget": 0}),
    ],
)
async def test_gemini_thinking_config_never_guesses_a_budget(
    fake: FakeProvider, reasoning: Reasoning, config: dict[str, Any] | None
) -> None:
    body = (await sent(fake, reasoning=reasoning)).json
    assert body.get("generationConfig", {}).get("thinkingConfig") == config


async def test_gemini_tool_result_images_follow_the_responses(fake: FakeProvider) -> None:
    call = ProviderToolCall(index=0, call_id="c1", name="read_file", arguments_json='{"path":"x"}')
    image = ProviderImagePart(mime_type="image/png", data=b"\x01\x02\x03")
    history: tuple[ProjectedMessage, ...] = (
        *HISTORY,
        AssistantMessage(calls=(call,)),
        ToolResultMessage("c1", "read_file", "an image", images=(image,)),
        UserMessage((ProviderTextPart("and now?"),)),
    )
    body = (await sent(fake, make_request(history))).json
    assert body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "read_file", "args": {"path": "x"}},
                    "thoughtSignature": "skip_thought_signature_validator",
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "read_file", "response": {"output": "an image"}}},
                {"text": "The image(s) returned by tool call c1 (read_file):"},
                {"inlineData": {"mimeType": "image/png", "data": "AQID"}},
                {"text": "and now?"},
            ],
        },
    ]


async def test_gemini_two_rounds_replay_each_signature_on_its_part(fake: FakeProvider) -> None:
    """Round 1 thinks and calls two tools (signed thought and call parts); round 2 thinks
    again and calls one; round 3 answers. Each request sends every earlier model turn as the
    exact bytes of the parts streamed for it, and each response carries its call's id."""
    scripts = [
        gemini_events(thinking=["wh", "y"], text=["looking"], tools=CALLS, signatures="r1"),
        gemini_events(
            thinking=["more"],
            tools=[FakeToolCall("call_c", "read_file", ('{"path":"/c"}',))],
            signatures="r2",
        ),
        gemini_events(text=["done"], signatures="r3"),
    ]
    history: tuple[ProjectedMessage, ...] = HISTORY
    bodies: list[bytes] = []
    results: list[CallResult] = []
    for script in scripts:
        outcome = await play(fake, GEMINI, script, make_request(history))
        result = outcome.result
        results.append(result)
        bodies.append(fake.requests[-1].body)
        answers = tuple(
            ToolResultMessage(c.call_id, c.name, f"contents of {c.call_id}") for c in result.calls
        )
        history = (*history, result.assistant_message(), *answers)
    for round_no in (0, 1):
        expected = b'{"role":"model","parts":' + compact(streamed_parts(scripts[round_no])) + b"}"
        assert expected in bodies[round_no + 1] and expected in bodies[2]
    contents = json.loads(bodies[2])["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    assert contents[2]["parts"] == [
        {
            "functionResponse": {
                "name": "read_file",
                "response": {"output": f"contents of {call_id}"},
                "id": call_id,
            }
        }
        for call_id in ("call_a", "call_b")
    ]
    signed = [p["thoughtSignature"] for p in contents[1]["parts"] if "thoughtSignature" in p]
    assert signed == ["r1-thought", "r1-call-call_a"]
    first = bodies[1]
    assert bodies[2].startswith(first[: first.index(b"]}],")])  # history is a prefix
    assert results[2].text == "done"


async def test_gemini_calls_without_api_ids_answer_by_name_only(fake: FakeProvider) -> None:
    outcome = await play(fake, GEMINI, gemini_events(tools=CALLS[:1], call_ids=False))
    result = outcome.result
    answer = ToolResultMessage(result.calls[0].call_id, "read_file", "x")
    body = (await sent(fake, make_request((*HISTORY, result.assistant_message(), answer)))).json
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "read_file", "response": {"output": "x"}}}
    ]


async def test_gemini_another_providers_turn_is_built_from_the_message(
    fake: FakeProvider,
) -> None:
    foreign = ReplayState("anthropic", {"blocks": [{"type": "thinking", "signature": "s"}]})
    call = ProviderToolCall(index=0, call_id="toolu_1", name="read_file", arguments_json="[1]")
    assistant = AssistantMessage(text="earlier", thinking="why", replay=foreign, calls=(call,))
    history = (*HISTORY, assistant, ToolResultMessage("toolu_1", "read_file", "r"))
    recorded = await sent(fake, make_request(history))
    assert recorded.json["contents"][1]["parts"] == [
        {"text": "earlier"},
        {
            "functionCall": {"name": "read_file", "args": {}},
            "thoughtSignature": "skip_thought_signature_validator",
        },
    ]
    assert b'"s"' not in recorded.body and b'"signature"' not in recorded.body


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"parts": "not a list"},
        {"parts": ["not an object"]},
        {"parts": [{"functionCall": {"name": "other_tool"}}]},
        {"parts": []},
    ],
)
def test_gemini_malformed_or_mismatched_replay_state_is_refused(value: dict[str, Any]) -> None:
    call = ProviderToolCall(index=0, call_id="c", name="read_file", arguments_json="{}")
    assistant = AssistantMessage(replay=ReplayState("gemini", value), calls=(call,))
    with pytest.raises(ProviderFailure) as raised:
        GeminiAdapter().build_call(
            make_request((*HISTORY, assistant)), make_route(GEMINI, "http://x")
        )
    assert raised.value.kind is FailureKind.PROTOCOL


def test_gemini_fast_route_cannot_be_built() -> None:
    route = make_route(GEMINI, "http://x", fast=True)
    with pytest.raises(ProviderFailure) as raised:
        adapter_for(GEMINI).build_call(make_request(), route)
    assert raised.value.kind is FailureKind.CONFIG
