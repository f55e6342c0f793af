"""Who may use the agent RPCs when the server listens beyond loopback.

On a loopback listener only this machine can connect, and nothing here applies. Bound to any
other address, every request outside ``/console`` (RunSSE, BidiAppend, the model lists, the
upstream proxy, and any agent route added later) must come from a network in
``CURSOR_AGENT_ALLOW`` (unset: loopback only) and carry the console token in
``X-Cursor-Server-Token``. A refused client gets 403 ``{code, message}`` and a log line with
its address, and nothing it sent reaches Cursor's backend. ``/console`` keeps its own guard
(``console.auth``); ``GET /healthz`` needs neither, so a balancer's probe works from anywhere.

Why a header of our own: ``Authorization`` already carries the user's Cursor token, which the
proxy must pass upstream unchanged. Cursor cannot be told to add a header to its backend
requests, so beyond loopback the editor reaches the server through something that adds it (a
reverse proxy or tunnel on the editor's machine). The header is never forwarded upstream
(``wire.hop_by_hop``).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from wire.hop_by_hop import ACCESS_TOKEN_HEADER
from wire.http.health_routes import HEALTH_PATH
from wire.http.responses import json_error
from wire.log import log_event

logger = logging.getLogger("cursor_server.edge.access")

ALLOW_VARIABLE = "CURSOR_AGENT_ALLOW"
TOKEN_HEADER = ACCESS_TOKEN_HEADER
CONSOLE_PREFIX = "/console"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK_NETWORKS: tuple[Network, ...] = (
    ipaddress.IPv4Network("127.0.0.0/8"),
    ipaddress.IPv6Network("::1/128"),
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def parse_allow_list(value: str) -> tuple[Network, ...]:
    """``CURSOR_AGENT_ALLOW``: networks in CIDR form (a bare address is one host), separated
    by commas or spaces; ``ValueError`` naming the entry that is not one."""
    entries = value.replace(",", " ").split()
    if not entries:
        raise ValueError("empty; list networks such as 10.0.0.0/8, or unset it (loopback only)")
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry, strict=True))
        except ValueError as exc:
            raise ValueError(f"{entry!r} is not a network in CIDR form: {exc}") from None
    return tuple(networks)


def peer_address(remote: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The peer's IP (an IPv4-mapped IPv6 peer as its IPv4 address), or None if it has none."""
    try:
        address = ipaddress.ip_address(remote or "")
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class AgentAccess:
    """The allow-list and the token check in front of every non-console route."""

    def __init__(
        self,
        networks: tuple[Network, ...],
        token_matches: Callable[[str], bool],
        relayed: Callable[[web.Request], bool] | None = None,
    ) -> None:
        self._networks = networks
        self._token_matches = token_matches
        # Requests our HTTP/2 relay forwards, already checked at that edge (``relay_mark``).
        self._relayed = relayed

    def register(self, app: web.Application) -> None:
        # First of all middlewares: the proxy fallback forwards unmatched requests upstream
        # from its own middleware, so a refusal must come before it runs.
        app.middlewares.insert(0, self.middleware)

    def refusal(self, remote: str | None, token: str | None) -> str | None:
        """Why a request from ``remote`` with ``token`` is refused, or None to let it in."""
        address = peer_address(remote)
        if address is None or not any(address in network for network in self._networks):
            return (
                f"agent requests from {remote or 'an unknown address'} are not accepted: "
                f"add its network to {ALLOW_VARIABLE}"
            )
        if token is None:
            return f"agent requests to this server need the console token in {TOKEN_HEADER}"
        if not self._token_matches(token.strip()):
            return f"the token in {TOKEN_HEADER} is not this server's console token"
        return None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        if path == CONSOLE_PREFIX or path.startswith(CONSOLE_PREFIX + "/"):
            return await handler(request)
        if path == HEALTH_PATH and request.method in ("GET", "HEAD") and _is_health(request):
            # A balancer's probe: it carries no secret and learns only ok or unavailable.
            return await handler(request)
        if self._relayed is not None and self._relayed(request):
            return await handler(request)
        reason = self.refusal(request.remote, request.headers.get(TOKEN_HEADER))
        if reason is None:
            return await handler(request)
        log_event(
            logger,
            logging.WARNING,
            "agent request refused",
            peer=request.remote,
            method=request.method,
            path=path,
            reason=reason,
        )
        return json_error(403, "permission_denied", reason)


def _is_health(request: web.Request) -> bool:
    """The health route answers it (it exists only with a store): never the proxy fallback,
    which would carry an unchecked request to Cursor's backend."""
    resource = request.match_info.route.resource
    return resource is not None and resource.canonical == HEALTH_PATH
