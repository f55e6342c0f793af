"""``GET /healthz``: the balancer's health check answers from the server itself, 200 while the
store answers and 503 when it fails or hangs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
from aiohttp import web

from actors.server.compose import RunningServer
from wire.http import health_routes
from wire.http.health_routes import HealthRoutes


async def test_healthz_is_200_while_the_store_answers(server: RunningServer) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"http://{server.address}/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response.headers["cache-control"] == "no-store"


@pytest.fixture
async def serve_check() -> AsyncIterator[Callable[[Callable[[], Awaitable[None]]], Awaitable[str]]]:
    runners: list[web.AppRunner] = []

    async def start(check: Callable[[], Awaitable[None]]) -> str:
        app = web.Application()
        HealthRoutes(check).register(app)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        host, port = runner.addresses[0][:2]
        return f"http://{host}:{port}/healthz"

    yield start
    for runner in runners:
        await runner.cleanup()


async def test_healthz_is_503_when_the_store_fails(
    serve_check: Callable[[Callable[[], Awaitable[None]]], Awaitable[str]],
) -> None:
    async def failing() -> None:
        raise ConnectionError("database down")

    url = await serve_check(failing)
    async with httpx.AsyncClient() as client:
        response = await client.get(url)
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "reason": "the store failed: ConnectionError",
    }


async def test_healthz_is_503_when_the_store_hangs(
    serve_check: Callable[[Callable[[], Awaitable[None]]], Awaitable[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(health_routes, "HEALTH_TIMEOUT_S", 0.05)

    async def hanging() -> None:
        await asyncio.sleep(10)

    url = await serve_check(hanging)
    async with httpx.AsyncClient() as client:
        response = await client.get(url)
    assert response.status_code == 503
    assert response.json()["reason"] == "the store did not answer within 0.05 s"
