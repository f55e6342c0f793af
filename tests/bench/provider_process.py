"""The fake provider in a process of its own, for the benchmarks.

A real provider is another machine: its answers do not wait for the editor's work. When the
fake provider shared the bench's event loop with the fake Cursor client, a request's arrival
was stamped only once the client had finished what it was doing (parsing frames, hashing
blobs, posting acks), and that wait was counted as server overhead. Here it has its own
interpreter; the bench drives it over a pipe: ``enqueue`` answers once the scripts are
queued, ``request_times`` returns the arrival stamps (``time.perf_counter``, which is
CLOCK_MONOTONIC on Linux and so comparable across processes).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from multiprocessing.connection import Connection
from typing import Any

from tests.support.fake_provider import FakeProvider, Script


def _serve(conn: Connection) -> None:
    asyncio.run(_serve_async(conn))


async def _serve_async(conn: Connection) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    async with FakeProvider(check_bodies=False) as fake:
        conn.send(fake.base_url)

        def answer(command: str, payload: Any) -> None:
            """Runs on the loop, so the queue and the stamps are read where they are written."""
            if command == "enqueue":
                fake.enqueue(*payload)
                conn.send(None)
            elif command == "times":
                conn.send(list(fake.request_times))
            elif command == "stop":
                stop.set()

        def read() -> None:
            while True:
                try:
                    command, payload = conn.recv()
                except EOFError:
                    command, payload = "stop", None
                loop.call_soon_threadsafe(answer, command, payload)
                if command == "stop":
                    return

        threading.Thread(target=read, daemon=True).start()
        await stop.wait()


class ProviderProcess:
    """Start with ``with ProviderProcess() as provider``; ``base_url`` is its /v1 URL."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        child.close()
        self.base_url: str = self._conn.recv()

    def __enter__(self) -> ProviderProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def enqueue(self, *scripts: Script) -> None:
        """Queue answers for the next requests; returns once they are queued."""
        self._conn.send(("enqueue", scripts))
        self._conn.recv()

    def request_times(self) -> list[float]:
        """When each request so far arrived, in order."""
        self._conn.send(("times", None))
        times: list[float] = self._conn.recv()
        return times

    def close(self) -> None:
        if self._process.is_alive():
            self._conn.send(("stop", None))
            self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
        self._conn.close()
