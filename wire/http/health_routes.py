"""``GET /healthz``: what a load balancer's health check asks (active/standby failover).

200 ``{"status": "ok"}`` when the store answers a query within the deadline, 503
``{"status": "unavailable", "reason": ...}`` otherwise, so a balancer moves traffic off a server
whose database is gone. Never proxied upstream, needs no token, reveals nothing else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import web

HEALTH_PATH = "/healthz"
HEALTH_TIMEOUT_S = 2.0


class HealthRoutes:
    """``check`` raises (or times out) when the server cannot serve a run."""

    def __init__(self, check: Callable[[], Awaitable[None]]) -> None:
        self._check = check

    def register(self, app: web.Application) -> None:
        app.router.add_get(HEALTH_PATH, self.health)

    async def health(self, _request: web.Request) -> web.Response:
        try:
            async with asyncio.timeout(HEALTH_TIMEOUT_S):
                await self._check()
        except TimeoutError:
            return _unavailable(f"the store did not answer within {HEALTH_TIMEOUT_S:g} s")
        except Exception as exc:  # any failure of the check is the answer, never a 500
            return _unavailable(f"the store failed: {type(exc).__name__}")
        return web.json_response({"status": "ok"}, headers={"Cache-Control": "no-store"})


def _unavailable(reason: str) -> web.Response:
    return web.json_response(
        {"status": "unavailable", "reason": reason},
        status=503,
        headers={"Cache-Control": "no-store"},
    )
