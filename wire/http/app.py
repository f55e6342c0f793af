"""Builds the aiohttp application: exact local routes, and the reverse proxy for the rest."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from wire.http.proxy import ReverseProxy

PROXY_KEY = web.AppKey("proxy", ReverseProxy)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def proxy_unmatched(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Send every request that no exact local route (method and path) matches upstream.

    aiohttp resolves routes before middlewares run; an unmatched path or method leaves an
    ``http_exception`` (404/405) on ``match_info``. The server never answers those itself.
    """
    if request.match_info.http_exception is not None:
        return await request.app[PROXY_KEY].forward(request)
    return await handler(request)


def build_app(proxy: ReverseProxy) -> web.Application:
    """The application with the proxy fallback; local routes are added by their owners."""
    app = web.Application(middlewares=[proxy_unmatched])
    app[PROXY_KEY] = proxy
    return app
