"""``GET /console/api/connection``: the "Connect Cursor" step, has a Cursor client reached us yet.

The counts come from the edge's ``AgentActivity`` recorder (with a database, the record every
server instance adds to); the addresses from the socket the console's own request came in on,
so port 0 shows the port actually bound.
"""

from __future__ import annotations

import ipaddress

import msgspec
import peewee
from aiohttp import web

from wire.http.agent_activity import AgentActivity
from wire.http.responses import json_error

CONNECTION_PATH = "/console/api/connection"


class ConnectionStatus(msgspec.Struct, frozen=True):
    listen_address: str
    backend_url: str
    last_agent_request_ms: int | None
    client_version: str | None
    agent_requests: int


def host_port(host: str, port: int) -> str:
    """``host:port``, IPv6 in brackets (the startup line's form)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _is_unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


class ConnectionApi:
    """Reads the recorder; ``listen_host`` is the configured bind address."""

    def __init__(self, activity: AgentActivity, listen_host: str) -> None:
        self._activity = activity
        self._listen_host = listen_host

    def register(self, app: web.Application) -> None:
        app.router.add_get(CONNECTION_PATH, self.connection, allow_head=False)

    async def connection(self, request: web.Request) -> web.StreamResponse:
        """``backend_url`` is what to give Cursor's ``--test-backend-url``: the bind address, or,
        bound to every interface (0.0.0.0, ::), the interface this request reached."""
        transport = request.transport
        sockname = None if transport is None else transport.get_extra_info("sockname")
        if not sockname:
            return json_error(503, "unavailable", "the connection closed")
        local_host, port = str(sockname[0]), int(sockname[1])
        url_host = local_host if _is_unspecified(self._listen_host) else self._listen_host
        try:
            seen = await self._activity.current()
        except peewee.DatabaseError:
            return json_error(503, "unavailable", "the database did not answer")
        status = ConnectionStatus(
            listen_address=host_port(self._listen_host, port),
            backend_url=f"http://{host_port(url_host, port)}",
            last_agent_request_ms=seen.last_request_ms,
            client_version=seen.client_version,
            agent_requests=seen.requests,
        )
        return web.Response(body=msgspec.json.encode(status), content_type="application/json")
