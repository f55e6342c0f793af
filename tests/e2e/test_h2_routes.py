"""Everything but ``Run`` on the HTTP/2 listener, and the transport ``GetServerConfig`` tells
the editor: the upstream's answer a byte-exact prefix, our two fields after it."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from actors.server.compose import RunningServer
from tests.support.h2_client import ClientStream, H2Client
from tests.support.h2_servers import (
    BIG_BODY,
    OFFICIAL_CONFIG,
    StartH2,
    connect,
    make_h2,
    upstream_config,
)
from wire.default_model import DEFAULT_MODEL_ROUTES, DefaultKind
from wire.h2_connection import H2Limits
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver
from wire.server_config import SERVER_CONFIG_ROUTES

__all__ = ["make_h2", "upstream_config"]  # fixtures shared with the Run tests

PROTO = {"content-type": "application/proto", "connect-protocol-version": "1"}


async def h1_post(server: RunningServer, path: str, body: bytes = b"") -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://{server.address}") as client:
        return await client.post(path, content=body, headers=PROTO)


async def h2_post(client: H2Client, path: str, body: bytes = b"") -> tuple[dict[str, str], bytes]:
    stream = client.open(path, PROTO)
    await stream.send(body, end=True)
    headers = await stream.headers()
    return headers, await stream.body()


@pytest.mark.parametrize("path", SERVER_CONFIG_ROUTES)
async def test_without_the_listener_the_editor_is_told_to_use_http1(
    path: str, make_h2: StartH2
) -> None:
    server = await make_h2(h2=False)
    response = await h1_post(server, path)
    assert response.status_code == 200
    assert response.content.startswith(OFFICIAL_CONFIG)
    config = aiserver.GetServerConfigResponse.FromString(response.content)
    assert config.config_version == "upstream-7"  # the upstream's own fields survive
    assert config.http2_config == aiserver.HTTP2_CONFIG_FORCE_ALL_DISABLED
    assert config.agent_url_config.agent_url == f"http://{server.address}"
    assert config.agent_url_config.agentn_url == f"http://{server.address}"


@pytest.mark.parametrize("path", SERVER_CONFIG_ROUTES)
async def test_with_the_listener_the_agent_urls_point_at_it(path: str, make_h2: StartH2) -> None:
    server = await make_h2()
    assert server.h2 is not None
    # Asked over HTTP/1.1 and over HTTP/2: the same answer.
    response = await h1_post(server, path)
    client = await connect(server)
    try:
        headers, body = await h2_post(client, path)
    finally:
        await client.aclose()
    assert headers[":status"] == "200"
    for answer in (response.content, body):
        assert answer.startswith(OFFICIAL_CONFIG)
        config = aiserver.GetServerConfigResponse.FromString(answer)
        assert config.http2_config == aiserver.HTTP2_CONFIG_UNSPECIFIED
        assert config.agent_url_config.agentn_url == f"http://{server.h2.address}"
        assert config.agent_url_config.agent_url == f"http://{server.h2.address}"
    # 0 is written explicitly, so it replaces an upstream's FORCE_ALL_DISABLED.
    assert b"\x38\x00" in body[len(OFFICIAL_CONFIG) :]


@pytest.mark.parametrize("h2", [False, True], ids=["http1", "http2"])
async def test_a_public_url_is_where_the_agent_urls_point(h2: bool, make_h2: StartH2) -> None:
    """Behind a balancer: CURSOR_PUBLIC_URL names the balancer's frontend for the protocol
    the answer gives, whichever listener was asked and by whatever address."""
    server = await make_h2(h2=h2, public_url="http://balancer.example:3001")
    answers = [(await h1_post(server, SERVER_CONFIG_ROUTES[0])).content]
    if h2:
        client = await connect(server)
        try:
            answers.append((await h2_post(client, SERVER_CONFIG_ROUTES[1]))[1])
        finally:
            await client.aclose()
    for answer in answers:
        assert answer.startswith(OFFICIAL_CONFIG)
        config = aiserver.GetServerConfigResponse.FromString(answer)
        assert config.http2_config == (
            aiserver.HTTP2_CONFIG_UNSPECIFIED if h2 else aiserver.HTTP2_CONFIG_FORCE_ALL_DISABLED
        )
        assert config.agent_url_config.agent_url == "http://balancer.example:3001"
        assert config.agent_url_config.agentn_url == "http://balancer.example:3001"


async def test_the_catalog_splice_works_over_http2(make_h2: StartH2, public_id: str) -> None:
    server = await make_h2()
    client = await connect(server)
    try:
        headers, body = await h2_post(client, "/agent.v1.AgentService/GetUsableModels", b"q")
    finally:
        await client.aclose()
    assert headers[":status"] == "200"
    official = b"upstream:q"  # the stand-in upstream's answer
    assert body.startswith(official)
    added = agent.GetUsableModelsResponse.FromString(body[len(official) :])
    assert [m.model_id for m in added.models] == [public_id]


async def test_a_unary_call_is_proxied_over_http2_without_hop_by_hop_fields(
    make_h2: StartH2,
) -> None:
    server = await make_h2()
    client = await connect(server)
    try:
        stream = client.open(
            "/aiserver.v1.DashboardService/GetTeams",
            {**PROTO, "te": "trailers", "x-cursor-client-version": "1.2.3"},
        )
        await stream.send(b"\x0a\x01x", end=True)
        headers = await stream.headers()
        body = await stream.body()
    finally:
        await client.aclose()
    assert headers[":status"] == "200"
    assert body == b"upstream:\x0a\x01x"
    assert headers["x-upstream-path"] == "/aiserver.v1.DashboardService/GetTeams"
    assert "connection" not in headers and "keep-alive" not in headers
    assert "transfer-encoding" not in headers
    assert all(name == name.lower() for name in headers)
    # Nothing the client did not send reaches the upstream: no HTTP client defaults of ours,
    # no peer header of our relay.
    received = set(headers["x-upstream-header-names"].split(","))
    assert not received & {"user-agent", "accept", "accept-encoding", "x-cursor-server-peer"}
    assert "x-cursor-client-version" in received


async def test_a_path_that_is_not_ascii_is_refused_without_an_error_line(
    make_h2: StartH2, caplog: pytest.LogCaptureFixture
) -> None:
    server = await make_h2()
    client = await connect(server)
    try:
        # Raw bytes: our own client (rightly) cannot encode such a path.
        stream_id = client.conn.get_next_available_stream_id()
        stream = ClientStream(client, stream_id, auto_ack=True)
        client.streams[stream_id] = stream
        fields = [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"127.0.0.1")]
        client.conn.send_headers(
            stream_id, [*fields, (b":path", b"/healthz?\xff")], end_stream=True
        )
        client.flush()
        headers = await stream.headers()
        body = await stream.body()
    finally:
        await client.aclose()
    assert headers[":status"] == "400"
    assert b"not ASCII" in body
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_the_console_is_not_served_over_http2(make_h2: StartH2) -> None:
    server = await make_h2()
    client = await connect(server)
    try:
        stream = client.open("/console/api/providers", method="GET", end=True)
        headers = await stream.headers()
        await stream.body()
    finally:
        await client.aclose()
    assert headers[":status"] == "404"


@pytest.mark.parametrize("path", list(DEFAULT_MODEL_ROUTES))
async def test_the_cli_default_model_routes_name_the_first_enabled_model(
    path: str, make_h2: StartH2, public_id: str
) -> None:
    server = await make_h2()
    client = await connect(server)
    try:
        headers, body = await h2_post(client, path)
    finally:
        await client.aclose()
    assert headers[":status"] == "200"
    match DEFAULT_MODEL_ROUTES[path]:
        case DefaultKind.FOR_CLI:
            model = agent.GetDefaultModelForCliResponse.FromString(body).model
            assert (model.model_id, model.display_name) == (public_id, "Fake")
        case DefaultKind.DEFAULT:
            default = aiserver.GetDefaultModelResponse.FromString(body)
            assert (default.model, default.thinking_model, default.max_mode) == (
                public_id,
                public_id,
                False,
            )
        case DefaultKind.NUDGE:
            nudge = aiserver.GetDefaultModelNudgeDataResponse.FromString(body)
            assert not nudge.should_default_switch_on_new_chat
            assert list(nudge.models_with_no_default_switch) == [public_id]


async def test_without_an_enabled_model_the_default_model_is_a_clear_error(
    make_h2: StartH2,
) -> None:
    server = await make_h2(h2=False)
    response = await h1_post(server, "/agent.v1.AgentService/GetDefaultModelForCli")
    assert response.status_code == 400
    assert response.json()["code"] == "failed_precondition"
    assert "enable one in the console" in response.json()["message"]


async def test_a_slow_reader_never_makes_the_relay_buffer_without_bound(make_h2: StartH2) -> None:
    """An 8 MiB proxied answer to a client that stops reading: the server holds at most its
    pending bound (plus one chunk) for the stream; once the client reads, all of it arrives."""
    limits = H2Limits(max_pending_per_stream=256 * 1024)
    server = await make_h2(h2_limits=limits)
    assert server.h2 is not None
    client = await connect(server)
    try:
        stream = client.open("/big", method="GET", end=True, auto_ack=False)
        assert (await stream.headers())[":status"] == "200"
        await asyncio.sleep(0.5)  # the upstream would have sent everything by now
        (connection,) = server.h2.connections
        pending = connection.pending(stream.stream_id)
        assert 0 < pending <= limits.max_pending_per_stream + 65536
        assert stream.received <= 65535  # the client's window, never more
        total = 0
        while (chunk := await stream.read()) is not None:
            total += len(chunk)
            if chunk:
                stream.ack(len(chunk))
    finally:
        await client.aclose()
    assert total == BIG_BODY
