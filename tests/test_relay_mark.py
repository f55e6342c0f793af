"""The main app's side of the HTTP/2 relay's mark, over a real socket: a request with this
process's mark never reaches the console, however its path is spelled; without the mark (or
with another) the console is served as before."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from aiohttp import web

from wire.http.relay_mark import RelayMark


@pytest.fixture
async def marked_app() -> AsyncIterator[tuple[str, RelayMark]]:
    mark = RelayMark()
    app = web.Application()

    async def console(request: web.Request) -> web.Response:
        return web.Response(text="console")

    app.router.add_get("/console/api/providers", console)
    mark.register(app)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}", mark
    await runner.cleanup()


@pytest.mark.parametrize("path", ["/console/api/providers", "/%63onsole/api/providers"])
async def test_a_marked_request_never_reaches_the_console(
    path: str, marked_app: tuple[str, RelayMark]
) -> None:
    base, mark = marked_app
    name, value = mark.header()
    async with httpx.AsyncClient(trust_env=False) as client:
        marked = await client.get(base + path, headers={name.decode(): value.decode()})
        forged = await client.get(base + path, headers={name.decode(): "guessed"})
        plain = await client.get(base + path)
    assert marked.status_code == 404 and marked.json()["code"] == "not_found"
    assert (forged.status_code, forged.text) == (200, "console")
    assert (plain.status_code, plain.text) == (200, "console")
