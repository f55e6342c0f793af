"""The web search backend in the console's settings API, over real HTTP: each backend's rules,
refusals as ``{"code","message"}`` naming the field, and a key that is write-only (never in
an answer or a log line, never carried over to another service)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from store import Store
from store import catalog as cat
from tests.conftest import StartServer

KEY = "tvly-console-SECRET-0123456789"
PATH = "/console/api/settings/web-search"
OFF = {"backend": None, "url": None, "has_api_key": False}


@pytest.fixture
async def client(make_server: StartServer) -> AsyncIterator[httpx.AsyncClient]:
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as http:
        yield http


class Answers:
    """Every body the API answered, for the check that the key is in none."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.bodies: list[str] = []

    async def put(self, body: dict[str, Any]) -> httpx.Response:
        response = await self.client.put(PATH, json=body)
        self.bodies.append(response.text)
        return response

    async def get(self) -> dict[str, Any]:
        response = await self.client.get(PATH)
        self.bodies.append(response.text)
        assert response.status_code == 200
        return dict(response.json())


def refused(response: httpx.Response, field: str) -> str:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == "invalid_argument"
    assert body["message"].startswith(f"{field}: "), body
    return str(body["message"])


async def test_searxng_needs_an_http_url_and_no_key(
    client: httpx.AsyncClient, server_store: Store
) -> None:
    api = Answers(client)
    assert await api.get() == OFF
    saved = await api.put({"backend": "searxng", "url": " https://search.example.org/ "})
    assert saved.json() == {
        "backend": "searxng",
        "url": "https://search.example.org",
        "has_api_key": False,
    }
    assert await api.get() == saved.json()
    refused(await api.put({"backend": "searxng"}), "url")
    refused(await api.put({"backend": "searxng", "url": "ftp://search.example.org"}), "url")
    refused(await api.put({"backend": "searxng", "url": "https://s.org/?q=1"}), "url")
    # A credential in the URL would come back in every GET of the setting.
    with_password = await api.put({"backend": "searxng", "url": "https://u:sekrit@s.org"})
    refused(with_password, "url")
    assert "sekrit" not in with_password.text
    refused(await api.put({"backend": "searxng", "url": "https://u@s.org"}), "url")
    refused(
        await api.put({"backend": "searxng", "url": "https://s.org", "api_key": "k"}), "api_key"
    )
    refused(await api.put({"backend": "bing"}), "backend")
    # A refused save changed nothing.
    config = cat.web_search_config(server_store.database)
    assert config == cat.WebSearchConfig("searxng", "https://search.example.org", "")


async def test_a_key_is_write_only_kept_on_save_and_never_carried_to_another_service(
    client: httpx.AsyncClient, server_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    api = Answers(client)
    assert (
        refused(await api.put({"backend": "tavily"}), "api_key")
        == "api_key: Tavily needs an API key"
    )
    tavily = {"backend": "tavily", "url": None, "has_api_key": True}
    assert (await api.put({"backend": "tavily", "api_key": KEY})).json() == tavily
    assert await api.get() == tavily
    # Saved again without a key (absent or null): the stored one stays.
    assert (await api.put({"backend": "tavily"})).json() == tavily
    assert (await api.put({"backend": "tavily", "api_key": None})).json() == tavily
    assert cat.web_search_config(server_store.database) == cat.WebSearchConfig("tavily", "", KEY)
    # Another keyed service never gets Tavily's key.
    refused(await api.put({"backend": "brave"}), "api_key")
    refused(await api.put({"backend": "tavily", "url": "https://api.tavily.com"}), "url")
    refused(await api.put({"backend": "tavily", "api_key": "has space"}), "api_key")
    # "" clears it, which a keyed backend cannot do without.
    refused(await api.put({"backend": "tavily", "api_key": ""}), "api_key")
    brave = await api.put({"backend": "brave", "api_key": "BSA-other"})
    assert brave.json() == {"backend": "brave", "url": None, "has_api_key": True}
    # Off forgets the key.
    assert (await api.put({"backend": None})).json() == OFF
    assert cat.web_search_config(server_store.database) is None
    # Unknown fields and a missing backend are refused by the body's type.
    typo = await api.put({"backend": "tavily", "apikey": KEY})
    assert typo.status_code == 422 and typo.json()["code"] == "invalid_argument"
    assert (await api.put({})).status_code == 422
    assert not any(KEY in body for body in api.bodies)
    assert "BSA-other" not in "".join(api.bodies)
    assert KEY not in caplog.text and "BSA-other" not in caplog.text
    assert "web search backend saved" in caplog.text
    assert "api_key=<redacted>" in repr(cat.WebSearchConfig("tavily", "", KEY))
