"""The listener peers forward to: the run RPCs of the runs this instance holds (appends on a
peer's channel, a RunSSE as a request), and the cancel of a run another instance's newer run
superseded.

Why a listener of its own: with ``--workers`` every process shares the public port, so a peer
could not pick one process there; and what arrives here was admitted already (the balancer's
allow-list and token, the client's budgets) by the instance the client reached. Every request
must carry the peer token (``X-Cursor-Server-Peer-Token``, derived from the secret key the
instances share); without it the answer is 401 and nothing is read. It binds loopback by
default; across hosts it binds an address only the instances' network reaches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

import msgspec
from aiohttp import web

from wire.hop_by_hop import PEER_TOKEN_HEADER
from wire.http.agent_routes import AgentRoutes
from wire.http.gate import Handler
from wire.http.peer_channel import CHANNEL_PATH, serve_channel
from wire.http.peer_forwarding import is_peer_token
from wire.http.responses import json_error
from wire.log import log_event

logger = logging.getLogger("cursor_server.peers")

CANCEL_RUN_PATH: Final = "/internal/v1/cancel-run"
_MAX_CANCEL_BYTES: Final = 4096


class CancelRunRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A newer run on another instance took ``run_id``'s conversation over."""

    run_id: str
    reason: str


class PeerListener:
    """The peer app: token-checked, the held runs' RPCs and the cancel."""

    def __init__(
        self,
        token: str,
        routes: AgentRoutes,
        cancel_run: Callable[[str, str], None],
        max_body_bytes: int,
    ) -> None:
        self._token = token
        self._cancel_run = cancel_run
        self.app = web.Application(middlewares=[self._check_token])
        routes.register_held_here(self.app)
        self.app.router.add_post(CANCEL_RUN_PATH, self._cancel)
        self._max_body_bytes = max_body_bytes
        self._peer_append = routes.peer_append
        self.app.router.add_get(CHANNEL_PATH, self._channel)
        self._runner: web.AppRunner | None = None
        self.address = ""

    @web.middleware
    async def _check_token(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not is_peer_token(request.headers.get(PEER_TOKEN_HEADER), self._token):
            log_event(logger, logging.WARNING, "peer request without the peer token refused")
            return json_error(401, "unauthenticated", "this listener takes requests from peers")
        return await handler(request)

    async def _channel(self, request: web.Request) -> web.StreamResponse:
        """A peer's channel of forwarded appends (``wire.http.peer_channel``)."""
        return await serve_channel(request, self._peer_append, self._max_body_bytes)

    async def _cancel(self, request: web.Request) -> web.StreamResponse:
        body = await request.content.read(_MAX_CANCEL_BYTES + 1)
        try:
            if len(body) > _MAX_CANCEL_BYTES:
                raise msgspec.ValidationError(f"over {_MAX_CANCEL_BYTES} bytes")
            cancel = msgspec.json.decode(body, type=CancelRunRequest)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return json_error(400, "invalid_argument", f"not a cancel request: {exc}")
        log_event(logger, logging.INFO, "run cancelled by a peer", request_id=cancel.run_id)
        self._cancel_run(cancel.run_id, cancel.reason)
        return web.json_response({"cancelled": cancel.run_id})

    async def start(self, host: str, port: int) -> str:
        """Listen; the bound ``host:port``."""
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound_host, bound_port = self._runner.addresses[0][:2]
        self.address = (
            f"[{bound_host}]:{bound_port}" if ":" in bound_host else (f"{bound_host}:{bound_port}")
        )
        return self.address

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
