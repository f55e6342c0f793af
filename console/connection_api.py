"""``GET /console/api/connection``: the "Connect Cursor" step, has a Cursor client reached us yet.

The counts come from the edge's ``AgentActivity`` recorder (with a database, the record every
server instance adds to); the addresses from the socket the console's own request came in on,
so port 0 shows the port actually bound. With a database it also says where Cursor's Auto runs
(the routing settings, ``store.catalog.routing``), so the page can say so, and what Cursor sent
that this server does not know (``wire.http.protocol_drift``, the record every instance adds to).
"""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Literal

import msgspec
import peewee
from aiohttp import web

from actors.run.model_selection import stored_routing
from store.catalog import ModelRecord, all_models
from wire.drift_tally import DriftRow
from wire.http.agent_activity import AgentActivity
from wire.http.protocol_drift import ProtocolDrift
from wire.http.responses import json_error
from wire.model_routing import AutoTarget, OurModel, Relay, auto_model

CONNECTION_PATH = "/console/api/connection"


Because = Literal["setting", "first-enabled", "no-model"]


class AutoStatus(msgspec.Struct, frozen=True):
    """Where Cursor's Auto goes now: one of the user's models (``model``, with its id, name and
    whether it is enabled) or Cursor's backend (``cursor``); ``because``: the Auto setting
    (``setting``), no setting and this is the first enabled model (``first-enabled``), or no
    setting and no enabled model (``no-model``)."""

    goes_to: Literal["model", "cursor"]
    because: Because
    public_id: str | None = None
    display_name: str | None = None
    enabled: bool = True


class ConnectionStatus(msgspec.Struct, frozen=True):
    listen_address: str
    backend_url: str
    last_agent_request_ms: int | None
    client_version: str | None
    agent_requests: int
    auto: AutoStatus | None = None  # None: a server without a database
    # What Cursor sent that is not known here, the latest sighting first (``wire.drift_tally``).
    drift: list[DriftRow] = msgspec.field(default_factory=list)


def auto_status(auto: AutoTarget, models: list[ModelRecord]) -> AutoStatus:
    """Where Auto goes (``wire.model_routing.auto_model``), from the Auto setting and every
    model (catalog order); pure."""
    target = auto_model(auto, [OurModel(m.public_id, m.enabled) for m in models])
    if isinstance(target, Relay):
        return AutoStatus("cursor", "setting" if auto.kind == "cursor" else "no-model")
    chosen = next((m for m in models if m.public_id == target), None)
    if chosen is None:  # deleted meanwhile (a delete forgets the setting naming it)
        return AutoStatus("model", "setting", target, None, False)
    because: Because = "setting" if auto.kind == "model" else "first-enabled"
    return AutoStatus("model", because, chosen.public_id, chosen.display_name, chosen.enabled)


def _auto_of(database: peewee.Database) -> AutoStatus:
    return auto_status(stored_routing(database).auto, all_models(database))


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

    def __init__(
        self,
        activity: AgentActivity,
        listen_host: str,
        database: peewee.Database | None = None,
        drift: ProtocolDrift | None = None,
    ) -> None:
        self._activity = activity
        self._drift = drift
        self._listen_host = listen_host
        self._database = database

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
            drift = [] if self._drift is None else await self._drift.current()
            auto = None
            if self._database is not None:
                auto = await asyncio.to_thread(_auto_of, self._database)
        except peewee.DatabaseError:
            return json_error(503, "unavailable", "the database did not answer")
        status = ConnectionStatus(
            listen_address=host_port(self._listen_host, port),
            backend_url=f"http://{host_port(url_host, port)}",
            last_agent_request_ms=seen.last_request_ms,
            client_version=seen.client_version,
            agent_requests=seen.requests,
            auto=auto,
            drift=drift,
        )
        return web.Response(body=msgspec.json.encode(status), content_type="application/json")
