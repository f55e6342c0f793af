"""Fallback models through the real server and two fake providers, one per model: a call that
fails before its first token after its model's retries moves to the next model of the model's
fallback list, in any format, with a history valid for that format; after the first token,
on a refusal such as a 400 and on a cancel nothing moves on; each attempt is its own record
with its place in the chain."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from store import Store
from store.catalog import ModelInput, ProviderInput, all_models, create_provider, save_models
from store.llm_calls import CallFilter, CallRecords, CallSummary
from tests.conftest import StartServer
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    cancel_message,
    final_text,
    user_turn_message,
)
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
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from wire.providers.retry import RetryPolicy

# Two attempts per model, quickly: the fallback comes after the model's own retries.
TWO_ATTEMPTS = RetryPolicy(max_attempts=2, base_delay_s=0.02, max_delay_s=0.05)
# What the primary's reasoning carries: none of it may reach a model of another format.
MARK = "MARK-primary"
FAULTS: dict[str, Callable[[], Script]] = {
    "503": lambda: Script.error(503, {"error": {"message": "overloaded right now"}}),
    "429": lambda: Script.error(429, {"error": {"message": "rate limited"}}, retry_after="0"),
    "drop": Script.drop_before_headers,
}
# The fields each format carries its reasoning in, as they appear in a request body.
REASONING_FIELDS = {
    "openai-chat": ('"reasoning_content"', '"reasoning_details"'),
    "openai-responses": ('"encrypted_content"', '"type": "reasoning"'),
    "anthropic": ('"signature"', '"type": "thinking"', '"redacted_thinking"'),
    "gemini": ('"thoughtSignature"', '"thought": true'),
}


def reasoned(provider_type: str, text: str, tools: Sequence[FakeToolCall] = ()) -> Script:
    """An answer with reasoning (and tool calls) in the format's own stream, its reasoning
    and signatures marked with ``MARK``."""
    events: list[SseEvent]
    if provider_type == "openai-chat":
        events = chat_events(thinking=[f"{MARK} thinks"], text=[text], tools=tools)
    elif provider_type == "openai-responses":
        events = responses_events(
            thinking=[f"{MARK} thinks"], encrypted_reasoning=f"{MARK}-enc", text=[text], tools=tools
        )
    elif provider_type == "gemini":
        events = gemini_events(
            thinking=[f"{MARK} thinks"], text=[text], tools=tools, signatures=f"{MARK}-sig"
        )
    else:
        thinking = [FakeThinking((f"{MARK} thinks",), signature=f"{MARK}-sig")]
        events = anthropic_events(thinking=thinking, text=[text], tools=tools)
    return Script.sse(events)


def add_model(
    store: Store, fake: FakeProvider, provider_type: str, name: str, fallbacks: Sequence[str] = ()
) -> str:
    """A provider of this format on ``fake`` with one reasoning model; its public id."""
    provider = create_provider(
        store.database,
        ProviderInput(name=name, type=provider_type, base_url=fake.base_url, api_key=f"sk-{name}"),
    )
    model = ModelInput(
        model_id=f"model-{name}",
        display_name=name,
        max_output_tokens=2048,
        context_window_tokens=128000,
        reasoning_enabled=True,
        fallbacks=list(fallbacks),
    )
    return save_models(store.database, provider.id, [model])[0].public_id


def records(store: Store, run_id: str) -> list[CallSummary]:
    """The run's call records, oldest first."""
    return CallRecords(store.database).list(50, only=CallFilter(run_id=run_id))[::-1]


def places(rows: Sequence[CallSummary]) -> list[tuple[int | None, int | None, str, str]]:
    return [(r.chain_position, r.attempt, r.status, r.display_name) for r in rows]


def paired_results(fmt: ProviderFormat, body: dict[str, Any]) -> dict[str, str]:
    """Each tool call of ``body`` -> "alpha" when its result reads a.txt's text. Gemini pairs a
    call it did not make by name (its ids are the API's own): the call's content, then the
    response's, keyed here by our call id."""
    if fmt.type != "gemini":
        return {k: "alpha" for k, v in fmt.tool_results(body).items() if "alpha" in v}
    contents = body["contents"]
    for position, content in enumerate(contents[:-1]):
        calls = [p["functionCall"] for p in content["parts"] if "functionCall" in p]
        if calls:
            assert content["role"] == "model" and [c["name"] for c in calls] == ["Read"]
            (response,) = [
                p["functionResponse"]
                for p in contents[position + 1]["parts"]
                if "functionResponse" in p
            ]
            assert response["name"] == "Read" and "alpha" in response["response"]["output"]
            return {"call_read": "alpha"}
    return {}


def assert_no_reasoning_of(provider_type: str, body: bytes) -> None:
    """No reasoning of ``provider_type``'s (nor its marked text) is in ``body``."""
    text = json.dumps(json.loads(body))
    assert MARK not in text
    for field in REASONING_FIELDS[provider_type]:
        assert field not in text, field


@pytest.fixture
async def backup() -> AsyncIterator[FakeProvider]:
    """The fallback model's provider: a second fake, so its requests are its own."""
    async with FakeProvider() as provider:
        yield provider


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("index", range(len(FORMATS)), ids=FORMAT_IDS)
async def test_a_call_failing_before_its_first_token_falls_back_to_a_model_of_another_format(
    index: int,
    fault: str,
    fake: FakeProvider,
    backup: FakeProvider,
    make_server: StartServer,
    server_store: Store,
    tmp_path: Path,
) -> None:
    primary: ProviderFormat = FORMATS[index]
    fallback: ProviderFormat = FORMATS[(index + 1) % len(FORMATS)]
    (tmp_path / "a.txt").write_text("alpha\n")
    backup_id = add_model(server_store, backup, fallback.type, "backup")
    primary_id = add_model(server_store, fake, primary.type, "primary", [backup_id])
    server = await make_server(provider_retry=TWO_ATTEMPTS)
    read = FakeToolCall("call_read", "Read", ('{"path": "/a.txt"}',))
    # The round's first call answers on the primary, with reasoning; the next fails twice.
    fake.enqueue(reasoned(primary.type, "Reading.", [read]), FAULTS[fault](), FAULTS[fault]())
    backup.enqueue(reasoned(fallback.type, "It says alpha."))
    cursor = FakeCursor(f"http://{server.address}")
    run_id = f"fallback-{primary.type}-{fault}"
    session = CursorSession(cursor, run_id, workspace=tmp_path)
    log = await session.run(user_turn_message("what is in a.txt?", primary_id))
    await cursor.aclose()

    assert log.end == {}
    assert final_text(log) == "It says alpha."
    assert len(fake.requests) == 3 and len(backup.requests) == 1
    sent = backup.requests[0]
    # A body its format's schema takes, the round's call paired with its result, and nothing
    # of the primary's reasoning.
    assert sent.problems == ()
    assert paired_results(fallback, sent.json) == {"call_read": "alpha"}
    assert_no_reasoning_of(primary.type, sent.body)
    if fallback.type == "anthropic":
        # The open round began on another model, without a thinking block: the API refuses
        # thinking then, so it is not asked for.
        assert "thinking" not in sent.json
    assert "sk-primary" not in json.dumps(sent.headers)
    assert places(records(server_store, run_id)) == [
        (0, 1, "completed", "primary"),
        (0, 1, "failed", "primary"),
        (0, 2, "failed", "primary"),
        (1, 1, "completed", "backup"),
    ]


async def test_anthropic_falls_back_to_openai_chat_mid_conversation_with_a_valid_history(
    fake: FakeProvider,
    backup: FakeProvider,
    make_server: StartServer,
    server_store: Store,
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    chat_id = add_model(server_store, backup, "openai-chat", "chat")
    claude_id = add_model(server_store, fake, "anthropic", "claude", [chat_id])
    server = await make_server(provider_retry=TWO_ATTEMPTS)
    cursor = FakeCursor(f"http://{server.address}")
    read = FakeToolCall("toolu_read", "Read", ('{"path": "/a.txt"}',))
    # Turn 1 on Anthropic: thinking and a tool round, then an answer with thinking.
    fake.enqueue(reasoned("anthropic", "Reading.", [read]), reasoned("anthropic", "Alpha."))
    first = user_turn_message("read a.txt", claude_id, message_id="m1")
    log = await CursorSession(cursor, "turn-1", workspace=tmp_path).run(first)
    assert log.end == {}
    # Turn 2: Anthropic answers 5xx after its retries; OpenAI Chat answers.
    fake.enqueue(
        Script.error(529, {"type": "error", "error": {"type": "overloaded_error"}}),
        Script.error(500, {"type": "error", "error": {"type": "api_error"}}),
    )
    backup.enqueue(Script.sse(chat_events(text=["Still alpha."])))
    second = user_turn_message(
        "sure?", claude_id, message_id="m2", conversation_state=log.checkpoints()[-1]
    )
    session = CursorSession(cursor, "turn-2", workspace=tmp_path, blobs=dict(log.blobs))
    log = await session.run(second)
    await cursor.aclose()

    assert log.end == {}
    assert final_text(log) == "Still alpha."
    assert "turn_ended" in log.kinds()
    (sent,) = backup.requests
    assert sent.path == "/v1/chat/completions" and sent.problems == ()
    assert_no_reasoning_of("anthropic", sent.body)
    messages = sent.json["messages"]
    assert all("reasoning_content" not in m and "thinking" not in m for m in messages)
    # The tool call and its result, paired as Chat requires: the result right after its call.
    (calling,) = [i for i, m in enumerate(messages) if m.get("tool_calls")]
    assert [c["id"] for c in messages[calling]["tool_calls"]] == ["toolu_read"]
    assert messages[calling + 1]["role"] == "tool"
    assert messages[calling + 1]["tool_call_id"] == "toolu_read"
    assert "alpha" in messages[calling + 1]["content"]
    assert [m["role"] for m in messages[-2:]] == ["assistant", "user"]
    assert places(records(server_store, "turn-2")) == [
        (0, 1, "failed", "claude"),
        (0, 2, "failed", "claude"),
        (1, 1, "completed", "chat"),
    ]
    assert [r.provider_type for r in records(server_store, "turn-2")][-1] == "openai-chat"
    # The console shows the switch: the calls list and the turn's timeline name each attempt's
    # place in the chain.
    async with httpx.AsyncClient(base_url=f"http://{server.address}/console/api") as api:
        calls = (await api.get("/calls", params={"run_id": "turn-2"})).json()["calls"]
        timeline = (await api.get("/runs/turn-2/timeline")).json()
    assert [(c["chain_position"], c["attempt"]) for c in calls] == [(1, 1), (0, 2), (0, 1)]
    lane = timeline["lanes"]["provider"]
    assert [(p["chain_position"], p["attempt"], p["display_name"]) for p in lane] == [
        (0, 1, "claude"),
        (0, 2, "claude"),
        (1, 1, "chat"),
    ]
    assert "529" in lane[0]["error_message"] and "500" in lane[1]["error_message"]


async def test_after_the_first_token_nothing_falls_back(
    fake: FakeProvider, backup: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    backup_id = add_model(server_store, backup, "openai-chat", "backup")
    primary_id = add_model(server_store, fake, "openai-chat", "primary", [backup_id])
    server = await make_server(provider_retry=TWO_ATTEMPTS)
    fake.enqueue(Script.cut(2, chat_events(text=["Hel", "lo"])))
    backup.enqueue(Script.sse(chat_events(text=["never"])))
    cursor = FakeCursor(f"http://{server.address}")
    log = await CursorSession(cursor, "cut-mid-answer").run(user_turn_message("hi", primary_id))
    await cursor.aclose()
    assert log.end is not None and log.end["error"]["code"] == "unavailable"
    assert backup.requests == [] and backup.pending_scripts == 1
    assert places(records(server_store, "cut-mid-answer")) == [(0, 1, "failed", "primary")]


async def test_a_refused_request_does_not_fall_back(
    fake: FakeProvider, backup: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    backup_id = add_model(server_store, backup, "anthropic", "backup")
    primary_id = add_model(server_store, fake, "openai-chat", "primary", [backup_id])
    server = await make_server(provider_retry=TWO_ATTEMPTS)
    fake.enqueue(Script.error(400, {"error": {"message": "bad field in the request"}}))
    cursor = FakeCursor(f"http://{server.address}")
    log = await CursorSession(cursor, "refused").run(user_turn_message("hi", primary_id))
    await cursor.aclose()
    assert log.end is not None and "bad field in the request" in log.end["error"]["message"]
    assert "fallback" not in log.end["error"]["message"]
    assert backup.requests == []
    assert places(records(server_store, "refused")) == [(0, 1, "failed", "primary")]


async def test_when_every_model_fails_the_run_ends_naming_the_last_error(
    fake: FakeProvider, backup: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    backup_id = add_model(server_store, backup, "openai-responses", "backup")
    primary_id = add_model(server_store, fake, "anthropic", "primary", [backup_id])
    server = await make_server()  # one attempt per model
    # Each echoes both keys (a proxy quoting its request, say): neither is ever shown or stored.
    fake.enqueue(
        Script.error(
            503, {"type": "error", "error": {"message": "primary is down sk-backup sk-primary"}}
        )
    )
    backup.enqueue(
        Script.error(502, {"error": {"message": "backup is down too sk-primary sk-backup"}})
    )
    cursor = FakeCursor(f"http://{server.address}")
    log = await CursorSession(cursor, "all-failed").run(user_turn_message("hi", primary_id))
    await cursor.aclose()
    assert log.end is not None
    error = log.end["error"]
    assert error["code"] == "unavailable"
    assert "backup is down too" in error["message"]
    assert "fallback 1 of 1" in error["message"] and "after primary failed" in error["message"]
    assert "turn_ended" not in log.kinds()
    rows = records(server_store, "all-failed")
    shown = [error["message"], *(r.error_message or "" for r in rows)]
    assert all("sk-primary" not in text and "sk-backup" not in text for text in shown), shown
    assert places(rows) == [
        (0, 1, "failed", "primary"),
        (1, 1, "failed", "backup"),
    ]


async def test_a_cancel_during_the_switch_ends_the_call_at_once(
    fake: FakeProvider, backup: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    backup_id = add_model(server_store, backup, "gemini", "backup")
    primary_id = add_model(server_store, fake, "openai-chat", "primary", [backup_id])
    server = await make_server()
    fake.enqueue(Script.error(503, {"error": {"message": "busy"}}))
    backup.enqueue(Script.hang_before_headers())
    cursor = FakeCursor(f"http://{server.address}")
    session = CursorSession(cursor, "cancel-switch")
    task = asyncio.create_task(session.run(user_turn_message("hi", primary_id)))
    await backup.wait_for_request(1)
    sent = time.monotonic()
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    await cursor.aclose()
    assert time.monotonic() - sent < 1.0
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    await asyncio.wait_for(backup.disconnected(0).wait(), 5)
    rows = records(server_store, "cancel-switch")
    assert places(rows) == [(0, 1, "failed", "primary"), (1, 1, "cancelled", "backup")]
    assert all(r.ended_at_ms is not None for r in rows)


async def test_a_disabled_fallback_is_skipped(
    fake: FakeProvider, backup: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    off_id = add_model(server_store, backup, "openai-chat", "off")
    provider = create_provider(
        server_store.database,
        ProviderInput(name="on", type="openai-chat", base_url=backup.base_url, api_key="sk-on"),
    )
    on_id = save_models(
        server_store.database, provider.id, [ModelInput(model_id="on", display_name="on")]
    )[0].public_id
    save_models(
        server_store.database,
        backup_provider_id(server_store, off_id),
        [ModelInput(model_id="model-off", display_name="off", enabled=False)],
    )
    primary_id = add_model(server_store, fake, "openai-chat", "primary", [off_id, on_id])
    server = await make_server()
    fake.enqueue(Script.error(503, {"error": {"message": "busy"}}))
    backup.enqueue(Script.sse(chat_events(text=["from on"])))
    cursor = FakeCursor(f"http://{server.address}")
    log = await CursorSession(cursor, "skip-off").run(user_turn_message("hi", primary_id))
    await cursor.aclose()
    assert log.end == {}
    assert final_text(log) == "from on"
    assert backup.requests[0].json["model"] == "on"
    assert places(records(server_store, "skip-off")) == [
        (0, 1, "failed", "primary"),
        (1, 1, "completed", "on"),
    ]


def backup_provider_id(store: Store, public_id: str) -> int:
    return next(m.provider_id for m in all_models(store.database) if m.public_id == public_id)


async def test_each_fallback_has_retries_of_its_own(
    fake: FakeProvider, backup: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    backup_id = add_model(server_store, backup, "openai-responses", "backup")
    primary_id = add_model(server_store, fake, "openai-chat", "primary", [backup_id])
    server = await make_server(provider_retry=TWO_ATTEMPTS)
    busy = Script.error(503, {"error": {"message": "busy"}}, retry_after="0")
    fake.enqueue(busy, busy)
    backup.enqueue(Script.drop_before_headers(), reasoned("openai-responses", "Second try."))
    cursor = FakeCursor(f"http://{server.address}")
    log = await CursorSession(cursor, "own-retries").run(user_turn_message("hi", primary_id))
    await cursor.aclose()
    assert log.end == {}
    assert final_text(log) == "Second try."
    assert places(records(server_store, "own-retries")) == [
        (0, 1, "failed", "primary"),
        (0, 2, "failed", "primary"),
        (1, 1, "failed", "backup"),
        (1, 2, "completed", "backup"),
    ]


async def test_a_fallbacks_retry_budget_counts_from_its_own_first_attempt(
    fake: FakeProvider, backup: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    backup_id = add_model(server_store, backup, "openai-chat", "backup")
    primary_id = add_model(server_store, fake, "openai-chat", "primary", [backup_id])
    # The primary's one slow failure uses up the whole budget: it is not retried.
    policy = RetryPolicy(max_attempts=3, budget_s=0.4, base_delay_s=0.01, max_delay_s=0.01)
    server = await make_server(provider_retry=policy)
    busy = Script.error(503, {"error": {"message": "busy"}}, retry_after="0")
    fake.enqueue(busy.delayed(0.6))
    backup.enqueue(busy, Script.sse(chat_events(text=["on time"])))
    cursor = FakeCursor(f"http://{server.address}")
    log = await CursorSession(cursor, "own-budget").run(user_turn_message("hi", primary_id))
    await cursor.aclose()
    assert log.end == {}
    assert places(records(server_store, "own-budget")) == [
        (0, 1, "failed", "primary"),
        (1, 1, "failed", "backup"),
        (1, 2, "completed", "backup"),
    ]
