"""``GET /console/api/stats`` over a real socket against the in-process server (``make_server``),
after a real streamed call through the server's own ProviderActor and call recorder."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from actors.run.model_selection import Selection, build_route
from actors.server.compose import RunningServer
from store import Store
from store.catalog import model_route_parts
from store.llm_calls import CallStatus
from tests.conftest import StartServer
from tests.console.test_console_api import assert_error
from tests.e2e.test_provider_actor import Listener, start
from tests.support.fake_provider import FakeProvider, Script, chat_events, chat_usage


@pytest.fixture
async def running(make_server: StartServer) -> RunningServer:
    return await make_server()


@pytest.fixture
async def api(running: RunningServer) -> AsyncIterator[httpx.AsyncClient]:
    base_url = f"http://{running.address}/console/api"
    async with httpx.AsyncClient(base_url=base_url, timeout=10.0) as client:
        yield client


async def test_every_range_answers_its_buckets_and_a_bad_range_is_400(
    api: httpx.AsyncClient,
) -> None:
    for name, size, count in (
        ("hour", 60_000, 60),
        ("day", 3_600_000, 24),
        ("week", 21_600_000, 28),
        ("month", 86_400_000, 30),
    ):
        response = await api.get("/stats", params={"range": name})
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/json")
        stats = response.json()
        assert (stats["range"], stats["bucket_ms"], len(stats["buckets"])) == (name, size, count)
        assert all(b["calls"] == 0 and b["error_rate"] is None for b in stats["buckets"])
        assert stats["cache_hit_rate"] == {"overall": None, "models": {}}
        assert stats["cost"]["total_usd"] is None and stats["cost"]["unknown_cost_calls"] == 0
    default = (await api.get("/stats")).json()
    assert (default["range"], len(default["buckets"])) == ("day", 24)
    for bad in ("year", "", "HOUR"):
        response = await api.get("/stats", params={"range": bad})
        assert_error(response, 400, "invalid_argument", "hour, day, week, month", repr(bad))
    assert_error(await api.post("/stats", json={}), 405, "unimplemented")


async def test_a_real_call_shows_in_the_calls_list_and_the_stats(
    api: httpx.AsyncClient, running: RunningServer, fake: FakeProvider, server_store: Store
) -> None:
    """A priced OpenAI Chat model streams one answer with cached input and reasoning: the call
    record has its TTFT, and the stats count it once, with its tokens, cache hits and cost."""
    created = await api.post(
        "/providers", json={"name": "fake", "type": "openai-chat", "base_url": fake.base_url}
    )
    assert created.status_code == 201, created.text
    prices = {
        "price_input_per_mtok": 2.0,
        "price_output_per_mtok": 8.0,
        "price_cache_read_per_mtok": 0.5,
    }
    model = {"model_id": "fake-model", "display_name": "Fake", **prices}
    saved = await api.post(f"/providers/{created.json()['id']}/models", json={"models": [model]})
    assert saved.status_code == 201, saved.text
    public_id = saved.json()[0]["public_id"]
    parts = model_route_parts(server_store.database, public_id)
    assert parts is not None
    route = build_route(Selection(public_id=public_id), *parts)
    usage = chat_usage(1000, 200, cached=400, reasoning=50)
    fake.enqueue(Script.sse(chat_events(text=["Hel", "lo"], usage=usage)))
    listener = Listener()
    assert running.provider_deps is not None
    start(route, listener, running.provider_deps)
    _, end = await listener.until_end()
    assert end.status is CallStatus.COMPLETED

    (call,) = (await api.get("/calls")).json()["calls"]
    ttft = call["ttft_ms"]
    assert isinstance(ttft, float) and call["ttfb_ms"] <= ttft <= call["duration_ms"]

    stats = (await api.get("/stats", params={"range": "hour"})).json()
    (bucket,) = [b for b in stats["buckets"] if b["calls"]]
    assert (bucket["calls"], bucket["errors"], bucket["error_rate"]) == (1, 0, 0.0)
    assert bucket["ttft_p50_ms"] == pytest.approx(ttft)
    assert bucket["ttft_p95_ms"] == pytest.approx(ttft)
    assert bucket["tokens"] == {
        public_id: {"input": 600, "output": 200, "cache_read": 400, "cache_write": 0}
    }
    assert stats["cache_hit_rate"] == {"overall": 0.4, "models": {public_id: 0.4}}
    assert stats["models"] == {
        public_id: {
            "display_name": "Fake",
            "model_id": "fake-model",
            "provider_name": "fake",
            "deleted": False,
        }
    }
    cost = stats["cost"]
    usd = (600 * 2.0 + 200 * 8.0 + 400 * 0.5) / 1e6
    assert cost["total_usd"] == pytest.approx(usd)
    assert (cost["priced_calls"], cost["unknown_cost_calls"]) == (1, 0)
    (day,) = [d for d in cost["days"] if d["models"]]
    assert day["models"] == {
        public_id: {"usd": pytest.approx(usd), "priced_calls": 1, "unknown_cost_calls": 0}
    }
