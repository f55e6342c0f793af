"""The ProviderActor against the fake provider over real HTTP: events, records, cancel, limits.

Each test builds the route the way a run does (console data in the store, then
``actors.run.model_selection``), starts one ProviderActor and listens to what it tells.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import msgspec
import peewee
import pykka
import pytest

from actors.conversation.events import (
    CallDone,
    CallStarted,
    FinishReason,
    ProviderEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgumentsDelta,
    Usage,
    UsageReported,
)
from actors.conversation.request import (
    LlmRequest,
    ModelRoute,
    ProviderTextPart,
    ToolSpec,
    UserMessage,
)
from actors.loop.bridge import LoopTasks
from actors.protocols.mailbox import ActorHandle
from actors.protocols.provider import (
    AttemptReported,
    CancelProviderCall,
    ProviderCallEnded,
    ProviderEventsReceived,
    ProviderMessage,
    ResponseChunksReceived,
    ResponseEnded,
    StartProviderCall,
)
from actors.providers.actor import ProviderDeps, start_provider_call
from actors.providers.recorder import CallRecorderActor, start_call_recorder
from actors.providers.transport import CallLimits, new_provider_client
from actors.run.model_selection import Selection, build_route
from store import Store
from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql
from store.catalog import (
    ModelInput,
    ProviderInput,
    create_provider,
    model_route_parts,
    save_models,
    update_observability,
)
from store.llm_calls import CallFilter, CallRecords, CallStatus, CallSummary, NewCall
from tests.conftest import StartServer
from tests.support.fake_provider import (
    FakeProvider,
    FakeThinking,
    FakeToolCall,
    Script,
    SseEvent,
    anthropic_events,
    anthropic_usage,
    chat_error_chunk,
    chat_events,
    chat_usage,
    encode_events,
)
from wire.providers.errors import FailureKind
from wire.providers.redaction import REDACTED
from wire.providers.retry import RetryPolicy

API_KEY = "sk-test-ZXCVBNM-0123456789"
WAIT_S = 5.0

REQUEST = LlmRequest(
    instructions="You are a test.",
    tools=(ToolSpec("Read", "Read a file", {"type": "object", "properties": {}}),),
    messages=(UserMessage((ProviderTextPart("hello"),)),),
)


class Listener:
    """A thread-safe ``tell`` into a queue, awaited without blocking the loop."""

    def __init__(self) -> None:
        self.messages: queue.Queue[ProviderEventsReceived | ProviderCallEnded] = queue.Queue()

    def tell(self, message: ProviderEventsReceived | ProviderCallEnded) -> None:
        self.messages.put(message)

    async def until_end(self) -> tuple[list[ProviderEvent], ProviderCallEnded]:
        events: list[ProviderEvent] = []
        while True:
            message = await asyncio.to_thread(self.messages.get, True, WAIT_S)
            if isinstance(message, ProviderCallEnded):
                return events, message
            events.extend(message.events)

    async def first_events(self) -> list[ProviderEvent]:
        message = await asyncio.to_thread(self.messages.get, True, WAIT_S)
        assert isinstance(message, ProviderEventsReceived), message
        return list(message.events)


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    async with FakeProvider() as provider:
        yield provider


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with new_provider_client() as http:
        yield http


def make_route(
    db: peewee.Database, base_url: str, provider_type: str, **model: object
) -> ModelRoute:
    provider = create_provider(
        db,
        ProviderInput(
            name="fake",
            type=provider_type,
            base_url=base_url,
            api_key=API_KEY,
            headers={"x-team": "blue", "x-secret-token": "tok-SECRETHEADER"},
            public_headers=["x-team"],
        ),
    )
    fields = {"model_id": "fake-model", "display_name": "Fake", **model}
    saved = save_models(db, provider.id, [msgspec.convert(fields, ModelInput)])
    parts = model_route_parts(db, saved[0].public_id)
    assert parts is not None
    selection = Selection(public_id=saved[0].public_id)
    return build_route(selection, *parts)


@pytest.fixture(autouse=True)
def stop_recorders() -> Iterator[None]:
    """Each test's call recorders (started by ``deps``) stop with it."""
    yield
    for ref in pykka.ActorRegistry.get_by_class(CallRecorderActor):
        ref.stop()


def deps(store: Store, client: httpx.AsyncClient, **limits: float) -> ProviderDeps:
    return ProviderDeps(
        recorder=start_call_recorder(store.database),
        tasks=LoopTasks(asyncio.get_running_loop()),
        client=client,
        limits=CallLimits(**limits),
    )


def recorded_call(store: Store, end: ProviderCallEnded) -> CallSummary:
    """The call record ``end`` names (it must name one)."""
    detail = CallRecords(store.database).get(end.record_id or -1)
    assert detail is not None
    return detail.call


def start(
    route: ModelRoute, listener: Listener, provider_deps: ProviderDeps
) -> ActorHandle[ProviderMessage]:
    call = StartProviderCall(run_id="run-1", model_call_id="run-1:0", request=REQUEST, route=route)
    return start_provider_call(call, listener, provider_deps)


async def test_text_stream_events_and_record(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(Script.sse(chat_events(text=["Hel", "lo"], usage=chat_usage(7, 2))))
    listener = Listener()
    start(route, listener, deps(server_store, client))
    events, end = await listener.until_end()
    assert isinstance(events[0], CallStarted) and events[0].model_call_id == "run-1:0"
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]
    assert events[-1] == CallDone(FinishReason.STOP)
    assert end.status is CallStatus.COMPLETED and end.result is not None
    assert end.result.text == "Hello"
    # Only what the provider reported: no cache or reasoning counts were sent.
    assert UsageReported(Usage(input_tokens=7, output_tokens=2)) in events
    record = CallRecords(server_store.database).get(end.record_id or -1)
    assert record is not None
    call = record.call
    assert call.status == "completed" and call.finish_reason == "stop"
    assert (call.input_tokens, call.output_tokens) == (7, 2)
    assert call.cache_read_tokens is None and call.reasoning_tokens is None
    assert call.http_status == 200 and call.ttfb_ms is not None and call.duration_ms is not None
    assert call.ended_at_ms is not None and call.ended_at_ms >= call.started_at_ms
    assert call.model_id == "fake-model" and call.provider_type == "openai-chat"
    assert call.request_bytes == len(fake.requests[0].body)
    # Not verbose: no payloads were kept.
    assert record.request is None and record.chunks == []


async def test_time_to_first_token_is_recorded_at_the_first_text_or_thinking_delta(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    """A streamed call's record holds its TTFT, after the first byte and within the call, for
    text and for thinking alike; a call that streamed only tool calls has none."""
    route = make_route(server_store.database, fake.base_url, "anthropic", max_output_tokens=64)
    fake.enqueue(
        Script.sse(anthropic_events(text=["Hel", "lo"]), delay_between=0.01),
        Script.sse(anthropic_events(thinking=[FakeThinking(("hm",))], text=["ok"])),
        Script.sse(anthropic_events(tools=[FakeToolCall("toolu_1", "Read", ('{"path": "/a"}',))])),
    )
    provider_deps = deps(server_store, client)
    records = CallRecords(server_store.database)
    recorded = []
    for first in (TextDelta, ThinkingDelta, None):
        listener = Listener()
        start(route, listener, provider_deps)
        events, end = await listener.until_end()
        assert end.status is CallStatus.COMPLETED
        deltas = [e for e in events if isinstance(e, TextDelta | ThinkingDelta)]
        assert (type(deltas[0]) if deltas else None) is first
        detail = records.get(end.record_id or -1)
        assert detail is not None
        recorded.append(detail.call)
    for call in recorded[:2]:
        assert call.ttfb_ms is not None and call.ttft_ms is not None
        assert call.duration_ms is not None
        assert call.ttfb_ms <= call.ttft_ms <= call.duration_ms
    assert recorded[2].ttft_ms is None and recorded[2].ttfb_ms is not None


async def test_a_call_cancelled_before_its_first_delta_has_no_time_to_first_token(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    """Headers and body events (a text block opened) are not a first token, and they are
    held back: the listener hears nothing of a call that showed nothing yet."""
    route = make_route(server_store.database, fake.base_url, "anthropic", max_output_tokens=64)
    fake.enqueue(Script.stall(after_events=3, events=anthropic_events(text=["late"])))
    listener = Listener()
    actor = start(route, listener, deps(server_store, client))
    await fake.wait_for_request(1)
    await asyncio.sleep(0.5)  # message_start, ping and the empty text block are in
    actor.tell(CancelProviderCall("the test stopped it"))
    events, end = await listener.until_end()
    assert events == []
    assert end.status is CallStatus.CANCELLED
    call = recorded_call(server_store, end)
    assert call.ttfb_ms is not None and call.ttft_ms is None


async def test_events_flow_while_the_database_is_locked_and_the_end_waits_for_the_record(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store, tmp_path: Path
) -> None:
    """The call never waits for the database: another writer holds SQLite's write lock, and
    the request, its events and a cancel still get through; the recorder writes the record
    once the lock is released, and only then is the end told, with the record finished."""
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(Script.stall(after_events=3, events=chat_events(text=["Hel", "lo"])))
    blocker = sqlite3.connect(tmp_path / "test.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the write lock: every insert now waits
    try:
        listener = Listener()
        actor = start(route, listener, deps(server_store, client))
        events: list[ProviderEvent] = []
        while sum(isinstance(e, TextDelta) for e in events) < 2:
            events.extend(await listener.first_events())
        assert len(fake.requests) == 1
        actor.tell(CancelProviderCall("the test stopped it"))
        await fake.disconnected(0).wait()  # the connection closed while the lock is held
        assert listener.messages.empty()  # the end waits for its record
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    _, end = await listener.until_end()
    assert end.status is CallStatus.CANCELLED
    record = CallRecords(server_store.database).get(end.record_id or -1)
    assert record is not None and record.call.status == "cancelled"


async def test_a_record_starts_when_its_call_started_not_when_the_recorder_got_to_it(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store, tmp_path: Path
) -> None:
    """The recorder is shared: while the database is locked, a second call's start waits in
    its mailbox behind the first one's write. Its record still says when it started."""
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    provider_deps = deps(server_store, client)
    fake.enqueue(Script.sse(chat_events(text=["a"])), Script.sse(chat_events(text=["b"])))
    blocker = sqlite3.connect(tmp_path / "test.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        first, second = Listener(), Listener()
        start(route, first, provider_deps)
        await fake.wait_for_request(1)  # the recorder is now stuck on the first call's insert
        call = StartProviderCall(
            run_id="run-2", model_call_id="run-2:0", request=REQUEST, route=route
        )
        start_provider_call(call, second, provider_deps)
        await fake.wait_for_request(2)  # the second call started, its record not yet written
    finally:
        released_at_ms = now_ms()
        blocker.execute("ROLLBACK")
        blocker.close()
    _, end = await second.until_end()
    record = CallRecords(server_store.database).get(end.record_id or -1)
    assert record is not None and record.call.started_at_ms <= released_at_ms


class GoneListener(Listener):
    """A listener whose run has already ended: telling it fails as telling a stopped actor."""

    def tell(self, message: ProviderEventsReceived | ProviderCallEnded) -> None:
        raise pykka.ActorDeadError("the run's SessionActor is gone")


async def test_a_listener_gone_before_its_call_ends_does_not_stop_the_recorder(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    """A superseded run's SessionActor may stop before its call's end is recorded; the next
    call (the recorder is shared by the process) must still be recorded and told its end."""
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    provider_deps = deps(server_store, client)
    fake.enqueue(
        Script.sse(chat_events(text=["gone"])), Script.sse(chat_events(text=["still here"]))
    )
    start(route, GoneListener(), provider_deps)
    await fake.wait_for_request(1)
    listener = Listener()
    call = StartProviderCall(run_id="run-2", model_call_id="run-2:0", request=REQUEST, route=route)
    start_provider_call(call, listener, provider_deps)
    events, end = await listener.until_end()
    assert end.status is CallStatus.COMPLETED
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["still here"]
    record = CallRecords(server_store.database).get(end.record_id or -1)
    assert record is not None and record.call.status == "completed"


async def test_a_call_whose_run_has_gone_ends_cancelled_not_failed(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    """The run's SessionActor stopped before its cancel reached the call (a run cut for a
    stalled reader): the events nobody can hear any more end the call as cancelled, as a cancel
    in time would, and its stream is closed."""
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(Script.sse(chat_events(text=["nobody", " hears", " this"]), delay_between=0.05))
    start(route, GoneListener(), deps(server_store, client))
    await fake.wait_for_request(1)
    await asyncio.wait_for(fake.disconnected(0).wait(), 5)
    records = CallRecords(server_store.database)
    for _ in range(100):
        statuses = [r.status for r in records.list(10, only=CallFilter(run_id="run-1"))]
        if statuses and "running" not in statuses:
            break
        await asyncio.sleep(0.05)
    assert statuses == ["cancelled"]


async def test_tool_call_arguments_arrive_fragmented_and_assemble(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "anthropic", max_output_tokens=1000)
    tools = [
        FakeToolCall("toolu_1", "Read", ('{"pa', 'th": "/a', '"}')),
        FakeToolCall("toolu_2", "Read", ('{"path"', ': "/b"}')),
    ]
    fake.enqueue(
        Script.sse(
            anthropic_events(
                tools=tools,
                start_usage=anthropic_usage(input=11, cache_read=5),
                delta_usage=anthropic_usage(output=3),
            ),
            chunk_size=7,
        )
    )
    listener = Listener()
    start(route, listener, deps(server_store, client))
    events, end = await listener.until_end()
    assert len([e for e in events if isinstance(e, ToolCallArgumentsDelta)]) == 5
    assert end.result is not None and end.result.finish is FinishReason.TOOL_USE
    assert [(c.call_id, msgspec.json.decode(c.arguments_json)) for c in end.result.calls] == [
        ("toolu_1", {"path": "/a"}),
        ("toolu_2", {"path": "/b"}),
    ]
    call = recorded_call(server_store, end)
    assert (call.input_tokens, call.output_tokens, call.cache_read_tokens) == (11, 3, 5)
    assert call.cache_write_tokens is None


async def test_http_error_before_stream_is_one_failure_without_the_key(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-responses")
    fake.enqueue(
        Script.error(401, {"error": {"message": f"Incorrect API key provided: {API_KEY}"}})
    )
    listener = Listener()
    start(route, listener, deps(server_store, client))
    events, end = await listener.until_end()
    assert events == []
    assert end.status is CallStatus.FAILED and end.failure is not None
    assert end.failure.kind is FailureKind.PROVIDER and end.failure.http_status == 401
    assert "401" in end.failure.message and "Incorrect API key" in end.failure.message
    assert API_KEY not in end.failure.message
    call = recorded_call(server_store, end)
    assert call.status == "failed" and call.http_status == 401
    assert call.error_message == end.failure.message


async def test_mid_stream_error_event_fails_the_call(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    events = chat_events(text=["partial"], done=False, finish="")
    fake.enqueue(Script.sse([*events, chat_error_chunk("upstream overloaded")]))
    listener = Listener()
    start(route, listener, deps(server_store, client))
    received, end = await listener.until_end()
    assert TextDelta("partial") in received
    assert end.status is CallStatus.FAILED and end.failure is not None
    assert "upstream overloaded" in end.failure.message


async def test_what_a_failed_request_left_in_the_mailbox_is_not_read_as_the_retrys(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    """The first request's stream says "overloaded" and is retried; its transport's late
    reports (a chunk, its end), told while the retry streams, belong to request 1 and are
    dropped: the retry's answer is heard once and completes."""
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    busy = SseEvent.json({"error": {"message": "Overloaded", "type": "server_error"}})
    fake.enqueue(
        Script.sse([busy]),
        Script.sse(chat_events(text=["Hel", "lo"]), delay_between=0.15),
    )
    listener = Listener()
    fast = RetryPolicy(base_delay_s=0.01, max_delay_s=0.01)
    actor = start(route, listener, msgspec.structs.replace(deps(server_store, client), retry=fast))
    await fake.wait_for_request(2)
    late = b'data: {"choices":[{"index":0,"delta":{"content":"STALE"}}]}\n\n'
    actor.tell(AttemptReported(1, ResponseChunksReceived(((late, time.monotonic()),))))
    actor.tell(AttemptReported(1, ResponseEnded(time.monotonic())))
    events, end = await listener.until_end()
    assert end.status is CallStatus.COMPLETED and end.result is not None
    assert end.result.text == "Hello"
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]


async def test_arguments_that_are_not_json_complete_the_call_as_the_model_wrote_them(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    """The model's mistake, not the provider's: the call completes and keeps the text, so the
    tool result can tell the model what was wrong."""
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(Script.sse(chat_events(tools=[FakeToolCall("call_1", "Read", ('{"path": ',))])))
    listener = Listener()
    start(route, listener, deps(server_store, client))
    _, end = await listener.until_end()
    assert end.status is CallStatus.COMPLETED and end.result is not None
    assert [(c.call_id, c.arguments_json) for c in end.result.calls] == [("call_1", '{"path": ')]
    call = recorded_call(server_store, end)
    assert call.status == "completed"


async def test_anthropic_without_max_output_tokens_sends_nothing(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    # The console refuses to enable such a model; a route built around it must still fail.
    stored = make_route(server_store.database, fake.base_url, "anthropic", max_output_tokens=9)
    route = msgspec.structs.replace(stored, max_output_tokens=None)
    listener = Listener()
    start(route, listener, deps(server_store, client))
    _, end = await listener.until_end()
    assert end.status is CallStatus.FAILED and end.failure is not None
    assert end.failure.kind is FailureKind.CONFIG and "max_output_tokens" in end.failure.message
    assert fake.requests == []
    call = recorded_call(server_store, end)
    assert call.status == "failed" and call.request_bytes is None


async def test_cancel_while_waiting_for_headers_closes_the_connection(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(Script.hang_before_headers())
    listener = Listener()
    actor = start(route, listener, deps(server_store, client))
    await fake.wait_for_request(1)
    actor.tell(CancelProviderCall("user pressed stop"))
    events, end = await listener.until_end()
    assert events == [] and end.status is CallStatus.CANCELLED
    await asyncio.wait_for(fake.disconnected(0).wait(), WAIT_S)
    call = recorded_call(server_store, end)
    assert call.status == "cancelled" and call.ended_at_ms is not None


async def test_cancel_mid_stream_closes_the_connection(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(Script.stall(after_events=3, events=chat_events(text=["a", "b", "c", "d"])))
    listener = Listener()
    actor = start(route, listener, deps(server_store, client))
    seen: list[ProviderEvent] = []
    while TextDelta("b") not in seen:
        seen += await listener.first_events()
    actor.tell(CancelProviderCall("superseded"))
    _, end = await listener.until_end()
    assert end.status is CallStatus.CANCELLED
    await asyncio.wait_for(fake.disconnected(0).wait(), WAIT_S)
    call = recorded_call(server_store, end)
    assert call.status == "cancelled"


async def test_stalled_stream_hits_the_idle_limit(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(Script.stall(after_events=2, events=chat_events(text=["a", "b"])))
    listener = Listener()
    start(route, listener, deps(server_store, client, idle_s=0.3))
    _, end = await listener.until_end()
    assert end.status is CallStatus.FAILED and end.failure is not None
    assert "sent nothing for 0.3 s" in end.failure.message
    await asyncio.wait_for(fake.disconnected(0).wait(), WAIT_S)


async def test_whole_call_time_limit(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    fake.enqueue(Script.hang_before_headers())
    listener = Listener()
    start(route, listener, deps(server_store, client, total_s=0.3))
    _, end = await listener.until_end()
    assert end.status is CallStatus.FAILED and end.failure is not None
    assert "took longer than 0.3 s" in end.failure.message


async def test_records_are_pruned_beyond_the_retained_count(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    update_observability(server_store.database, retained_calls=2)
    provider_deps = deps(server_store, client)  # one recorder, as in the server
    ids = []
    for _ in range(4):
        fake.enqueue(Script.sse(chat_events(text=["x"])))
        listener = Listener()
        start(route, listener, provider_deps)
        _, end = await listener.until_end()
        ids.append(end.record_id)
    # A call's end is told before its prune runs, so the fourth call's prune may still be
    # pending; the third's is done (the recorder works in order), so only the newest two of
    # the first three are left, with the fourth.
    kept = [c.id for c in CallRecords(server_store.database).list(10)]
    assert kept == [ids[3], ids[2], ids[1]] or kept == [ids[3], ids[2]]
    assert ids[0] not in kept


async def test_verbose_call_leaks_the_key_nowhere(
    fake: FakeProvider,
    client: httpx.AsyncClient,
    server_store: Store,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Verbose mode stores the request and the raw stream, redacted: the key string is found
    in no log line and nowhere in the database except the provider's own key column."""
    caplog.set_level(logging.DEBUG)
    db = server_store.database
    route = make_route(db, fake.base_url, "openai-chat")
    update_observability(db, verbose=True)
    # A provider that echoes the key back in its stream must not get it recorded either.
    fake.enqueue(Script.sse(chat_events(text=[f"echo {API_KEY}"], usage=chat_usage(1, 1))))
    listener = Listener()
    start(route, listener, deps(server_store, client))
    _, end = await listener.until_end()
    assert end.status is CallStatus.COMPLETED
    assert fake.requests[0].header("authorization") == f"Bearer {API_KEY}"
    detail = CallRecords(db).get(end.record_id or -1)
    assert detail is not None and detail.request is not None and detail.chunks
    assert detail.request.headers.get("x-team") == "blue"
    assert "authorization" not in detail.request.headers
    assert "x-secret-token" not in detail.request.headers
    assert msgspec.json.decode(detail.request.body)["model"] == "fake-model"
    for secret in (API_KEY, "tok-SECRETHEADER"):
        assert_only_in_provider_row(db, secret)
        assert secret not in caplog.text


async def test_a_key_split_over_raw_chunks_is_scrubbed_in_each(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    """A provider echoing the key, its stream cut inside the key: the recorded chunks are the
    ones read, one for one, and neither holds its piece of the key (each shows a marker)."""
    db = server_store.database
    route = make_route(db, fake.base_url, "openai-chat")
    update_observability(db, verbose=True)
    events = chat_events(text=[f"echo {API_KEY} ok"], usage=chat_usage(1, 1))
    body = encode_events(events)
    middle = body.index(API_KEY.encode()) + len(API_KEY) // 2
    fake.enqueue(Script.sse(events, chunk_boundaries=[middle], delay_between=0.1))
    listener = Listener()
    start(route, listener, deps(server_store, client))
    _, end = await listener.until_end()
    assert end.status is CallStatus.COMPLETED
    detail = CallRecords(db).get(end.record_id or -1)
    assert detail is not None
    chunks = [chunk.data for chunk in detail.chunks]
    assert len(chunks) == 2, chunks  # as read: the write before the cut, then the rest
    head, tail = API_KEY[: len(API_KEY) // 2], API_KEY[len(API_KEY) // 2 :]
    assert chunks[0].endswith(REDACTED.encode()) and chunks[1].startswith(REDACTED.encode())
    for chunk in chunks:
        assert head.encode() not in chunk and tail.encode() not in chunk
    assert b" ok" in chunks[1]


async def test_a_retried_attempt_keeps_every_chunk_it_read_in_its_own_record(
    fake: FakeProvider, client: httpx.AsyncClient, server_store: Store
) -> None:
    """The scrubber holds a stream's last chunks back; an attempt that ends and is retried
    writes them to its own record, not the next attempt's, and loses none."""
    db = server_store.database
    route = make_route(db, fake.base_url, "openai-chat")
    update_observability(db, verbose=True)
    busy = SseEvent.json({"error": {"message": "Overloaded", "type": "server_error"}})
    first = [*chat_events(text=["Hal"])[:1], busy]
    fake.enqueue(Script.sse(first, delay_between=0.05), Script.sse(chat_events(text=["Hello"])))
    listener = Listener()
    fast = RetryPolicy(base_delay_s=0.01, max_delay_s=0.01)
    start(route, listener, msgspec.structs.replace(deps(server_store, client), retry=fast))
    _, end = await listener.until_end()
    assert end.status is CallStatus.COMPLETED
    records = CallRecords(db)
    retried, answered = sorted(c.id for c in records.list(10))
    assert answered == end.record_id
    details = [records.get(record_id) for record_id in (retried, answered)]
    assert details[0] is not None and details[1] is not None
    assert b"".join(c.data for c in details[0].chunks) == encode_events(first)
    assert b"Hal" not in b"".join(c.data for c in details[1].chunks)
    assert [c.seq for c in details[0].chunks] == list(range(len(details[0].chunks)))


def assert_only_in_provider_row(db: peewee.Database, secret: str) -> None:
    """Scan every column of every table for ``secret``; only providers' own fields may hold it."""
    allowed = {("providers", "api_key"), ("providers", "headers_json")}
    found = []
    for table in db.get_tables():
        columns = [c.name for c in db.get_columns(table)]
        for row in execute_sql(db, f'SELECT * FROM "{table}"').fetchall():
            for column, value in zip(columns, row, strict=True):
                data = (
                    bytes(value) if isinstance(value, bytes | memoryview) else str(value).encode()
                )
                if secret.encode() in data and (table, column) not in allowed:
                    found.append((table, column))
    assert found == [], f"{secret!r} stored in {found}"


async def test_calls_api_shows_the_verbose_call_without_the_key(
    fake: FakeProvider, make_server: StartServer, server_store: Store
) -> None:
    """End to end: provider configured over the console API, one verbose call through the
    server's own ProviderDeps, then every console response is free of the key."""
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}/console/api") as api:
        created = await api.post(
            "/providers",
            json={
                "name": "fake",
                "type": "openai-chat",
                "base_url": fake.base_url,
                "api_key": API_KEY,
            },
        )
        assert created.status_code == 201, created.text
        models = await api.post(
            f"/providers/{created.json()['id']}/models",
            json={"models": [{"model_id": "fake-model", "display_name": "Fake"}]},
        )
        assert models.status_code == 201, models.text
        assert (await api.put("/settings/observability", json={"verbose": True})).status_code == 200
        public_id = models.json()[0]["public_id"]
        parts = model_route_parts(server_store.database, public_id)
        assert parts is not None
        route = build_route(Selection(public_id=public_id), *parts)
        fake.enqueue(Script.sse(chat_events(text=["hi"], usage=chat_usage(3, 1))))
        listener = Listener()
        assert server.provider_deps is not None
        start(route, listener, server.provider_deps)
        _, end = await listener.until_end()
        assert end.status is CallStatus.COMPLETED

        listing = await api.get("/calls", params={"limit": 10})
        assert listing.status_code == 200
        calls = listing.json()["calls"]
        assert [c["id"] for c in calls] == [end.record_id]
        assert calls[0]["status"] == "completed" and calls[0]["verbose"] is True
        assert calls[0]["cache_read_tokens"] is None and calls[0]["input_tokens"] == 3
        detail = await api.get(f"/calls/{end.record_id}")
        assert detail.status_code == 200
        body = detail.json()
        assert body["request"]["body"] and body["chunks"]
        assert "hi" in "".join(chunk["text"] for chunk in body["chunks"])
        responses = [listing, detail, await api.get("/providers"), await api.get("/models")]
        for response in responses:
            assert API_KEY not in response.text
        for bad in ("/calls?limit=0", "/calls?limit=x", "/calls?before=-1", "/calls/abc"):
            response = await api.get(bad)
            assert response.status_code == 400 and response.json()["code"] == "invalid_argument"
        missing = await api.get("/calls/999999")
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"


async def test_startup_cancels_calls_left_running(
    server_store: Store, make_server: StartServer
) -> None:
    """A call still ``running`` when the process died is recorded cancelled at the next start."""
    records = CallRecords(server_store.database)

    orphan = records.start(
        NewCall(None, "r:0", 1, "p", "openai-chat", "http://x", "abcd0123", "m", "M", False)
    )
    await make_server()
    detail = records.get(orphan)
    assert detail is not None and detail.call.status == "cancelled"
