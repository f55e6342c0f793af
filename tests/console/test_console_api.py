"""The console JSON API over real HTTP against the in-process server (``make_server``)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web

from console import api as console_api
from console import discovery
from store import Store
from store import catalog as cat
from store.base.typed_peewee import execute_sql
from store.catalog.urls import public_model_id
from tests.conftest import StartServer
from tests.support.fake_provider import FakeProvider

KEY = "sk-live-KEY-0123456789"
HEADER_SECRET = "Bearer hdr-SECRET-42"
TOKEN_SECRET = "tok-SECRET-77"
SECRETS = (KEY, HEADER_SECRET, TOKEN_SECRET)


class Console:
    """An httpx client for the console API that remembers every response body it saw."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.bodies: list[str] = []

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        if method in ("POST", "PUT", "DELETE", "PATCH"):  # the console API's CSRF rule
            kwargs["headers"] = {"content-type": "application/json", **kwargs.get("headers", {})}
        response = await self.client.request(method, f"/console/api{path}", **kwargs)
        self.bodies.append(response.text)
        return response

    async def provider(self, **fields: Any) -> dict[str, Any]:
        body = {"name": "Main", "type": "openai-chat", "base_url": "https://example.com/v1"}
        body.update(fields)
        response = await self.call("POST", "/providers", json=body)
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    async def save(self, provider_id: int, *models: dict[str, Any]) -> httpx.Response:
        return await self.call("POST", f"/providers/{provider_id}/models", json={"models": models})


@pytest.fixture
async def console(make_server: StartServer) -> AsyncIterator[Console]:
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as client:
        yield Console(client)


def assert_error(response: httpx.Response, status: int, code: str, *fragments: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    # Every 422 also names each broken field, with its message (without the field id); only
    # a body that is not an object names none.
    assert set(body) == ({"code", "message", "fields"} if status == 422 else {"code", "message"})
    assert body["code"] == code
    if status == 422:
        assert body["fields"] or body["message"].startswith("invalid request body: "), body
        assert all(set(f) == {"field", "message"} for f in body["fields"])
    for fragment in fragments:
        assert fragment in body["message"], body["message"]


def body_without(body: dict[str, Any], key: str = "replay_reasoning") -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != key}


def model(model_id: str, **fields: Any) -> dict[str, Any]:
    return {"model_id": model_id, "display_name": model_id.upper(), **fields}


# --- providers ---------------------------------------------------------------------------------


async def test_provider_crud_statuses(console: Console) -> None:
    created = await console.provider(name=" Main ", api_key=KEY)
    assert set(created) == {
        "id",
        "name",
        "type",
        "base_url",
        "has_api_key",
        "headers",
        "public_headers",
        "replay_reasoning",
        "prompt_cache_key",
        "created_at",
        "updated_at",
    }
    assert created["name"] == "Main"
    assert created["replay_reasoning"] is True
    assert created["has_api_key"] is True
    assert created["headers"] == {}
    assert created["created_at"].endswith("Z")
    listed = await console.call("GET", "/providers")
    assert listed.status_code == 200
    assert listed.json() == [created]
    pid = created["id"]
    put = await console.call(
        "PUT",
        f"/providers/{pid}",
        json={"name": "New", "type": "anthropic", "base_url": "http://h"},
    )
    assert put.status_code == 200, put.text
    assert (put.json()["name"], put.json()["type"], put.json()["has_api_key"]) == (
        "New",
        "anthropic",
        True,
    )
    # replay_reasoning: absent keeps it, false turns it off and is kept on the next update.
    off = {"name": "New", "type": "anthropic", "base_url": "http://h", "replay_reasoning": False}
    assert (await console.call("PUT", f"/providers/{pid}", json=off)).json()[
        "replay_reasoning"
    ] is False
    kept = await console.call("PUT", f"/providers/{pid}", json=body_without(off))
    assert kept.json()["replay_reasoning"] is False
    deleted = await console.call("DELETE", f"/providers/{pid}")
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert (await console.call("GET", "/providers")).json() == []
    assert_error(await console.call("DELETE", f"/providers/{pid}"), 404, "not_found")
    body = {"name": "x", "type": "anthropic", "base_url": "http://h"}
    assert_error(await console.call("PUT", f"/providers/{pid}", json=body), 404, "not_found")
    assert_error(await console.call("PUT", "/providers/abc", json=body), 404, "not_found")


async def test_key_is_write_only_and_secret_headers_are_null(
    console: Console, server_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="cursor_server")
    headers = {"x-route": "r1", "Authorization": HEADER_SECRET, "X-Custom-Token": TOKEN_SECRET}
    created = await console.provider(api_key=KEY, headers=headers, public_headers=["x-route"])
    assert created["headers"] == {"x-route": "r1", "Authorization": None, "X-Custom-Token": None}
    assert created["public_headers"] == ["x-route"]
    pid = created["id"]
    # Sending the redacted object back (and no key) keeps every stored secret.
    same = {"name": "Renamed", "type": "openai-chat", "base_url": "https://example.com/v1"}
    back = {"headers": created["headers"], "public_headers": created["public_headers"]}
    put = await console.call("PUT", f"/providers/{pid}", json={**same, **back, "api_key": None})
    assert put.status_code == 200, put.text
    assert put.json()["has_api_key"] is True
    connection = cat.provider_connection(server_store.database, pid)
    assert connection is not None
    assert connection.api_key == KEY
    assert connection.headers == headers
    # A null for a header that has no stored value is an error, naming the header.
    bad = {**same, "headers": {"x-new-secret": None}}
    assert_error(
        await console.call("PUT", f"/providers/{pid}", json=bad),
        422,
        "invalid_argument",
        "headers.x-new-secret",
    )
    # Errors never echo the key, even when the key itself is what is wrong.
    bad_key = {**same, "api_key": f"{KEY} \n"}
    assert_error(
        await console.call("PUT", f"/providers/{pid}", json=bad_key), 422, "invalid_argument"
    )
    wrong_type = {**same, "api_key": 12345, "headers": {"Authorization": HEADER_SECRET}}
    assert_error(
        await console.call("PUT", f"/providers/{pid}", json=wrong_type), 422, "invalid_argument"
    )
    await console.call("GET", "/providers")
    # "" clears the key.
    cleared = await console.call("PUT", f"/providers/{pid}", json={**same, "api_key": ""})
    assert cleared.json()["has_api_key"] is False
    connection = cat.provider_connection(server_store.database, pid)
    assert connection is not None and connection.api_key == ""
    assert connection.headers == headers  # headers left out: kept
    for body in console.bodies:
        for secret in SECRETS:
            assert secret not in body
    for secret in SECRETS:
        assert secret not in caplog.text
    assert "provider created" in caplog.text


VALID = b'"name": "x", "type": "anthropic", "base_url": "http://h"'


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"", 400, "not valid JSON"),
        (b"[]", 422, "Expected `object`"),
        (b'{"name": "x", "type": "openai-chat"}', 422, "base_url"),
        (b'{"name": 1, "type": "openai-chat", "base_url": "http://h"}', 422, "name: must be text"),
        (b'{"name": "x", "type": "openai", "base_url": "http://h"}', 422, "type"),
        (b'{"name": " ", "type": "anthropic", "base_url": "http://h"}', 422, "name"),
        (b"{" + VALID + b', "apikey": "k"}', 422, "apikey"),
        (b"{" + VALID + b', "headers": []}', 422, "headers"),
        (b"{" + VALID + b', "headers": {"a": 1}}', 422, "headers"),
        (b"{" + VALID + b', "api_key": 5}', 422, "api_key"),
    ],
)
async def test_bad_provider_bodies_are_json_errors(
    console: Console, body: bytes, status: int, fragment: str
) -> None:
    response = await console.call("POST", "/providers", content=body)
    assert_error(response, status, "invalid_argument", fragment)
    assert (await console.call("GET", "/providers")).json() == []


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("HTTPS://Example.COM:443/v1/", "https://example.com/v1"),
        ("http://h:80", "http://h"),
        ("http://h:8080/v1//", "http://h:8080/v1"),
    ],
)
async def test_base_url_is_normalised(console: Console, raw: str, normalized: str) -> None:
    assert (await console.provider(base_url=raw))["base_url"] == normalized


@pytest.mark.parametrize(
    "raw", ["https://h/v1?", "https://h/v1#", "https://h/v1?x=1", "ftp://h/v1", "file:///etc"]
)
async def test_bad_base_urls_are_422(console: Console, raw: str) -> None:
    body = {"name": "x", "type": "openai-chat", "base_url": raw}
    assert_error(
        await console.call("POST", "/providers", json=body), 422, "invalid_argument", "base_url"
    )


async def test_identity_is_locked_while_the_provider_has_models(console: Console) -> None:
    created = await console.provider(base_url="HTTPS://Example.COM/v1/")
    pid = created["id"]
    assert (await console.save(pid, model("model-a"))).status_code == 201
    base = {"name": "Main", "type": "openai-chat", "base_url": "https://example.com/v1"}
    for change in ({"type": "openai-responses"}, {"base_url": "https://example.org/v1"}):
        response = await console.call("PUT", f"/providers/{pid}", json={**base, **change})
        assert_error(response, 409, "failed_precondition", "cannot change")
    renamed = await console.call("PUT", f"/providers/{pid}", json={**base, "name": "B"})
    assert renamed.status_code == 200
    assert (await console.call("DELETE", "/models/f246010a")).status_code == 204
    moved = await console.call("PUT", f"/providers/{pid}", json={**base, "type": "anthropic"})
    assert moved.status_code == 200, moved.text


# --- provider types ----------------------------------------------------------------------------


async def test_provider_types_are_the_stores_with_their_labels(console: Console) -> None:
    response = await console.call("GET", "/provider-types")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    types = response.json()
    assert [listed["type"] for listed in types] == list(cat.PROVIDER_TYPES)
    for listed in types:
        assert set(listed) == {
            "type",
            "label",
            "generates_images",
            "reasoning_efforts",
            "replay_reasoning",
        }
        assert listed["generates_images"] is (listed["type"] in cat.IMAGE_PROVIDER_TYPES)
        assert listed["reasoning_efforts"] == list(cat.REASONING_EFFORTS[listed["type"]])
        # Only OpenAI Chat's adapter reads a provider's replay_reasoning setting.
        assert listed["replay_reasoning"] is (listed["type"] == "openai-chat")
    assert {listed["type"]: listed["label"] for listed in types} == {
        "openai-chat": "OpenAI Chat Completions",
        "openai-responses": "OpenAI Responses",
        "anthropic": "Anthropic Messages",
        "gemini": "Gemini (native)",
    }


async def test_what_the_provider_types_say_is_what_a_save_takes(console: Console) -> None:
    """Every listed effort saves and another type's effort is refused; a model can be the image
    model exactly on a type said to generate images."""
    types = (await console.call("GET", "/provider-types")).json()
    every_effort = {effort for listed in types for effort in listed["reasoning_efforts"]}
    for listed in types:
        name, efforts = listed["type"], listed["reasoning_efforts"]
        provider = await console.provider(name=name, type=name, base_url=f"https://{name}.test/v1")
        models = [
            model(f"{name}-{effort}", reasoning_effort=effort, max_output_tokens=64)
            for effort in efforts
        ]
        saved = await console.save(provider["id"], *models)
        assert saved.status_code == 201, saved.text
        other = sorted(every_effort - set(efforts)) or ["extreme"]
        refused = await console.save(
            provider["id"], model(f"{name}-other", reasoning_effort=other[0], max_output_tokens=64)
        )
        assert_error(refused, 422, "invalid_argument", "models[0].reasoning_effort")
        # An image model of each type: only a type that generates images can have one marked.
        image = await console.save(
            provider["id"],
            {"model_id": f"{name}-image", "display_name": "I", "kind": "image", "enabled": False},
        )
        marked = await console.call(
            "PUT", "/settings/image-model", json={"public_id": image.json()[0]["public_id"]}
        )
        assert marked.status_code == (200 if listed["generates_images"] else 422), marked.text


# --- models ------------------------------------------------------------------------------------


async def test_models_upsert_list_and_delete(console: Console) -> None:
    provider = await console.provider(base_url="HTTPS://Example.COM/v1/", name="Prov")
    pid = provider["id"]
    response = await console.save(
        pid,
        model("model-a", display_name="Zeta", sort_order=2, context_window_tokens=1000),
        model("model-b", display_name="Alpha", sort_order=2, enabled=False),
        model("model-c", reasoning_enabled=True, reasoning_effort="high", max_output_tokens=64),
    )
    assert response.status_code == 201, response.text
    saved = response.json()
    assert [m["model_id"] for m in saved] == ["model-a", "model-b", "model-c"]
    assert saved[0] == {
        "public_id": "f246010a",
        "provider_id": pid,
        "provider_name": "Prov",
        "provider_type": "openai-chat",
        "model_id": "model-a",
        "display_name": "Zeta",
        "enabled": True,
        "sort_order": 2,
        "max_output_tokens": None,
        "context_window_tokens": 1000,
        "reasoning_enabled": False,
        "reasoning_effort": None,
        "price_input_per_mtok": None,
        "price_output_per_mtok": None,
        "price_cache_read_per_mtok": None,
        "price_cache_write_per_mtok": None,
        "fallbacks": [],
        "kind": "chat",
        "price_source": None,
        "price_list_as_of": None,
        "chat": True,
        "generates_images": False,
    }
    listed = (await console.call("GET", "/models")).json()
    assert [m["model_id"] for m in listed] == ["model-c", "model-b", "model-a"]
    again = await console.save(pid, model("model-a", display_name="Renamed", sort_order=0))
    assert again.json()[0]["public_id"] == "f246010a"
    listed = (await console.call("GET", "/models")).json()
    assert [m["display_name"] for m in listed] == ["MODEL-C", "Renamed", "Alpha"]
    assert (await console.call("DELETE", "/models/f246010a")).status_code == 204
    assert_error(await console.call("DELETE", "/models/f246010a"), 404, "not_found")
    assert len((await console.call("GET", "/models")).json()) == 2
    assert_error(await console.save(pid + 1, model("x")), 404, "not_found")


async def test_model_validation(console: Console) -> None:
    anthropic = (await console.provider(type="anthropic", base_url="https://a.example/v1"))["id"]
    response = await console.save(anthropic, model("claude-x"))
    assert_error(response, 422, "invalid_argument", "models[0].max_output_tokens")
    assert (await console.save(anthropic, model("claude-x", enabled=False))).status_code == 201
    limited = await console.save(anthropic, model("claude-x", max_output_tokens=4096))
    assert limited.status_code == 201
    assert limited.json()[0]["enabled"] is True
    chat = (await console.provider())["id"]
    for bad, fragment in (
        (model("m", max_output_tokens=0), "max_output_tokens"),
        (model("m", context_window_tokens=-5), "context_window_tokens"),
        (model("m", max_output_tokens=True), "max_output_tokens"),
        (model("m", display_name="  "), "models[0].display_name"),
        (model(" "), "models[0].model_id"),
        ({"model_id": "m"}, "display_name"),
        (model("m", enabled="yes"), "enabled"),
        (model("m", extra=1), "extra"),
        (model("m", reasoning_effort="hihg"), "models[0].reasoning_effort"),
        (model("m", reasoning_effort=" "), "none, minimal, low, medium, high, xhigh, max"),
    ):
        assert_error(await console.save(chat, bad), 422, "invalid_argument", fragment)
    minimal = model("claude-y", max_output_tokens=64, reasoning_effort="minimal")
    assert_error(
        await console.save(anthropic, minimal),
        422,
        "invalid_argument",
        "models[0].reasoning_effort",
        "none, low, medium, high, xhigh, max for an anthropic provider",
    )
    shouted = await console.save(chat, model("loud", reasoning_effort=" HIGH "))
    assert shouted.json()[0]["reasoning_effort"] == "high"
    assert (await console.call("DELETE", f"/models/{shouted.json()[0]['public_id']}")).is_success
    duplicate = await console.save(chat, model("m"), model(" m "))
    assert_error(duplicate, 422, "invalid_argument", "models[1].model_id")
    assert [m["model_id"] for m in (await console.call("GET", "/models")).json()] == ["claude-x"]


PRICES = {
    "price_input_per_mtok": 3,
    "price_output_per_mtok": 15.0,
    "price_cache_read_per_mtok": 0.3,
    "price_cache_write_per_mtok": None,
}


async def test_model_prices_are_saved_listed_and_validated(console: Console) -> None:
    """Prices (USD per million tokens, null = unknown) are kept with the model, listed, kept
    by an upsert that leaves them out and cleared by one that gives them as null; a negative
    or non-finite one is a 422 naming ``models[i].<field>`` and saves nothing."""
    pid = (await console.provider())["id"]
    saved = await console.save(pid, model("m", **PRICES), model("free", price_input_per_mtok=0))
    assert saved.status_code == 201, saved.text
    listed = {m["model_id"]: m for m in (await console.call("GET", "/models")).json()}
    assert {field: listed["m"][field] for field in PRICES} == {
        "price_input_per_mtok": 3.0,
        "price_output_per_mtok": 15.0,
        "price_cache_read_per_mtok": 0.3,
        "price_cache_write_per_mtok": None,
    }
    assert listed["free"]["price_input_per_mtok"] == 0.0  # a real zero price
    assert listed["free"]["price_output_per_mtok"] is None
    for field in PRICES:
        bad = model("m", **{field: -0.01})
        response = await console.save(pid, model("ok"), bad)
        assert_error(response, 422, "invalid_argument", f"models[1].{field}", "at least 0")
    for raw in (b"1e999", b'"3"', b"true"):
        body = b'{"models":[{"model_id":"m","display_name":"M","price_output_per_mtok":%s}]}'
        response = await console.call(
            "POST",
            f"/providers/{pid}/models",
            content=body % raw,
            headers={"content-type": "application/json"},
        )
        assert_error(response, 422, "invalid_argument", "models[0].price_output_per_mtok")
    listed = {m["model_id"]: m for m in (await console.call("GET", "/models")).json()}
    assert set(listed) == {"m", "free"}
    assert listed["m"]["price_output_per_mtok"] == 15.0
    kept = await console.save(pid, model("m"))
    assert kept.json()[0]["price_output_per_mtok"] == 15.0
    assert kept.json()[0]["price_source"] == "user"
    cleared = await console.save(pid, model("m", **dict.fromkeys(PRICES)))
    assert {field: cleared.json()[0][field] for field in PRICES} == dict.fromkeys(PRICES)


async def test_a_failing_batch_saves_nothing(console: Console) -> None:
    anthropic = (await console.provider(type="anthropic"))["id"]
    response = await console.save(
        anthropic, model("a", max_output_tokens=1), model("b", max_output_tokens=1), model("c")
    )
    assert_error(response, 422, "invalid_argument", "models[2].max_output_tokens")
    assert (await console.call("GET", "/models")).json() == []


async def test_public_id_collision_is_409(console: Console, server_store: Store) -> None:
    first = await console.provider(base_url="HTTPS://Example.COM/v1/")
    second = await console.provider(base_url="https://example.com/v1")
    assert (await console.save(first["id"], model("model-a"))).status_code == 201
    response = await console.save(second["id"], model("model-a"))
    assert_error(response, 409, "already_exists", "f246010a")
    # A row squatting the id a new model would get (a genuine 8-hex collision) is refused too,
    # and the batch before it is rolled back.
    squatted = public_model_id("https://example.com/v1", "openai-chat", "model-z")
    db = server_store.database
    execute_sql(
        db,
        'INSERT INTO "models" (public_id, provider_id, model_id, display_name, enabled, '
        "sort_order, reasoning_enabled, created_at_ms, updated_at_ms) "
        "VALUES (?, ?, 'other-model', 'Other', 1, 0, 0, 0, 0)",
        (squatted, first["id"]),
    )
    response = await console.save(first["id"], model("model-y"), model("model-z"))
    assert_error(response, 409, "already_exists", squatted, "other-model")
    ids = sorted(m["model_id"] for m in (await console.call("GET", "/models")).json())
    assert ids == ["model-a", "other-model"]


async def test_deleting_a_provider_removes_models_and_keeps_call_records(
    console: Console, server_store: Store
) -> None:
    provider = await console.provider()
    assert (await console.save(provider["id"], model("m1"), model("m2"))).status_code == 201
    db = server_store.database
    execute_sql(
        db,
        'INSERT INTO "llm_calls" (model_call_id, provider_id, provider_name, provider_type, '
        'provider_url, public_id, model_id, display_name, status, started_at_ms, "verbose", '
        "response_bytes) VALUES ('call-1', ?, 'Main', 'openai-chat', "
        "'https://example.com/v1', 'abcd0123', 'm1', 'M1', 'completed', 1, 0, 0)",
        (provider["id"],),
    )
    assert (await console.call("DELETE", f"/providers/{provider['id']}")).status_code == 204
    assert (await console.call("GET", "/models")).json() == []
    assert execute_sql(db, 'SELECT COUNT(*) FROM "models"').fetchone()[0] == 0
    row = execute_sql(
        db,
        'SELECT provider_id, provider_name, model_id FROM "llm_calls" WHERE model_call_id = ?',
        ("call-1",),
    ).fetchone()
    assert tuple(row) == (provider["id"], "Main", "m1")


# --- discovery ---------------------------------------------------------------------------------


def ids_of(response: httpx.Response) -> list[str]:
    """The model ids a discovery answered, in its order."""
    return [found["id"] for found in response.json()["models"]]


@pytest.mark.parametrize("provider_type", ["openai-chat", "openai-responses"])
async def test_openai_discovery(console: Console, provider_type: str) -> None:
    async with FakeProvider(models=["gpt-b", "gpt-a", "gpt-b", "gpt-c"]) as fake:
        provider = await console.provider(
            type=provider_type, base_url=fake.base_url, api_key=KEY, headers={"x-route": "r1"}
        )
        response = await console.call("POST", f"/providers/{provider['id']}/models/discover")
        assert response.status_code == 200, response.text
        assert ids_of(response) == ["gpt-a", "gpt-b", "gpt-c"]
        assert response.json()["models"][0] == {
            "id": "gpt-a",
            "kind": "chat",
            "chat": True,
            "kind_from": "name",
            "prices": None,
            "price_source": None,
        }
        [request] = fake.requests
        assert (request.method, request.path, request.query) == ("GET", "/v1/models", {})
        assert request.header("authorization") == f"Bearer {KEY}"
        assert request.header("x-route") == "r1"
        assert request.header("x-api-key") is None
    assert (await console.call("GET", "/models")).json() == []  # discovery saves nothing


async def test_openai_discovery_without_key_sends_no_authorization(console: Console) -> None:
    async with FakeProvider(models=["m"]) as fake:
        provider = await console.provider(base_url=fake.base_url)
        response = await console.call("POST", f"/providers/{provider['id']}/models/discover")
        assert ids_of(response) == ["m"]
        assert fake.requests[0].header("authorization") is None


async def test_anthropic_discovery_pages(console: Console) -> None:
    names = [f"claude-{i:03d}" for i in range(150, 0, -1)]
    async with FakeProvider(models=names, models_style="anthropic") as fake:
        provider = await console.provider(
            type="anthropic", base_url=fake.base_url, api_key=KEY, headers={"x-route": "r2"}
        )
        response = await console.call("POST", f"/providers/{provider['id']}/models/discover")
        assert response.status_code == 200, response.text
        assert ids_of(response) == sorted(names)
        assert {(m["kind"], m["kind_from"]) for m in response.json()["models"]} == {
            ("chat", "provider")  # Anthropic lists chat models only
        }
        first, second = fake.requests
        assert first.query == {"limit": "100"}
        assert second.query == {"limit": "100", "after_id": names[99]}
        for request in (first, second):
            assert request.path == "/v1/models"
            assert request.header("x-api-key") == KEY
            assert request.header("anthropic-version") == "2023-06-01"
            assert request.header("x-route") == "r2"
            assert request.header("authorization") is None


async def test_discovery_error_is_502_without_the_key(
    console: Console, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="cursor_server")
    async with FakeProvider() as fake:
        fake.models_error = (
            401,
            {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "auth"}},
        )
        provider = await console.provider(base_url=fake.base_url, api_key=KEY)
        response = await console.call("POST", f"/providers/{provider['id']}/models/discover")
    assert_error(response, 502, "unavailable", "401", "Incorrect API key provided: [redacted]")
    assert KEY not in response.text
    assert KEY not in caplog.text
    assert "model discovery failed" in caplog.text


async def test_discovery_of_a_bad_body_unknown_provider_and_dead_host(console: Console) -> None:
    async with FakeProvider(models_style="anthropic") as fake:
        fake.models_error = (200, {"models": ["not", "a", "list"]})
        provider = await console.provider(base_url=fake.base_url, type="anthropic")
        response = await console.call("POST", f"/providers/{provider['id']}/models/discover")
        assert_error(response, 502, "unavailable", "without a model list", "data")
        dead_url = fake.base_url
    assert_error(await console.call("POST", "/providers/999/models/discover"), 404, "not_found")
    dead = await console.provider(base_url=dead_url, name="dead")
    response = await console.call("POST", f"/providers/{dead['id']}/models/discover")
    assert_error(response, 502, "unavailable", "cannot reach the provider")


async def test_discovery_is_bounded_by_its_timeout(
    console: Console, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(discovery, "DISCOVERY_TIMEOUT_S", 0.2)
    release = asyncio.Event()

    async def never_answer(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await release.wait()
        writer.close()

    silent = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    try:
        provider = await console.provider(base_url=f"http://127.0.0.1:{port}/v1")
        started = time.monotonic()
        response = await console.call("POST", f"/providers/{provider['id']}/models/discover")
        elapsed = time.monotonic() - started
    finally:
        release.set()
        silent.close()
        await silent.wait_closed()
    assert_error(response, 502, "unavailable")
    assert "timed out" in response.json()["message"] or "Timeout" in response.json()["message"]
    assert elapsed < 3.0


# --- settings ----------------------------------------------------------------------------------


async def test_observability_settings(console: Console, server_store: Store) -> None:
    response = await console.call("GET", "/settings/observability")
    assert response.status_code == 200
    off = {"verbose": False, "retained_calls": 10000, "metrics_per_user": False}
    assert response.json() == off
    put = await console.call("PUT", "/settings/observability", json={"verbose": True})
    assert put.json() == {**off, "verbose": True}
    put = await console.call("PUT", "/settings/observability", json={"retained_calls": 25})
    assert put.json() == {**off, "verbose": True, "retained_calls": 25}
    put = await console.call("PUT", "/settings/observability", json={"metrics_per_user": True})
    saved = {"verbose": True, "retained_calls": 25, "metrics_per_user": True}
    assert put.json() == saved
    for bad in (
        {"retained_calls": 0},
        {"retained_calls": "5"},
        {"retained_calls": 1.5},
        {"verbose": "yes"},
        {"verbose": None},
        {"metrics_per_user": 1},
        {"metrics_per_user": None},
        {"detailed": True},
    ):
        response = await console.call("PUT", "/settings/observability", json=bad)
        assert_error(response, 422, "invalid_argument")
    assert_error(
        await console.call("PUT", "/settings/observability", content=b"{"), 400, "invalid_argument"
    )
    assert (await console.call("GET", "/settings/observability")).json() == saved
    assert cat.get_observability(server_store.database) == cat.ObservabilitySettings(
        True, 25, metrics_per_user=True
    )


# --- routing and threading ---------------------------------------------------------------------


async def test_unknown_console_routes_never_go_upstream(console: Console) -> None:
    response = await console.call("PATCH", "/providers", json={"api_key": KEY})
    assert_error(response, 405, "unimplemented", "PATCH")
    assert set(response.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}
    assert_error(await console.call("GET", "/no-such-thing"), 404, "not_found")
    assert_error(await console.call("POST", "/providers/1/nothing"), 404, "not_found")
    # Nothing under /console/ goes upstream either; outside it the proxy gets everything (its
    # fake answers 299).
    assert_error(await console.client.get("/console/other"), 404, "not_found")
    assert (await console.client.get("/consoles/other")).status_code == 299


async def test_routes_added_after_the_catch_all_still_win(server_store: Store) -> None:
    """Call-record routes come from another module, registered after ours."""

    async def calls(_request: web.Request) -> web.Response:
        return web.json_response([])

    app = web.Application()
    console_api.ConsoleRoutes(server_store.database).register(app)
    app.router.add_get("/console/api/llm-calls", calls)
    app.router.add_get("/console/api/llm-calls/{call_id}", calls)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}", timeout=5.0) as client:
            assert (await client.get("/console/api/llm-calls")).json() == []
            assert (await client.get("/console/api/llm-calls/run:1")).json() == []
            assert (await client.get("/console/api/providers")).json() == []
            assert (await client.get("/console/api/llm-callz")).status_code == 404
    finally:
        await runner.cleanup()


# --- discover_models on its own, against httpx's mock transport ---------------------------------


def connection(provider_type: str = "anthropic") -> cat.ProviderConnection:
    return cat.ProviderConnection(
        provider_id=1,
        name="p",
        type=provider_type,
        base_url="https://provider.test/v1",
        api_key=KEY,
        headers={"x-goog-api-key": TOKEN_SECRET, "x-route": "r"},
    )


async def discover_with(
    handler: Any, provider_type: str = "anthropic"
) -> list[discovery.DiscoveredModel]:
    transport = httpx.MockTransport(handler)
    async with httpx.AsyncClient(transport=transport) as client:
        return await discovery.discover_models(connection(provider_type), client)


async def test_anthropic_has_more_without_last_id_is_an_error() -> None:
    def handler(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"id": "a"}], "has_more": True})

    with pytest.raises(discovery.DiscoveryError, match="has_more without last_id"):
        await discover_with(handler)


async def test_anthropic_paging_that_never_advances_is_an_error() -> None:
    pages: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        pages.append(str(request.url))
        return httpx.Response(200, json={"data": [{"id": "a"}], "has_more": True, "last_id": "a"})

    with pytest.raises(discovery.DiscoveryError, match="same page"):
        await discover_with(handler)
    assert pages == [
        "https://provider.test/v1/models?limit=100",
        "https://provider.test/v1/models?limit=100&after_id=a",
    ]


async def test_oversized_model_list_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discovery, "DISCOVERY_MAX_BODY_BYTES", 64)

    def handler(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"id": f"m{i}"} for i in range(20)]})

    with pytest.raises(discovery.DiscoveryError, match="larger than 64 bytes"):
        await discover_with(handler, "openai-chat")


async def test_error_text_is_redacted_and_bounded() -> None:
    def handler(_request: httpx.Request) -> httpx.Response:
        text = f"denied {KEY} and {TOKEN_SECRET} " + "x" * 2000
        return httpx.Response(403, text=text)

    with pytest.raises(discovery.DiscoveryError) as info:
        await discover_with(handler, "openai-responses")
    message = info.value.message
    assert message.startswith("model discovery failed: provider answered 403: denied [redacted]")
    assert KEY not in message and TOKEN_SECRET not in message
    assert len(message) < 700


async def test_store_calls_run_off_the_event_loop(
    console: Console, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    original = cat.list_providers

    def recording(db: Any) -> list[cat.ProviderRecord]:
        threads.append(threading.get_ident())
        return original(db)

    monkeypatch.setattr(cat, "list_providers", recording)
    assert (await console.call("GET", "/providers")).status_code == 200
    assert threads and threads[0] != threading.get_ident()
