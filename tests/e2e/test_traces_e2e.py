"""OpenTelemetry traces end to end: a real server with ``traces`` pointed at a receiver of our
own (an aiohttp server on loopback taking OTLP/HTTP protobuf, as a collector does), whole
turns through the fake Cursor client and the fake provider, then the spans as exported.

The server's stop flushes its TracerProvider, so every span of a finished run has arrived by
the time ``stop`` returns."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from actors.conversation.secret import Secret
from actors.server.compose import RunningServer, ServerConfig, start_server
from actors.tracing import TraceSettings
from actors.tracing.attributes import run_ids
from store import Store
from tests.conftest import FAKE_PROVIDER_KEY, TEST_LIMITS
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events, chat_usage
from wire.providers.retry import NO_RETRY

pytestmark = pytest.mark.e2e

PROMPT = "what is in secret-plans.txt?"
ANSWERS = ("Reading the plans.", "They say omega.")
FILE_TEXT = "omega contents\n"
COLLECTOR_TOKEN = "collector-token-9f8e7d"


class Receiver:
    """A collector's OTLP/HTTP traces endpoint: every request's decoded body and headers."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.headers: list[dict[str, str]] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf"
        body = await request.read()
        self.requests.append(ExportTraceServiceRequest.FromString(body))
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    def spans(self) -> list[Span]:
        return [
            span
            for request in self.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]

    def resources(self) -> list[dict[str, Any]]:
        return [
            attributes(resource.resource.attributes)
            for request in self.requests
            for resource in request.resource_spans
        ]


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    app = web.Application()
    app.router.add_post("/v1/traces", found.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    found.url = f"http://{host}:{port}/v1/traces"
    yield found
    await runner.cleanup()


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "ws"
    root.mkdir()
    yield root


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(value_of(v) for v in value.array_value.values)
    return getattr(value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs}


async def start(upstream: str, store: Store, traces: TraceSettings | None) -> RunningServer:
    config = ServerConfig(
        host="127.0.0.1",
        port=0,
        upstream_url=upstream,
        limits=TEST_LIMITS,
        provider_retry=NO_RETRY,
        traces=traces,
    )
    return await start_server(config, store=store)


async def tool_turn(
    server: RunningServer, fake: FakeProvider, public_id: str, workspace: Path, run_id: str
) -> None:
    """Read, then an answer: two provider calls (with usage), one tool round, checkpoints."""
    (workspace / "secret-plans.txt").write_text(FILE_TEXT)
    read = FakeToolCall("call_read", "Read", ('{"path": ', '"/secret-plans.txt"}'))
    fake.enqueue(Script.sse(chat_events(text=[ANSWERS[0]], tools=[read], usage=chat_usage(11, 7))))
    fake.enqueue(Script.sse(chat_events(text=[ANSWERS[1]], usage=chat_usage(31, 4))))
    cursor = FakeCursor(f"http://{server.address}")
    try:
        session = CursorSession(cursor, run_id, workspace=workspace)
        log = await session.run(user_turn_message(PROMPT, public_id))
    finally:
        await cursor.aclose()
    assert log.end == {}


async def test_a_turn_with_a_tool_round_is_one_trace_with_genai_spans(
    upstream: str,
    server_store: Store,
    fake: FakeProvider,
    public_id: str,
    workspace: Path,
    receiver: Receiver,
) -> None:
    headers = (("x-collector-token", Secret(COLLECTOR_TOKEN)),)
    server = await start(upstream, server_store, TraceSettings(receiver.url, headers))
    try:
        await tool_turn(server, fake, public_id, workspace, "turn-traced")
    finally:
        await server.stop()  # flushes the server's TracerProvider
    spans = receiver.spans()
    assert spans, "no span reached the receiver"
    assert all(h.get("x-collector-token") == COLLECTOR_TOKEN for h in receiver.headers)
    # Our own provider, never the process's global one.
    assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
    (resource,) = {tuple(sorted(r.items())) for r in receiver.resources()}
    assert dict(resource)["service.name"] == "cursor-server"
    assert dict(resource)["service.instance.id"]

    # One trace: the run's, its id derived from the run id; the root is the run.
    trace_id, root_id = run_ids("turn-traced")
    assert {span.trace_id for span in spans} == {trace_id.to_bytes(16, "big")}
    (root,) = [span for span in spans if not span.parent_span_id]
    assert root.span_id == root_id.to_bytes(8, "big")
    assert root.name == "invoke_agent"
    assert root.kind == Span.SPAN_KIND_SERVER
    root_attributes = attributes(root.attributes)
    assert root_attributes["cursor.run.id"] == "turn-traced"
    assert root_attributes["cursor.run.code"] == "ok"
    assert root_attributes["cursor.model"] == public_id
    assert root_attributes["gen_ai.conversation.id"]
    assert root.status.code != Status.STATUS_CODE_ERROR
    children = [span for span in spans if span.parent_span_id]
    assert all(span.parent_span_id == root.span_id for span in children)
    for span in children:  # inside the run (the run's times are whole milliseconds)
        assert root.start_time_unix_nano - 1_000_000 <= span.start_time_unix_nano
        assert span.start_time_unix_nano <= span.end_time_unix_nano
        assert span.end_time_unix_nano <= root.end_time_unix_nano + 1_000_000

    # Each provider attempt: a client span with the GenAI conventions' attributes.
    calls = [span for span in children if span.name.startswith("chat ")]
    assert len(calls) == 2
    calls.sort(key=lambda span: span.start_time_unix_nano)
    usages = [(11, 7), (31, 4)]
    for span, (tokens_in, tokens_out) in zip(calls, usages, strict=True):
        found = attributes(span.attributes)
        assert span.kind == Span.SPAN_KIND_CLIENT
        assert span.name == f"chat {found['gen_ai.request.model']}"
        assert found["gen_ai.operation.name"] == "chat"
        assert found["gen_ai.provider.name"] == "openai"
        assert found["gen_ai.system"] == "openai"
        assert found["gen_ai.usage.input_tokens"] == tokens_in
        assert found["gen_ai.usage.output_tokens"] == tokens_out
        assert found["server.address"] == "127.0.0.1"
        assert found["cursor.call.status"] == "completed"
        assert found["cursor.call.attempt"] == 1
        assert span.status.code != Status.STATUS_CODE_ERROR
    assert attributes(calls[0].attributes)["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert calls[0].end_time_unix_nano <= calls[1].start_time_unix_nano

    # The tool call, between the two provider calls.
    (tool,) = [span for span in children if span.name.startswith("execute_tool")]
    assert tool.name == "execute_tool Read"
    tool_attributes = attributes(tool.attributes)
    assert tool_attributes["gen_ai.tool.call.id"] == "call_read"
    assert tool_attributes["gen_ai.tool.name"] == "Read"
    assert tool_attributes["cursor.tool.outcome"] == "success"
    assert calls[0].end_time_unix_nano <= tool.end_time_unix_nano
    assert tool.end_time_unix_nano <= calls[1].start_time_unix_nano

    # Each checkpoint's wait for its KV ACKs, published.
    waits = [span for span in children if span.name == "checkpoint kv_wait"]
    assert waits
    for span in waits:
        found = attributes(span.attributes)
        assert found["cursor.checkpoint.outcome"] == "published"
        assert found["cursor.checkpoint.kind"] in ("settled", "staged", "final")
        assert isinstance(found["cursor.checkpoint.job_id"], int)
    assert len(spans) == 1 + 2 + 1 + len(waits)

    # Nothing of the conversation or a credential in any attribute.
    texts = [str(value) for span in spans for value in attributes(span.attributes).values()]
    for forbidden in (PROMPT, "secret-plans", *ANSWERS, FILE_TEXT.strip(), FAKE_PROVIDER_KEY):
        assert not any(forbidden in text for text in texts), forbidden
    assert not any(COLLECTOR_TOKEN in text for text in texts)


async def test_a_failed_provider_call_is_an_error_span_in_an_error_run(
    upstream: str,
    server_store: Store,
    fake: FakeProvider,
    public_id: str,
    receiver: Receiver,
) -> None:
    server = await start(upstream, server_store, TraceSettings(receiver.url))
    try:
        fake.enqueue(Script.error(500, {"error": {"message": "provider failed"}}))
        cursor = FakeCursor(f"http://{server.address}")
        try:
            log = await CursorSession(cursor, "turn-failed").run(user_turn_message("hi", public_id))
        finally:
            await cursor.aclose()
        assert log.end is not None and log.end["error"]["code"] == "unavailable"
    finally:
        await server.stop()
    spans = receiver.spans()
    (root,) = [span for span in spans if not span.parent_span_id]
    assert root.status.code == Status.STATUS_CODE_ERROR
    assert attributes(root.attributes)["cursor.run.code"] == "unavailable"
    (call,) = [span for span in spans if span.name.startswith("chat ")]
    assert call.parent_span_id == root.span_id
    assert call.status.code == Status.STATUS_CODE_ERROR
    found = attributes(call.attributes)
    assert found["error.type"] == "500"
    assert found["http.response.status_code"] == 500
    assert found["cursor.call.status"] == "failed"
    # The provider's error text is not an attribute.
    assert not any("provider failed" in str(v) for v in found.values())


async def test_without_an_endpoint_nothing_is_sent_and_no_provider_is_made(
    upstream: str,
    server_store: Store,
    fake: FakeProvider,
    public_id: str,
    workspace: Path,
    receiver: Receiver,
) -> None:
    server = await start(upstream, server_store, None)
    try:
        assert server.tracing is None
        await tool_turn(server, fake, public_id, workspace, "turn-untraced")
    finally:
        await server.stop()
    assert receiver.requests == []
    # Nor did anything install a global one.
    assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"


async def test_a_collector_that_is_down_costs_no_turn_and_stop_stays_bounded(
    upstream: str,
    server_store: Store,
    fake: FakeProvider,
    public_id: str,
    workspace: Path,
) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: every export is refused
    try:
        port = closed.getsockname()[1]
        traces = TraceSettings(f"http://127.0.0.1:{port}/v1/traces")
        server = await start(upstream, server_store, traces)
        try:
            await tool_turn(server, fake, public_id, workspace, "turn-collector-down")
        finally:
            began = time.monotonic()
            stopped = await server.stop()
        assert stopped, "the server's stop ran past its deadline"
        # The exporter retries a refused export for 10 s; the stop cuts it off after 2 s.
        assert time.monotonic() - began < 5.0
    finally:
        closed.close()
