"""A model added by hand, by its id: a provider whose model listing fails (or lists nothing)
still gets a model through the console, and a turn runs on it end to end, the fake Cursor
client and the fake provider over real HTTP."""

from __future__ import annotations

import httpx

from tests.conftest import StartServer
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events, chat_usage

KEY = "sk-hand-added-0123456789"


async def test_a_model_added_by_hand_to_a_provider_whose_listing_fails_runs_a_turn(
    make_server: StartServer, fake: FakeProvider
) -> None:
    server = await make_server()
    fake.models_error = (404, {"error": {"message": "no such route: /v1/models"}})
    async with httpx.AsyncClient(
        base_url=f"http://{server.address}/console/api", timeout=10.0
    ) as api:
        body = {"name": "Local", "type": "openai-chat", "base_url": fake.base_url, "api_key": KEY}
        provider = (await api.post("/providers", json=body)).json()
        listing = await api.post(f"/providers/{provider['id']}/models/discover", json={})
        assert listing.status_code == 502 and "no such route" in listing.json()["message"]
        # Typed in by hand: the id is all the server needs (the display name is the id).
        typed = {"model_id": "  local-llm-7b  ", "display_name": "local-llm-7b"}
        added = await api.post(f"/providers/{provider['id']}/models", json={"models": [typed]})
        assert added.status_code == 201, added.text
        (model,) = added.json()
        assert (model["model_id"], model["kind"], model["enabled"]) == (
            "local-llm-7b",
            "chat",
            True,
        )
        # An id with a space inside is a paste gone wrong: refused, naming the field.
        bad = {"model_id": "local llm", "display_name": "x"}
        refused = await api.post(f"/providers/{provider['id']}/models", json={"models": [bad]})
        assert refused.status_code == 422
        assert refused.json()["message"].startswith("models[0].model_id: ")
    fake.enqueue(
        Script.sse(chat_events(text=["Hi from ", "the local model"], usage=chat_usage(9, 4)))
    )
    cursor = FakeCursor(f"http://{server.address}")
    try:
        log = await CursorSession(cursor, "hand-1").run(
            user_turn_message("hello", model["public_id"])
        )
    finally:
        await cursor.aclose()
    assert log.end == {}
    text = "".join(
        m.interaction_update.text_delta.text
        for m in log.messages
        if m.interaction_update.HasField("text_delta")
    )
    assert text == "Hi from the local model"
    (turn,) = [r for r in fake.requests if r.method == "POST"]
    assert turn.json["model"] == "local-llm-7b" and turn.header("authorization") == f"Bearer {KEY}"
