"""The provider request bodies we send conform to each format's published request schema.

Every body any test makes the server send reaches the fake provider, which checks it (see
``tests/support/request_schemas.py``) and the suite's autouse fixture fails the test on a
problem. This module adds: whole conversations through the server in each of the four formats
(text, an image, reasoning, a tool round, a second and third turn from the client's checkpoint,
effort settings), each body checked explicitly; and checks that the validator itself fails on
the shapes the schema refuses, so a field dropped again (``detail``, the assistant text form)
cannot pass unnoticed.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("jsonschema")

from store import Store
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from tests.support import fake_provider
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import (
    FakeProvider,
    FakeThinking,
    FakeToolCall,
    Script,
    SseEvent,
    anthropic_events,
    chat_events,
    gemini_events,
    responses_events,
)
from tests.support.request_schemas import (
    ALLOWED_UNDECLARED,
    anthropic_errors,
    request_problems,
    schema_errors,
    undeclared_keys,
)
from wire.proto import agent_v1_pb2 as agent

FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini")
IMAGE = b"\x89PNG\r\n\x1a\n a picture"


def answer(
    provider_type: str,
    text: str,
    *,
    tool: FakeToolCall | None = None,
    also: FakeToolCall | None = None,
) -> list[SseEvent]:
    """One streamed answer with reasoning, in the format's own stream shape."""
    tools = [t for t in (tool, also) if t is not None]
    if provider_type == "openai-chat":
        return chat_events(thinking=["hm"], text=[text], tools=tools)
    if provider_type == "openai-responses":
        return responses_events(
            thinking=["hm"], encrypted_reasoning="opaque", text=[text], tools=tools
        )
    if provider_type == "gemini":
        return gemini_events(thinking=["hm"], text=[text], tools=tools)
    return anthropic_events(
        thinking=[FakeThinking(("hm",), signature="sig")], text=[text], tools=tools
    )


def add_model(store: Store, fake: FakeProvider, provider_type: str) -> str:
    provider = create_provider(
        store.database,
        ProviderInput(name="p", type=provider_type, base_url=fake.base_url, api_key="sk-test"),
    )
    model = ModelInput(
        model_id="fake-model", display_name="Fake", max_output_tokens=2048, reasoning_enabled=True
    )
    return save_models(store.database, provider.id, [model])[0].public_id


def turn(
    text: str,
    public_id: str,
    message_id: str,
    state: agent.ConversationStateStructure | None,
    *params: tuple[str, str],
) -> agent.AgentClientMessage:
    message = user_turn_message(text, public_id, message_id=message_id, conversation_state=state)
    for key, value in params:
        message.run_request.requested_model.parameters.add(id=key, value=value)
    return message


@pytest.mark.parametrize("provider_type", FORMATS)
async def test_a_whole_conversation_sends_only_conforming_bodies(
    provider_type: str,
    fake: FakeProvider,
    cursor: FakeCursor,
    server_store: Store,
    tmp_path: Path,
) -> None:
    public_id = add_model(server_store, fake, provider_type)
    data_url = "data:image/png;base64," + base64.b64encode(IMAGE).decode()
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "pic.png").write_bytes(IMAGE)
    blob_id = hashlib.sha256(IMAGE).digest()
    first = turn("what is this?", public_id, "m1", None)
    selected = first.run_request.action.user_message_action.user_message.selected_context
    selected.selected_images.add(mime_type="image/png", blob_id=blob_id)
    read = FakeToolCall("call_1", "Read", ('{"path": "/a.txt"}',))
    picture = FakeToolCall("call_2", "Read", ('{"path": "/pic.png"}',))
    fake.enqueue(
        Script.sse(answer(provider_type, "Reading.", tool=read, also=picture)),
        Script.sse(answer(provider_type, "A picture.")),
        Script.sse(answer(provider_type, "Still a picture.")),
        Script.sse(answer(provider_type, "Yes.")),
    )
    blobs = {blob_id: IMAGE}
    log = await CursorSession(cursor, "run-1", workspace=tmp_path, blobs=blobs).run(first)
    assert log.end == {}
    state = log.checkpoints()[-1]
    session = CursorSession(cursor, "run-2", workspace=tmp_path, blobs=dict(log.blobs))
    log = await session.run(turn("sure?", public_id, "m2", state, ("effort", "high")))
    assert log.end == {}
    state = log.checkpoints()[-1]
    session = CursorSession(cursor, "run-3", workspace=tmp_path, blobs=dict(log.blobs))
    log = await session.run(turn("quick", public_id, "m3", state, ("effort", "none")))
    assert log.end == {}

    assert len(fake.requests) == 4
    for recorded in fake.requests:
        assert recorded.problems == (), recorded.problems
    bodies = [r.json for r in fake.requests]
    assert read_image_in(provider_type, bodies[1]) == data_url
    text = json.dumps(bodies[1])
    # What the schema requires and we once left out, on the bodies that carry it.
    if provider_type == "openai-responses":
        image = next(
            part for part in bodies[0]["input"][0]["content"] if part["type"] == "input_image"
        )
        assert image["detail"] == "auto"
        assert {"role": "assistant", "content": "A picture."} in bodies[2]["input"]
        assert bodies[0]["include"] == ["reasoning.encrypted_content"]
        assert bodies[3]["reasoning"] == {"effort": "none"}
        # Reasoning off, but the history still replays reasoning items.
        assert bodies[3]["include"] == ["reasoning.encrypted_content"]
        assert '"encrypted_content": "opaque"' in text
    elif provider_type == "openai-chat":
        assert bodies[2]["reasoning_effort"] == "high"
        assert bodies[3]["reasoning_effort"] == "none"
        assert '"reasoning_content": "hm"' in text
    elif provider_type == "gemini":
        thinking = [body["generationConfig"]["thinkingConfig"] for body in bodies]
        assert thinking[0] == {"includeThoughts": True}
        assert thinking[2] == {"includeThoughts": True, "thinkingLevel": "high"}
        assert thinking[3] == {"thinkingBudget": 0}
        # The streamed thought, and the signature on the round's first call, go back as sent.
        assert '{"text": "hm", "thought": true, "thoughtSignature": "sig-thought"}' in text
        assert '"thoughtSignature": "sig-call-call_1"' in text
    else:
        assert bodies[2]["output_config"] == {"effort": "high"}
        assert "thinking" in bodies[2] and "thinking" not in bodies[3]
        assert '"signature": "sig"' in text


def read_image_in(provider_type: str, body: dict[str, Any]) -> str:
    """The data URL of the image the Read of ``/pic.png`` (call_2) showed, where each format
    carries a tool result's image; asserts the result's text comes with it."""
    text = "/pic.png is an image (image/png, 18 bytes); it is attached to this result"
    if provider_type == "openai-chat":
        messages = body["messages"]
        tool = [i for i, m in enumerate(messages) if m["role"] == "tool"]
        assert tool == [tool[0], tool[0] + 1]  # the round's two results, back to back
        assert {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}[
            "call_2"
        ] == text
        # The images follow the round's last tool message, in one user message.
        images = messages[tool[-1] + 1]
        assert images["role"] == "user"
        label, image = images["content"]
        assert label == {
            "type": "text",
            "text": "The image(s) returned by tool call call_2 (Read):",
        }
        return str(image["image_url"]["url"])
    if provider_type == "openai-responses":
        (output,) = [
            item["output"]
            for item in body["input"]
            if item.get("type") == "function_call_output" and item["call_id"] == "call_2"
        ]
        assert output[0] == {"type": "input_text", "text": text}
        assert output[1]["detail"] == "auto"
        return str(output[1]["image_url"])
    if provider_type == "gemini":
        return gemini_image_in(body, text)
    (result,) = [
        block
        for message in body["messages"]
        for block in message["content"]
        if isinstance(block, dict) and block.get("tool_use_id") == "call_2"
    ]
    first, image = result["content"]
    assert first == {"type": "text", "text": text}
    source = image["source"]
    return f"data:{source['media_type']};base64,{source['data']}"


def gemini_image_in(body: dict[str, Any], text: str) -> str:
    """Gemini's function responses hold JSON only: the round's two responses, then the image
    under a line naming its call, all in the user content after the model's calls."""
    contents = body["contents"]
    (at,) = [i for i, c in enumerate(contents) if "functionCall" in c["parts"][-1]]
    responses, label, image = (
        contents[at + 1]["parts"][:2],
        contents[at + 1]["parts"][2],
        contents[at + 1]["parts"][3],
    )
    assert [r["functionResponse"]["name"] for r in responses] == ["Read", "Read"]
    assert responses[1]["functionResponse"]["response"] == {"output": text}
    assert label == {"text": "The image(s) returned by tool call call_2 (Read):"}
    inline = image["inlineData"]
    return f"data:{inline['mimeType']};base64,{inline['data']}"


# -- the validator fails where the schema does --------------------------------------------------


def responses_body() -> dict[str, Any]:
    return {
        "model": "m",
        "stream": True,
        "store": False,
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "hi"},
                    {
                        "type": "input_image",
                        "image_url": "data:image/png;base64,AA==",
                        "detail": "auto",
                    },
                ],
            },
            {"role": "assistant", "content": "hello"},
            {"type": "function_call", "call_id": "c", "name": "Read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "x"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "Read",
                "description": "r",
                "parameters": {"type": "object", "properties": {}},
                "strict": False,
            }
        ],
    }


def test_a_conforming_responses_body_passes() -> None:
    assert request_problems("/v1/responses", responses_body()) == []


def test_an_image_without_detail_fails() -> None:
    body = responses_body()
    del body["input"][0]["content"][1]["detail"]
    (problem,) = request_problems("/v1/responses", body)
    assert "'detail' is a required property" in problem


def test_the_old_assistant_output_text_shape_fails() -> None:
    body = responses_body()
    body["input"][1] = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "hello"}],
    }
    (problem,) = request_problems("/v1/responses", body)
    # Neither an input message (output_text is not input content) nor an output message
    # (no id, no status, no annotations): no choice of the input union takes it.
    assert problem.startswith("CreateResponse input: anyOf") and "input[1]: required" in problem
    body["input"][1].update(id="msg_1", status="completed")
    body["input"][1]["content"][0].update(annotations=[], logprobs=[])
    assert request_problems("/v1/responses", body) == []


def test_nullable_and_overlapping_choices_are_read_as_the_reference_says() -> None:
    # A user message matches both EasyInputMessage and an input Item: not an error.
    body = responses_body()
    assert schema_errors("CreateResponse", body) == []
    # nullable: max_completion_tokens may be null in Chat Completions.
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert (
        schema_errors("CreateChatCompletionRequest", {**chat, "max_completion_tokens": None}) == []
    )
    assert schema_errors("CreateChatCompletionRequest", {**chat, "max_completion_tokens": "x"})


def test_the_strict_pass_lists_undeclared_keys_and_the_allowed_ones_are_used() -> None:
    chat: dict[str, Any] = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "reasoning_content": "r", "tool_calls": []},
            {"role": "assistant", "content": "a", "reasoning_details": [{"type": "x"}]},
            {"role": "assistant", "content": "b", "reasoning": "r"},
        ],
        "stream_options": {"include_usage": True},
    }
    found = undeclared_keys("CreateChatCompletionRequest", chat)
    # The keys we send beyond the schema are listed (so its allowance is not stale) ...
    assert found == set(ALLOWED_UNDECLARED["CreateChatCompletionRequest"])
    assert request_problems("/v1/chat/completions", chat) == []
    # ... and any other is a problem.
    loose = copy.deepcopy(chat)
    loose["messages"][0]["name_of_speaker"] = "x"
    loose["tools"] = [{"type": "function", "function": {"name": "f", "parameters": {"k": 1}}}]
    assert request_problems("/v1/chat/completions", loose) == [
        "CreateChatCompletionRequest messages[].name_of_speaker: no schema declares this key"
    ]


def test_an_id_on_an_easy_assistant_message_is_flagged() -> None:
    # An item reference ({"id"}) and an easy message ({"role", "content"}) each declare some of
    # these keys; no one choice declares them all.
    body = responses_body()
    body["input"][1]["id"] = "msg_1"
    assert request_problems("/v1/responses", body) == [
        "CreateResponse input[].id: no schema declares this key"
    ]


def test_reasoning_content_is_allowed_on_assistant_messages_only() -> None:
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi", "reasoning_content": "r"}]}
    assert request_problems("/v1/chat/completions", chat) == [
        "CreateChatCompletionRequest messages[0].reasoning_content: "
        "only an assistant message carries it"
    ]


def test_anthropic_checks_follow_the_messages_api_facts() -> None:
    body: dict[str, Any] = {
        "model": "m",
        "max_tokens": 10,
        "stream": True,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "tool_use", "id": "c", "name": "Read", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c", "content": "x"}],
            },
        ],
    }
    assert anthropic_errors(body) == []
    late = copy.deepcopy(body)
    late["messages"][1]["content"].reverse()
    assert anthropic_errors(late) == [
        "messages[1]: thinking blocks must come first when a tool is used"
    ]
    twice = copy.deepcopy(body)
    twice["messages"].insert(1, {"role": "user", "content": "again"})
    assert any("roles must alternate" in e for e in anthropic_errors(twice))
    assert "messages[0].content[0].type: 'tool_use' is not a user block" in anthropic_errors(
        {**body, "messages": [{"role": "user", "content": [body["messages"][1]["content"][1]]}]}
    )


async def test_the_fake_provider_records_a_nonconforming_body(fake: FakeProvider) -> None:
    before = len(fake_provider.NONCONFORMING)
    fake.enqueue(Script.sse(chat_events(text=["x"])))
    async with httpx.AsyncClient() as client:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi", "extra": 1}]}
        await client.post(f"{fake.base_url}/chat/completions", json=body)
    try:
        assert fake.requests[0].problems == (
            "CreateChatCompletionRequest messages[].extra: no schema declares this key",
        )
        assert fake_provider.NONCONFORMING[before:] == [
            "/v1/chat/completions: " + fake.requests[0].problems[0]
        ]
    finally:
        del fake_provider.NONCONFORMING[before:]  # this test's own bad body is not a failure
