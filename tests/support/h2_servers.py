"""The HTTP/2 tests' shared parts: a throwaway certificate, Cursor's backend answering
GetServerConfig, and servers started with the HTTP/2 listener (h2c or TLS)."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from actors.server.compose import RunningServer, ServerConfig, start_server
from store import Store
from tests.support.client_left import client_left_quietly
from tests.support.h2_client import H2Client
from wire.h2_connection import H2Limits
from wire.http.limits import EdgeLimits
from wire.proto import aiserver_v1_pb2 as aiserver

LIMITS = EdgeLimits(
    max_body_bytes=8 * 1024 * 1024,
    run_request_timeout_s=2.0,
    finished_retention_s=0.3,
    tombstone_ttl_s=60.0,
    heartbeat_interval_s=0.2,
)
BIG_BODY = 8 * 1024 * 1024  # the stand-in upstream's /big answer
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
            headers={
                "x-upstream-path": request.path,
                "x-upstream-header-names": ",".join(sorted(k.lower() for k in request.headers)),
                "connection": "keep-alive",
            },
        )

    async def big(request: web.Request) -> web.StreamResponse:
        """BIG_BODY bytes, streamed in 64 KiB writes (each waits for the socket to drain)."""
        response = web.StreamResponse(headers={"content-type": "application/octet-stream"})
        await response.prepare(request)
        chunk = b"b" * 65536
        for _ in range(BIG_BODY // len(chunk)):
            await response.write(chunk)
        await response.write_eof()
        return response

    app = web.Application(middlewares=[client_left_quietly])
    app.router.add_get("/big", big)
    for path in (
        "/aiserver.v1.AiService/GetServerConfig",
        "/aiserver.v1.ServerConfigService/GetServerConfig",
    ):
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
        *,
        h2: bool = True,
        tls: tuple[str, str] | None = None,
        h2_limits: H2Limits | None = None,
        limits: EdgeLimits = LIMITS,
        public_url: str | None = None,
    ) -> RunningServer:
        config = ServerConfig(
            host="127.0.0.1",
            port=0,
            upstream_url=upstream_config,
            limits=limits,
            h2_listen=("127.0.0.1", 0) if h2 else None,
            tls=tls,
            h2_limits=h2_limits or H2Limits(),
            public_url=public_url,
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
