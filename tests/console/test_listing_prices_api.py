"""Prices from the provider's own model listing (OpenRouter's ``pricing``): discovered from
the fake provider, kept by the server for the add that follows (never taken from the browser;
in the database, so an add through another instance or worker gets them too),
preferred over the price list, marked ``provider``, and never over a price the user set;
``-1``, ``0`` and missing fields read as the listing means them; a router's ``maker/name`` id
without listing prices gets the price list's by its name. Over a real server and the fake
provider on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from store import Store, connect_store
from store import catalog as cat
from tests.conftest import StartServer
from tests.console.test_console_api import Console, assert_error, console
from tests.support.fake_provider import FakeProvider

__all__ = ["console"]

PRICES = cat.PRICE_FIELDS

# OpenRouter's listing, as its models API answers it (USD per token, decimal strings).
SONNET = {
    "prompt": "0.000003",
    "completion": "0.000015",
    "request": "0",
    "image": "0",
    "input_cache_read": "0.0000003",
    "input_cache_write": "0.00000375",
}
ROUTER_MODELS = {
    # The listing's prices differ from the price list's gpt-4o ones: the listing's win.
    "openai/gpt-4o": {"prompt": "0.000002", "completion": "0.000009", "input_cache_read": "0"},
    "anthropic/claude-sonnet-4": SONNET,
    "meta-llama/llama-free:free": {"prompt": "0", "completion": "0"},
    "openrouter/auto": {"prompt": "-1", "completion": "-1"},
    "acme/odd-pricing": {"prompt": "cheap", "completion": None},
    "google/gemini-2.5-pro": None,  # listed without pricing
    "acme/gpt-4o": None,  # another maker's name: no list prices either
}


def prices(record: dict[str, Any]) -> dict[str, Any]:
    return {field: record[field] for field in PRICES}


def mtok(inp: float | None, out: float | None, read: float | None, write: float | None) -> Any:
    return dict(zip(PRICES, (inp, out, read, write), strict=True))


async def discover_router(console: Console, fake: FakeProvider) -> tuple[int, dict[str, Any]]:
    fake.listing_extra = {
        model_id: {"pricing": pricing} for model_id, pricing in ROUTER_MODELS.items() if pricing
    }
    provider = await console.provider(name="Router", base_url=fake.base_url)
    answer = await console.call("POST", f"/providers/{provider['id']}/models/discover")
    assert answer.status_code == 200, answer.text
    return provider["id"], {m["id"]: m for m in answer.json()["models"]}


async def test_discovered_listing_prices_are_added_marked_provider(console: Console) -> None:
    listed = (await console.call("GET", "/price-list")).json()["models"]
    async with FakeProvider(models=list(ROUTER_MODELS)) as fake:
        pid, found = await discover_router(console, fake)
    # The discovery says which prices a new model of each id gets, and from where.
    assert {i: (m["price_source"], m["prices"]) for i, m in found.items()} == {
        "openai/gpt-4o": ("provider", mtok(2.0, 9.0, None, None)),
        "anthropic/claude-sonnet-4": ("provider", mtok(3.0, 15.0, 0.3, 3.75)),
        "meta-llama/llama-free:free": ("provider", mtok(0.0, 0.0, None, None)),
        "openrouter/auto": (None, None),
        "acme/odd-pricing": (None, None),
        "google/gemini-2.5-pro": ("list", listed["gemini-2.5-pro"]),
        "acme/gpt-4o": (None, None),
    }
    # Added as the discovery checklist adds them: ids, names and kinds, no prices.
    added = await console.save(pid, *({"model_id": i, "display_name": i} for i in ROUTER_MODELS))
    assert added.status_code == 201, added.text
    stored = {m["model_id"]: m for m in (await console.call("GET", "/models")).json()}
    got = {i: (m["price_source"], prices(m), m["price_list_as_of"]) for i, m in stored.items()}
    as_of = (await console.call("GET", "/price-list")).json()["as_of"]
    assert got == {
        "openai/gpt-4o": ("provider", mtok(2.0, 9.0, None, None), None),
        "anthropic/claude-sonnet-4": ("provider", mtok(3.0, 15.0, 0.3, 3.75), None),
        "meta-llama/llama-free:free": ("provider", mtok(0.0, 0.0, None, None), None),
        "openrouter/auto": (None, mtok(None, None, None, None), None),
        "acme/odd-pricing": (None, mtok(None, None, None, None), None),
        "google/gemini-2.5-pro": ("list", listed["gemini-2.5-pro"], as_of),
        "acme/gpt-4o": (None, mtok(None, None, None, None), None),
    }


async def test_a_users_price_is_never_replaced_by_the_listings(console: Console) -> None:
    async with FakeProvider(models=list(ROUTER_MODELS)) as fake:
        provider = await console.provider(name="Router", base_url=fake.base_url)
        pid = provider["id"]
        # Added by id before any discovery, with the user's own input price: the absent ones
        # are the list's (found by the name), and the source is the user's.
        mine = await console.call(
            "POST",
            f"/providers/{pid}/models",
            json={
                "models": [
                    {"model_id": "openai/gpt-4o", "display_name": "4o", "price_input_per_mtok": 1}
                ],
                "only_new": True,
            },
        )
        assert mine.status_code == 201, mine.text
        assert mine.json()[0]["price_source"] == "user"
        assert prices(mine.json()[0]) == mtok(1.0, 10.0, 1.25, None)
        fake.listing_extra = {m: {"pricing": p} for m, p in ROUTER_MODELS.items() if p}
        answer = await console.call("POST", f"/providers/{pid}/models/discover")
        assert answer.status_code == 200, answer.text
    # Added again from the discovery: the user's prices stay.
    again = await console.save(pid, {"model_id": "openai/gpt-4o", "display_name": "4o"})
    assert again.status_code == 201, again.text
    assert (again.json()[0]["price_source"], prices(again.json()[0])) == (
        "user",
        mtok(1.0, 10.0, 1.25, None),
    )
    # A new model with one price typed: the others are the listing's, and it is the user's.
    typed = await console.save(
        pid,
        {"model_id": "meta-llama/llama-free:free", "display_name": "F", "price_output_per_mtok": 1},
    )
    assert (typed.json()[0]["price_source"], prices(typed.json()[0])) == (
        "user",
        mtok(0.0, 1.0, None, None),
    )


async def test_listing_prices_come_from_the_servers_own_discovery(console: Console) -> None:
    async with FakeProvider(models=list(ROUTER_MODELS)) as fake:
        pid, _ = await discover_router(console, fake)
        other = await console.provider(name="Other", base_url="https://other.example/v1")
    # A browser cannot pass prices off as the provider's: the save body has no such field.
    forged = await console.save(
        pid, {"model_id": "x/y", "display_name": "y", "price_source": "provider"}
    )
    assert_error(forged, 422, "invalid_argument", "price_source")
    # Another provider (never discovered) adding the same id gets no listing prices.
    added = await console.save(other["id"], {"model_id": "openai/gpt-4o", "display_name": "4o"})
    assert added.json()[0]["price_source"] == "list"
    # The provider's URL changed since its discovery (it may while it has no models): that
    # listing is another server's, not used.
    moved = await console.call(
        "PUT",
        f"/providers/{pid}",
        json={"name": "Router", "type": "openai-chat", "base_url": "https://router.example/v1"},
    )
    assert moved.status_code == 200, moved.text
    after = await console.save(pid, {"model_id": "anthropic/claude-sonnet-4", "display_name": "s"})
    assert after.json()[0]["price_source"] == "list"
    assert prices(after.json()[0]) == mtok(3.0, 15.0, 0.3, 3.75)


@pytest.fixture
def two_stores(db_url: str) -> Iterator[tuple[Store, Store]]:
    """Two stores (each its own connections) on one database, as two instances or two worker
    processes have; closed after the servers on them stop (asked for before ``make_server``)."""
    first, second = connect_store(db_url), connect_store(db_url)
    yield first, second
    first.close()
    second.close()


async def test_an_add_through_another_instance_gets_the_listings_prices(
    two_stores: tuple[Store, Store], make_server: StartServer
) -> None:
    servers = [await make_server(store=store) for store in two_stores]
    async with (
        httpx.AsyncClient(base_url=f"http://{servers[0].address}", timeout=10.0) as one,
        httpx.AsyncClient(base_url=f"http://{servers[1].address}", timeout=10.0) as two,
        FakeProvider(models=list(ROUTER_MODELS)) as fake,
    ):
        first, second = Console(one), Console(two)
        # The discovery reaches the first instance, the add the second.
        pid, found = await discover_router(first, fake)
        told = {i: found[i]["prices"] for i in ("openai/gpt-4o", "anthropic/claude-sonnet-4")}
        assert all(found[i]["price_source"] == "provider" for i in told)
        added = await second.save(pid, *({"model_id": i, "display_name": i} for i in told))
        assert added.status_code == 201, added.text
        got = {m["model_id"]: (m["price_source"], prices(m)) for m in added.json()}
        assert got == {i: ("provider", p) for i, p in told.items()}
        # A discovery through the second whose listing prices nothing clears them for the first.
        fake.listing_extra = {}
        answer = await second.call("POST", f"/providers/{pid}/models/discover")
        assert answer.status_code == 200, answer.text
        later = await first.save(
            pid, {"model_id": "meta-llama/llama-free:free", "display_name": "f"}
        )
        assert later.status_code == 201, later.text
        assert (later.json()[0]["price_source"], prices(later.json()[0])) == (
            None,
            mtok(None, None, None, None),
        )
