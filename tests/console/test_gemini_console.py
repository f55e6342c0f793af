"""The ``gemini`` provider type in the console: saved, its efforts checked, its models
discovered from Gemini's own model list, and offered as a preset beside the compatible one."""

from __future__ import annotations

import pytest

from console import discovery
from console.model_checks import TOOL_NAME
from tests.console.test_console_api import KEY, Console, assert_error, console, model
from tests.console.test_model_check_api import Checks, checks, make_checks
from tests.support.fake_provider import (
    GEMINI_EMBEDDING_MODEL,
    FakeProvider,
    FakeToolCall,
    Script,
    gemini_events,
)
from tests.support.process import REPO

__all__ = ["checks", "console", "make_checks"]

STATIC = REPO / "console" / "static"


async def test_gemini_discovery_pages_and_marks_models_that_cannot_chat(
    console: Console, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(discovery, "GEMINI_PAGE_SIZE", 2)
    names = ["gemini-2.5-flash", "gemini-2.5-pro", "gemini-3-pro-preview"]
    async with FakeProvider(models=names, models_style="gemini") as fake:
        provider = await console.provider(
            type="gemini", base_url=fake.base_url, api_key=KEY, headers={"x-route": "r2"}
        )
        response = await console.call("POST", f"/providers/{provider['id']}/models/discover")
        assert response.status_code == 200, response.text
        # Every listed model, the embedding-only one marked as not a chat model by its methods.
        found = {m["id"]: m for m in response.json()["models"]}
        assert list(found) == sorted([*names, GEMINI_EMBEDDING_MODEL])
        assert all(found[name]["chat"] and found[name]["kind"] == "chat" for name in names)
        assert found[GEMINI_EMBEDDING_MODEL] == {
            "id": GEMINI_EMBEDDING_MODEL,
            "kind": "embedding",
            "chat": False,
            "kind_from": "provider",
            "prices": None,
            "price_source": None,
        }
        first, second = fake.requests
    assert first.query == {"pageSize": "2"}
    assert second.query == {"pageSize": "2", "pageToken": "2"}
    for request in (first, second):
        assert request.path == "/v1/models"
        assert request.header("x-goog-api-key") == KEY
        assert request.header("x-route") == "r2"
        assert request.header("authorization") is None
        assert KEY not in str(request.query)


async def test_gemini_discovery_error_is_502_without_the_key(console: Console) -> None:
    async with FakeProvider(models_style="gemini") as fake:
        message = f"API key not valid: {KEY}"
        fake.models_error = (400, {"error": {"code": 400, "message": message}})
        provider = await console.call(
            "POST",
            "/providers",
            json={"name": "G", "type": "gemini", "base_url": fake.base_url, "api_key": KEY},
        )
        pid = provider.json()["id"]
        response = await console.call("POST", f"/providers/{pid}/models/discover")
    assert_error(response, 502, "unavailable", "400", "API key not valid: [redacted]")
    assert KEY not in response.text


async def test_gemini_models_take_gemini_efforts(console: Console) -> None:
    gemini = (await console.provider(type="gemini", base_url="https://g.example/v1beta"))["id"]
    saved = await console.save(gemini, model("gemini-3-flash", reasoning_effort="minimal"))
    assert saved.status_code == 201, saved.text
    assert saved.json()[0]["enabled"] is True  # no output limit is required
    assert_error(
        await console.save(gemini, model("gemini-3-flash", reasoning_effort="xhigh")),
        422,
        "invalid_argument",
        "models[0].reasoning_effort",
        "none, minimal, low, medium, high for an gemini provider",
    )


async def test_gemini_native_preset_sits_beside_the_compatible_one(console: Console) -> None:
    providers = (STATIC / "pages" / "providers.js").read_text()
    native = 'type: "gemini", base_url: "https://generativelanguage.googleapis.com/v1beta" }'
    assert native in providers
    assert 'base_url: "https://generativelanguage.googleapis.com/v1beta/openai"' in providers
    # The type picker and the model editor's efforts come from the server's provider types.
    types = {t["type"]: t for t in (await console.call("GET", "/provider-types")).json()}
    assert "gemini" in types  # the type picker offers it
    assert types["gemini"]["reasoning_efforts"] == ["none", "minimal", "low", "medium", "high"]


async def test_gemini_model_check_replays_the_signed_parts(
    checks: Checks, fake: FakeProvider
) -> None:
    """The console's Tools and reasoning check on a Gemini model: the signed thought and
    call parts go back as streamed, and the detail names where the reasoning went."""
    public_id = await checks.model("gemini", reasoning_enabled=True)
    weather = FakeToolCall("call_w1", TOOL_NAME, ('{"city":"Paris"}',))
    first = gemini_events(thinking=["I must call it."], tools=[weather], signatures="chk")
    fake.enqueue(Script.sse(first), Script.sse(gemini_events(text=["18 °C."])))
    response = await checks.check_tools(public_id)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ok"] is True, body
    assert "Gemini parts with their thought signatures" in body["steps"][0]["detail"]
    second = fake.requests[1].json
    assert second["generationConfig"]["thinkingConfig"] == {"includeThoughts": True}
    model_parts = second["contents"][1]["parts"]
    assert [p.get("thoughtSignature") for p in model_parts] == ["chk-thought", "chk-call-call_w1"]
    response_part = second["contents"][2]["parts"][0]["functionResponse"]
    assert (response_part["name"], response_part["id"]) == (TOOL_NAME, "call_w1")
    checks.assert_no_key()
