"""Benchmark: canonical events per second through the ProviderActor, per provider format.

Run by hand (``python -m tests.bench.provider_stream``). For each format a separate process
serves the same long text stream, one network write per SSE event as providers do, twice per
round: once read with plain httpx (baseline: bytes off the socket, no parsing) and once through
a ProviderActor (SSE parsing, adapter, grammar, call record, batched tells to a listener).
Prints the median rate of each and their ratio; the target is a ratio of at least 0.5. It
also prints the time from a cancel to the closed connection while a call waits for headers.
"""

from __future__ import annotations

import asyncio
import queue
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import msgspec
import peewee
from aiohttp import web

from actors.conversation.request import LlmRequest, ModelRoute, ProviderTextPart, UserMessage
from actors.loop.bridge import LoopTasks
from actors.protocols.provider import (
    CancelProviderCall,
    ProviderCallEnded,
    ProviderReply,
    StartProviderCall,
)
from actors.providers.actor import ProviderDeps, start_provider_call
from actors.providers.recorder import start_call_recorder
from actors.providers.transport import CallLimits, new_provider_client
from actors.run.model_selection import Selection, build_route
from store import connect_store
from store.catalog import ModelInput, ProviderInput, create_provider, model_route_parts, save_models
from tests.support.fake_provider import (
    FakeProvider,
    Script,
    SseEvent,
    anthropic_events,
    anthropic_usage,
    chat_events,
    chat_usage,
    responses_events,
    responses_usage,
)

DELTAS = 20_000
ROUNDS = 5
REQUEST = LlmRequest("bench", (), (UserMessage((ProviderTextPart("go"),)),))


class Counter:
    def __init__(self) -> None:
        self.events = 0
        self.done: queue.Queue[ProviderCallEnded] = queue.Queue()

    def tell(self, message: ProviderReply) -> None:
        if isinstance(message, ProviderCallEnded):
            self.done.put(message)
        else:
            self.events += len(message.events)


def stream_for(provider_type: str) -> list[SseEvent]:
    text = [f"w{i} " for i in range(DELTAS)]
    if provider_type == "openai-chat":
        return chat_events(text=text, usage=chat_usage(10, DELTAS))
    if provider_type == "openai-responses":
        return responses_events(text=text, usage=responses_usage(10, DELTAS))
    return anthropic_events(
        text=text, start_usage=anthropic_usage(input=10), delta_usage=anthropic_usage(output=9)
    )


async def plain_read(client: httpx.AsyncClient, url: str) -> float:
    started = time.perf_counter()
    async with client.stream("POST", url, json={}) as response:
        async for _ in response.aiter_bytes():
            pass
    return time.perf_counter() - started


async def through_actor(route: ModelRoute, deps: ProviderDeps) -> tuple[float, int]:
    counter = Counter()
    started = time.perf_counter()
    start_provider_call(StartProviderCall(None, "bench:0", REQUEST, route), counter, deps)
    end = await asyncio.to_thread(counter.done.get, True, 120)
    elapsed = time.perf_counter() - started
    assert end.result is not None, end.failure
    return elapsed, counter.events


async def cancel_latency(fake: FakeProvider, route: ModelRoute, deps: ProviderDeps) -> float:
    fake.enqueue(Script.hang_before_headers())
    index = len(fake.requests)
    counter = Counter()
    actor = start_provider_call(StartProviderCall(None, "bench:c", REQUEST, route), counter, deps)
    await fake.wait_for_request(index + 1)
    started = time.perf_counter()
    actor.tell(CancelProviderCall("bench"))
    await fake.disconnected(index).wait()
    return time.perf_counter() - started


def stream_body(provider_type: str) -> list[bytes]:
    """The stream as the provider writes it: one network write per SSE event."""
    return [event.encode() for event in stream_for(provider_type)]


async def serve(port_file: str) -> None:
    """Child process: serve each format's stream on POST /<provider_type>/v1/<anything>."""
    bodies = {t: stream_body(t) for t in ("openai-chat", "openai-responses", "anthropic")}

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for chunk in bodies[request.match_info["kind"]]:
            await response.write(chunk)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/{kind}/v1/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    Path(port_file).write_text(str(runner.addresses[0][1]))
    await asyncio.Event().wait()


async def start_child() -> tuple[subprocess.Popen[bytes], str]:
    port_file = Path(tempfile.mkdtemp()) / "port"
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.bench.provider_stream", "--serve", str(port_file)]
    )
    for _ in range(200):
        if port_file.exists() and port_file.read_text():
            return child, f"http://127.0.0.1:{port_file.read_text()}"
        await asyncio.sleep(0.05)
    child.kill()
    raise RuntimeError("the stream server did not start")


def add_route(db: peewee.Database, provider_type: str, base_url: str) -> ModelRoute:
    provider = create_provider(
        db, ProviderInput(name=provider_type, type=provider_type, base_url=base_url)
    )
    fields = {"model_id": "m", "display_name": "m", "max_output_tokens": 100}
    saved = save_models(db, provider.id, [msgspec.convert(fields, ModelInput)])
    parts = model_route_parts(db, saved[0].public_id)
    assert parts is not None
    return build_route(Selection(public_id=saved[0].public_id), *parts)


async def main() -> None:
    child, origin = await start_child()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = connect_store(f"sqlite:///{Path(tmp) / 'bench.db'}")
            recorder = start_call_recorder(store.database)
            async with new_provider_client() as client:
                loop_tasks = LoopTasks(asyncio.get_running_loop())
                deps = ProviderDeps(recorder, loop_tasks, client, CallLimits())
                print(f"{DELTAS} text deltas per stream, one write per SSE event, served by a")
                print(f"separate process; median of {ROUNDS} rounds")
                print(f"{'format':18} {'plain ev/s':>12} {'actor ev/s':>12} {'ratio':>7}")
                for provider_type in ("openai-chat", "openai-responses", "anthropic"):
                    base_url = f"{origin}/{provider_type}/v1"
                    route = add_route(store.database, provider_type, base_url)
                    plain, actor = [], []
                    for _ in range(ROUNDS):
                        plain.append(DELTAS / await plain_read(client, f"{base_url}/x"))
                        elapsed, events = await through_actor(route, deps)
                        assert events >= DELTAS, events
                        actor.append(DELTAS / elapsed)
                    p, a = statistics.median(plain), statistics.median(actor)
                    print(f"{provider_type:18} {p:12.0f} {a:12.0f} {a / p:7.2f}")
            async with FakeProvider(check_bodies=False) as fake, new_provider_client() as client:
                deps = ProviderDeps(
                    recorder, LoopTasks(asyncio.get_running_loop()), client, CallLimits()
                )
                route = add_route(store.database, "openai-chat", fake.base_url)
                latencies = [await cancel_latency(fake, route, deps) for _ in range(10)]
            print(
                "cancel while waiting for headers -> connection closed: "
                f"median {statistics.median(latencies) * 1000:.1f} ms, "
                f"max {max(latencies) * 1000:.1f} ms (limit 200 ms)"
            )
            recorder.stop()
    finally:
        child.kill()
        child.wait()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        asyncio.run(serve(sys.argv[2]))
    else:
        asyncio.run(main())
