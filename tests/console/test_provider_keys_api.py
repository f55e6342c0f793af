"""The console's key pool API over a real server: keys added, relabelled, replaced and deleted,
each answer without the key; bad input a 422 naming the field, the provider's own key not
deletable (409), unknown providers and keys 404; no key in any answer or log line."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from store.base.clock import now_ms
from tests.conftest import StartServer

OWN = "sk-own-API-5551"
ADDED = "sk-added-API-6662"
REPLACED = "sk-replaced-API-7773"
KEYS = (OWN, ADDED, REPLACED)


class Api:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.bodies: list[str] = []

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        if method in ("POST", "PUT", "DELETE"):
            kwargs.setdefault("headers", {"content-type": "application/json"})
        response = await self.client.request(method, f"/console/api{path}", **kwargs)
        self.bodies.append(response.text)
        return response


@pytest.fixture
async def api(make_server: StartServer) -> AsyncIterator[Api]:
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as client:
        yield Api(client)


async def new_provider(api: Api) -> int:
    body = {"name": "P", "type": "openai-chat", "base_url": "http://127.0.0.1:9/v1"}
    created = await api.call("POST", "/providers", json={**body, "api_key": OWN})
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


def assert_refused(response: httpx.Response, status: int, code: str, *fragments: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) - {"fields"} == {"code", "message"} and body["code"] == code
    for fragment in fragments:
        assert fragment in body["message"], body["message"]


async def test_keys_are_added_relabelled_replaced_and_deleted_without_showing_them(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="cursor_server")
    pid = await new_provider(api)
    keys = f"/providers/{pid}/keys"
    listed = await api.call("GET", keys)
    assert listed.status_code == 200
    assert listed.json() == [
        {
            "id": 0,
            "label": "main",
            "position": 0,
            "main": True,
            "has_api_key": True,
            "state": "healthy",
            "cooling_until_ms": None,
            "last_error": None,
            "created_at_ms": None,
            "unreadable": None,
        }
    ]
    added = await api.call("POST", keys, json={"label": "backup", "api_key": ADDED})
    assert added.status_code == 201, added.text
    key_id = added.json()["id"]
    assert added.json()["label"] == "backup" and added.json()["state"] == "healthy"
    relabelled = await api.call("PUT", f"{keys}/{key_id}", json={"label": "spare"})
    assert relabelled.status_code == 200 and relabelled.json()["label"] == "spare"
    replaced = await api.call("PUT", f"{keys}/0", json={"api_key": REPLACED, "label": "own"})
    assert replaced.status_code == 200 and replaced.json()["label"] == "own"
    listed = await api.call("GET", keys)
    assert [(k["label"], k["has_api_key"]) for k in listed.json()] == [
        ("own", True),
        ("spare", True),
    ]
    assert (await api.call("DELETE", f"{keys}/{key_id}")).status_code == 204
    assert [k["id"] for k in (await api.call("GET", keys)).json()] == [0]
    for text in (*api.bodies, caplog.text):
        for key in KEYS:
            assert key not in text


async def test_bad_input_is_refused_naming_the_field(api: Api) -> None:
    pid = await new_provider(api)
    keys = f"/providers/{pid}/keys"
    assert_refused(
        await api.call("POST", keys, json={"label": " ", "api_key": ADDED}),
        422,
        "invalid_argument",
        "label",
    )
    assert_refused(
        await api.call("POST", keys, json={"label": "main", "api_key": ADDED}),
        422,
        "invalid_argument",
        "label: ",
        "'main'",
    )
    refused = await api.call("POST", keys, json={"label": "x", "api_key": "two words " + ADDED})
    assert_refused(refused, 422, "invalid_argument", "api_key")
    assert_refused(
        await api.call("POST", keys, json={"label": "x"}), 422, "invalid_argument", "api_key"
    )
    assert_refused(
        await api.call("POST", keys, json={"label": "x", "api_key": ADDED, "key": 1}),
        422,
        "invalid_argument",
        "key",
    )
    assert_refused(
        await api.call("POST", keys, content=b"{", headers={"content-type": "application/json"}),
        400,
        "invalid_argument",
    )
    assert_refused(await api.call("DELETE", f"{keys}/0"), 409, "failed_precondition", "own key")
    assert_refused(await api.call("GET", "/providers/999/keys"), 404, "not_found")
    assert_refused(await api.call("DELETE", f"{keys}/77"), 404, "not_found")
    assert_refused(await api.call("PUT", f"{keys}/x", json={"label": "y"}), 404, "not_found")
    for body in api.bodies:
        assert ADDED not in body


async def test_a_replaced_or_deleted_key_is_no_longer_cooling(make_server: StartServer) -> None:
    """The process's key health is dropped for a key that is replaced (a new key starts
    healthy) and for a deleted provider (SQLite may give its id to the next provider)."""
    server = await make_server()
    assert server.provider_deps is not None
    health = server.provider_deps.keys
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as client:
        api = Api(client)
        pid = await new_provider(api)
        added = (
            await api.call("POST", f"/providers/{pid}/keys", json={"label": "b", "api_key": ADDED})
        ).json()
        for key_id in (0, added["id"]):
            assert health.refused(pid, key_id, 401, "refused", None, now_ms())

        def states() -> dict[int, str]:
            return {k["id"]: k["state"] for k in listed.json()}

        listed = await api.call("GET", f"/providers/{pid}/keys")
        assert states() == {0: "cooling", added["id"]: "cooling"}
        replaced = await api.call(
            "PUT", f"/providers/{pid}/keys/{added['id']}", json={"api_key": REPLACED}
        )
        assert replaced.status_code == 200, replaced.text
        listed = await api.call("GET", f"/providers/{pid}/keys")
        assert states() == {0: "cooling", added["id"]: "healthy"}
        assert [k["last_error"] for k in listed.json()][1] is None
        own = await api.call(
            "PUT",
            f"/providers/{pid}",
            json={
                "name": "P",
                "type": "openai-chat",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": OWN,
            },
        )
        assert own.status_code == 200, own.text
        listed = await api.call("GET", f"/providers/{pid}/keys")
        assert states() == {0: "healthy", added["id"]: "healthy"}
        assert health.refused(pid, 0, 429, "busy", None, now_ms())
        assert (await api.call("DELETE", f"/providers/{pid}")).status_code == 204
        assert health.states(pid) == {}
