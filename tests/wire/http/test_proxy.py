"""The reverse proxy, end to end over real loopback sockets.

A real aiohttp (or raw asyncio) upstream, the real app from ``build_app`` served by an
``AppRunner(auto_decompress=False)`` as run.py serves it, and a real client: httpx, or raw
sockets where the exact bytes on the wire are the point. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import re
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import httpx
import msgspec
import pytest
from aiohttp import web

from wire.hop_by_hop import connection_listed, request_headers, response_headers, strip_hop_by_hop
from wire.http.app import build_app
from wire.http.gate import EdgeGate
from wire.http.proxy import ReverseProxy, new_upstream_client

TIMEOUT = 5.0
HOP_BY_HOP_NAMES = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
}


@pytest.fixture(autouse=True)
def _no_env_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The upstream client honours proxy variables; loopback tests must not go through one."""
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


# --- servers ---------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def serve(
    app: web.Application, *, handler_cancellation: bool = False
) -> AsyncIterator[web.AppRunner]:
    """Serve ``app`` on 127.0.0.1:0 the way run.py does (no request-body decompression)."""
    runner = web.AppRunner(
        app,
        auto_decompress=False,
        shutdown_timeout=1,
        handler_cancellation=handler_cancellation,
    )
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner
    finally:
        if runner.server is not None:
            await runner.cleanup()


def url_of(runner: web.AppRunner) -> str:
    host, port = runner.addresses[0][:2]
    return f"http://{host}:{port}"


@contextlib.asynccontextmanager
async def aiohttp_upstream(
    routes: Callable[[web.Application], object],
) -> AsyncIterator[str]:
    """An aiohttp upstream. Handlers are cancelled when their connection drops, so a test can
    observe the proxy closing it."""
    app = web.Application()
    routes(app)
    async with serve(app, handler_cancellation=True) as runner:
        yield url_of(runner)


@contextlib.asynccontextmanager
async def raw_upstream(respond: bytes) -> AsyncIterator[str]:
    """An upstream that answers every request with exactly ``respond`` and then hangs up."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
            writer.write(respond)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


@dataclass
class Proxied:
    url: str
    runner: web.AppRunner
    upstream_client: httpx.AsyncClient
    http: httpx.AsyncClient


@contextlib.asynccontextmanager
async def proxied(
    upstream_url: str, configure: Callable[[web.Application], object] | None = None
) -> AsyncIterator[Proxied]:
    """The real app in front of ``upstream_url``, and an httpx client pointed at it."""
    client = new_upstream_client()
    app = build_app(ReverseProxy(upstream_url + "/", client), EdgeGate(loopback_listener=False))
    if configure is not None:
        configure(app)
    async with serve(app) as runner:
        url = url_of(runner)
        async with httpx.AsyncClient(base_url=url, timeout=TIMEOUT, trust_env=False) as http:
            try:
                yield Proxied(url, runner, client, http)
            finally:
                if runner.server is not None:
                    await runner.cleanup()
                await client.aclose()


# --- raw HTTP/1.1 client ---------------------------------------------------------------------


@dataclass
class RawResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def get_all(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def names(self) -> set[str]:
        return {k.lower() for k, _ in self.headers}


async def raw_connect(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    port = int(url.rsplit(":", 1)[1])
    return await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), TIMEOUT)


async def read_response(reader: asyncio.StreamReader) -> RawResponse:
    """Parse one response exactly as it came off the wire (headers in order, repeats kept)."""

    async def bounded(awaitable: Awaitable[bytes]) -> bytes:
        return await asyncio.wait_for(awaitable, TIMEOUT)

    head = (await bounded(reader.readuntil(b"\r\n\r\n"))).decode("utf-8")
    status_line, *lines = head.split("\r\n")[:-2]
    headers = [(k, v) for k, v in (line.split(": ", 1) for line in lines)]
    response = RawResponse(int(status_line.split(" ")[1]), headers, b"")
    if response.get_all("transfer-encoding") == ["chunked"]:
        body = bytearray()
        while size := int((await bounded(reader.readline())).strip(), 16):
            body += (await bounded(reader.readexactly(size + 2)))[:-2]
        assert await bounded(reader.readline()) == b"\r\n"
        response.body = bytes(body)
    elif lengths := response.get_all("content-length"):
        response.body = await bounded(reader.readexactly(int(lengths[0])))
    else:
        response.body = await bounded(reader.read())
    return response


async def raw_exchange(url: str, request: bytes) -> RawResponse:
    reader, writer = await raw_connect(url)
    try:
        writer.write(request)
        await writer.drain()
        return await read_response(reader)
    finally:
        writer.close()


def raw_headers_of(request: web.Request) -> list[tuple[str, str]]:
    return [(k.decode(), v.decode()) for k, v in request.raw_headers]


# --- sans-IO header filtering ----------------------------------------------------------------


def test_connection_listed_names_are_case_insensitive_tokens() -> None:
    headers = [(b"Connection", b"Keep-Alive, X-Foo ,,x-bar"), (b"connection", b"Close")]
    assert connection_listed(headers) == {b"keep-alive", b"x-foo", b"x-bar", b"close"}


def test_strip_keeps_order_case_and_repeats() -> None:
    headers = [
        (b"X-A", b"1"),
        (b"CONNECTION", b"x-named"),
        (b"X-Named", b"gone"),
        (b"Keep-Alive", b"timeout=5"),
        (b"x-a", b"2"),
        (b"Proxy-Authorization", b"secret"),
        (b"Proxy-Authenticate", b"Basic"),
        (b"TE", b"trailers"),
        (b"Trailer", b"x"),
        (b"Upgrade", b"h2c"),
        (b"Set-Cookie", b"a=1"),
        (b"Set-Cookie", b"b=2"),
    ]
    expected = [(b"X-A", b"1"), (b"x-a", b"2"), (b"Set-Cookie", b"a=1"), (b"Set-Cookie", b"b=2")]
    assert response_headers(headers) == expected
    assert request_headers([*headers, (b"HOST", b"client.example")]) == expected


def test_transfer_encoding_makes_content_length_untrustworthy() -> None:
    framed = [(b"Content-Length", b"5"), (b"Transfer-Encoding", b"chunked"), (b"X", b"y")]
    assert strip_hop_by_hop(framed) == [(b"X", b"y")]
    assert strip_hop_by_hop([(b"Content-Length", b"5")]) == [(b"Content-Length", b"5")]


# --- forwarding ------------------------------------------------------------------------------


async def test_method_path_query_headers_and_body_kept() -> None:
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.path)
        body = await request.read()
        text = f"{request.method} {request.query_string} {request.headers['x-marker']} "
        return web.Response(
            status=201,
            body=text.encode() + body,
            headers={"Content-Type": "application/proto"},
        )

    async with (
        aiohttp_upstream(lambda app: app.router.add_route("*", "/{tail:.*}", handler)) as up,
        proxied(up) as p,
    ):
        response = await p.http.put(
            "/unknown?a=1", headers={"x-marker": "kept"}, content=b"payload"
        )
    assert response.status_code == 201
    assert response.headers["content-type"] == "application/proto"
    assert response.content == b"PUT a=1 kept payload"
    assert response.headers["content-length"] == str(len(b"PUT a=1 kept payload"))
    assert seen == ["/unknown"]


async def test_raw_path_and_query_sent_verbatim() -> None:
    raw_paths: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        raw_paths.append(request.raw_path)
        return web.Response(text="ok")

    # Escapes and empty segments in the path, anything in the query: all sent as they came
    # (targets that readers could read differently are refused first:
    # tests/process/test_edge_gate.py).
    target = "/api/v1//x%7ey%20z/?q=%7E&x=a+b&x=&flag&next=%2F..%2Fconsole"
    async with (
        aiohttp_upstream(lambda app: app.router.add_route("*", "/{tail:.*}", handler)) as up,
        proxied(up) as p,
    ):
        response = await raw_exchange(
            p.url, f"GET {target} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n".encode()
        )
    assert response.status == 200
    assert raw_paths == [target]


async def test_hop_by_hop_removed_both_ways_end_to_end_kept() -> None:
    seen: list[list[tuple[str, str]]] = []
    bodies: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(raw_headers_of(request))
        bodies.append(await request.read())
        response = web.Response(text="ok")
        for name, value in [
            ("Connection", "keep-alive, X-Resp-Named"),
            ("X-Resp-Named", "hidden"),
            ("Keep-Alive", "timeout=5"),
            ("Proxy-Authenticate", "Basic"),
            ("Trailer", "X-T"),
            ("TE", "trailers"),
            ("Upgrade", "h2c"),
            ("X-Resp-Kept", "yes"),
            ("Set-Cookie", "a=1; Path=/"),
            ("X-Rep", "1"),
            ("Set-Cookie", "b=2; Path=/"),
            ("X-Rep", "2"),
        ]:
            response.headers.add(name, value)
        return response

    async with (
        aiohttp_upstream(lambda app: app.router.add_post("/headers", handler)) as up,
        proxied(up) as p,
    ):
        response = await raw_exchange(
            p.url,
            b"POST /headers HTTP/1.1\r\n"
            b"Host: proxy.example\r\n"
            b"Connection: close, X-Conn-Named\r\n"
            b"X-Conn-Named: secret\r\n"
            b"Keep-Alive: timeout=5\r\n"
            b"Proxy-Authorization: Basic abc\r\n"
            b"Proxy-Authenticate: Basic\r\n"
            b"TE: trailers\r\n"
            b"Trailer: X-T\r\n"
            b"Upgrade: websocket\r\n"
            b"X-Kept: yes\r\n"
            b"x-a: 1\r\n"
            b"Cookie: a=1\r\n"
            b"x-a: 2\r\n"
            b"Cookie: b=2\r\n"
            b"Content-Length: 4\r\n"
            b"\r\n"
            b"body",
        )
        cookies_kept = len(p.upstream_client.cookies.jar)

    # Exactly the client's end-to-end headers, in order and spelling, behind the upstream's
    # Host: no hop-by-hop field, nothing named by Connection, and no httpx defaults
    # (Accept, Accept-Encoding, User-Agent, Connection) added.
    assert seen == [
        [
            ("Host", up.removeprefix("http://")),
            ("X-Kept", "yes"),
            ("x-a", "1"),
            ("Cookie", "a=1"),
            ("x-a", "2"),
            ("Cookie", "b=2"),
            ("Content-Length", "4"),
        ]
    ]
    assert bodies == [b"body"]

    assert response.status == 200
    assert response.body == b"ok"
    assert response.names().isdisjoint(HOP_BY_HOP_NAMES - {"connection"} | {"x-resp-named"})
    assert all("x-resp-named" not in v.lower() for v in response.get_all("connection"))
    assert response.get_all("X-Resp-Kept") == ["yes"]
    assert response.get_all("Set-Cookie") == ["a=1; Path=/", "b=2; Path=/"]
    assert response.get_all("X-Rep") == ["1", "2"]
    assert cookies_kept == 0


@pytest.mark.parametrize(
    ("upstream_framing", "upstream_body", "client_framing"),
    [
        (b"Content-Length: 5\r\n", b"hello", ("content-length", "5")),
        (
            b"Transfer-Encoding: chunked\r\n",
            b"5\r\nhello\r\n0\r\n\r\n",
            ("transfer-encoding", "chunked"),
        ),
    ],
)
async def test_framing_kept_and_no_headers_invented(
    upstream_framing: bytes, upstream_body: bytes, client_framing: tuple[str, str]
) -> None:
    answer = b"HTTP/1.1 200 OK\r\n" + upstream_framing + b"X-Only: 1\r\n\r\n" + upstream_body
    async with raw_upstream(answer) as up, proxied(up) as p:
        response = await raw_exchange(
            p.url, b"GET /bare HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
        )
    assert response.body == b"hello"
    assert response.get_all("X-Only") == ["1"]
    name, value = client_framing
    assert response.get_all(name) == [value]
    assert response.names().isdisjoint({"content-length", "transfer-encoding"} - {name})
    # No body type, encoding or server identity that the upstream did not send.
    assert response.names().isdisjoint({"content-type", "content-encoding", "server"})


async def test_head_keeps_content_length() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text="hello")

    async with (
        aiohttp_upstream(lambda app: app.router.add_get("/h", handler)) as up,
        proxied(up) as p,
    ):
        response = await p.http.head("/h")
    assert response.status_code == 200
    assert response.headers["content-length"] == "5"
    assert response.content == b""


async def test_response_chunk_reaches_client_before_upstream_finishes() -> None:
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"chunk-1")
        await asyncio.wait_for(release.wait(), TIMEOUT)
        await response.write(b"chunk-2")
        return response

    async with (
        aiohttp_upstream(lambda app: app.router.add_get("/stream", handler)) as up,
        proxied(up) as p,
        p.http.stream("GET", "/stream") as response,
    ):
        chunks = response.aiter_raw()
        assert await asyncio.wait_for(anext(chunks), 2) == b"chunk-1"
        release.set()
        assert b"".join([chunk async for chunk in chunks]) == b"chunk-2"


@pytest.mark.parametrize("framing", ["chunked", "content-length"])
async def test_request_body_streamed_upstream(framing: str) -> None:
    got_first = asyncio.Event()
    seen: list[list[tuple[str, str]]] = []
    received: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(raw_headers_of(request))
        received.append(await request.content.readany())
        got_first.set()
        received.append(await request.content.read())
        return web.Response(body=b"".join(received))

    if framing == "chunked":
        head, first, rest = (
            b"Transfer-Encoding: chunked",
            b"5\r\nfirst\r\n",
            b"6\r\n-rest!\r\n0\r\n\r\n",
        )
    else:
        head, first, rest = b"Content-Length: 11", b"first", b"-rest!"

    async with (
        aiohttp_upstream(lambda app: app.router.add_post("/upload", handler)) as up,
        proxied(up) as p,
    ):
        reader, writer = await raw_connect(p.url)
        try:
            writer.write(b"POST /upload HTTP/1.1\r\nHost: h\r\n" + head + b"\r\n\r\n" + first)
            await writer.drain()
            # The upstream must see the start of the body while the client still holds the rest.
            await asyncio.wait_for(got_first.wait(), TIMEOUT)
            assert received[0] and b"first".startswith(received[0])
            writer.write(rest)
            await writer.drain()
            response = await read_response(reader)
        finally:
            writer.close()

    assert response.body == b"first-rest!"
    (headers,) = seen
    framing_headers = [(k.lower(), v) for k, v in headers if k.lower() in HOP_BY_HOP_NAMES]
    lengths = [v for k, v in headers if k.lower() == "content-length"]
    if framing == "chunked":
        assert framing_headers == [("transfer-encoding", "chunked")] and lengths == []
    else:
        # A streamed body with the client's Content-Length must not also be chunked.
        assert lengths == ["11"]
        assert "transfer-encoding" not in {k for k, _ in framing_headers}


async def test_gzip_bodies_untouched_both_ways() -> None:
    request_gz = gzip.compress(b"request " * 100)
    response_gz = gzip.compress(b"response " * 100)
    seen: list[tuple[bytes, list[tuple[str, str]]]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append((await request.read(), raw_headers_of(request)))
        return web.Response(
            body=response_gz, headers={"Content-Encoding": "gzip", "Content-Type": "text/plain"}
        )

    async with (
        aiohttp_upstream(lambda app: app.router.add_post("/gz", handler)) as up,
        proxied(up) as p,
        p.http.stream(
            "POST",
            "/gz",
            content=request_gz,
            headers={"Content-Encoding": "gzip", "Accept-Encoding": "gzip"},
        ) as response,
    ):
        body = b"".join([chunk async for chunk in response.aiter_raw()])

    ((upstream_body, upstream_headers),) = seen
    assert upstream_body == request_gz
    assert ("Content-Encoding", "gzip") in upstream_headers
    assert [v for k, v in upstream_headers if k.lower() == "content-length"] == [
        str(len(request_gz))
    ]
    assert body == response_gz
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["content-type"] == "text/plain"
    assert response.headers["content-length"] == str(len(response_gz))


async def test_redirect_passed_through_not_followed() -> None:
    followed: list[str] = []

    async def moved(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "/to"})

    async def target(request: web.Request) -> web.Response:
        followed.append(request.path)
        return web.Response(text="followed")

    def routes(app: web.Application) -> None:
        app.router.add_get("/from", moved)
        app.router.add_get("/to", target)

    async with aiohttp_upstream(routes) as up, proxied(up) as p:
        response = await p.http.get("/from")
    assert response.status_code == 302
    assert response.headers["location"] == "/to"
    assert followed == []


async def test_upstream_error_status_passed_through() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=500, text="boom", headers={"X-Err": "1"})

    async with (
        aiohttp_upstream(lambda app: app.router.add_get("/fail", handler)) as up,
        proxied(up) as p,
    ):
        response = await p.http.get("/fail")
    assert response.status_code == 500
    assert response.text == "boom"
    assert response.headers["x-err"] == "1"
    assert response.headers["content-type"].startswith("text/plain")


async def test_upstream_down_is_502_json(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="cursor_server.proxy")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with proxied(f"http://127.0.0.1:{port}") as p:
        response = await p.http.get("/down?secret=1")
    assert response.status_code == 502
    assert response.headers["content-type"].startswith("application/json")
    body = msgspec.json.decode(response.content)
    assert list(body) == ["code", "message"]
    assert body["code"] == "unavailable"
    assert body["message"].startswith("http error: ")
    assert len(body["message"]) > len("http error: ")
    failures = [r for r in caplog.records if r.name == "cursor_server.proxy"]
    assert len(failures) == 1
    assert failures[0].levelno == logging.WARNING
    assert re.fullmatch(
        r"Cursor upstream request failed method=GET path=/down elapsed_ms=\d+ error=.+",
        failures[0].getMessage(),
    )


async def test_unmatched_routes_and_methods_go_upstream() -> None:
    async def upstream_handler(request: web.Request) -> web.Response:
        return web.Response(text=f"upstream {request.method} {request.path}")

    async def local(request: web.Request) -> web.Response:
        return web.Response(text="local")

    async with (
        aiohttp_upstream(
            lambda app: app.router.add_route("*", "/{tail:.*}", upstream_handler)
        ) as up,
        proxied(up, configure=lambda app: app.router.add_post("/local", local)) as p,
    ):
        local_rpc = {"content-type": "application/proto"}
        assert (await p.http.post("/local", headers=local_rpc)).text == "local"
        assert (await p.http.get("/local")).text == "upstream GET /local"
        assert (await p.http.delete("/nowhere")).text == "upstream DELETE /nowhere"


async def test_forwarded_request_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="cursor_server.proxy")

    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=204)

    async with (
        aiohttp_upstream(lambda app: app.router.add_get("/logged", handler)) as up,
        proxied(up) as p,
    ):
        await p.http.get("/logged?x=1")
    (record,) = [r for r in caplog.records if r.name == "cursor_server.proxy"]
    assert record.levelno == logging.INFO
    assert re.fullmatch(
        # wire.log quotes a value containing "=".
        r'forwarded Cursor backend request method=GET path="/logged\?x=1" status=204 '
        r"elapsed_ms=\d+",
        record.getMessage(),
    )


# --- failures and lifetimes ------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\npartial\r\n",
    ],
    ids=["content-length", "chunked"],
)
async def test_upstream_body_failure_aborts_client(answer: bytes) -> None:
    async with raw_upstream(answer) as up, proxied(up) as p:
        received = bytearray()
        # A timeout would mean the proxy left the client waiting on a body it will never send;
        # a clean end would mean it pretended the body was complete. Only a broken read is right.
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            async with p.http.stream("GET", "/broken") as response:
                async for chunk in response.aiter_raw():
                    received += chunk
    assert bytes(received) in (b"", b"partial")


def _open_stream(
    closed: asyncio.Event, *, keep_writing: bool
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """An upstream stream that never finishes and notes when its connection is dropped.

    It either stays quiet after its first chunk or keeps writing; a quiet one is the hard case,
    since nothing the proxy writes to its client can fail and reveal a disconnect.
    """

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"open")
        try:
            for _ in range(200):  # bounded: about ten seconds
                await asyncio.sleep(0.05)
                if keep_writing:
                    await response.write(b".")
        except (ConnectionError, asyncio.CancelledError):
            closed.set()
            raise
        return response

    return handler


async def open_raw_stream(url: str, path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw client holding a proxied stream open once its first chunk has arrived.

    Raw, so nothing on the client side (such as a garbage-collected httpx iterator closing
    its connection) can end the stream behind the test's back.
    """
    reader, writer = await raw_connect(url)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: h\r\n\r\n".encode())
    await writer.drain()
    await asyncio.wait_for(reader.readuntil(b"open"), TIMEOUT)
    return reader, writer


@pytest.mark.parametrize("keep_writing", [False, True], ids=["quiet", "writing"])
async def test_client_disconnect_closes_upstream(keep_writing: bool) -> None:
    closed = asyncio.Event()
    handler = _open_stream(closed, keep_writing=keep_writing)
    async with (
        aiohttp_upstream(lambda app: app.router.add_get("/open", handler)) as up,
        proxied(up) as p,
    ):
        _, writer = await open_raw_stream(p.url, "/open")
        writer.close()
        await asyncio.wait_for(closed.wait(), TIMEOUT)
        assert not p.upstream_client.is_closed


async def test_shutdown_cancels_open_stream_and_closes_upstream() -> None:
    closed = asyncio.Event()
    handler = _open_stream(closed, keep_writing=False)
    loop = asyncio.get_running_loop()
    async with (
        aiohttp_upstream(lambda app: app.router.add_get("/open", handler)) as up,
        proxied(up) as p,
    ):
        reader, writer = await open_raw_stream(p.url, "/open")
        try:
            started = loop.time()
            await asyncio.wait_for(p.runner.cleanup(), 10)  # shutdown_timeout=1
            assert loop.time() - started < 4
            # The cancelled handler closed its upstream response, so the upstream saw the drop
            # while the proxy's httpx client (and its pool) is still open.
            await asyncio.wait_for(closed.wait(), TIMEOUT)
            assert not p.upstream_client.is_closed
            # And the client's stream was cut, not completed.
            rest = await asyncio.wait_for(reader.read(), TIMEOUT)
            assert not rest.endswith(b"0\r\n\r\n")
        finally:
            writer.close()


async def test_client_gone_before_upstream_answers_closes_upstream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only the response headers reveal the disconnect here (the watcher is slowed down), and
    # the body is never read: the proxy itself must close the upstream response.
    monkeypatch.setattr(ReverseProxy, "CLIENT_POLL_S", 60.0)
    arrived, release, closed = asyncio.Event(), asyncio.Event(), asyncio.Event()
    stream = _open_stream(closed, keep_writing=False)

    async def handler(request: web.Request) -> web.StreamResponse:
        arrived.set()
        await asyncio.wait_for(release.wait(), TIMEOUT)
        return await stream(request)

    async with (
        aiohttp_upstream(lambda app: app.router.add_get("/late", handler)) as up,
        proxied(up) as p,
    ):
        _, writer = await raw_connect(p.url)
        writer.write(b"GET /late HTTP/1.1\r\nHost: h\r\n\r\n")
        await writer.drain()
        await asyncio.wait_for(arrived.wait(), TIMEOUT)
        writer.close()
        await asyncio.sleep(0.2)  # let the proxy see the client's FIN
        release.set()
        await asyncio.wait_for(closed.wait(), TIMEOUT)
