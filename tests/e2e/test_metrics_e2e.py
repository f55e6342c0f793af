"""``GET /metrics`` through the real server: turns with a retry, a fallback and a refusal run
against fake providers, then a scrape over HTTP is read by prometheus-client's own parser and
every counter is checked by value (runs by mode and code, calls by status, tokens, retries,
fallbacks, the histograms' counts, the estimated cost), on SQLite and PostgreSQL; each user's
totals, only while their setting is on. Then who may scrape: loopback addressed by a loopback
name, an allowed network, or the console token."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from actors.conversation.secret import Secret
from actors.server.compose import ServerConfig, start_server
from actors.server.metrics import OTHER_USERS, PeopleCollector, store_people
from actors.server.settings import SettingError, load_settings
from store import Store, connect_store
from store.catalog import (
    ModelInput,
    ProviderInput,
    create_provider,
    save_models,
    update_observability,
)
from tests.conftest import TEST_LIMITS, StartServer
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    authorization,
    final_text,
    login_token,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, Script, chat_events, chat_usage
from wire.http.agent_access import parse_allow_list
from wire.providers.retry import RetryPolicy

TOKEN = "console-token-0123456789"
TWO_ATTEMPTS = RetryPolicy(max_attempts=2, base_delay_s=0.02, max_delay_s=0.05)
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def add_model(
    store: Store,
    fake: FakeProvider,
    name: str,
    prices: tuple[float, float, float],
    fallbacks: list[str] | None = None,
) -> str:
    """An OpenAI Chat model on ``fake`` priced (input, output, cache read) per million tokens."""
    provider = create_provider(
        store.database,
        ProviderInput(name=name, type="openai-chat", base_url=fake.base_url, api_key=f"sk-{name}"),
    )
    model = ModelInput(
        model_id=f"model-{name}",
        display_name=name,
        context_window_tokens=128000,
        fallbacks=fallbacks or [],
        price_input_per_mtok=prices[0],
        price_output_per_mtok=prices[1],
        price_cache_read_per_mtok=prices[2],
    )
    return save_models(store.database, provider.id, [model])[0].public_id


def parse(text: str) -> Samples:
    """Every sample of the scrape, by name and labels, through prometheus-client's parser."""
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


async def scrape(client: httpx.AsyncClient, **headers: str) -> httpx.Response:
    return await client.get("/metrics", headers=headers)


async def settled(client: httpx.AsyncClient, runs: int) -> Samples:
    """The scrape once the run recorder has counted ``runs`` ended runs (it hears a run's end
    just after the editor does)."""
    deadline = time.monotonic() + 10
    while True:
        answer = await scrape(client)
        assert answer.status_code == 200, answer.text
        samples = parse(answer.text)
        ended = sum(v for (name, _), v in samples.items() if name == "cursor_server_runs_total")
        if ended >= runs or time.monotonic() > deadline:
            return samples
        await asyncio.sleep(0.05)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def metrics_store(request: pytest.FixtureRequest, server_store: Store) -> Iterator[Store]:
    if request.param == "sqlite":
        yield server_store
        return
    store = connect_store(request.getfixturevalue("pg_url"))
    yield store
    store.close()


@pytest.fixture
async def backup() -> Any:
    async with FakeProvider() as provider:
        yield provider


async def test_a_scrape_counts_the_turns_calls_retries_fallbacks_tokens_and_cost(
    fake: FakeProvider,
    backup: FakeProvider,
    make_server: StartServer,
    metrics_store: Store,
) -> None:
    backup_id = add_model(metrics_store, backup, "backup", (3.0, 4.0, 0.0))
    primary_id = add_model(metrics_store, fake, "primary", (1.0, 2.0, 0.5), [backup_id])
    server = await make_server(provider_retry=TWO_ATTEMPTS, store=metrics_store)
    cursor = FakeCursor(f"http://{server.address}")
    answer = Script.sse(chat_events(text=["Hello"], usage=chat_usage(100, 20, cached=40)))
    fake.enqueue(
        # A retried call: 502, then the answer.
        Script.error(502, "bad gateway"),
        answer,
        # A fallback: two 503s on the primary, then the backup answers.
        Script.error(503, {"error": {"message": "busy"}}),
        Script.error(503, {"error": {"message": "busy"}}),
        # A failed run: a refusal is neither retried nor moved to the fallback.
        Script.error(400, {"error": {"message": "bad field"}}),
    )
    backup.enqueue(Script.sse(chat_events(text=["Backup"], usage=chat_usage(50, 10))))
    try:
        for run_id, expected in (("m-retry", "Hello"), ("m-fallback", "Backup")):
            message = user_turn_message("hi", primary_id, conversation_id=run_id)
            log = await CursorSession(cursor, run_id).run(message)
            assert log.end == {} and final_text(log) == expected
        message = user_turn_message("hi", primary_id, conversation_id="m-failed")
        log = await CursorSession(cursor, "m-failed").run(message)
        assert log.end is not None
        failed_code = log.end["error"]["code"]
    finally:
        await cursor.aclose()

    async with httpx.AsyncClient(base_url=f"http://{server.address}") as client:
        first = await scrape(client)
        assert first.headers["content-type"] == CONTENT_TYPE_LATEST
        samples = await settled(client, runs=3)

    def at(name: str, **labels: str) -> float | None:
        return value(samples, name, **labels)

    assert at("cursor_server_runs_total", mode="agent", code="ok") == 2
    assert at("cursor_server_runs_total", mode="agent", code=failed_code) == 1
    assert at("cursor_server_turns_total", mode="agent") == 3
    assert at("cursor_server_active_runs", mode="agent") == 0
    primary = {"provider_type": "openai-chat", "model": primary_id}
    fallback = {"provider_type": "openai-chat", "model": backup_id}
    calls = "cursor_server_provider_calls_total"
    assert at(calls, **primary, status="failed") == 4  # 502, 503, 503, 400
    assert at(calls, **primary, status="completed") == 1
    assert at(calls, **fallback, status="completed") == 1
    assert at(calls, **fallback, status="failed") is None
    assert at("cursor_server_provider_retries_total", **primary) == 2
    assert at("cursor_server_provider_retries_total", **fallback) is None
    assert at("cursor_server_provider_fallbacks_total", **fallback) == 1
    tokens = "cursor_server_provider_tokens_total"
    assert at(tokens, **primary, kind="input") == 100
    assert at(tokens, **primary, kind="output") == 20
    assert at(tokens, **primary, kind="cache_read") == 40
    assert at(tokens, **fallback, kind="input") == 50
    assert at(tokens, **fallback, kind="output") == 10
    duration = "cursor_server_provider_call_duration_seconds_count"
    assert at(duration, **primary) == 5 and at(duration, **fallback) == 1
    ttft = "cursor_server_provider_ttft_seconds_count"
    assert at(ttft, **primary) == 1 and at(ttft, **fallback) == 1
    assert (at("cursor_server_store_commit_seconds_count") or 0) > 0
    # The dashboard's rule: (100 - 40 uncached) * 1 + 20 * 2 + 40 * 0.5 per million tokens.
    cost = "cursor_server_estimated_cost_usd"
    for period in ("today", "month"):
        assert at(cost, period=period, model=primary_id) == pytest.approx(120e-6)
        assert at(cost, period=period, model=backup_id) == pytest.approx(190e-6)


async def test_each_server_has_its_own_registry(make_server: StartServer) -> None:
    """Two servers in one process: a scrape of one shows nothing the other counted."""
    first = await make_server()
    second = await make_server()
    assert first.metrics is not None and second.metrics is not None
    first.metrics.run_started("agent", resumed=False)
    async with httpx.AsyncClient(base_url=f"http://{second.address}") as client:
        samples = parse((await scrape(client)).text)
    assert value(samples, "cursor_server_active_runs", mode="agent") is None
    async with httpx.AsyncClient(base_url=f"http://{first.address}") as client:
        samples = parse((await scrape(client)).text)
    assert value(samples, "cursor_server_active_runs", mode="agent") == 1


# ---- each user's totals, behind the setting ----

ALICE = login_token({"sub": "auth0|alice", "email": "Alice@Example.com"})
BOB = login_token({"sub": "auth0|bob"})
CAROL = login_token({"email": "carol@example.com"})


async def test_each_users_totals_are_shown_only_while_the_setting_is_on(
    fake: FakeProvider, make_server: StartServer, metrics_store: Store
) -> None:
    model_id = add_model(metrics_store, fake, "people", (1.0, 2.0, 0.0))
    server = await make_server(store=metrics_store)
    base = f"http://{server.address}"
    # Alice's two turns, Bob's one answered without usage (unknown cost), Carol's one refused.
    fake.enqueue(
        Script.sse(chat_events(text=["a"], usage=chat_usage(100, 10))),
        Script.sse(chat_events(text=["b"], usage=chat_usage(200, 20))),
        Script.sse(chat_events(text=["c"])),
        Script.error(400, {"error": {"message": "bad field"}}),
    )
    for token, run_id in ((ALICE, "u-a1"), (ALICE, "u-a2"), (BOB, "u-b"), (CAROL, "u-c")):
        cursor = FakeCursor(base, headers=authorization(token))
        try:
            await CursorSession(cursor, run_id).run(
                user_turn_message("hi", model_id, conversation_id=run_id)
            )
        finally:
            await cursor.aclose()
    async with httpx.AsyncClient(base_url=base) as client:
        samples = await settled(client, runs=4)
        assert not [name for name, _ in samples if name.startswith("cursor_server_user_")]
        update_observability(metrics_store.database, metrics_per_user=True)
        samples = parse((await scrape(client)).text)

    def at(name: str, user: str, period: str = "today", **labels: str) -> float | None:
        return value(samples, f"cursor_server_user_{name}", period=period, user=user, **labels)

    alice, bob, carol = "alice@example.com", "auth0|bob", "carol@example.com"
    for period in ("today", "month"):
        assert at("runs", alice, period) == 2
        assert at("provider_calls", alice, period) == 2
        assert at("tokens", alice, period, kind="input") == 300
        assert at("tokens", alice, period, kind="output") == 30
        # (300 * 1 + 30 * 2) per million tokens.
        assert at("estimated_cost_usd", alice, period) == pytest.approx(360e-6)
        assert at("unknown_cost_calls", alice, period) == 0
    assert at("runs", bob) == 1 and at("estimated_cost_usd", bob) is None
    assert at("unknown_cost_calls", bob) == 1
    assert at("provider_call_errors", carol) == 1 and at("provider_calls", carol) == 1
    # Past the limit (two users here), the least costly users are summed as one more series,
    # under the empty user no claim can name.
    registry = CollectorRegistry()
    registry.register(PeopleCollector(store_people(metrics_store.database), limit=2))
    text = generate_latest(registry).decode()
    assert 'cursor_server_user_runs{period="today",user=""} 1.0' in text
    bounded = parse(text)
    runs = {
        dict(labels)["user"]: count
        for (name, labels), count in bounded.items()
        if name == "cursor_server_user_runs" and dict(labels)["period"] == "today"
    }
    assert runs == {alice: 2, bob: 1, OTHER_USERS: 1}  # Carol's run, summed
    update_observability(metrics_store.database, metrics_per_user=False)
    async with httpx.AsyncClient(base_url=base) as client:
        off = (await scrape(client)).text
    assert "cursor_server_user_" not in off


# ---- who may scrape ----

# A client on this machine that names the server by another name: what a non-loopback client
# (or a page whose DNS name rebinds to 127.0.0.1) looks like to the access rule.
ELSEWHERE = {"Host": "metrics.example.test"}


async def test_loopback_is_open_and_a_foreign_name_is_refused_without_a_token(
    make_server: StartServer,
) -> None:
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}") as client:
        assert (await scrape(client)).status_code == 200
        refused = await scrape(client, **ELSEWHERE)
        # Never relayed upstream: the answer is ours.
        assert refused.status_code == 403
        assert refused.json()["code"] == "permission_denied"
        assert "CURSOR_METRICS_ALLOW" in refused.json()["message"]


async def test_beyond_loopback_the_console_token_or_an_allowed_network_is_needed(
    upstream: str, server_store: Store
) -> None:
    config = ServerConfig(
        host="0.0.0.0",
        port=0,
        upstream_url=upstream,
        limits=TEST_LIMITS,
        console_token=Secret(TOKEN),
    )
    server = await start_server(config, store=server_store)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as client:
            assert (await scrape(client)).status_code == 200  # addressed as 127.0.0.1
            missing = await scrape(client, **ELSEWHERE)
            assert missing.status_code == 401
            assert missing.json()["code"] == "unauthenticated"
            assert missing.headers["WWW-Authenticate"].startswith("Bearer")
            wrong = await scrape(client, **ELSEWHERE, Authorization="Bearer not-the-token-at-all")
            assert wrong.status_code == 401
            assert wrong.json()["message"] == "the bearer token is not this server's console token"
            assert TOKEN not in wrong.text
            good = await scrape(client, **ELSEWHERE, Authorization=f"Bearer {TOKEN}")
            assert good.status_code == 200
            assert "cursor_server_active_runs" in good.text
    finally:
        await server.stop()
    # The same client from an allowed network needs no token.
    config = ServerConfig(
        host="0.0.0.0",
        port=0,
        upstream_url=upstream,
        limits=TEST_LIMITS,
        console_token=Secret(TOKEN),
        metrics_allow=parse_allow_list("127.0.0.0/8"),
    )
    server = await start_server(config, store=server_store)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as client:
            assert (await scrape(client, **ELSEWHERE)).status_code == 200
    finally:
        await server.stop()


def test_the_metrics_allow_list_is_read_from_the_environment() -> None:
    env = {"CURSOR_LISTEN_ADDR": "0.0.0.0:3000", "CURSOR_CONSOLE_TOKEN": TOKEN}
    assert load_settings(env).metrics_allow == ()
    allowed = load_settings({**env, "CURSOR_METRICS_ALLOW": "10.1.0.0/16 192.168.1.7"})
    assert [str(n) for n in allowed.metrics_allow] == ["10.1.0.0/16", "192.168.1.7/32"]
    with pytest.raises(SettingError, match="CURSOR_METRICS_ALLOW: 'lan' is not a network"):
        load_settings({**env, "CURSOR_METRICS_ALLOW": "lan"})
