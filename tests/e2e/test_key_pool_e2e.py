"""Key pools through the real server, in every provider format: the keys added over the
console API, the fake provider answering per key (a rate-limited key, a refused key, a good
one), each attempt's key label on its call record, the bad keys cooling with their last
errors in the console's key list, the next run straight to the healthy key, rotation over
healthy keys, a single key's 401 failing the run as before, and no key text anywhere: API
answers, stored rows, log lines."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from store import Store
from store.base.typed_peewee import execute_sql
from store.llm_calls import CallFilter, CallRecords, CallSummary
from tests.conftest import StartServer
from tests.support.fake_cursor import CursorSession, FakeCursor, final_text, user_turn_message
from tests.support.fake_provider import FakeProvider, Script
from tests.support.formats import FAKE_FORMAT_KEY, FORMAT_IDS, FORMATS, ProviderFormat
from wire.providers.retry import RetryPolicy

LIMITED = "sk-pool-LIMITED-4417aa"
REFUSED = "sk-pool-REFUSED-9032bb"
GOOD = "sk-pool-GOOD-7781cc"
SPARE = "sk-pool-SPARE-1290dd"
KEYS = (LIMITED, REFUSED, GOOD, SPARE, FAKE_FORMAT_KEY)
FAST = RetryPolicy(base_delay_s=0.05, max_delay_s=0.1)


def refusal(status: int, message: str, *, retry_after: str | None = None) -> Script:
    return Script.error(status, {"error": {"message": message}}, retry_after=retry_after)


class Console:
    """The console API over HTTP, keeping every answer's text to check for keys."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.bodies: list[str] = []

    async def call(self, method: str, path: str, **kwargs: Any) -> Any:
        if method != "GET":
            kwargs.setdefault("headers", {"content-type": "application/json"})
        response = await self.client.request(method, f"/console/api{path}", **kwargs)
        self.bodies.append(response.text)
        assert response.status_code < 300, response.text
        return response.json() if response.content else None

    async def keys(self, provider_id: int) -> dict[str, dict[str, Any]]:
        return {k["label"]: k for k in await self.call("GET", f"/providers/{provider_id}/keys")}


def provider_id_of(store: Store, public_id: str) -> int:
    (provider_id,) = execute_sql(
        store.database, 'SELECT "provider_id" FROM "models" WHERE "public_id" = ?', (public_id,)
    ).fetchone()
    return int(provider_id)


async def make_pool(console: Console, provider_id: int, *extra: tuple[str, str]) -> None:
    """The provider's own key becomes ``limited``; the others are added after it."""
    await console.call(
        "PUT", f"/providers/{provider_id}/keys/0", json={"label": "limited", "api_key": LIMITED}
    )
    for label, key in extra:
        await console.call(
            "POST", f"/providers/{provider_id}/keys", json={"label": label, "api_key": key}
        )


def run_calls(store: Store, run_id: str) -> list[CallSummary]:
    return list(reversed(CallRecords(store.database).list(20, only=CallFilter(run_id=run_id))))


def assert_no_key_text(store: Store, texts: list[str]) -> None:
    """No key in any text given, nor in any stored column (sealed keys never hold it)."""
    for text in texts:
        for key in KEYS:
            assert key not in text
    db = store.database
    for table in db.get_tables():
        for row in execute_sql(db, f'SELECT * FROM "{table}"').fetchall():
            data = repr(row)
            for key in KEYS:
                assert key not in data, (table, key)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_pool_skips_a_rate_limited_and_a_refused_key_and_remembers_them(
    fmt: ProviderFormat,
    fake: FakeProvider,
    make_server: StartServer,
    server_store: Store,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="cursor_server")
    public_id = fmt.add_model(server_store, fake)
    provider_id = provider_id_of(server_store, public_id)
    server = await make_server(provider_retry=FAST)
    fake.key_answers[LIMITED] = refusal(429, "slow down", retry_after="30")
    fake.key_answers[REFUSED] = refusal(401, f"Incorrect API key provided: {REFUSED}")
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10) as client:
        console = Console(client)
        await make_pool(console, provider_id, ("refused", REFUSED), ("good", GOOD))
        cursor = FakeCursor(f"http://{server.address}")
        fake.enqueue(fmt.answer("first"))
        first = await CursorSession(cursor, "pool-1").run(user_turn_message("hi", public_id))
        assert first.end == {} and final_text(first) == "first"
        calls = run_calls(server_store, "pool-1")
        assert [(c.key_label, c.status, c.http_status) for c in calls] == [
            ("limited", "failed", 429),
            ("refused", "failed", 401),
            ("good", "completed", 200),
        ]
        assert [r.api_key for r in fake.requests] == [LIMITED, REFUSED, GOOD]

        keys = await console.keys(provider_id)
        assert keys["limited"]["state"] == "cooling"
        assert keys["limited"]["last_error"]["http_status"] == 429
        assert "slow down" in keys["limited"]["last_error"]["message"]
        limited_error_at = keys["limited"]["last_error"]["at_ms"]
        # Retry-After 30 s, not the 60 s default.
        assert 25_000 < keys["limited"]["cooling_until_ms"] - limited_error_at <= 30_000
        assert keys["refused"]["state"] == "cooling"
        assert keys["refused"]["last_error"]["http_status"] == 401
        assert "[redacted]" in keys["refused"]["last_error"]["message"]
        # No Retry-After: a 401's default, 10 minutes.
        refused_error = keys["refused"]["last_error"]
        assert keys["refused"]["cooling_until_ms"] - refused_error["at_ms"] == 600_000
        assert keys["good"] == {**keys["good"], "state": "healthy", "last_error": None}
        assert all(k["has_api_key"] for k in keys.values())

        # The next run goes straight to the healthy key: nothing more to the cooling ones.
        fake.enqueue(fmt.answer("second"))
        second = await CursorSession(cursor, "pool-2").run(
            user_turn_message("again", public_id, conversation_id="conv-2")
        )
        assert second.end == {} and final_text(second) == "second"
        assert [c.key_label for c in run_calls(server_store, "pool-2")] == ["good"]
        assert [r.api_key for r in fake.requests] == [LIMITED, REFUSED, GOOD, GOOD]
        detail = await console.call("GET", f"/calls/{calls[1].id}")
        assert detail["call"]["key_label"] == "refused"
        await console.call("GET", "/calls")
        await cursor.aclose()
    assert_no_key_text(server_store, [*console.bodies, caplog.text])


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_consecutive_calls_rotate_over_healthy_keys(
    fmt: ProviderFormat, fake: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    public_id = fmt.add_model(server_store, fake)
    provider_id = provider_id_of(server_store, public_id)
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10) as client:
        console = Console(client)
        await make_pool(console, provider_id, ("good", GOOD), ("spare", SPARE))
        cursor = FakeCursor(f"http://{server.address}")
        for n in range(3):
            fake.enqueue(fmt.answer(f"answer {n}"))
            log = await CursorSession(cursor, f"rotate-{n}").run(
                user_turn_message("hi", public_id, conversation_id=f"conv-{n}")
            )
            assert log.end == {}
        await cursor.aclose()
        keys = await console.keys(provider_id)
    assert [r.api_key for r in fake.requests] == [LIMITED, GOOD, SPARE]
    labels = [run_calls(server_store, f"rotate-{n}")[0].key_label for n in range(3)]
    assert labels == ["limited", "good", "spare"]
    assert {k["state"] for k in keys.values()} == {"healthy"}


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_single_keys_401_still_fails_the_run(
    fmt: ProviderFormat,
    fake: FakeProvider,
    make_server: StartServer,
    server_store: Store,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="cursor_server")
    public_id = fmt.add_model(server_store, fake)
    server = await make_server(provider_retry=FAST)
    fake.key_answers[FAKE_FORMAT_KEY] = refusal(401, f"bad key {FAKE_FORMAT_KEY}")
    cursor = FakeCursor(f"http://{server.address}")
    log = await CursorSession(cursor, "single-401").run(user_turn_message("hi", public_id))
    await cursor.aclose()
    assert log.end is not None and log.end["error"]["code"] == "unavailable"
    assert "401" in log.end["error"]["message"]
    assert FAKE_FORMAT_KEY not in str(log.end)
    assert len(fake.requests) == 1  # a 401 with no other key is not retried
    calls = run_calls(server_store, "single-401")
    assert [(c.key_label, c.status, c.http_status) for c in calls] == [("main", "failed", 401)]
    assert_no_key_text(server_store, [caplog.text])


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_moving_to_another_key_spends_the_same_retry_budget(
    fmt: ProviderFormat, fake: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    """With one attempt allowed, a 429 is the call's end even with a healthy key left; the
    key still cools, so the next run sends the healthy one."""
    public_id = fmt.add_model(server_store, fake)
    provider_id = provider_id_of(server_store, public_id)
    server = await make_server()  # NO_RETRY: one attempt per call
    fake.key_answers[LIMITED] = refusal(429, "slow down")
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10) as client:
        console = Console(client)
        await make_pool(console, provider_id, ("good", GOOD))
        cursor = FakeCursor(f"http://{server.address}")
        first = await CursorSession(cursor, "budget-1").run(user_turn_message("hi", public_id))
        assert first.end is not None and "429" in first.end["error"]["message"]
        fake.enqueue(fmt.answer("later"))
        second = await CursorSession(cursor, "budget-2").run(
            user_turn_message("again", public_id, conversation_id="conv-2")
        )
        await cursor.aclose()
        assert second.end == {} and final_text(second) == "later"
        keys = await console.keys(provider_id)
    assert [r.api_key for r in fake.requests] == [LIMITED, GOOD]
    assert keys["limited"]["state"] == "cooling"
    assert keys["limited"]["cooling_until_ms"] - keys["limited"]["last_error"]["at_ms"] == 60_000


async def test_a_model_check_sends_the_providers_own_key_only(
    fake: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    fmt = FORMATS[0]
    public_id = fmt.add_model(server_store, fake)
    provider_id = provider_id_of(server_store, public_id)
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10) as client:
        console = Console(client)
        await make_pool(console, provider_id, ("good", GOOD), ("spare", SPARE))
        for _ in range(3):
            fake.enqueue(fmt.answer("pong"))
            checked = await console.call("POST", f"/models/{public_id}/test")
            assert checked["ok"] is True
    assert [r.api_key for r in fake.requests] == [LIMITED] * 3
