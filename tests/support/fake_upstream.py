"""Cursor's backend as a relayed run sees it: RunSSE answered from a script, appends recorded."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from tests.support.client_left import client_left_quietly
from tests.support.fake_cursor import BIDI_APPEND, RUN_SSE
from wire.connect import data_frame, end_stream_frame
from wire.proto import agent_v1_pb2 as agent


def text_frame(text: str) -> bytes:
    return data_frame(
        agent.AgentServerMessage(
            interaction_update=agent.InteractionUpdate(text_delta=agent.TextDeltaUpdate(text=text))
        )
    )


# What the upstream's RunSSE answers: real frames, cut into pieces that straddle envelopes.
SCRIPTED = text_frame("from ") + text_frame("Cursor's model") + end_stream_frame()
PIECES = [SCRIPTED[:3], SCRIPTED[3:17], SCRIPTED[17:40], SCRIPTED[40:]]


class FakeUpstream:
    """Cursor's backend as the relay sees it: records requests, answers RunSSE from a script."""

    def __init__(self) -> None:
        self.run_sse: list[tuple[bytes, list[tuple[str, str]]]] = []
        self.appends: list[tuple[bytes, list[tuple[str, str]]]] = []
        self.others: list[str] = []  # any other request: "METHOD /path"
        self.pieces = PIECES
        self.hold_open = False  # keep the RunSSE open (quiet) after the script
        self.run_sse_left = asyncio.Event()  # the relay closed an open RunSSE
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _run_sse(self, request: web.Request) -> web.StreamResponse:
        self.run_sse.append((await request.read(), list(request.headers.items())))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            for piece in self.pieces:
                await response.write(piece)
                await asyncio.sleep(0.01)
            while self.hold_open and request.transport and not request.transport.is_closing():
                await asyncio.sleep(0.05)
        finally:
            # Set however the stream ended (the relay may close it during the script).
            if self.hold_open:
                self.run_sse_left.set()
        await response.write_eof()
        return response

    async def _append(self, request: web.Request) -> web.Response:
        self.appends.append((await request.read(), list(request.headers.items())))
        return web.Response(
            status=200,
            body=b"upstream-ack",
            headers={"Content-Type": "application/proto", "X-Upstream": "yes"},
        )

    async def _other(self, request: web.Request) -> web.Response:
        await request.read()
        self.others.append(f"{request.method} {request.raw_path}")
        return web.Response(status=299, body=b"upstream-other")

    async def start(self) -> None:
        app = web.Application(middlewares=[client_left_quietly])
        app.router.add_post(RUN_SSE, self._run_sse)
        app.router.add_post(BIDI_APPEND, self._append)
        app.router.add_route("*", "/{tail:.*}", self._other)
        self._runner = web.AppRunner(app, handler_cancellation=True, auto_decompress=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


@pytest.fixture
async def fake_upstream() -> AsyncIterator[FakeUpstream]:
    upstream = FakeUpstream()
    await upstream.start()
    yield upstream
    await upstream.stop()
