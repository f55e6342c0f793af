"""The peer channel over a real loopback socket (``wire.http.peer_channel``): calls from many
tasks at once each get their own reply; a channel that breaks with calls outstanding fails
them all (``PeerChannelBroken``) and the next call opens a new one; a peer nobody listens for
is ``PeerUnreachable``."""

from __future__ import annotations

import asyncio
import json
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
from wire.http.peer_forwarding import new_peer_session
from wire.peer_frames import AppendCall, AppendReply

LIMIT = 1024 * 1024
REPLY_S = 0.5


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
        if call.body == b"freeze":
            await asyncio.sleep(3600)
        if call.body == b"boom":
            raise RuntimeError("the holder's handler failed")
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
        channel = PeerChannel(session, url, "token", LIMIT, reply_timeout_s=REPLY_S)
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
        channel = PeerChannel(session, url, "token", LIMIT, reply_timeout_s=REPLY_S)
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
        channel = PeerChannel(
            session, f"http://127.0.0.1:{port}", "token", LIMIT, reply_timeout_s=REPLY_S
        )
        with pytest.raises(PeerUnreachable):
            await channel.call((), b"anyone?")


@pytest.mark.allows_error_lines
async def test_a_handler_that_fails_is_answered_internal_and_the_channel_goes_on(
    holder: tuple[Holder, str], caplog: pytest.LogCaptureFixture
) -> None:
    _, url = holder
    async with aiohttp.ClientSession() as session:
        channel = PeerChannel(session, url, "token", LIMIT, reply_timeout_s=REPLY_S)
        failed = await channel.call((), b"boom")
        assert failed.status == 500
        assert json.loads(failed.body)["code"] == "internal"
        assert (await channel.call((), b"next")).body == b"txen"
        await channel.close()
    assert "forwarded append failed" in caplog.text


async def test_a_holder_that_never_replies_fails_the_call_in_its_time(
    holder: tuple[Holder, str],
) -> None:
    _, url = holder
    async with aiohttp.ClientSession() as session:
        channel = PeerChannel(session, url, "token", LIMIT, reply_timeout_s=REPLY_S)
        started = asyncio.get_running_loop().time()
        with pytest.raises(PeerChannelBroken, match="no reply"):
            await channel.call((), b"freeze")
        assert asyncio.get_running_loop().time() - started < REPLY_S + 2
        await channel.close()


async def test_the_peer_session_adds_no_header_the_client_did_not_send() -> None:
    seen: list[dict[str, str]] = []

    async def echo(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.Response()

    app = web.Application()
    app.router.add_post("/x", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    session = new_peer_session()
    try:
        async with session.post(f"http://{host}:{port}/x", data=b"body", headers={"X-A": "1"}):
            pass
    finally:
        await session.close()
        await runner.cleanup()
    sent = {name.lower() for name in seen[0]}
    assert not sent & {"accept", "accept-encoding", "user-agent", "content-type"}, sent
    assert "x-a" in sent
