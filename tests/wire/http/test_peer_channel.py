"""The peer channel over a real loopback socket (``wire.http.peer_channel``): calls from many
tasks at once each get their own reply; a channel that breaks with calls outstanding fails
them all (``PeerChannelBroken``) and the next call opens a new one; a peer nobody listens for
is ``PeerUnreachable``."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from wire.http.peer_channel import (
    CHANNEL_PATH,
    PeerChannel,
    PeerChannelBroken,
    PeerUnreachable,
    serve_channel,
)
from wire.peer_frames import AppendCall, AppendReply

LIMIT = 1024 * 1024


class Holder:
    """A channel server whose answer to a call is its body reversed, after a delay the body
    names; a body of ``b"drop"`` makes it close the channel instead."""

    def __init__(self) -> None:
        self.channels = 0
        self.stop: asyncio.Event = asyncio.Event()

    async def handle(self, call: AppendCall) -> AppendReply:
        if call.body == b"drop":
            self.stop.set()
            await asyncio.sleep(3600)
        await asyncio.sleep(0.01 * (len(call.body) % 5))
        return AppendReply(0, 200, "", call.headers, call.body[::-1])

    async def route(self, request: web.Request) -> web.StreamResponse:
        self.channels += 1
        serving = asyncio.ensure_future(serve_channel(request, self.handle, LIMIT))
        stopping = asyncio.ensure_future(self.stop.wait())
        await asyncio.wait((serving, stopping), return_when=asyncio.FIRST_COMPLETED)
        if stopping.done():
            self.stop.clear()
            serving.cancel()
            assert request.transport is not None
            request.transport.abort()
        stopping.cancel()
        return web.Response()


@pytest.fixture
async def holder() -> AsyncIterator[tuple[Holder, str]]:
    served = Holder()
    app = web.Application()
    app.router.add_get(CHANNEL_PATH, served.route)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    yield served, f"http://{host}:{port}"
    await runner.cleanup()


async def test_calls_from_many_tasks_each_get_their_own_reply(
    holder: tuple[Holder, str],
) -> None:
    served, url = holder
    async with aiohttp.ClientSession() as session:
        channel = PeerChannel(session, url, "token", LIMIT)
        bodies = [f"append {i}".encode() for i in range(40)]
        replies = await asyncio.gather(
            *(channel.call(((b"x-n", str(i).encode()),), body) for i, body in enumerate(bodies))
        )
        assert [r.body for r in replies] == [b[::-1] for b in bodies]
        assert [r.headers for r in replies] == [((b"x-n", str(i).encode()),) for i in range(40)]
        assert served.channels == 1  # one channel for all of them
        await channel.close()


async def test_a_broken_channel_fails_its_waiting_calls_and_the_next_call_reopens(
    holder: tuple[Holder, str],
) -> None:
    served, url = holder
    async with aiohttp.ClientSession() as session:
        channel = PeerChannel(session, url, "token", LIMIT)
        waiting = asyncio.ensure_future(channel.call((), b"slow one, waiting"))
        await asyncio.sleep(0)
        with pytest.raises(PeerChannelBroken):
            await channel.call((), b"drop")
        with pytest.raises(PeerChannelBroken):
            await waiting
        again = await channel.call((), b"after")
        assert again.body == b"retfa"
        assert served.channels == 2
        await channel.close()


async def test_a_peer_nobody_listens_for_is_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with aiohttp.ClientSession() as session:
        channel = PeerChannel(session, f"http://127.0.0.1:{port}", "token", LIMIT)
        with pytest.raises(PeerUnreachable):
            await channel.call((), b"anyone?")
