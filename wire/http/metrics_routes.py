"""``GET /metrics``: the server's metrics in Prometheus' text format, for a scraper.

Who may scrape, on the main listener only (never relayed from the HTTP/2 listener, never
proxied upstream): a client on loopback that addresses the server by a loopback name (as the
console without a token: a web page whose DNS name rebinds to 127.0.0.1 gets nothing), a client
on a network of ``CURSOR_METRICS_ALLOW``, or any client sending the console token as
``Authorization: Bearer <token>``. The token is compared through the server's one wrong-token
throttle (429 with ``Retry-After`` once a peer sent too many wrong ones). A refused scrape gets
401 (no or a wrong token, when a token is set) or 403 (no token is set) with ``{code,
message}``; the metrics never depend on what a refused client sent.

The text is made off the event loop (the estimated cost reads the store once per scrape).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiohttp import web

from wire.edge_rules import hostname_of, is_loopback_name
from wire.http.agent_access import AccessRefusal, Network, TokenCheck, throttled_refusal
from wire.http.responses import json_error
from wire.peers import peer_address

METRICS_PATH = "/metrics"
METRICS_ALLOW_VARIABLE = "CURSOR_METRICS_ALLOW"


class MetricsAccess:
    """The scrape's access rule. ``networks``: ``CURSOR_METRICS_ALLOW``'s (may be empty);
    ``check_token``: the server's throttled token comparison, None when no token is set."""

    def __init__(self, networks: tuple[Network, ...], check_token: TokenCheck | None) -> None:
        self._networks = networks
        self._check_token = check_token

    def refusal(
        self, remote: str | None, host: str, authorization: str | None
    ) -> AccessRefusal | None:
        """Why a scrape from ``remote`` (addressed to ``host``) is refused, or None."""
        address = peer_address(remote)
        if address is not None:
            if address.is_loopback and is_loopback_name(hostname_of(host)):
                return None
            if any(address in network for network in self._networks):
                return None
        if self._check_token is None:
            return AccessRefusal(
                403,
                "permission_denied",
                f"metrics are served to this machine (addressed as localhost, 127.0.0.1 or "
                f"[::1]) and to the networks in {METRICS_ALLOW_VARIABLE}",
            )
        scheme, _, credentials = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not credentials.strip():
            return AccessRefusal(
                401,
                "unauthenticated",
                f"send the console token as a bearer token, or add this client's network to "
                f"{METRICS_ALLOW_VARIABLE}",
            )
        verdict = self._check_token(remote, credentials.strip())
        if verdict.retry_after_s is not None:
            return throttled_refusal(verdict)
        if not verdict.matched:
            return AccessRefusal(
                401, "unauthenticated", "the bearer token is not this server's console token"
            )
        return None


class MetricsRoutes:
    """``render`` makes the text (blocking: run on a thread); ``content_type`` names its format."""

    def __init__(
        self, render: Callable[[], bytes], content_type: str, access: MetricsAccess
    ) -> None:
        self._render = render
        self._content_type = content_type
        self._access = access

    def register(self, app: web.Application) -> None:
        app.router.add_get(METRICS_PATH, self.metrics)

    async def metrics(self, request: web.Request) -> web.Response:
        refused = self._access.refusal(
            request.remote, request.host, request.headers.get("Authorization")
        )
        if refused is not None:
            response = json_error(refused.status, refused.code, refused.message)
            if refused.status == 401:
                response.headers["WWW-Authenticate"] = 'Bearer realm="cursor-server metrics"'
            if refused.retry_after_s is not None:
                response.headers["Retry-After"] = str(refused.retry_after_s)
            return response
        body = await asyncio.to_thread(self._render)
        response = web.Response(body=body, headers={"Cache-Control": "no-store"})
        response.headers["Content-Type"] = self._content_type
        return response
