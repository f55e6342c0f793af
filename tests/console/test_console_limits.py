"""The catalog's length limits over the console API of a real server: every free text it
stores (provider name, base URL, key, custom header names, values and count, model ids and
display names, the SearXNG URL) is refused one character past its limit with a 422 naming the
field, never echoing a value, and taken at the limit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from store import catalog as cat
from tests.conftest import StartServer


@pytest.fixture
async def api(make_server: StartServer) -> AsyncIterator[httpx.AsyncClient]:
    server = await make_server()
    base = f"http://{server.address}/console/api"
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=20.0) as client:
        yield client


def provider(**fields: Any) -> dict[str, Any]:
    return {"name": "Main", "type": "openai-chat", "base_url": "https://example.com/v1", **fields}


def long_url(length: int) -> str:
    start = "https://example.com/"
    return start + "a" * (length - len(start))


def assert_too_long(response: httpx.Response, field: str, sent: str = "") -> None:
    assert response.status_code == 422, response.text[:300]
    body = response.json()
    assert body["code"] == "invalid_argument"
    assert body["message"].startswith(f"{field}: "), body["message"][:300]
    assert "longer than" in body["message"] or "at most" in body["message"]
    assert len(response.text) < 1000  # the value is never echoed
    if sent:
        assert sent not in response.text


PROVIDER_CASES = [
    ("name", lambda n: provider(name="n" * n), cat.MAX_NAME_CHARS),
    ("base_url", lambda n: provider(base_url=long_url(n)), cat.MAX_URL_CHARS),
    ("api_key", lambda n: provider(api_key="k" * n), cat.MAX_KEY_CHARS),
    ("headers.X-Big", lambda n: provider(headers={"X-Big": "v" * n}), cat.MAX_HEADER_VALUE_CHARS),
    ("headers", lambda n: provider(headers={"x" * n: "v"}), cat.MAX_HEADER_NAME_CHARS),
    ("headers", lambda n: provider(headers={f"x-{i}": "v" for i in range(n)}), cat.MAX_HEADERS),
]


@pytest.mark.parametrize(("field", "body", "limit"), PROVIDER_CASES)
async def test_provider_text_beyond_its_limit_is_refused_naming_the_field(
    api: httpx.AsyncClient, field: str, body: Any, limit: int
) -> None:
    assert_too_long(await api.post("/providers", json=body(limit + 1)), field)
    created = await api.post("/providers", json=body(limit))
    assert created.status_code == 201, created.text[:300]
    updated = await api.put(f"/providers/{created.json()['id']}", json=body(limit + 1))
    assert_too_long(updated, field)


async def test_model_ids_and_names_beyond_their_limits_are_refused(
    api: httpx.AsyncClient,
) -> None:
    pid = (await api.post("/providers", json=provider())).json()["id"]

    async def save(model_id: str, display_name: str) -> httpx.Response:
        models = [{"model_id": "ok", "display_name": "Ok"}]
        models.append({"model_id": model_id, "display_name": display_name})
        return await api.post(f"/providers/{pid}/models", json={"models": models})

    limit_id, limit_name = cat.MAX_MODEL_ID_CHARS, cat.MAX_NAME_CHARS
    assert_too_long(await save("m" * (limit_id + 1), "M"), "models[1].model_id")
    assert_too_long(await save("m" * 100_000, "M"), "models[1].model_id")
    assert_too_long(await save("m", "N" * (limit_name + 1)), "models[1].display_name")
    assert_too_long(await save("m", "N" * 1_000_000), "models[1].display_name")
    saved = await save("m" * limit_id, "N" * limit_name)
    assert saved.status_code == 201, saved.text[:300]
    assert (await api.get("/models")).json()[0]["model_id"] in ("ok", "m" * limit_id)


async def test_a_searxng_url_beyond_its_limit_is_refused(api: httpx.AsyncClient) -> None:
    limit = cat.MAX_URL_CHARS
    body = {"backend": "searxng", "url": long_url(limit + 1)}
    assert_too_long(await api.put("/settings/web-search", json=body), "url")
    body = {"backend": "tavily", "api_key": "k" * (cat.MAX_KEY_CHARS + 1)}
    assert_too_long(await api.put("/settings/web-search", json=body), "api_key")
    ok = await api.put("/settings/web-search", json={"backend": "searxng", "url": long_url(limit)})
    assert ok.status_code == 200, ok.text[:300]
