"""Issue 18 item 5 on the HTTP/2 listener: every model-list route a Cursor CLI (or the
editor) asks is spliced there as on the main listener, and a server-streaming Connect call
to Cursor's backend is relayed as a stream (each message as the upstream sends it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from tests.support.h2_servers import StartH2, connect, make_h2
from wire.connect import EnvelopeReader, encode_envelope
from wire.model_catalog import CATALOG_ROUTES, CatalogKind
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

__all__ = ["make_h2"]

PROTO = {"content-type": "application/proto", "connect-protocol-version": "1"}
STREAMING = "/aiserver.v1.AiService/StreamSomething"


class Upstream:
    """Cursor's backend: a fixed answer per model-list route and a server stream that sends
    its second message only once released."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.official: dict[str, bytes] = {
            "/aiserver.v1.AiService/AvailableModels": aiserver.AvailableModelsResponse(
                model_names=["official-a"]
            ).SerializeToString(),
            "/agent.v1.AgentService/GetUsableModels": agent.GetUsableModelsResponse(
                models=[agent.ModelDetails(model_id="official-b")]
            ).SerializeToString(),
            "/aiserver.v1.AiService/GetUsableModels": agent.GetUsableModelsResponse(
                models=[agent.ModelDetails(model_id="official-c")]
            ).SerializeToString(),
        }

    async def catalog(self, request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=self.official[request.path], content_type="application/proto")

    async def stream(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"content-type": "application/connect+proto"})
        await response.prepare(request)
        await response.write(encode_envelope(0, b"first"))
        await self.release.wait()
        await response.write(encode_envelope(0, b"second"))
        await response.write(encode_envelope(2, b"{}"))
        await response.write_eof()
        return response


@pytest.fixture
def upstream() -> Upstream:
    return Upstream()


@pytest.fixture
async def upstream_config(upstream: Upstream) -> AsyncIterator[str]:
    """Overrides the shared stand-in upstream for ``make_h2`` in this module."""
    app = web.Application()
    for path in CATALOG_ROUTES:
        app.router.add_post(path, upstream.catalog)
    app.router.add_post(STREAMING, upstream.stream)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}"
    upstream.release.set()
    await runner.cleanup()


@pytest.mark.parametrize("path", list(CATALOG_ROUTES))
async def test_every_model_list_route_is_spliced_over_http2(
    path: str, make_h2: StartH2, upstream: Upstream, public_id: str
) -> None:
    server = await make_h2()
    client = await connect(server)
    try:
        stream = client.open(path, PROTO)
        await stream.send(b"", end=True)
        headers = await stream.headers()
        body = await stream.body()
    finally:
        await client.aclose()
    assert headers[":status"] == "200"
    official = upstream.official[path]
    assert body.startswith(official)  # the upstream's bytes untouched, ours after them
    match CATALOG_ROUTES[path]:
        case CatalogKind.AVAILABLE_MODELS:
            merged = aiserver.AvailableModelsResponse.FromString(body)
            assert list(merged.model_names) == ["official-a", public_id]
            assert [m.name for m in merged.models] == [public_id]
        case CatalogKind.USABLE_MODELS:
            ids = [m.model_id for m in agent.GetUsableModelsResponse.FromString(body).models]
            assert ids[1:] == [public_id]


async def test_a_server_streaming_call_is_relayed_message_by_message(
    make_h2: StartH2, upstream: Upstream
) -> None:
    server = await make_h2()
    client = await connect(server)
    try:
        stream = client.open(STREAMING, {**PROTO, "content-type": "application/connect+proto"})
        await stream.send(encode_envelope(0, b"ask"), end=True)
        assert (await stream.headers())[":status"] == "200"
        reader = EnvelopeReader()
        chunk = await stream.read()
        assert chunk is not None
        first = reader.feed(chunk)
        # The first message arrives while the upstream still holds the second.
        assert [e.payload for e in first] == [b"first"]
        upstream.release.set()
        rest = reader.feed(await stream.body())
    finally:
        await client.aclose()
    assert [e.payload for e in rest] == [b"second", b"{}"]
    assert rest[-1].is_end_stream
