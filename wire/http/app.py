"""Builds the aiohttp application: the listener's request tracking, the gate, the guards,
exact local routes, and the reverse proxy for the rest, last."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from wire.edge_rules import RouteKind
from wire.http.gate import EdgeGate, kind_of
from wire.http.listener import track_requests
from wire.http.proxy import ReverseProxy
from wire.http.responses import json_error

PROXY_KEY = web.AppKey("proxy", ReverseProxy)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def proxy_unmatched(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Send every request the gate found no local route for upstream; the last middleware,
    so every guard has run. The server never answers those itself, except under /console,
    which is never proxied (``RouteKind.CONSOLE`` even when nothing matched)."""
    kind = kind_of(request)
    if kind is RouteKind.PROXY:
        return await request.app[PROXY_KEY].forward_unserved(request)
    if request.match_info.http_exception is not None:
        return json_error(404, "not_found", f"no console page {request.path}")
    return await handler(request)


def add_guard(app: web.Application, guard: Middleware) -> None:
    """Add a middleware after the gate and the guards before it, before the proxy."""
    app.middlewares.insert(len(app.middlewares) - 1, guard)


def build_app(proxy: ReverseProxy, gate: EdgeGate) -> web.Application:
    """The application with the gate and the proxy fallback; local routes and guards are added
    by their owners."""
    app = web.Application(middlewares=[track_requests, gate.middleware, proxy_unmatched])
    app[PROXY_KEY] = proxy
    return app
