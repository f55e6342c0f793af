"""The provider client keeps the connections a burst of calls opened, for the next burst: with
more calls at once than httpx keeps by default (20), each later call used to open a connection
of its own (a TLS handshake, with a real provider). Real sockets: an aiohttp server on loopback
counting the connections it accepted."""

from __future__ import annotations

import asyncio

from aiohttp import web

from actors.providers.transport import new_provider_client

CALLS_AT_ONCE = 40  # twice httpx's default keep-alive pool


async def test_a_second_burst_of_calls_reuses_the_first_bursts_connections() -> None:
    connections: set[object] = set()
    waiting = [0]
    release = asyncio.Event()

    async def answer(request: web.Request) -> web.Response:
        connections.add(request.transport)
        waiting[0] += 1
        await release.wait()  # every call of the burst holds its connection at once
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    client = new_provider_client()
    try:
        for _burst in range(2):
            release.clear()
            waiting[0] = 0
            calls = [
                asyncio.create_task(client.post(f"http://127.0.0.1:{port}/v1/chat/completions"))
                for _ in range(CALLS_AT_ONCE)
            ]
            while waiting[0] < CALLS_AT_ONCE:
                await asyncio.sleep(0.01)
            release.set()
            assert all(r.status_code == 200 for r in await asyncio.gather(*calls))
        assert len(connections) == CALLS_AT_ONCE
    finally:
        await client.aclose()
        await runner.cleanup()
