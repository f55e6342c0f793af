"""The load benchmark's provider: an OpenAI Chat server in a process of its own.

``tests/bench/provider_process.py`` answers from a FIFO of scripts, which only works when one
conversation runs at a time. Under load, requests of many conversations arrive in any order, so
this one answers by what the request holds: a request whose last message is a tool result gets
the final text; one whose body holds ``TOOLS_MARK`` gets two Read calls; any other the text.
Every answer sends its headers at once and its first event after ``first_token_delay`` seconds,
as a real provider does; one whose body holds ``HOLD_MARK`` after ``HOLD_S`` (a run kept
waiting on its model, for as long as a measurement of it takes). It stamps each request's
arrival (``time.perf_counter``, comparable across processes on Linux) under the tag (``TAG``
followed by word characters) the body holds.
"""

from __future__ import annotations

import asyncio
import functools
import json
import multiprocessing
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from aiohttp import web

from tests.support.fake_provider import FakeToolCall, chat_events

TOOLS_MARK = "[two-tools]"
HOLD_MARK = "[hold]"
HOLD_S = 60.0
TAG = re.compile(r"load-tag-(\w+)")
READS = ['{"path": "/a.txt"}', '{"path": "/b.txt"}']


def _text_body() -> list[bytes]:
    return [event.encode() for event in chat_events(text=["Hello", " there", "!"])]


def _tools_body(tag: str) -> list[bytes]:
    calls = [FakeToolCall(f"call_{tag}_{i}", "Read", (args,)) for i, args in enumerate(READS)]
    return [event.encode() for event in chat_events(tools=calls)]


class LoadProvider:
    """The aiohttp app: one route, answers chosen by the request's content."""

    def __init__(self, first_token_delay: float) -> None:
        self.delay = first_token_delay
        self.arrivals: dict[str, list[float]] = defaultdict(list)
        self.text = _text_body()

    def report(self) -> Any:
        """What a subclass reports to the benchmark (``LoadProviderProcess.report``)."""
        return None

    async def completions(self, request: web.Request) -> web.StreamResponse:
        arrived = time.perf_counter()
        raw = await request.text()
        match = TAG.search(raw)
        tag = match.group(1) if match else ""
        self.arrivals[tag].append(arrived)
        messages: list[dict[str, Any]] = json.loads(raw)["messages"]
        after_tool = messages[-1].get("role") == "tool"
        chunks = self.text if after_tool or TOOLS_MARK not in raw else _tools_body(tag)
        response = web.StreamResponse(
            status=200, headers={"content-type": "text/event-stream", "cache-control": "no-cache"}
        )
        await response.prepare(request)
        if HOLD_MARK in raw and not after_tool:
            await _hold(request)
        else:
            await asyncio.sleep(self.delay)
        try:
            for chunk in chunks:
                await response.write(chunk)
            await response.write_eof()
        except ConnectionError:  # the server may close once it has read the finish chunk
            pass
        return response


async def _hold(request: web.Request) -> None:
    """Wait ``HOLD_S``, or until the server leaves (it cancelled the run)."""
    deadline = time.monotonic() + HOLD_S
    while time.monotonic() < deadline:
        transport = request.transport
        if transport is None or transport.is_closing():
            return
        await asyncio.sleep(0.05)


def _serve(conn: Connection, make: Callable[[], LoadProvider]) -> None:
    asyncio.run(_serve_async(conn, make))


async def _serve_async(conn: Connection, make: Callable[[], LoadProvider]) -> None:
    loop = asyncio.get_running_loop()
    provider = make()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", provider.completions)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    port = runner.addresses[0][1]
    conn.send(f"http://127.0.0.1:{port}/v1")
    stop = asyncio.Event()

    def answer(command: str) -> None:
        if command == "arrivals":
            conn.send(dict(provider.arrivals))
        elif command == "report":
            conn.send(provider.report())
        elif command == "stop":
            stop.set()

    def read() -> None:
        while True:
            try:
                command = conn.recv()
            except EOFError:
                command = "stop"
            loop.call_soon_threadsafe(answer, command)
            if command == "stop":
                return

    threading.Thread(target=read, daemon=True).start()
    await stop.wait()
    await runner.cleanup()


class LoadProviderProcess:
    """``with LoadProviderProcess(0.1) as provider``: ``base_url`` is its /v1 URL. ``make``
    builds another ``LoadProvider`` in the child (a picklable callable, such as a
    ``functools.partial`` of a subclass; the soak's adds faults)."""

    def __init__(
        self, first_token_delay: float, make: Callable[[], LoadProvider] | None = None
    ) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        make = make or functools.partial(LoadProvider, first_token_delay)
        self._process = context.Process(target=_serve, args=(child, make), daemon=True)
        self._process.start()
        child.close()
        self.base_url: str = self._conn.recv()

    def __enter__(self) -> LoadProviderProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def arrivals(self) -> dict[str, list[float]]:
        """Each tag's request arrival stamps, in order."""
        self._conn.send("arrivals")
        arrivals: dict[str, list[float]] = self._conn.recv()
        return arrivals

    def report(self) -> Any:
        """What the provider's ``report`` returns (pickled across the pipe)."""
        self._conn.send("report")
        return self._conn.recv()

    def close(self) -> None:
        if self._process.is_alive():
            self._conn.send("stop")
            self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
        self._conn.close()
