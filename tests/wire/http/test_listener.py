"""The main listener's header clock on its own (``wire.http.listener``), on a real socket: it
times a request's head, never an idle kept-alive connection, whatever the client sends
between requests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from wire.http.limits import EdgeLimits
from wire.http.listener import ConnectionGuard, GuardedRunner, track_requests

TIMEOUT_S = 0.5


@pytest.fixture
async def port() -> AsyncIterator[int]:
    async def early(request: web.Request) -> web.Response:
        return web.Response(text="early")  # answers before reading its body

    app = web.Application(middlewares=[track_requests])
    app.router.add_post("/early", early)
    guard = ConnectionGuard(EdgeLimits(header_timeout_s=TIMEOUT_S))
    runner = GuardedRunner(app, guard, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield runner.addresses[0][1]
    await runner.cleanup()


async def quiet_for(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Nothing arrives (no 408, no close) for ``seconds``."""
    try:
        await asyncio.wait_for(reader.read(1), seconds)
    except TimeoutError:
        return True
    return False


@pytest.mark.parametrize(
    ("request_bytes", "after"),
    [
        # The body arrives after the handler answered: aiohttp drains it, then idles.
        (b"POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n", b"0123456789"),
        # A blank line between requests (RFC 9112 section 2.2 lets a client send one).
        (b"POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", b"\r\n"),
    ],
    ids=["late-body", "blank-line"],
)
async def test_what_follows_a_request_does_not_start_the_header_clock(
    port: int, request_bytes: bytes, after: bytes
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request_bytes)
        await writer.drain()
        assert (await reader.readuntil(b"early")).startswith(b"HTTP/1.1 200")
        writer.write(after)
        await writer.drain()
        assert await quiet_for(reader, 3 * TIMEOUT_S)  # idle, not timed
        writer.write(b"POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        assert (await reader.readuntil(b"early")).startswith(b"HTTP/1.1 200")
    finally:
        writer.close()


async def test_a_next_request_sent_slowly_is_timed(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        await reader.readuntil(b"early")
        writer.write(b"POST /ear")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 5)
        assert answer.startswith(b"HTTP/1.1 408 ")
    finally:
        writer.close()
