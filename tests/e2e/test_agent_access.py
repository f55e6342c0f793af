"""Agent RPCs beyond loopback (``wire.http.agent_access``): bound to 0.0.0.0, only peers in
``CURSOR_AGENT_ALLOW`` with the console token get through; refused ones get 403
``{code, message}``, a log line with their address, and nothing reaches Cursor's backend."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from actors.conversation.secret import Secret
from actors.server.compose import RunningServer, ServerConfig, start_server
from actors.server.settings import load_settings
from console.auth import ConsoleAuth
from store import Store
from tests.conftest import TEST_LIMITS
from tests.support.process import ServerProcess, server_env
from wire.http.agent_access import (
    LOOPBACK_NETWORKS,
    TOKEN_HEADER,
    AccessRefusal,
    AgentAccess,
    parse_allow_list,
)
from wire.http.agent_routes import RUN_SSE_PATH

TOKEN = "console-token-0123456789"
MODELS_PATH = "/aiserver.v1.AiService/AvailableModels"


class Upstream:
    """Cursor's backend stand-in: records each request with its headers."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.url = ""


@pytest.fixture
async def backend() -> AsyncIterator[Upstream]:
    upstream = Upstream()

    async def record(request: web.Request) -> web.Response:
        upstream.seen.append((request.path, dict(request.headers)))
        return web.Response(status=299, text="upstream")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    upstream.url = f"http://{host}:{port}"
    yield upstream
    await runner.cleanup()


async def serve_wide(
    backend: Upstream, store: Store, allow: str | None = None
) -> tuple[RunningServer, httpx.AsyncClient]:
    config = ServerConfig(
        host="0.0.0.0",
        port=0,
        upstream_url=backend.url,
        limits=TEST_LIMITS,
        console_token=Secret(TOKEN),
        agent_allow=LOOPBACK_NETWORKS if allow is None else parse_allow_list(allow),
    )
    server = await start_server(config, store=store)
    return server, httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}")


def test_the_allow_list_is_cidr_networks_and_a_bad_one_is_named() -> None:
    assert [str(n) for n in parse_allow_list("10.0.0.0/8, 192.168.1.7 ::1")] == [
        "10.0.0.0/8",
        "192.168.1.7/32",
        "::1/128",
    ]
    for bad, words in (("10.0.0.1/8", "host bits set"), ("lan", "'lan'"), (" ,", "empty")):
        with pytest.raises(ValueError, match=words):
            parse_allow_list(bad)
    env = {"CURSOR_LISTEN_ADDR": "0.0.0.0:3000", "CURSOR_CONSOLE_TOKEN": TOKEN}
    assert load_settings(env).agent_allow == LOOPBACK_NETWORKS
    allowed = load_settings({**env, "CURSOR_AGENT_ALLOW": "10.1.0.0/16"}).agent_allow
    assert [str(n) for n in allowed] == ["10.1.0.0/16"]


def reason_of(refusal: AccessRefusal | None) -> str:
    assert refusal is not None and (refusal.status, refusal.code) == (403, "permission_denied")
    return refusal.message


def test_the_decision_needs_an_allowed_network_and_the_token() -> None:
    auth = ConsoleAuth(Secret(TOKEN))
    access = AgentAccess(
        parse_allow_list("10.0.0.0/8"), functools.partial(auth.check_token, via="agent")
    )
    assert access.refusal("10.2.3.4", TOKEN) is None
    assert access.refusal("::ffff:10.2.3.4", TOKEN) is None  # a dual-stack listener's peer
    assert "127.0.0.1 are not accepted: add its network to CURSOR_AGENT_ALLOW" in reason_of(
        access.refusal("127.0.0.1", TOKEN)
    )
    assert access.refusal(None, TOKEN) is not None
    assert "need the console token in X-Cursor-Server-Token" in reason_of(
        access.refusal("10.2.3.4", None)
    )
    refusal = reason_of(access.refusal("10.2.3.4", "guess-guess-guess"))
    assert "not this server's console token" in refusal and "guess" not in refusal


async def test_a_loopback_peer_with_the_token_gets_through_and_the_token_stays_here(
    backend: Upstream, server_store: Store
) -> None:
    server, client = await serve_wide(backend, server_store)
    try:
        answer = await client.post(
            "/aiserver.v1.DashboardService/GetTeams",
            headers={TOKEN_HEADER: TOKEN, "Authorization": "Bearer cursor-user-token"},
            content=b"x",
        )
        assert answer.status_code == 299
        ((path, headers),) = backend.seen
        assert path == "/aiserver.v1.DashboardService/GetTeams"
        assert headers["Authorization"] == "Bearer cursor-user-token"  # Cursor's own, passed on
        assert TOKEN_HEADER.lower() not in {name.lower() for name in headers}
    finally:
        await client.aclose()
        await server.stop()


async def test_without_the_token_every_agent_route_is_refused_and_nothing_goes_upstream(
    backend: Upstream, server_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    server, client = await serve_wide(backend, server_store)
    try:
        for path in (RUN_SSE_PATH, MODELS_PATH, "/aiserver.v1.DashboardService/GetTeams"):
            for headers in ({}, {TOKEN_HEADER: "wrong-token-wrong-token"}):
                answer = await client.post(path, headers=headers, content=b"x")
                assert answer.status_code == 403, path
                assert answer.json()["code"] == "permission_denied"
                assert TOKEN_HEADER in answer.json()["message"]
        assert backend.seen == []
        assert "agent request refused peer=127.0.0.1" in caplog.text
        # A balancer's health probe needs no token (and tells nothing but the store's state).
        health = await client.get("/healthz")
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        assert (await client.post("/healthz", content=b"x")).status_code == 403
        assert "wrong-token" not in caplog.text
        # The console keeps its own guard: its session route answers without the agent token.
        session = await client.get("/console/api/session")
        assert session.status_code == 200 and session.json()["auth_required"] is True
    finally:
        await client.aclose()
        await server.stop()


async def test_a_peer_outside_the_allowed_networks_is_refused_even_with_the_token(
    backend: Upstream, server_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    server, client = await serve_wide(backend, server_store, allow="10.0.0.0/8,192.168.0.0/16")
    try:
        for path in (RUN_SSE_PATH, MODELS_PATH, "/aiserver.v1.DashboardService/GetTeams"):
            answer = await client.post(path, headers={TOKEN_HEADER: TOKEN}, content=b"x")
            assert answer.status_code == 403
            assert answer.json() == {
                "code": "permission_denied",
                "message": "agent requests from 127.0.0.1 are not accepted: add its network "
                "to CURSOR_AGENT_ALLOW",
            }
        assert backend.seen == []
        # One line for the burst of three (wire.burst_log), not one per request.
        assert caplog.text.count("agent request refused peer=127.0.0.1") == 1
    finally:
        await client.aclose()
        await server.stop()


@pytest.mark.process
async def test_run_py_bound_to_all_addresses_applies_the_allow_list(
    backend: Upstream, tmp_path: Path
) -> None:
    """``python run.py`` on 0.0.0.0: the startup line names the networks; a loopback peer is
    refused while they exclude it and let through (with the token) by the default."""
    for allow, expected in (("10.0.0.0/8", 403), (None, 299)):
        extra = {} if allow is None else {"CURSOR_AGENT_ALLOW": allow}
        env = server_env(
            tmp_path,
            CURSOR_LISTEN_ADDR="0.0.0.0:0",
            CURSOR_CONSOLE_TOKEN=TOKEN,
            CURSOR_UPSTREAM_URL=backend.url,
            **extra,
        )
        server = ServerProcess(env)
        try:
            port = (await asyncio.to_thread(server.wait_for_address)).rsplit(":", 1)[1]
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                answer = await client.post(
                    "/aiserver.v1.DashboardService/GetTeams",
                    headers={TOKEN_HEADER: TOKEN},
                    content=b"x",
                )
            assert answer.status_code == expected, answer.text
        finally:
            server.stop()
        shown = allow or "127.0.0.0/8,::1/128"
        assert f"agent_allow={shown}" in server.log
        if expected == 403:
            assert "agent request refused peer=127.0.0.1" in server.log
            assert backend.seen == []
    assert [path for path, _ in backend.seen] == ["/aiserver.v1.DashboardService/GetTeams"]
    assert TOKEN not in server.log
