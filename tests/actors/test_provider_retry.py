"""The ProviderActor's retries against the fake provider over real HTTP: what is tried again,
what is not, one record per attempt, and a cancel during the wait."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest

from actors.conversation.events import CallStarted, TextDelta
from actors.protocols.provider import CancelProviderCall
from actors.providers.actor import ProviderDeps
from actors.providers.transport import new_provider_client
from store import Store
from store.llm_calls import CallFilter, CallRecords, CallStatus, CallSummary
from tests.e2e.test_provider_actor import (  # stop_recorders: the same autouse fixture here
    Listener,
    deps,
    make_route,
    start,
    stop_recorders,  # noqa: F401
)
from tests.support.fake_provider import (
    FakeProvider,
    Script,
    anthropic_events,
    chat_events,
)
from wire.providers.retry import RetryPolicy

# Waits short enough for a test, long enough to see them.
FAST = RetryPolicy(max_attempts=3, budget_s=10.0, base_delay_s=0.05, max_delay_s=0.1)


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as provider:
        yield provider


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with new_provider_client() as http:
        yield http


def records(store: Store) -> list[CallSummary]:
    """The run's call records, oldest first."""
    calls = CallRecords(store.database).list(100, only=CallFilter(run_id="run-1"))
    return list(reversed(calls))


def with_retry(
    store: Store, client: httpx.AsyncClient, policy: RetryPolicy = FAST, **limits: float
) -> ProviderDeps:
    return msgspec.structs.replace(deps(store, client, **limits), retry=policy)


async def test_a_503_before_the_stream_is_retried_and_the_text_arrives_once(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(
        Script.error(503, {"error": {"message": "overloaded, come back"}}),
        Script.sse(chat_events(text=["Hel", "lo"])),
    )
    listener = Listener()
    start(route, listener, with_retry(server_store, client))
    events, end = await listener.until_end()
    assert end.status is CallStatus.COMPLETED and end.result is not None
    assert end.result.text == "Hello"
    assert [e for e in events if isinstance(e, CallStarted)] == [CallStarted("run-1:0")]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]
    assert len(fake.requests) == 2 and fake.requests[0].body == fake.requests[1].body
    first, second = records(server_store)
    assert (first.status, first.http_status) == ("failed", 503)
    assert first.error_message is not None and "overloaded, come back" in first.error_message
    assert (second.status, second.http_status) == ("completed", 200)
    assert first.model_call_id == second.model_call_id == "run-1:0"
    assert end.record_id == second.id


async def test_a_429_waits_for_its_retry_after(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "anthropic", max_output_tokens=64)
    fake.enqueue(
        Script.error(429, {"type": "error", "error": {"message": "slow down"}}, retry_after="1"),
        Script.sse(anthropic_events(text=["ok"])),
    )
    listener = Listener()
    start(route, listener, with_retry(server_store, client))
    await fake.wait_for_request(1)
    asked = time.monotonic()
    _, end = await listener.until_end()
    await fake.wait_for_request(2)
    assert fake.request_times[1] - fake.request_times[0] >= 0.95
    assert time.monotonic() - asked >= 0.9
    assert end.status is CallStatus.COMPLETED
    assert [r.status for r in records(server_store)] == ["failed", "completed"]


async def test_a_retry_after_beyond_the_budget_gives_up_at_once(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(Script.error(429, {"error": {"message": "quota"}}, retry_after="60"))
    policy = RetryPolicy(budget_s=2.0, retry_after_cap_s=30.0)
    listener = Listener()
    start(route, listener, with_retry(server_store, client, policy))
    _, end = await listener.until_end()
    assert end.status is CallStatus.FAILED and end.failure is not None
    assert "quota" in end.failure.message and end.failure.http_status == 429
    assert len(fake.requests) == 1


async def test_529_three_times_gives_up_with_the_providers_message(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "anthropic", max_output_tokens=64)
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    fake.enqueue(*[Script.error(529, overloaded) for _ in range(4)])
    listener = Listener()
    start(route, listener, with_retry(server_store, client))
    events, end = await listener.until_end()
    assert events == []
    assert end.status is CallStatus.FAILED and end.failure is not None
    assert "Overloaded" in end.failure.message and end.failure.http_status == 529
    assert len(fake.requests) == 3 and fake.pending_scripts == 1
    stored = records(server_store)
    assert [(r.status, r.http_status) for r in stored] == [("failed", 529)] * 3
    assert all(r.ended_at_ms is not None for r in stored)
    assert end.record_id == stored[-1].id


async def test_no_headers_within_the_idle_limit_is_retried(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(
        Script.sse(chat_events(text=["late"])).delayed(5.0),
        Script.sse(chat_events(text=["on time"])),
    )
    listener = Listener()
    start(route, listener, with_retry(server_store, client, idle_s=0.3))
    _, end = await listener.until_end()
    assert end.status is CallStatus.COMPLETED and end.result is not None
    assert end.result.text == "on time"
    await asyncio.wait_for(fake.disconnected(0).wait(), 5)
    first, second = records(server_store)
    assert first.status == "failed" and first.error_message is not None
    assert "no response headers for 0.3 s" in first.error_message
    assert second.status == "completed"


async def test_a_refused_connection_is_tried_three_times(
    client: httpx.AsyncClient, server_store: Store
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    route = make_route(server_store.database, f"http://127.0.0.1:{port}/v1", "openai-chat")
    listener = Listener()
    start(route, listener, with_retry(server_store, client))
    _, end = await listener.until_end()
    assert end.status is CallStatus.FAILED and end.failure is not None
    assert "ConnectError" in end.failure.message
    assert [r.status for r in records(server_store)] == ["failed"] * 3


async def test_a_cut_before_any_event_is_retried_a_cut_after_text_is_not(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    events = chat_events(text=["Hal", "f"])
    fake.enqueue(Script.cut(0, events), Script.cut(2, events), Script.sse(events))
    listener = Listener()
    start(route, listener, with_retry(server_store, client))
    seen, end = await listener.until_end()
    assert end.status is CallStatus.FAILED and end.failure is not None
    assert len(fake.requests) == 2 and fake.pending_scripts == 1
    assert [e.text for e in seen if isinstance(e, TextDelta)] == ["Hal"]
    assert [r.status for r in records(server_store)] == ["failed", "failed"]


async def test_a_stall_mid_body_or_a_malformed_event_is_not_retried(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(Script.stall(after_events=2, events=chat_events(text=["a", "b"])))
    listener = Listener()
    start(route, listener, with_retry(server_store, client, idle_s=0.3))
    _, end = await listener.until_end()
    assert end.failure is not None and "sent nothing for 0.3 s" in end.failure.message
    assert len(fake.requests) == 1

    fake.enqueue(Script.raw([b"data: {not json\n\n"]), Script.sse(chat_events(text=["x"])))
    listener = Listener()
    start(route, listener, with_retry(server_store, client))
    _, end = await listener.until_end()
    assert end.status is CallStatus.FAILED and len(fake.requests) == 2
    assert fake.pending_scripts == 1


async def test_a_cancel_during_the_wait_ends_the_call_at_once_and_sends_nothing_more(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(
        Script.error(500, {"error": {"message": "boom"}}, retry_after="2"),
        Script.sse(chat_events(text=["never"])),
    )
    listener = Listener()
    actor = start(route, listener, with_retry(server_store, client))
    await fake.wait_for_request(1)
    await asyncio.sleep(0.2)  # the first attempt has failed: the actor waits for its retry
    cancelled = time.monotonic()
    actor.tell(CancelProviderCall("user pressed stop"))
    _, end = await listener.until_end()
    assert time.monotonic() - cancelled < 0.5
    assert end.status is CallStatus.CANCELLED
    await asyncio.sleep(2.3)  # past the wait: the second attempt never reaches the provider
    assert len(fake.requests) == 1 and fake.pending_scripts == 1
    assert [r.status for r in records(server_store)] == ["failed"]
    # The run's end still points at the call's record: the attempt that failed.
    assert end.record_id == records(server_store)[0].id
