"""Beyond loopback the HTTP/2 listener asks what the main one asks (``CURSOR_AGENT_ALLOW``
and the console token), for ``Run`` and for every relayed path: the relay's own loopback hop
never stands in for the client's address."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import AsyncIterator
from typing import Protocol

import httpx
import pytest

from actors.conversation.secret import Secret
from actors.server.compose import RunningServer, ServerConfig, start_server
from store import Store
from tests.support.h2_client import RUN, H2Client
from tests.support.h2_servers import LIMITS, upstream_config
from wire.http.agent_access import LOOPBACK_NETWORKS, TOKEN_HEADER, Network

__all__ = ["upstream_config"]

TOKEN = "h2-access-token-0123456789"
PATH = "/aiserver.v1.AiService/GetServerConfig"


class WideH2(Protocol):
    """Starts a server with an HTTP/2 listener on every address that allows ``allow``."""

    async def __call__(
        self, allow: tuple[Network, ...], host: str = "127.0.0.1"
    ) -> RunningServer: ...


@pytest.fixture
async def wide_h2(upstream_config: str, server_store: Store) -> AsyncIterator[WideH2]:
    started: list[RunningServer] = []

    async def make(allow: tuple[Network, ...], host: str = "127.0.0.1") -> RunningServer:
        config = ServerConfig(
            host=host,
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


async def answer_of(
    server: RunningServer, path: str, headers: dict[str, str]
) -> tuple[dict[str, str], bytes]:
    assert server.h2 is not None
    port = server.h2.address.rsplit(":", 1)[1]
    client = await H2Client.connect(f"127.0.0.1:{port}")
    try:
        stream = client.open(path, {"content-type": "application/proto", **headers})
        await stream.send(b"", end=True)
        return dict(await stream.headers()), await stream.body()
    finally:
        await client.aclose()


async def status_of(server: RunningServer, path: str, headers: dict[str, str]) -> tuple[str, bytes]:
    answer, body = await answer_of(server, path, headers)
    return answer[":status"], body


@pytest.mark.parametrize("path", [PATH, RUN])
async def test_without_the_token_or_from_outside_the_allow_list_nothing_gets_in(
    path: str, wide_h2: WideH2
) -> None:
    allowed = await wide_h2(LOOPBACK_NETWORKS)
    status, body = await status_of(allowed, path, {})
    assert status == "403"
    assert TOKEN_HEADER in json.loads(body)["message"]
    elsewhere = await wide_h2((ipaddress.ip_network("10.0.0.0/8"),))
    status, body = await status_of(elsewhere, path, {TOKEN_HEADER.lower(): TOKEN})
    assert status == "403"
    assert "CURSOR_AGENT_ALLOW" in json.loads(body)["message"]


async def test_an_allowed_client_with_the_token_is_served(wide_h2: WideH2) -> None:
    server = await wide_h2(LOOPBACK_NETWORKS)
    status, _ = await status_of(server, PATH, {TOKEN_HEADER.lower(): TOKEN})
    assert status == "200"


async def test_with_both_listeners_beyond_loopback_a_relayed_request_is_served_once_checked(
    wide_h2: WideH2,
) -> None:
    """The relay's hop carries no token (it is never forwarded): the main app lets it in by
    the private socket it arrived on (``wire.http.relay_socket``), which nothing sent can forge."""
    server = await wide_h2(LOOPBACK_NETWORKS, host="0.0.0.0")
    status, _ = await status_of(server, PATH, {TOKEN_HEADER.lower(): TOKEN})
    assert status == "200"
    answer, body = await answer_of(server, "/aiserver.v1.AiService/Other", {"x-token": "t"})
    assert answer[":status"] == "403"  # the edge still checks the client itself
    answer, body = await answer_of(
        server, "/aiserver.v1.AiService/Other", {TOKEN_HEADER.lower(): TOKEN}
    )
    assert answer[":status"] == "200" and body == b"upstream:"
    names = answer["x-upstream-header-names"].split(",")
    assert "x-cursor-server-relay" not in names and TOKEN_HEADER.lower() not in names


async def test_a_header_claiming_the_relay_gets_nothing_past_the_main_listener(
    wide_h2: WideH2,
) -> None:
    server = await wide_h2(LOOPBACK_NETWORKS, host="0.0.0.0")
    async with httpx.AsyncClient(trust_env=False) as client:
        response = await client.post(
            f"http://127.0.0.1:{server.address.rsplit(':', 1)[1]}{PATH}",
            headers={"x-cursor-server-relay": "guessed", "content-type": "application/proto"},
        )
    assert response.status_code == 403


@pytest.mark.parametrize("path", ["/console/api/providers", "/%63onsole/api/providers"])
async def test_the_console_is_not_reachable_through_the_relay_however_spelled(
    path: str, wide_h2: WideH2
) -> None:
    server = await wide_h2(LOOPBACK_NETWORKS)
    status, body = await status_of(server, path, {TOKEN_HEADER.lower(): TOKEN})
    assert status == "404", body
    assert b"main listener only" in body


async def test_a_balancers_healthz_needs_neither_token_nor_allow_list_on_the_h2_listener(
    wide_h2: WideH2,
) -> None:
    """As on the main listener: the probe carries no secret and learns only ok or not."""
    server = await wide_h2((ipaddress.ip_network("10.0.0.0/8"),))
    assert server.h2 is not None
    port = server.h2.address.rsplit(":", 1)[1]
    client = await H2Client.connect(f"127.0.0.1:{port}")
    try:
        for path in ("/healthz", "/healthz?from=balancer"):
            stream = client.open(path, {}, method="GET")
            await stream.send(b"", end=True)
            assert (await stream.headers())[":status"] == "200"
            assert json.loads(await stream.body()) == {"status": "ok"}
        # Anything else on that path, or a path near it, is checked as every request is.
        for method, path in (("POST", "/healthz"), ("GET", "/healthz/x"), ("GET", "/%68ealthz")):
            stream = client.open(path, {}, method=method)
            await stream.send(b"", end=True)
            assert (await stream.headers())[":status"] == "403", (method, path)
    finally:
        await client.aclose()


async def test_metrics_are_not_served_through_the_relay(wide_h2: WideH2) -> None:
    """``GET /metrics`` is the main listener's: relayed, even from an allowed peer with the
    token, it is 404 (the relay's loopback hop must not pass for a loopback scraper)."""
    server = await wide_h2(LOOPBACK_NETWORKS)
    assert server.h2 is not None
    port = server.h2.address.rsplit(":", 1)[1]
    client = await H2Client.connect(f"127.0.0.1:{port}")
    try:
        stream = client.open("/metrics", {TOKEN_HEADER.lower(): TOKEN}, method="GET")
        await stream.send(b"", end=True)
        assert (await stream.headers())[":status"] == "404"
        assert b"main listener only" in await stream.body()
    finally:
        await client.aclose()
