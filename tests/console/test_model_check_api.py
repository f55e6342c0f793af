"""The console's model checks (Test, Tools and reasoning) over real HTTP: the in-process server
calls the fake provider through the ProviderActor, in each of the three formats."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from actors.server.compose import RunningServer, ServerConfig, start_server
from console.model_checks import DID_NOT_CALL, NOT_RUN, TOOL_NAME, WEATHER_RESULT
from store import Store
from tests.conftest import TEST_LIMITS
from tests.support.fake_provider import (
    DEEPSEEK_MISSING_REASONING,
    FakeProvider,
    FakeThinking,
    FakeToolCall,
    Script,
    SseEvent,
    anthropic_events,
    anthropic_usage,
    chat_events,
    chat_usage,
    gemini_events,
    gemini_usage,
    responses_events,
    responses_usage,
)

KEY = "sk-check-KEY-0123456789"
FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini")
WEATHER_CALL = FakeToolCall("call_w1", TOOL_NAME, ('{"city":', '"Paris"}'))
THOUGHT = "The user wants the weather; I must call the tool."
SIGNATURE = "sig-weather-1"
ENCRYPTED = "enc-reasoning-1"


class Checks:
    """An httpx client for the console API that keeps every answer body it saw."""

    def __init__(self, client: httpx.AsyncClient, fake: FakeProvider) -> None:
        self.client = client
        self.fake = fake
        self.bodies: list[str] = []

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        # Every console mutation is JSON, body or not (the console's CSRF guard).
        kwargs.setdefault("headers", {"Content-Type": "application/json"})
        response = await self.client.request(method, f"/console/api{path}", **kwargs)
        self.bodies.append(response.text)
        return response

    async def model(
        self, provider_type: str, *, replay_reasoning: bool = True, **model: Any
    ) -> str:
        """A provider of ``provider_type`` on the fake (with the key) and one model on it."""
        provider = await self.call(
            "POST",
            "/providers",
            json={
                "name": f"fake {provider_type}",
                "type": provider_type,
                "base_url": self.fake.base_url,
                "api_key": KEY,
                "replay_reasoning": replay_reasoning,
            },
        )
        assert provider.status_code == 201, provider.text
        fields = {"model_id": "fake-model", "display_name": "Fake", "enabled": True, **model}
        if provider_type == "anthropic":
            fields.setdefault("max_output_tokens", 1024)
        saved = await self.call(
            "POST", f"/providers/{provider.json()['id']}/models", json={"models": [fields]}
        )
        assert saved.status_code == 201, saved.text
        return str(saved.json()[0]["public_id"])

    async def test(self, public_id: str) -> httpx.Response:
        return await self.call("POST", f"/models/{public_id}/test")

    async def check_tools(self, public_id: str) -> httpx.Response:
        return await self.call("POST", f"/models/{public_id}/check-tools")

    def assert_no_key(self) -> None:
        for body in self.bodies:
            assert KEY not in body


MakeChecks = Callable[..., Awaitable[Checks]]


@pytest.fixture
async def make_checks(
    upstream: str, server_store: Store, fake: FakeProvider
) -> AsyncIterator[MakeChecks]:
    """Start the real server (model-check bound ``timeout_s``) and a console client for it."""
    servers: list[RunningServer] = []
    clients: list[httpx.AsyncClient] = []

    async def make(timeout_s: float = 30.0) -> Checks:
        config = ServerConfig(
            host="127.0.0.1",
            port=0,
            upstream_url=upstream,
            limits=TEST_LIMITS,
            model_check_timeout_s=timeout_s,
        )
        server = await start_server(config, store=server_store)
        servers.append(server)
        client = httpx.AsyncClient(base_url=f"http://{server.address}", timeout=30.0)
        clients.append(client)
        return Checks(client, fake)

    yield make
    for client in clients:
        await client.aclose()
    for server in servers:
        await server.stop()


@pytest.fixture
async def checks(make_checks: MakeChecks) -> Checks:
    return await make_checks()


def assert_error(response: httpx.Response, status: int, code: str, fragment: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) - {"fields"} == {"code", "message"}
    assert body["code"] == code
    assert fragment in body["message"], body["message"]


# --- scripts per format ------------------------------------------------------------------------


def text_answer(provider_type: str, text: list[str]) -> list[SseEvent]:
    """A plain answer with usage 12 in, 3 out."""
    if provider_type == "openai-chat":
        return chat_events(text=text, usage=chat_usage(12, 3))
    if provider_type == "openai-responses":
        return responses_events(text=text, usage=responses_usage(12, 3))
    if provider_type == "gemini":
        return gemini_events(text=text, usage=gemini_usage(12, 3))
    return anthropic_events(
        text=text,
        start_usage=anthropic_usage(input=12),
        delta_usage=anthropic_usage(output=3),
    )


def weather_call(provider_type: str) -> list[SseEvent]:
    """The model reasons, then calls get_weather(Paris)."""
    if provider_type == "openai-chat":
        return chat_events(thinking=[THOUGHT], tools=[WEATHER_CALL])
    if provider_type == "openai-responses":
        return responses_events(
            thinking=[THOUGHT], encrypted_reasoning=ENCRYPTED, tools=[WEATHER_CALL]
        )
    if provider_type == "gemini":
        return gemini_events(thinking=[THOUGHT], tools=[WEATHER_CALL], signatures=SIGNATURE)
    return anthropic_events(thinking=[FakeThinking((THOUGHT,), SIGNATURE)], tools=[WEATHER_CALL])


def assert_reasoning_replayed(provider_type: str, body: dict[str, Any]) -> None:
    """The second request carries step 1's reasoning in the format's native field, beside the
    tool call, then the tool result."""
    if provider_type == "openai-chat":
        assistant, result = body["messages"][2], body["messages"][3]
        assert assistant["reasoning_content"] == THOUGHT
        assert assistant["tool_calls"][0]["id"] == WEATHER_CALL.call_id
        assert assistant["tool_calls"][0]["function"]["arguments"] == '{"city":"Paris"}'
        assert result == {
            "role": "tool",
            "tool_call_id": WEATHER_CALL.call_id,
            "content": WEATHER_RESULT,
        }
    elif provider_type == "openai-responses":
        items = body["input"][1:]
        assert items[0]["type"] == "reasoning"
        assert items[0]["encrypted_content"] == ENCRYPTED
        assert items[0]["summary"] == [{"type": "summary_text", "text": THOUGHT}]
        assert items[1]["type"] == "function_call"
        assert items[1]["call_id"] == WEATHER_CALL.call_id
        assert items[2] == {
            "type": "function_call_output",
            "call_id": WEATHER_CALL.call_id,
            "output": WEATHER_RESULT,
        }
        assert "reasoning.encrypted_content" in body["include"]
    elif provider_type == "gemini":
        model, result = body["contents"][1], body["contents"][2]
        assert model == {
            "role": "model",
            "parts": [
                {"text": THOUGHT, "thought": True, "thoughtSignature": f"{SIGNATURE}-thought"},
                {
                    "functionCall": {
                        "name": TOOL_NAME,
                        "args": {"city": "Paris"},
                        "id": WEATHER_CALL.call_id,
                    },
                    "thoughtSignature": f"{SIGNATURE}-call-{WEATHER_CALL.call_id}",
                },
            ],
        }
        response = {"name": TOOL_NAME, "response": {"output": WEATHER_RESULT}}
        assert result == {
            "role": "user",
            "parts": [{"functionResponse": {**response, "id": WEATHER_CALL.call_id}}],
        }
    else:
        assistant, result = body["messages"][1], body["messages"][2]
        assert assistant["role"] == "assistant"
        assert assistant["content"][0] == {
            "type": "thinking",
            "thinking": THOUGHT,
            "signature": SIGNATURE,
        }
        assert assistant["content"][1]["type"] == "tool_use"
        assert assistant["content"][1]["input"] == {"city": "Paris"}
        assert result["role"] == "user"
        assert result["content"][0]["type"] == "tool_result"
        assert result["content"][0]["tool_use_id"] == WEATHER_CALL.call_id


# --- Test --------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider_type", FORMATS)
async def test_a_test_answers_with_the_models_text_usage_and_its_call_record(
    checks: Checks, fake: FakeProvider, provider_type: str
) -> None:
    public_id = await checks.model(provider_type)
    fake.enqueue(Script.sse(text_answer(provider_type, ["po", "ng"])))
    response = await checks.test(public_id)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ok"] is True
    assert body["answer"] == "pong"
    assert body["finish_reason"] == "stop"
    assert body["usage"] == {"input_tokens": 12, "output_tokens": 3}
    assert body["model_enabled"] is True
    assert 0 <= body["ttfb_ms"] <= body["ttft_ms"] <= body["total_ms"]
    # One small real request: the short user message, no tools.
    sent = fake.requests[-1].json
    assert "Reply with the single word: pong" in json.dumps(sent)
    assert "tools" not in sent
    record = await checks.call("GET", f"/calls/{body['call_id']}")
    assert record.status_code == 200, record.text
    call = record.json()["call"]
    assert call["run_id"] is None
    assert call["status"] == "completed"
    assert call["public_id"] == public_id
    assert (call["input_tokens"], call["output_tokens"]) == (12, 3)
    checks.assert_no_key()


@pytest.mark.parametrize("provider_type", FORMATS)
async def test_a_provider_refusal_is_its_message_verbatim_without_the_key(
    checks: Checks, fake: FakeProvider, provider_type: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="cursor_server")
    public_id = await checks.model(provider_type)
    message = f"Incorrect API key provided: {KEY}. You can find your API key at example.com."
    fake.enqueue(
        Script.error(401, {"error": {"message": message, "type": "invalid_request_error"}})
    )
    response = await checks.test(public_id)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"ok", "error", "http_status", "call_id", "model_enabled"}
    assert body["ok"] is False
    assert body["http_status"] == 401
    assert (
        "Incorrect API key provided: [redacted]. You can find your API key at example.com."
        in (body["error"])
    )
    call = (await checks.call("GET", f"/calls/{body['call_id']}")).json()["call"]
    assert (call["status"], call["http_status"], call["run_id"]) == ("failed", 401, None)
    assert call["error_message"] == body["error"]
    checks.assert_no_key()
    assert KEY not in caplog.text
    assert "[redacted]" in caplog.text


async def test_a_test_beyond_its_bound_is_504_and_the_call_is_cancelled(
    make_checks: MakeChecks, fake: FakeProvider
) -> None:
    checks = await make_checks(timeout_s=0.3)
    public_id = await checks.model("openai-chat")
    fake.enqueue(Script.hang_before_headers())
    response = await checks.test(public_id)
    assert_error(response, 504, "deadline_exceeded", "did not answer within 0.3 s")
    await fake.disconnected(0).wait()  # the cancel closed the provider connection
    calls = (await checks.call("GET", "/calls")).json()["calls"]
    assert [c["status"] for c in calls] == ["cancelled"]
    checks.assert_no_key()


async def test_a_disabled_model_is_testable_and_says_so(checks: Checks, fake: FakeProvider) -> None:
    public_id = await checks.model("openai-chat", enabled=False)
    fake.enqueue(Script.sse(text_answer("openai-chat", ["pong"])))
    body = (await checks.test(public_id)).json()
    assert (body["ok"], body["answer"], body["model_enabled"]) == (True, "pong", False)


async def test_an_unknown_model_is_404(checks: Checks, fake: FakeProvider) -> None:
    assert_error(await checks.test("0badc0de"), 404, "not_found", "model 0badc0de not found")
    assert_error(await checks.check_tools("0badc0de"), 404, "not_found", "0badc0de")
    assert fake.requests == []


# --- Tools and reasoning -----------------------------------------------------------------------


@pytest.mark.parametrize("provider_type", FORMATS)
async def test_check_tools_passes_and_replays_the_reasoning_natively(
    checks: Checks, fake: FakeProvider, provider_type: str
) -> None:
    public_id = await checks.model(provider_type, reasoning_enabled=True)
    fake.enqueue(
        Script.sse(weather_call(provider_type)),
        Script.sse(text_answer(provider_type, ["It is 18 °C and partly cloudy."])),
    )
    response = await checks.check_tools(public_id)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ok"] is True, body
    one, two = body["steps"]
    assert (one["name"], one["ok"], two["name"], two["ok"]) == (
        "tool call",
        True,
        "tool result replay",
        True,
    )
    assert 'get_weather({"city":"Paris"})' in one["detail"]
    assert "its reasoning is replayed" in one["detail"]
    assert "It is 18 °C and partly cloudy." in two["detail"]
    first, second = fake.requests[0].json, fake.requests[1].json
    assert TOOL_NAME in json.dumps(first["tools"])
    assert_reasoning_replayed(provider_type, second)
    for step in body["steps"]:
        call = (await checks.call("GET", f"/calls/{step['call_id']}")).json()["call"]
        assert (call["status"], call["run_id"]) == ("completed", None)
    checks.assert_no_key()


@pytest.mark.parametrize("provider_type", FORMATS)
async def test_a_model_that_answers_without_the_tool_fails_step_one(
    checks: Checks, fake: FakeProvider, provider_type: str
) -> None:
    public_id = await checks.model(provider_type)
    fake.enqueue(Script.sse(text_answer(provider_type, ["Probably sunny."])))
    body = (await checks.check_tools(public_id)).json()
    assert body["ok"] is False
    one, two = body["steps"]
    assert one["ok"] is False
    assert one["detail"].startswith(DID_NOT_CALL)
    assert "Probably sunny." in one["detail"]
    assert (two["ok"], two["detail"], two["call_id"]) == (False, NOT_RUN, None)
    assert len(fake.requests) == 1


async def test_a_provider_without_tool_support_fails_step_one_with_its_message(
    checks: Checks, fake: FakeProvider
) -> None:
    public_id = await checks.model("openai-chat")
    message = "fake-model does not support tools"
    fake.enqueue(Script.error(400, {"error": {"message": message, "type": "invalid_request"}}))
    body = (await checks.check_tools(public_id)).json()
    one, two = body["steps"]
    assert (body["ok"], one["ok"], two["ok"]) == (False, False, False)
    assert one["detail"] == f"OpenAI Chat 400 Bad Request: {message}"
    assert two["detail"] == NOT_RUN
    checks.assert_no_key()


async def test_a_refused_replay_fails_step_two_with_the_providers_message(
    checks: Checks, fake: FakeProvider
) -> None:
    """A DeepSeek-like provider that needs reasoning_content back, and a step 1 that streamed
    none: the replay has none to send, and the provider's 400 is step 2's verdict."""
    fake.refuse_missing_reasoning_content = True
    public_id = await checks.model("openai-chat")
    fake.enqueue(Script.sse(chat_events(tools=[WEATHER_CALL])))
    body = (await checks.check_tools(public_id)).json()
    one, two = body["steps"]
    assert one["ok"] is True
    assert "no reasoning to replay" in one["detail"]
    assert body["ok"] is False
    assert two["ok"] is False
    assert two["detail"] == (
        "OpenAI Chat 400 Bad Request: " + DEEPSEEK_MISSING_REASONING.format(index=2)
    )
    call = (await checks.call("GET", f"/calls/{two['call_id']}")).json()["call"]
    assert (call["status"], call["http_status"]) == ("failed", 400)


async def test_replay_reasoning_off_fails_step_two_the_same_way(
    checks: Checks, fake: FakeProvider
) -> None:
    """The provider streams reasoning_content and requires it back, but its saved provider has
    replay_reasoning off: exactly what the check is there to show."""
    fake.refuse_missing_reasoning_content = True
    public_id = await checks.model("openai-chat", replay_reasoning=False, reasoning_enabled=True)
    fake.enqueue(Script.sse(weather_call("openai-chat")))
    body = (await checks.check_tools(public_id)).json()
    one, two = body["steps"]
    assert one["ok"] is True
    assert "replay_reasoning is off" in one["detail"]
    assert "reasoning_content" not in fake.requests[1].json["messages"][2]
    assert (body["ok"], two["ok"]) == (False, False)
    assert two["detail"].endswith(DEEPSEEK_MISSING_REASONING.format(index=2))


async def test_with_replay_on_the_same_provider_passes(checks: Checks, fake: FakeProvider) -> None:
    """The refusing fake is satisfied by the replayed reasoning_content (the mode's other half)."""
    fake.refuse_missing_reasoning_content = True
    public_id = await checks.model("openai-chat", reasoning_enabled=True)
    fake.enqueue(
        Script.sse(weather_call("openai-chat")),
        Script.sse(text_answer("openai-chat", ["18 °C."])),
    )
    body = (await checks.check_tools(public_id)).json()
    assert body["ok"] is True, body
    assert fake.requests[1].json["messages"][2]["reasoning_content"] == THOUGHT


async def test_check_tools_beyond_its_bound_is_504(
    make_checks: MakeChecks, fake: FakeProvider
) -> None:
    checks = await make_checks(timeout_s=0.3)
    public_id = await checks.model("anthropic")
    fake.enqueue(Script.sse(weather_call("anthropic")), Script.hang_before_headers())
    response = await checks.check_tools(public_id)
    assert_error(response, 504, "deadline_exceeded", "did not answer within 0.3 s")
    calls = (await checks.call("GET", "/calls")).json()["calls"]
    assert [c["status"] for c in calls] == ["cancelled", "completed"]


async def test_a_pending_check_leaves_the_loop_free(checks: Checks, fake: FakeProvider) -> None:
    """While the provider streams nothing more, the server answers other requests; when the
    provider goes away the check ends with the transport's failure as its verdict."""
    public_id = await checks.model("openai-chat")
    fake.enqueue(Script.stall(after_events=2, events=text_answer("openai-chat", ["po", "ng"])))
    pending = asyncio.create_task(checks.test(public_id))
    await fake.wait_for_request()
    listed = await checks.call("GET", "/models")
    assert listed.status_code == 200
    assert [m["public_id"] for m in listed.json()] == [public_id]
    assert not pending.done()
    await fake.close()
    body = (await pending).json()
    assert body["ok"] is False
    assert "peer closed connection" in body["error"]
    assert body["call_id"] is not None
    checks.assert_no_key()
