"""``GET /console/api/connection``: whether a Cursor client has reached the agent RPCs yet."""

from __future__ import annotations

import httpx
from aiohttp import web

from console.connection_api import ConnectionApi
from store.base.clock import now_ms
from tests.conftest import StartServer
from tests.support.fake_cursor import FakeCursor, heartbeat_message, run_request_message
from wire.http.agent_activity import MAX_CLIENT_VERSION_CHARS, AgentActivity

VERSION = "1.7.44"


async def test_status_before_and_after_a_cursor_request(make_server: StartServer) -> None:
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as console:
        before = await console.get("/console/api/connection")
        assert before.status_code == 200, before.text
        assert before.json() == {
            "listen_address": server.address,
            "backend_url": f"http://{server.address}",
            "last_agent_request_ms": None,
            "client_version": None,
            "agent_requests": 0,
            # No model is enabled: Auto goes to Cursor's backend.
            "auto": {
                "goes_to": "cursor",
                "because": "no-model",
                "public_id": None,
                "display_name": None,
                "enabled": True,
            },
            "drift": [],  # nothing Cursor sent yet that is not known here
        }
        # Console, model-list and proxied requests are not Cursor's agent RPCs.
        await console.get("/console/api/providers")
        await console.post("/aiserver.v1.AiService/AvailableModels", content=b"")
        assert (await console.get("/console/api/connection")).json()["agent_requests"] == 0

        started_ms = now_ms()
        cursor = FakeCursor(
            f"http://{server.address}", headers={"x-cursor-client-version": VERSION}
        )
        try:
            stream = await cursor.open_run_sse("req-connect")
            assert (await cursor.append("req-connect", 0, run_request_message())).status_code == 200
            await stream.read_to_end()
        finally:
            await cursor.aclose()
        ended_ms = now_ms()

        after = (await console.get("/console/api/connection")).json()
        assert after["agent_requests"] == 2
        assert after["client_version"] == VERSION
        assert started_ms <= after["last_agent_request_ms"] <= ended_ms
        assert after["listen_address"] == server.address


async def test_a_request_without_the_version_keeps_the_last_one(make_server: StartServer) -> None:
    server = await make_server()
    versioned = FakeCursor(f"http://{server.address}", headers={"x-cursor-client-version": VERSION})
    plain = FakeCursor(f"http://{server.address}")
    try:
        await versioned.append("req-v", 0, heartbeat_message())
        refused = await plain.append_raw(b"\xff not a request")
        assert refused.status_code == 400  # refused, but the client did reach us
    finally:
        await versioned.aclose()
        await plain.aclose()
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as console:
        status = (await console.get("/console/api/connection")).json()
    assert (status["agent_requests"], status["client_version"]) == (2, VERSION)


async def test_the_status_needs_the_token_when_one_is_set(make_server: StartServer) -> None:
    token = "connection-token-0123456789"
    server = await make_server(console_token=token)
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as console:
        assert (await console.get("/console/api/connection")).status_code == 401
        headers = {"authorization": f"Bearer {token}"}
        allowed = await console.get("/console/api/connection", headers=headers)
        assert allowed.json()["agent_requests"] == 0


def test_a_long_client_version_is_cut() -> None:
    activity = AgentActivity(clock=lambda: 42)
    activity.record("v" * (MAX_CLIENT_VERSION_CHARS + 50))
    seen = activity.snapshot()
    assert seen.client_version == "v" * MAX_CLIENT_VERSION_CHARS
    assert (seen.last_request_ms, seen.requests) == (42, 1)


async def test_a_wildcard_bind_names_the_interface_the_console_reached() -> None:
    """Bound to 0.0.0.0 Cursor needs a concrete address: the one this request came in on
    (the routes run here on a loopback app told it listens on every interface)."""
    app = web.Application()
    ConnectionApi(AgentActivity(clock=lambda: 0), listen_host="0.0.0.0").register(app)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    try:
        async with httpx.AsyncClient(timeout=10.0) as client:
            status = (await client.get(f"http://127.0.0.1:{port}/console/api/connection")).json()
    finally:
        await runner.cleanup()
    assert status["listen_address"] == f"0.0.0.0:{port}"
    assert status["backend_url"] == f"http://127.0.0.1:{port}"
