"""The mark our HTTP/2 relay puts on what it forwards to the main app, and what the app does
with it.

The relay's hop comes from loopback and carries no console token (the token header is ours
and never forwarded), while the HTTP/2 edge already applied the allow-list and the token to
the client's own address. So a request that carries this process's random mark, from
loopback, is let through the agent access check as already checked; and it never reaches the
console, whose loopback rule would take the relay for the client. The mark is dropped from
everything forwarded upstream, like the token (``wire.hop_by_hop``).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable

from aiohttp import web

from wire.hop_by_hop import RELAY_MARK_HEADER
from wire.http.agent_access import peer_address
from wire.http.responses import json_error

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CONSOLE_PREFIX = "/console"


class RelayMark:
    """One process's mark: a random secret, never logged and never sent beyond loopback."""

    def __init__(self) -> None:
        self._secret = secrets.token_urlsafe(32)

    def header(self) -> tuple[bytes, bytes]:
        return RELAY_MARK_HEADER.lower().encode("ascii"), self._secret.encode("ascii")

    def carried_by(self, request: web.Request) -> bool:
        """Whether ``request`` came through our relay: from loopback, with the mark."""
        value = request.headers.get(RELAY_MARK_HEADER)
        address = peer_address(request.remote)
        return (
            value is not None
            and address is not None
            and address.is_loopback
            and hmac.compare_digest(value.encode("utf-8", "surrogateescape"), self._secret.encode())
        )

    def register(self, app: web.Application) -> None:
        # Before the access check and the proxy fallback, so both see the decision.
        app.middlewares.insert(0, self.middleware)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        # ``request.path`` is decoded, so ``/%63onsole`` is the console too.
        path = request.path
        if (path == CONSOLE_PREFIX or path.startswith(CONSOLE_PREFIX + "/")) and self.carried_by(
            request
        ):
            return json_error(404, "not_found", "the console is served on the main listener only")
        return await handler(request)
