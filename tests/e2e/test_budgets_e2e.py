"""Budgets and limits per person, end to end: the settings saved through the console API, the
editor's login token naming the user (``wire.identity``), and a run over a limit ended with
``resource_exhausted`` before any provider request, while other users' runs go on. The spend of
calls another server instance recorded on the same database counts (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from actors.server.compose import RunningServer, ServerConfig, start_server
from store import Store
from store.base.typed_peewee import execute_sql
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from store.database import connect_store
from tests.conftest import FAKE_PROVIDER_KEY, TEST_LIMITS
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    authorization,
    login_token,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from wire.providers.retry import NO_RETRY

ALICE_ID, BOB_ID = "alice@example.com", "auth0|bob-2"
ALICE = login_token({"sub": "auth0|alice-1", "email": ALICE_ID})
BOB = login_token({"sub": BOB_ID})
# $1 per 1000 input tokens: a call of 5000 input tokens costs $5.00.
PRICE_PER_MTOK = 1000.0
REFRESH_S = 0.1

StartBudgetServer = Callable[[Store], Awaitable[RunningServer]]


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = connect_store(db_url)
    yield opened
    opened.close()


@pytest.fixture
async def start(upstream: str) -> AsyncIterator[StartBudgetServer]:
    """Servers on a store (each its own instance), re-reading spend every ``REFRESH_S``."""
    started: list[RunningServer] = []

    async def make(on: Store) -> RunningServer:
        config = ServerConfig(
            host="127.0.0.1",
            port=0,
            upstream_url=upstream,
            limits=TEST_LIMITS,
            provider_retry=NO_RETRY,
            budget_refresh_s=REFRESH_S,
        )
        server = await start_server(config, store=on)
        started.append(server)
        return server

    yield make
    for server in started:
        await server.stop()


def priced_models(store: Store, fake: FakeProvider) -> tuple[str, str]:
    """Two priced models on the fake provider (OpenAI Chat)."""
    provider = create_provider(
        store.database,
        ProviderInput(
            name="fake", type="openai-chat", base_url=fake.base_url, api_key=FAKE_PROVIDER_KEY
        ),
    )
    models = [
        ModelInput(
            model_id=f"model-{x}",
            display_name=f"Model {x}",
            sort_order=i,
            context_window_tokens=128000,
            price_input_per_mtok=PRICE_PER_MTOK,
            price_output_per_mtok=PRICE_PER_MTOK,
        )
        for i, x in enumerate("ab")
    ]
    first, second = save_models(store.database, provider.id, models)
    return first.public_id, second.public_id


async def put_budgets(server: RunningServer, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as client:
        return await client.put(
            "/console/api/settings/budgets",
            content=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )


async def save_budgets(server: RunningServer, body: Any) -> dict[str, Any]:
    answer = await put_budgets(server, body)
    assert answer.status_code == 200, answer.text
    saved: dict[str, Any] = answer.json()
    return saved


async def run(server: RunningServer, token: str, request_id: str, public_id: str) -> TurnLog:
    cursor = FakeCursor(f"http://{server.address}", headers=authorization(token))
    try:
        message = user_turn_message("hi", public_id, conversation_id=f"conv-{request_id}")
        return await CursorSession(cursor, request_id).run(message)
    finally:
        await cursor.aclose()


def answer(fake: FakeProvider, text: str = "Hi.", input_tokens: int = 10) -> None:
    usage = {"prompt_tokens": input_tokens, "completion_tokens": 0, "total_tokens": input_tokens}
    fake.enqueue(Script.sse(chat_events(text=[text], usage=usage)))


def refused(log: TurnLog) -> str:
    """The EndStream's message, asserting it is ``resource_exhausted``."""
    assert log.end is not None and "error" in log.end, log.end
    assert log.end["error"]["code"] == "resource_exhausted", log.end
    message: str = log.end["error"]["message"]
    return message


async def test_a_user_over_the_daily_budget_is_refused_before_any_provider_call(
    start: StartBudgetServer, fake: FakeProvider, store: Store
) -> None:
    model, _ = priced_models(store, fake)
    server = await start(store)
    await save_budgets(server, {"default": {"usd_per_day": 5.0}})
    answer(fake, "Spent.", input_tokens=5000)  # Alice's first run costs $5.00
    assert (await run(server, ALICE, "alice-1", model)).end == {}
    assert len(fake.requests) == 1
    # Her spend is re-read within REFRESH_S; from then on she is refused, and nothing is sent.
    await spend_seen(store, 1)
    log = await run(server, ALICE, "alice-2", model)
    assert refused(log) == "daily budget of $5.00 reached; resets at 00:00 UTC"
    assert len(fake.requests) == 1
    assert not [m for m in log.messages if m.WhichOneof("message") == "interaction_update"]
    # Bob, under the same default, still runs; an override lifts Alice's budget.
    answer(fake, "Hi Bob.")
    assert (await run(server, BOB, "bob-1", model)).end == {}
    await save_budgets(server, {"overrides": {ALICE_ID: {"usd_per_day": 50.0}}})
    answer(fake, "Hi again.")
    assert (await run(server, ALICE, "alice-again", model)).end == {}
    assert len(fake.requests) == 3


async def spend_seen(store: Store, calls: int) -> None:
    """Once ``calls`` call records have ended on the database, the servers' next re-reads
    (every ``REFRESH_S``) have counted them."""
    sql = 'SELECT COUNT(*) FROM "llm_calls" WHERE "http_status" = 200'
    async with asyncio.timeout(5.0):
        while execute_sql(store.database, sql).fetchone()[0] < calls:
            await asyncio.sleep(0.02)
    await asyncio.sleep(REFRESH_S * 4)


async def test_the_monthly_budget_and_an_override_with_no_limit(
    start: StartBudgetServer, fake: FakeProvider, store: Store
) -> None:
    model, _ = priced_models(store, fake)
    server = await start(store)
    await save_budgets(
        server,
        {"default": {"usd_per_month": 1.0}, "overrides": {BOB_ID: {}}},
    )
    answer(fake, "Spent.", input_tokens=2000)
    assert (await run(server, ALICE, "alice-1", model)).end == {}
    await spend_seen(store, 1)
    log = await run(server, ALICE, "alice-2", model)
    assert refused(log).startswith("monthly budget of $1.00 reached; resets on ")
    answer(fake, "Bob.", input_tokens=2000)
    answer(fake, "Bob again.", input_tokens=2000)
    assert (await run(server, BOB, "bob-1", model)).end == {}
    await spend_seen(store, 2)
    assert (await run(server, BOB, "bob-2", model)).end == {}  # no limit for Bob


async def test_allowed_models_refuse_another_model(
    start: StartBudgetServer, fake: FakeProvider, store: Store
) -> None:
    first, second = priced_models(store, fake)
    server = await start(store)
    saved = await save_budgets(server, {"default": {"allowed_models": [first]}})
    assert saved["default"]["allowed_models"] == [first]
    log = await run(server, ALICE, "alice-b", second)
    assert refused(log) == f"model {second} is not allowed for you (allowed: {first})"
    assert fake.requests == []
    answer(fake)
    assert (await run(server, ALICE, "alice-a", first)).end == {}


async def test_one_run_at_once_refuses_a_second_while_the_first_is_open(
    start: StartBudgetServer, fake: FakeProvider, store: Store
) -> None:
    model, _ = priced_models(store, fake)
    server = await start(store)
    await save_budgets(server, {"default": {"concurrent_runs": 1}})
    fake.enqueue(Script.sse(chat_events(text=["Slow."])).delayed(1.0))
    first = asyncio.create_task(run(server, ALICE, "alice-1", model))
    await fake.wait_for_request(1)
    second = await run(server, ALICE, "alice-2", model)
    assert refused(second) == (
        "limit of 1 runs at once reached; start this one when another has ended"
    )
    answer(fake, "Bob.")
    assert (await run(server, BOB, "bob-1", model)).end == {}  # Bob's own count
    assert (await first).end == {}  # the open turn was never cut
    answer(fake, "Again.")
    assert (await run(server, ALICE, "alice-3", model)).end == {}  # the first has ended
    assert len(fake.requests) == 3


async def test_turns_per_minute(start: StartBudgetServer, fake: FakeProvider, store: Store) -> None:
    model, _ = priced_models(store, fake)
    server = await start(store)
    await save_budgets(server, {"default": {"turns_per_minute": 2}})
    for index in range(2):
        answer(fake)
        assert (await run(server, ALICE, f"alice-{index}", model)).end == {}
    message = refused(await run(server, ALICE, "alice-2", model))
    assert message.startswith("limit of 2 turns per minute reached; try again in ")
    assert message.endswith(" s")
    assert len(fake.requests) == 2
    answer(fake)
    assert (await run(server, BOB, "bob-1", model)).end == {}


async def test_spend_recorded_by_another_instance_counts(
    start: StartBudgetServer, fake: FakeProvider, store: Store, db_url: str
) -> None:
    """Two servers on one database: Alice spends on one, and the other refuses her."""
    model, _ = priced_models(store, fake)
    here = await start(store)
    other_store = connect_store(db_url)
    try:
        elsewhere = await start(other_store)
        await save_budgets(here, {"default": {"usd_per_day": 2.5}})
        answer(fake, "Spent elsewhere.", input_tokens=3000)
        assert (await run(elsewhere, ALICE, "alice-elsewhere", model)).end == {}
        # ``here`` ran nothing of Alice's: only the database says what she spent.
        await spend_seen(store, 1)
        log = await run(here, ALICE, "alice-here", model)
        assert refused(log) == "daily budget of $2.50 reached; resets at 00:00 UTC"
        assert len(fake.requests) == 1
        answer(fake, "Bob.")
        assert (await run(here, BOB, "bob-here", model)).end == {}
    finally:
        await elsewhere.stop()
        other_store.close()


async def test_a_subagent_run_is_part_of_its_parents_turn_and_not_refused(
    start: StartBudgetServer, fake: FakeProvider, store: Store, tmp_path: Path
) -> None:
    """With one run at once and one turn per minute, a Task's subagent run still runs: it is
    the parent's turn, which is never cut; the next turn of the same user is refused."""
    model, _ = priced_models(store, fake)
    server = await start(store)
    await save_budgets(server, {"default": {"concurrent_runs": 1, "turns_per_minute": 1}})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    arguments = json.dumps({"description": "Look", "prompt": "Say hi.", "subagent_type": "explore"})
    fake.enqueue(Script.sse(chat_events(tools=[FakeToolCall("call_task", "Task", (arguments,))])))
    fake.enqueue(Script.sse(chat_events(text=["Hi from the subagent."])))
    fake.enqueue(Script.sse(chat_events(text=["Done."])))
    cursor = FakeCursor(f"http://{server.address}", headers=authorization(ALICE))
    try:
        session = CursorSession(cursor, "parent", workspace=workspace, run_subagents=True)
        log = await session.run(user_turn_message("delegate", model))
    finally:
        await cursor.aclose()
    assert log.end == {}
    (child,) = session.subagents
    assert child.log.end == {}
    assert len(fake.requests) == 3
    message = refused(await run(server, ALICE, "alice-next", model))
    assert message.startswith("limit of 1 turns per minute reached")
