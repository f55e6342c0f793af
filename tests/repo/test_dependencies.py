"""Dependencies we declare for a reason other than importing them ourselves."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from importlib.machinery import ModuleSpec
from typing import Any

import httpx
import pytest
from aiohttp import web


class ImportSpy:
    """A meta path finder that only notes which modules the import system went looking for
    (a module already imported is never looked for again)."""

    def __init__(self) -> None:
        self.looked_for: list[str] = []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        self.looked_for.append(name)
        return None  # the next finders decide


@pytest.fixture
def import_spy() -> Iterator[ImportSpy]:
    spy = ImportSpy()
    sys.meta_path.insert(0, spy)
    yield spy
    sys.meta_path.remove(spy)


async def test_an_httpx_request_looks_for_no_module(import_spy: ImportSpy) -> None:
    """httpcore runs ``import sniffio`` on every request; since anyio stopped depending on
    sniffio, a missing one is a failed import (Python does not cache those) on each request,
    which made every provider request several times slower. We declare sniffio ourselves."""
    app = web.Application()

    async def answer(request: web.Request) -> web.Response:
        return web.Response(body=b"ok")

    app.router.add_post("/", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        async with httpx.AsyncClient() as client:
            await client.post(f"http://{host}:{port}/", content=b"x")  # everything loaded once
            import_spy.looked_for.clear()
            response = await client.post(f"http://{host}:{port}/", content=b"x")
        assert response.content == b"ok"
        assert import_spy.looked_for == []
    finally:
        await runner.cleanup()
