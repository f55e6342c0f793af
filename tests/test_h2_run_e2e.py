"""``agent.v1.AgentService/Run`` over the HTTP/2 listener, end to end: our own h2 client
(``tests/support/h2_client.py``) on real sockets, h2c and TLS, driving the same fake editor
(``CursorSession``) the HTTP/1.1 pair tests use, against the real server and fake provider."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from run import RunningServer, ServerConfig, start_server
from store import Store
from store.conversations import ConversationStore
from tests.conftest import TEST_LIMITS
from tests.support.fake_cursor import CursorSession, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from tests.support.h2_client import RUN, H2Client, H2Cursor
from wire.connect import EnvelopeReader, encode_envelope
from wire.h2_connection import H2Limits
from wire.http.limits import EdgeLimits
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

LIMITS = EdgeLimits(
    max_body_bytes=8 * 1024 * 1024,
    run_request_timeout_s=2.0,
    finished_retention_s=0.3,
    tombstone_ttl_s=60.0,
    heartbeat_interval_s=0.2,
)
OFFICIAL_CONFIG = aiserver.GetServerConfigResponse(config_version="upstream-7").SerializeToString()


def make_certificate(folder: Path) -> tuple[str, str]:
    """A throwaway self-signed certificate for 127.0.0.1, written as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cursor-server test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_path), str(key_path)


def client_tls(cert_path: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=cert_path)
    context.set_alpn_protocols(["h2"])
    return context


@pytest.fixture
async def upstream_config() -> AsyncIterator[str]:
    """Cursor's backend: a GetServerConfig answer and an echo for any other unary call."""

    async def server_config(request: web.Request) -> web.Response:
        return web.Response(body=OFFICIAL_CONFIG, content_type="application/proto")

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        return web.Response(
            status=200,
            body=b"upstream:" + body,
            headers={"x-upstream-path": request.path, "connection": "keep-alive"},
        )

    app = web.Application()
    for path in ("/aiserver.v1.AiService/GetServerConfig",
                 "/aiserver.v1.ServerConfigService/GetServerConfig"):
        app.router.add_post(path, server_config)
    app.router.add_route("*", "/{tail:.*}", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}"
    await runner.cleanup()


StartH2 = Callable[..., Awaitable[RunningServer]]


@pytest.fixture
async def make_h2(upstream_config: str, server_store: Store) -> AsyncIterator[StartH2]:
    started: list[RunningServer] = []

    async def make(
        *, h2: bool = True, tls: tuple[str, str] | None = None, h2_limits: H2Limits = H2Limits()
    ) -> RunningServer:
        config = ServerConfig(
            host="127.0.0.1",
            port=0,
            upstream_url=upstream_config,
            limits=LIMITS,
            h2_listen=("127.0.0.1", 0) if h2 else None,
            tls=tls,
            h2_limits=h2_limits,
        )
        server = await start_server(config, store=server_store)
        started.append(server)
        return server

    yield make
    for server in started:
        await server.stop()


async def connect(server: RunningServer, tls: ssl.SSLContext | None = None) -> H2Client:
    assert server.h2 is not None
    return await H2Client.connect(server.h2.address, tls=tls)


def run_status(store: Store, run_id: str) -> str | None:
    run = ConversationStore(store.database).run(run_id)
    return None if run is None else run.status


def tool_turn(fake: FakeProvider, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hello from the workspace\n")
    call = FakeToolCall("call_read", "Read", [json.dumps({"path": str(workspace / "notes.txt")})])
    fake.enqueue(Script.sse(chat_events(tools=[call])))
    fake.enqueue(Script.sse(chat_events(text=["It says hello."])))


# ---- a whole tool turn ----


@pytest.mark.parametrize("transport", ["h2c", "tls"])
async def test_a_tool_turn_over_run(
    transport: str,
    make_h2: StartH2,
    fake: FakeProvider,
    public_id: str,
    server_store: Store,
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    tls = make_certificate(tmp_path) if transport == "tls" else None
    server = await make_h2(tls=tls)
    client = await connect(server, client_tls(tls[0]) if tls else None)
    cursor = H2Cursor(client)
    try:
        tool_turn(fake, workspace)
        session = CursorSession(cursor, f"h2-turn-{transport}", workspace=workspace)  # type: ignore[arg-type]
        log = await session.run(user_turn_message("what do my notes say?", public_id))
    finally:
        await cursor.aclose()
    assert log.end == {}
    assert "turn_ended" in log.kinds()
    results = [m for m in fake.requests[1].json["messages"] if m["role"] == "tool"]
    assert "hello from the workspace" in results[0]["content"]
    # The run id is the RunRequest's, not the per-stream x-request-id.
    assert run_status(server_store, f"h2-turn-{transport}") == "completed"
