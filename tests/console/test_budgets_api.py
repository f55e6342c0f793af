"""``GET``/``PUT /console/api/settings/budgets`` over a real socket: the default and the
per-user overrides saved and read back, every bad value a 422 naming its field, and a deleted
model dropped from the allowed lists (on SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from actors.server.compose import RunningServer
from store import Store
from store.catalog import ModelInput, ProviderInput, create_provider, delete_model, save_models
from store.database import connect_store
from tests.conftest import StartServer
from tests.console.test_console_api import assert_error

PATH = "/console/api/settings/budgets"


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = connect_store(db_url)
    yield opened
    opened.close()


def two_models(store: Store) -> tuple[str, str]:
    provider = create_provider(
        store.database,
        ProviderInput(name="p", type="openai-chat", base_url="https://p.example/v1"),
    )
    models = [ModelInput(model_id=f"m-{x}", display_name=f"M {x}") for x in "ab"]
    first, second = save_models(store.database, provider.id, models)
    return first.public_id, second.public_id


async def put(server: RunningServer, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://{server.address}") as client:
        return await client.put(
            PATH, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
        )


async def get(server: RunningServer) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=f"http://{server.address}") as client:
        answer = await client.get(PATH)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


NO_LIMITS = {
    "usd_per_day": None,
    "usd_per_month": None,
    "turns_per_minute": None,
    "concurrent_runs": None,
    "allowed_models": None,
}


async def test_saved_budgets_read_back_and_a_deleted_model_leaves_the_lists(
    make_server: StartServer, store: Store
) -> None:
    first, second = two_models(store)
    server = await make_server(store=store)
    empty = await get(server)
    assert empty["default"] == NO_LIMITS and empty["overrides"] == {}
    assert empty["max_overrides"] == 1000
    default = {"usd_per_day": 5, "usd_per_month": 100.5, "turns_per_minute": 10}
    overrides = {
        "alice@example.com": {"concurrent_runs": 2, "allowed_models": [first, second, first]},
        "auth0|bob-2": {},
    }
    answer = await put(server, {"default": default, "overrides": overrides})
    assert answer.status_code == 200, answer.text
    saved = await get(server)
    assert saved["default"] == {**NO_LIMITS, **default, "usd_per_day": 5.0}
    assert saved["overrides"] == {
        "alice@example.com": {**NO_LIMITS, "concurrent_runs": 2, "allowed_models": [first, second]},
        "auth0|bob-2": NO_LIMITS,
    }
    # A change of the default alone keeps the overrides.
    assert (await put(server, {"default": {"usd_per_day": 1}})).status_code == 200
    assert (await get(server))["overrides"] == saved["overrides"]
    delete_model(store.database, first)
    after = await get(server)
    assert after["overrides"]["alice@example.com"]["allowed_models"] == [second]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"default": {"usd_per_day": -1}}, "default.usd_per_day"),
        ({"default": {"usd_per_month": 1e300}}, "default.usd_per_month"),
        ({"default": {"usd_per_day": "5"}}, "usd_per_day"),
        ({"default": {"turns_per_minute": 0}}, "default.turns_per_minute"),
        ({"default": {"concurrent_runs": 1.5}}, "concurrent_runs"),
        ({"default": {"concurrent_runs": 2**31}}, "default.concurrent_runs"),
        ({"default": {"allowed_models": ["nope"]}}, "default.allowed_models[0]"),
        ({"overrides": {"bob": {"usd_per_day": -0.01}}}, "overrides['bob'].usd_per_day"),
        ({"overrides": {"": {}}}, "overrides"),
        ({"overrides": {"x" * 255: {}}}, "overrides"),
        ({"default": {"tokens_per_day": 5}}, "tokens_per_day"),
        ({"budgets": {}}, "budgets"),
    ],
)
async def test_bad_values_are_422_naming_the_field(
    make_server: StartServer, store: Store, body: dict[str, Any], fragment: str
) -> None:
    two_models(store)
    server = await make_server(store=store)
    before = await get(server)
    assert_error(await put(server, body), 422, "invalid_argument", fragment)
    assert await get(server) == before


async def test_not_json_is_400(make_server: StartServer, store: Store) -> None:
    server = await make_server(store=store)
    async with httpx.AsyncClient(base_url=f"http://{server.address}") as client:
        answer = await client.put(PATH, content=b"{", headers={"content-type": "application/json"})
    assert_error(answer, 400, "invalid_argument", "not valid JSON")
