"""Beyond loopback the HTTP/2 listener asks what the main one asks (``CURSOR_AGENT_ALLOW``
and the console token), for ``Run`` and for every relayed path: the relay's own loopback hop
never stands in for the client's address."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import AsyncIterator

import pytest

from actors.conversation.secret import Secret
from run import RunningServer, ServerConfig, start_server
from store import Store
from tests.support.h2_client import RUN, H2Client
from tests.support.h2_servers import LIMITS, upstream_config
from wire.http.agent_access import LOOPBACK_NETWORKS, TOKEN_HEADER, Network

__all__ = ["upstream_config"]

TOKEN = "h2-access-token-0123456789"
PATH = "/aiserver.v1.AiService/GetServerConfig"


@pytest.fixture
async def wide_h2(upstream_config: str, server_store: Store) -> AsyncIterator[object]:
    started: list[RunningServer] = []

    async def make(allow: tuple[Network, ...]) -> RunningServer:
        config = ServerConfig(
            host="127.0.0.1",
            port=0,
            upstream_url=upstream_config,
            limits=LIMITS,
            console_token=Secret(TOKEN),
            agent_allow=allow,
            h2_listen=("0.0.0.0", 0),
        )
        server = await start_server(config, store=server_store)
        started.append(server)
        return server

    yield make
    for server in started:
        await server.stop()


async def status_of(server: RunningServer, path: str, headers: dict[str, str]) -> tuple[str, bytes]:
    assert server.h2 is not None
    port = server.h2.address.rsplit(":", 1)[1]
    client = await H2Client.connect(f"127.0.0.1:{port}")
    try:
        stream = client.open(path, {"content-type": "application/proto", **headers})
        await stream.send(b"", end=True)
        return (await stream.headers())[":status"], await stream.body()
    finally:
        await client.aclose()


@pytest.mark.parametrize("path", [PATH, RUN])
async def test_without_the_token_or_from_outside_the_allow_list_nothing_gets_in(
    path: str, wide_h2: object
) -> None:
    allowed = await wide_h2(LOOPBACK_NETWORKS)  # type: ignore[operator]
    status, body = await status_of(allowed, path, {})
    assert status == "403"
    assert TOKEN_HEADER in json.loads(body)["message"]
    elsewhere = await wide_h2((ipaddress.ip_network("10.0.0.0/8"),))  # type: ignore[operator]
    status, body = await status_of(elsewhere, path, {TOKEN_HEADER.lower(): TOKEN})
    assert status == "403"
    assert "CURSOR_AGENT_ALLOW" in json.loads(body)["message"]


async def test_an_allowed_client_with_the_token_is_served(wide_h2: object) -> None:
    server = await wide_h2(LOOPBACK_NETWORKS)  # type: ignore[operator]
    status, _ = await status_of(server, PATH, {TOKEN_HEADER.lower(): TOKEN})
    assert status == "200"
