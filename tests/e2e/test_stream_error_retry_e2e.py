"""An error event inside a 200 stream, before anything reached the turn (Anthropic's
``overloaded_error``, OpenAI's ``server_error``, Google's ``UNAVAILABLE``), through the real
server in every format: a "not now" kind is retried and fallen back as the HTTP status it
stands for; an error naming the request, or one after text reached the editor, stays final."""

from __future__ import annotations

from typing import Any

import pytest

from store import Store
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from store.llm_calls import CallFilter, CallRecords
from tests.conftest import StartServer
from tests.support.fake_cursor import CursorSession, FakeCursor, final_text, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, SseEvent, anthropic_events
from tests.support.formats import FORMATS, ProviderFormat
from wire.providers.retry import RetryPolicy

FAST = RetryPolicy(base_delay_s=0.02, max_delay_s=0.05)

# Per format, the error event a provider sends for "overloaded, try again" and for "this
# request is wrong", as the first event of a 200 stream.
BUSY: dict[str, SseEvent] = {
    "openai-chat": SseEvent.json({"error": {"message": "Overloaded", "type": "server_error"}}),
    "openai-responses": SseEvent.json(
        {"type": "error", "code": "server_error", "message": "The server had an error"},
        event="error",
    ),
    "anthropic": SseEvent.json(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        event="error",
    ),
    "gemini": SseEvent.json(
        {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    ),
}
WRONG: dict[str, SseEvent] = {
    "openai-chat": SseEvent.json(
        {"error": {"message": "Invalid tool schema", "type": "invalid_request_error"}}
    ),
    "openai-responses": SseEvent.json(
        {
            "type": "response.failed",
            "response": {"error": {"code": "invalid_prompt", "message": "Invalid prompt"}},
        },
        event="response.failed",
    ),
    "anthropic": SseEvent.json(
        {"type": "error", "error": {"type": "invalid_request_error", "message": "Bad tool"}},
        event="error",
    ),
    "gemini": SseEvent.json(
        {"error": {"code": 400, "message": "Invalid argument.", "status": "INVALID_ARGUMENT"}}
    ),
}


def statuses(store: Store, run_id: str) -> list[str]:
    rows = CallRecords(store.database).list(10, only=CallFilter(run_id=run_id))
    return [row.status for row in rows[::-1]]


async def run_turn(address: str, run_id: str, public_id: str) -> tuple[dict[str, Any] | None, str]:
    cursor = FakeCursor(f"http://{address}")
    try:
        log = await CursorSession(cursor, run_id).run(
            user_turn_message("hi", public_id, conversation_id=run_id)
        )
    finally:
        await cursor.aclose()
    return log.end, final_text(log)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.type)
async def test_an_overloaded_stream_is_retried_and_answers_once(
    fmt: ProviderFormat, fake: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    public_id = fmt.add_model(server_store, fake)
    server = await make_server(provider_retry=FAST)
    fake.enqueue(Script.sse([BUSY[fmt.type]]), fmt.answer("Hello"))
    end, text = await run_turn(server.address, f"busy-{fmt.type}", public_id)
    assert end == {} and text == "Hello"
    assert len(fake.requests) == 2
    assert statuses(server_store, f"busy-{fmt.type}") == ["failed", "completed"]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.type)
async def test_an_error_event_naming_the_request_is_final(
    fmt: ProviderFormat, fake: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    public_id = fmt.add_model(server_store, fake)
    server = await make_server(provider_retry=FAST)
    fake.enqueue(Script.sse([WRONG[fmt.type]]), fmt.answer("never"))
    end, _text = await run_turn(server.address, f"wrong-{fmt.type}", public_id)
    assert end is not None and end["error"]["code"] == "unavailable"
    message = end["error"]["message"].lower()
    assert "invalid" in message or "bad tool" in message
    assert len(fake.requests) == 1 and fake.pending_scripts == 1
    assert statuses(server_store, f"wrong-{fmt.type}") == ["failed"]


async def test_an_overload_after_an_empty_text_block_opened_is_retried(
    fake: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    """Anthropic opens its text block with ``""`` before any delta: nothing was shown yet."""
    anthropic = next(f for f in FORMATS if f.type == "anthropic")
    public_id = anthropic.add_model(server_store, fake)
    server = await make_server(provider_retry=FAST)
    opened = anthropic_events(text=["x"])[:3]  # message_start, ping, an empty text block
    assert opened[-1].data.startswith('{"type":"content_block_start"')
    fake.enqueue(Script.sse([*opened, BUSY["anthropic"]]), anthropic.answer("Hello"))
    end, text = await run_turn(server.address, "busy-opened", public_id)
    assert end == {} and text == "Hello"
    assert statuses(server_store, "busy-opened") == ["failed", "completed"]


async def test_an_overload_after_text_reached_the_editor_is_not_retried(
    fake: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    anthropic = next(f for f in FORMATS if f.type == "anthropic")
    public_id = anthropic.add_model(server_store, fake)
    server = await make_server(provider_retry=FAST)
    started = anthropic_events(text=["Half an"], stop=False)[:-1]  # no message_delta
    fake.enqueue(Script.sse([*started, BUSY["anthropic"]]), anthropic.answer("again"))
    end, text = await run_turn(server.address, "busy-late", public_id)
    assert end is not None and end["error"]["code"] == "unavailable"
    assert "overloaded" in end["error"]["message"].lower()
    assert "again" not in text  # shown once, never followed by a second answer
    assert len(fake.requests) == 1 and fake.pending_scripts == 1


async def test_an_overloaded_stream_falls_back_to_the_next_model(
    fake: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    async with FakeProvider() as backup:
        backup_id = ProviderFormat("openai-chat").add_model(server_store, backup)
        provider = create_provider(
            server_store.database,
            ProviderInput(name="primary", type="anthropic", base_url=fake.base_url, api_key="k"),
        )
        model = ModelInput(
            model_id="primary-model",
            display_name="Primary",
            context_window_tokens=128000,
            max_output_tokens=2048,
            fallbacks=[backup_id],
        )
        primary_id = save_models(server_store.database, provider.id, [model])[0].public_id
        server = await make_server(provider_retry=RetryPolicy(max_attempts=2, base_delay_s=0.02))
        fake.enqueue(Script.sse([BUSY["anthropic"]]), Script.sse([BUSY["anthropic"]]))
        backup.enqueue(ProviderFormat("openai-chat").answer("From the backup"))
        end, text = await run_turn(server.address, "busy-fallback", primary_id)
        assert end == {} and text == "From the backup"
        assert len(fake.requests) == 2 and len(backup.requests) == 1
        assert statuses(server_store, "busy-fallback") == ["failed", "failed", "completed"]
