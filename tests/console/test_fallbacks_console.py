"""A model's fallbacks through the console API (a real server over loopback): saved and listed
in order, a bad list refused 422 naming its field, and a deleted model gone from every list."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import StartServer


async def test_fallbacks_are_saved_listed_refused_and_cleaned_through_the_api(
    make_server: StartServer,
) -> None:
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}/console/api") as api:
        body = {"name": "p", "type": "openai-chat", "base_url": "https://p.example.com/v1"}
        provider_id = (await api.post("/providers", json=body)).json()["id"]
        path = f"/providers/{provider_id}/models"
        saved = await api.post(
            path, json={"models": [{"model_id": m, "display_name": m} for m in "abc"]}
        )
        a, b, c = (m["public_id"] for m in saved.json())
        answer = await api.post(
            path, json={"models": [{"model_id": "a", "display_name": "a", "fallbacks": [c, b]}]}
        )
        assert answer.status_code == 201 and answer.json()[0]["fallbacks"] == [c, b]
        listed = {m["model_id"]: m["fallbacks"] for m in (await api.get("/models")).json()}
        assert listed == {"a": [c, b], "b": [], "c": []}

        refused: list[dict[str, Any]] = []
        statuses: list[int] = []
        for fallbacks in ([a], [b, b], ["12345678"], "b"):
            model = {"model_id": "a", "display_name": "a", "fallbacks": fallbacks}
            response = await api.post(path, json={"models": [model]})
            statuses.append(response.status_code)
            refused.append(response.json())
        assert statuses[:3] == [422, 422, 422] and statuses[3] in (400, 422)
        assert all(set(error) >= {"code", "message"} for error in refused)
        assert [e["code"] for e in refused[:3]] == ["invalid_argument"] * 3
        assert [e["message"].split(":")[0] for e in refused[:3]] == [
            "models[0].fallbacks[0]",
            "models[0].fallbacks[1]",
            "models[0].fallbacks[0]",
        ]
        assert "fallbacks" in refused[3]["message"]

        assert (await api.request("DELETE", f"/models/{c}", json={})).status_code == 204
        listed = {m["model_id"]: m["fallbacks"] for m in (await api.get("/models")).json()}
        assert listed == {"a": [b], "b": []}
