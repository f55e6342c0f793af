"""The first middleware of the main app: one decision per request, made on the matched route,
before any guard or the proxy sees it (the rules themselves are ``wire.edge_rules``).

In order: a target that not every reader reads alike is 400; the request's kind comes from
the route aiohttp matched (``RouteKind``); the client's address is settled (``peer_of``: the
TCP peer's, or for a request our HTTP/2 relay brought, the HTTP/2 client's, which only the
relay's own socket can name); a relayed request (``RelaySocket``) never reaches the console
and was already let in by that edge's allow-list and token; beyond loopback the allow-list
and token come next for every other agent RPC and proxied request (a peer throttled for
wrong tokens gets 429 with ``Retry-After``, its token unread); the browser rules (Host
on a loopback listener, a foreign ``Origin``, Connect content types) then apply to every
agent RPC and proxied request, relayed ones included, against the listener the client used.
The console's own guard and then the proxy fallback run after this, in that order
(``wire.http.app``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from wire.burst_log import RefusalLog
from wire.edge_rules import RouteKind, browser_refusal, route_kind, target_refusal
from wire.hop_by_hop import ACCESS_TOKEN_HEADER, RELAY_PEER_HEADER
from wire.http.agent_access import AccessRefusal, AgentAccess
from wire.http.health_routes import HEALTH_PATH
from wire.http.metrics_routes import METRICS_PATH
from wire.http.relay_socket import RelaySocket
from wire.http.responses import json_error

logger = logging.getLogger("cursor_server.edge.gate")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# What the gate decided, for the middlewares and handlers after it.
KIND_KEY = web.RequestKey("route_kind", RouteKind)
PEER_KEY = web.RequestKey("peer", str)


def kind_of(request: web.Request) -> RouteKind:
    """The kind the gate gave ``request`` (it runs first, so every request has one)."""
    return request[KIND_KEY]


def peer_of(request: web.Request) -> str:
    """The client's address: the TCP peer's, or for a request our HTTP/2 relay brought, the
    HTTP/2 client's (which only the relay's own socket can say)."""
    return request[PEER_KEY]


class EdgeGate:
    """The gate of one app. ``loopback_listener``: the main listener is bound to loopback;
    ``relay``: the HTTP/2 relay's socket and whether that listener is on loopback;
    ``access``: the allow-list and token of a main listener bound beyond loopback."""

    def __init__(
        self,
        *,
        loopback_listener: bool,
        access: AgentAccess | None = None,
        relay: RelaySocket | None = None,
        relay_loopback: bool = True,
    ) -> None:
        self._loopback_listener = loopback_listener
        self._access = access
        self._relay = relay
        self._relay_loopback = relay_loopback
        # One line per burst of refusals from a peer, not one per request.
        self._refusals = RefusalLog(logger)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        target = target_refusal(request.raw_path)
        if target is not None:
            return self._refuse(request, 400, "invalid_argument", target)
        resource = request.match_info.route.resource
        matched = request.match_info.http_exception is None and resource is not None
        canonical = resource.canonical if matched and resource is not None else None
        kind = route_kind(request.path, canonical, HEALTH_PATH, METRICS_PATH)
        request[KIND_KEY] = kind
        relayed = self._relay is not None and self._relay.carries(request)
        request[PEER_KEY] = (
            request.headers.get(RELAY_PEER_HEADER, "") if relayed else (request.remote or "")
        )
        if relayed and kind is RouteKind.CONSOLE:
            return json_error(404, "not_found", "the console is served on the main listener only")
        if relayed and kind is RouteKind.METRICS:
            return json_error(404, "not_found", "metrics are served on the main listener only")
        if self._access is not None and not relayed and kind in (RouteKind.AGENT, RouteKind.PROXY):
            denied = self._access.refusal(request.remote, request.headers.get(ACCESS_TOKEN_HEADER))
            if denied is not None:
                return self._deny(request, denied)
        refusal = browser_refusal(
            kind,
            loopback_listener=self._relay_loopback if relayed else self._loopback_listener,
            host=request.host,
            origin=request.headers.get("Origin"),
            content_type=request.headers.get("Content-Type"),
            method=request.method,
        )
        if refusal is not None:
            return self._refuse(request, refusal.status, refusal.code, refusal.message)
        return await handler(request)

    def _deny(self, request: web.Request, denied: AccessRefusal) -> web.Response:
        """The access check's answer; a throttled or burst attempt was logged by the throttle."""
        if not denied.quiet:
            return self._refuse(request, denied.status, denied.code, denied.message, "agent")
        response = json_error(denied.status, denied.code, denied.message)
        if denied.retry_after_s is not None:
            response.headers["Retry-After"] = str(denied.retry_after_s)
        return response

    def _refuse(
        self, request: web.Request, status: int, code: str, message: str, what: str = "edge"
    ) -> web.Response:
        self._refusals(
            what,
            status,
            request.remote,
            method=request.method,
            path=request.raw_path,
            reason=message,
        )
        return json_error(status, code, message)
