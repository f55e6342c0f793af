"""The HTTP/2 listener's limits, each announced (where HTTP/2 has a setting for it), enforced
and answered with the RFC's code, never a crash: concurrent streams (RFC 9113 §5.1.2), frame
size (§4.2), header list size (§10.5.1), idle connections, PINGs (answered; ours unanswered
end the connection), and a client that sends without reading. First against the sans-IO
connection with frames written by hand, then over real sockets against ``H2Server`` with a
client of our own on ``h2``."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import h2.config
import h2.connection
import h2.errors
import h2.events
import hyperframe.frame
import pytest

from store import Store
from tests.e2e.test_h2_run_e2e import open_run, read_until, run_status, tool_turn, wait_for
from tests.support.error_lines import ErrorLines
from tests.support.fake_cursor import user_turn_message
from tests.support.fake_provider import FakeProvider
from tests.support.h2_client import H2Client
from tests.support.h2_servers import StartH2, make_h2, upstream_config
from tests.wire.test_h2_connection import REQUEST, Pair
from wire.h2_connection import (
    ConnectionEnded,
    H2Limits,
    H2ServerConnection,
    RequestData,
    RequestOpened,
)
from wire.http.h2_server import H2Server, H2Stream, StreamHandler

__all__ = ["make_h2", "upstream_config"]  # fixtures used by name

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frames(data: bytes) -> list[hyperframe.frame.Frame]:
    """The frames in bytes a server wrote (a client's h2 would reject some on purpose)."""
    out: list[hyperframe.frame.Frame] = []
    view = memoryview(data)
    while view:
        frame, length = hyperframe.frame.Frame.parse_frame_header(view[:9])
        frame.parse_body(view[9 : 9 + length])
        out.append(frame)
        view = view[9 + length :]
    return out


def encoded_headers(
    client: h2.connection.H2Connection, stream_id: int, fields: list[tuple[str, str]] = REQUEST
) -> bytes:
    """HEADERS the client's h2 would not send itself, encoded with its own HPACK state."""
    frame = hyperframe.frame.HeadersFrame(stream_id=stream_id)
    frame.data = client.encoder.encode(fields)
    frame.flags.add("END_HEADERS")
    return frame.serialize()


# ---- sans-IO ----------------------------------------------------------------------------


def test_a_stream_reset_in_the_same_read_as_its_headers_is_not_refused_again() -> None:
    """Rapid reset at the limit: the client opens and resets a stream in one read. h2 has
    closed it by the time it is refused; refusing it must change nothing (it once raised,
    and asyncio logged the traceback and dropped the connection)."""
    pair = Pair(H2Limits(max_concurrent_streams=1))
    pair.client.send_headers(1, REQUEST)
    assert [e.stream_id for e in pair.to_server() if isinstance(e, RequestOpened)] == [1]
    headers = encoded_headers(pair.client, 3, REQUEST)
    reset = hyperframe.frame.RstStreamFrame(stream_id=3)
    reset.error_code = h2.errors.ErrorCodes.CANCEL
    events = pair.server.receive(headers + reset.serialize())
    opened = [e for e in events if isinstance(e, RequestOpened)]
    assert [e.stream_id for e in opened] == [3]
    pair.server.refuse(3)  # what the edge does with a stream past its limit
    assert not pair.server.closed
    pair.server.send_headers(1, ((":status", "200"),), end=True)
    assert any(isinstance(e, h2.events.ResponseReceived) for e in pair.to_client())


def test_a_stream_past_the_concurrency_limit_is_refused_and_the_others_go_on() -> None:
    pair = Pair(H2Limits(max_concurrent_streams=2))
    for stream_id in (1, 3):
        pair.client.send_headers(stream_id, REQUEST)
    assert [e.stream_id for e in pair.to_server() if isinstance(e, RequestOpened)] == [1, 3]
    # A third stream, its block adding a field to the HPACK table the next block refers to.
    traced = [*REQUEST, ("x-trace", "t-0001")]
    events = pair.server.receive(encoded_headers(pair.client, 5, traced))
    assert events == []  # not handed to any handler
    (reset,) = frames(pair.server.data_to_send())
    assert isinstance(reset, hyperframe.frame.RstStreamFrame)
    assert (reset.stream_id, reset.error_code) == (5, h2.errors.ErrorCodes.REFUSED_STREAM)
    assert not pair.server.closed
    # DATA already in flight on the refused stream is answered by h2, not a connection error.
    late = hyperframe.frame.DataFrame(stream_id=5, data=b"d" * 1000)
    assert pair.server.receive(late.serialize()) == []
    assert not pair.server.closed
    # Stream 1 still gets its answer; once it is released, a new stream fits again and its
    # header block (indexed against the refused one's) decodes exactly.
    pair.server.send_headers(1, ((":status", "200"),))
    pair.server.send_data(1, b"answer")
    pair.server.end_stream(1)
    got = [e for e in pair.to_client() if isinstance(e, h2.events.DataReceived)]
    assert b"".join(e.data or b"" for e in got) == b"answer"
    pair.client.send_headers(7, traced)
    (opened,) = [e for e in pair.to_server() if isinstance(e, RequestOpened)]
    assert opened.stream_id == 7
    assert ("x-trace", "t-0001") in opened.headers
    assert not pair.server.closed


def test_the_frame_size_limit_is_the_rfc_default_until_ours_is_acknowledged() -> None:
    """16 384 bytes until the client acknowledges our SETTINGS (RFC 9113 §6.5.2), ours after;
    a frame of exactly the limit is read, one byte more is GOAWAY FRAME_SIZE_ERROR."""
    early = H2ServerConnection(H2Limits(max_frame_size=32768))
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    early.receive(client.data_to_send())  # the client's SETTINGS, but never its ACK of ours
    early.receive(encoded_headers(client, 1))
    events = early.receive(hyperframe.frame.DataFrame(stream_id=1, data=b"e" * 16385).serialize())
    assert isinstance(events[-1], ConnectionEnded)
    assert events[-1].error_code == h2.errors.ErrorCodes.FRAME_SIZE_ERROR

    pair = Pair(H2Limits(max_frame_size=32768))
    pair.client.send_headers(1, REQUEST)
    pair.to_server()
    exact = hyperframe.frame.DataFrame(stream_id=1, data=b"f" * 32768)
    (data,) = pair.server.receive(exact.serialize())
    assert isinstance(data, RequestData) and len(data.data) == 32768
    over = hyperframe.frame.DataFrame(stream_id=1, data=b"f" * 32769)
    events = pair.server.receive(over.serialize())
    assert isinstance(events[-1], ConnectionEnded)
    assert events[-1].error_code == h2.errors.ErrorCodes.FRAME_SIZE_ERROR
    pair.to_client()
    assert pair.terminated().error_code == h2.errors.ErrorCodes.FRAME_SIZE_ERROR


def test_our_frames_never_exceed_the_clients_frame_size() -> None:
    pair = Pair(H2Limits(max_frame_size=1 << 20))  # what we accept says nothing of what we send
    pair.client.send_headers(1, REQUEST)
    pair.to_server()
    pair.server.send_headers(1, ((":status", "200"),))
    pair.server.send_data(1, b"g" * 60000)
    sent = frames(pair.server.data_to_send())
    sizes = [len(f.data) for f in sent if isinstance(f, hyperframe.frame.DataFrame)]
    assert sum(sizes) == 60000
    assert max(sizes) == 16384  # the client's (default) SETTINGS_MAX_FRAME_SIZE


def test_a_header_list_under_the_limit_is_read_and_one_over_is_enhance_your_calm() -> None:
    limit = 4096
    pair = Pair(H2Limits(max_header_list_size=limit))
    # RFC 9113 §6.5.2: each field counts its name, value and 32 bytes.
    used = sum(len(k) + len(v) + 32 for k, v in REQUEST)
    room = limit - used - 32 - len("x-fill")
    pair.client.send_headers(1, [*REQUEST, ("x-fill", "v" * room)])
    (opened,) = pair.to_server()
    assert isinstance(opened, RequestOpened)
    pair.client.send_headers(3, [*REQUEST, ("x-fill", "v" * (room + 1))])
    events = pair.to_server()
    assert isinstance(events[-1], ConnectionEnded)
    assert events[-1].error_code == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM
    pair.to_client()
    assert pair.terminated().error_code == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM
    assert pair.server.receive(b"anything") == []


def test_a_flood_of_continuation_frames_ends_the_connection_not_the_server() -> None:
    pair = Pair()
    first = hyperframe.frame.HeadersFrame(stream_id=1)
    first.data = pair.client.encoder.encode(REQUEST)
    flood = b"".join(
        hyperframe.frame.ContinuationFrame(stream_id=1, data=b"").serialize() for _ in range(200)
    )
    events = pair.server.receive(first.serialize() + flood)
    assert isinstance(events[-1], ConnectionEnded)
    assert events[-1].error_code == h2.errors.ErrorCodes.PROTOCOL_ERROR
    assert pair.server.closed


@pytest.mark.parametrize(
    "field", [("connection", "keep-alive"), ("te", "gzip"), ("X-Upper", "a")], ids=str
)
def test_a_malformed_request_is_a_protocol_error(field: tuple[str, str]) -> None:
    """RFC 9113 §8.2.2 and §8.2.1: a connection-specific field (``te`` other than
    ``trailers``) or an upper-case name makes the request malformed; h2 answers PROTOCOL_ERROR
    for the connection (a stream error may be treated so, §5.4.1), never a handler."""
    pair = Pair()
    events = pair.server.receive(encoded_headers(pair.client, 1, [*REQUEST, field]))
    (ended,) = events
    assert isinstance(ended, ConnectionEnded) and not ended.by_client
    assert ended.error_code == h2.errors.ErrorCodes.PROTOCOL_ERROR
    (goaway,) = frames(pair.server.data_to_send())
    assert isinstance(goaway, hyperframe.frame.GoAwayFrame)
    assert goaway.error_code == h2.errors.ErrorCodes.PROTOCOL_ERROR


# ---- over real sockets --------------------------------------------------------------------


class PingClient(H2Client):
    """Our test client, also keeping the PING acknowledgements it receives."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.acks: asyncio.Queue[bytes] = asyncio.Queue()
        self.pinged = 0  # PINGs the server sent (h2 answers each by itself)
        super().__init__(reader, writer)

    def _event(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.PingAckReceived):
            self.acks.put_nowait(bytes(event.ping_data or b""))
        if isinstance(event, h2.events.PingReceived):
            self.pinged += 1
        super()._event(event)

    def go_deaf(self) -> None:
        """Stop reading (and so answering) while the socket stays open: a vanished peer."""
        self._task.cancel()


class Handlers:
    """What the bare listener does with a stream: ``/hold`` waits for ``release`` (ignoring
    a reset, as a handler in the middle of work does), anything else answers ``ok``."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = 0
        self.held: list[H2Stream] = []

    def route(self, stream: H2Stream) -> StreamHandler:
        return self.hold if stream.path == "/hold" else self.answer

    async def hold(self, stream: H2Stream) -> None:
        self.started += 1
        self.held.append(stream)
        await self.release.wait()
        await self.answer(stream)

    async def answer(self, stream: H2Stream) -> None:
        stream.respond(200, (("content-type", "text/plain"),))
        await stream.write(b"ok")
        stream.end()


# Starts a bare H2Server on a free port with these limits and handlers.
Listen = Callable[[H2Limits, Handlers], Awaitable[H2Server]]


@pytest.fixture
async def listen() -> AsyncIterator[Listen]:
    servers: list[H2Server] = []

    async def start(limits: H2Limits, handlers: Handlers) -> H2Server:
        server = H2Server(handlers.route, limits, None)
        await server.start("127.0.0.1", 0)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop_accepting()
        await server.close(0.1)


async def test_a_client_resetting_its_streams_gets_no_more_handlers_than_streams(
    listen: Listen,
) -> None:
    """Rapid reset: streams reset at once still hold their handler until it ends, and a
    stream past that many is refused (REFUSED_STREAM); once they end, streams are served."""
    handlers = Handlers()
    server = await listen(H2Limits(max_concurrent_streams=3), handlers)
    client = await H2Client.connect(server.address)
    try:
        for _ in range(3):
            client.open("/hold", end=True).reset()
        await asyncio.sleep(0.1)
        assert handlers.started == 3
        extra = client.open("/hold", end=True)
        await asyncio.wait_for(extra.ended.wait(), 2)
        assert extra.reset_code == h2.errors.ErrorCodes.REFUSED_STREAM
        assert handlers.started == 3
        handlers.release.set()
        await asyncio.sleep(0.1)
        served = client.open("/other", method="GET", end=True)
        assert (await served.headers())[":status"] == "200"
        assert await served.body() == b"ok"
        assert client.goaway is None
    finally:
        await client.aclose()


async def test_a_cancelled_read_leaves_no_task_behind(
    listen: Listen, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handler that stops waiting for the body (its run ended) cancels ``read``; nothing it
    waited on is left pending, so nothing is later destroyed pending (asyncio's ERROR line,
    caught by ``tests/support/error_lines.py`` after a ``gc.collect()``)."""
    cancelled = asyncio.Event()

    async def reader(stream: H2Stream) -> None:
        pending = asyncio.ensure_future(stream.read())
        await asyncio.sleep(0.05)
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pending
        cancelled.set()
        await Handlers().answer(stream)

    handlers = Handlers()
    monkeypatch.setattr(handlers, "route", lambda stream: reader)
    server = await listen(H2Limits(), handlers)
    client = await H2Client.connect(server.address)
    try:
        for _ in range(5):
            cancelled.clear()
            stream = client.open("/read", end=False)  # the body never comes
            await asyncio.wait_for(cancelled.wait(), 2)
            assert (await stream.headers())[":status"] == "200"
    finally:
        await client.aclose()
    with ErrorLines() as caught:
        await asyncio.sleep(0.05)
    assert caught.lines == []


async def test_streams_over_all_connections_are_capped(listen: Listen) -> None:
    """Each connection within its own limit, the listener still runs at most ``max_streams``
    handlers in all; the next stream on any connection is refused, the others go on."""
    handlers = Handlers()
    limits = H2Limits(max_concurrent_streams=3, max_streams=4)
    server = await listen(limits, handlers)
    first = await H2Client.connect(server.address)
    second = await H2Client.connect(server.address)
    try:
        for client in (first, second):
            client.open("/hold", end=True)
            client.open("/hold", end=True)
        await asyncio.sleep(0.1)
        assert handlers.started == 4
        extra = second.open("/hold", end=True)
        await asyncio.wait_for(extra.ended.wait(), 2)
        assert extra.reset_code == h2.errors.ErrorCodes.REFUSED_STREAM
        assert handlers.started == 4
        handlers.release.set()
        await asyncio.sleep(0.1)
        served = first.open("/other", method="GET", end=True)
        assert (await served.headers())[":status"] == "200"
    finally:
        await first.aclose()
        await second.aclose()


async def test_a_ping_is_answered_and_an_idle_connection_is_ended_with_goaway(
    listen: Listen,
) -> None:
    handlers = Handlers()
    limits = H2Limits(idle_timeout_s=0.4)
    server = await listen(limits, handlers)
    client = await PingClient.connect(server.address)
    try:
        # PINGs are answered with their own data (RFC 9113 §6.7), and do not count as use.
        for n in range(4):
            opaque = struct.pack(">Q", 0x0123456789AB0000 + n)
            client.conn.ping(opaque)
            client.flush()
            assert await asyncio.wait_for(client.acks.get(), 1) == opaque
            await asyncio.sleep(0.05)
        await asyncio.wait_for(client.goaway_seen.wait(), 1)
        assert client.goaway is not None
        assert client.goaway.error_code == h2.errors.ErrorCodes.NO_ERROR
        await asyncio.wait_for(client.closed.wait(), 1)
        assert not server.connections
    finally:
        await client.aclose()


async def test_a_connection_with_a_stream_outlasting_the_idle_timeout_is_kept(
    listen: Listen,
) -> None:
    handlers = Handlers()
    server = await listen(H2Limits(idle_timeout_s=0.3), handlers)
    client = await H2Client.connect(server.address)
    try:
        held = client.open("/hold", end=True)
        await asyncio.sleep(0.8)  # well past the idle timeout, with a handler at work
        assert client.goaway is None and len(server.connections) == 1
        handlers.release.set()
        assert await held.body() == b"ok"
        # Idle from now on: ended after one more timeout.
        await asyncio.wait_for(client.goaway_seen.wait(), 1.5)
        assert client.goaway is not None and client.goaway.last_stream_id == held.stream_id
    finally:
        await client.aclose()


async def test_a_client_that_sends_without_reading_never_grows_our_write_buffer(
    listen: Listen,
) -> None:
    """A client sending PINGs and never reading the acknowledgements: once the socket's
    buffer is full we stop reading, so the client's writes stall and ours stay bounded."""
    handlers = Handlers()
    server = await listen(H2Limits(), handlers)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    host, _, port = server.address.rpartition(":")
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    _reader, writer = await asyncio.open_connection(sock=sock)
    try:
        settings = hyperframe.frame.SettingsFrame(stream_id=0).serialize()
        writer.write(PREFACE + settings)
        ping = hyperframe.frame.PingFrame(stream_id=0, opaque_data=b"12345678").serialize()
        batch = ping * 4096  # 68 KiB of PINGs, each making us write 17 bytes
        sent = 0
        stalled = False
        while sent < 64 * 1024 * 1024:
            writer.write(batch)
            sent += len(batch)
            try:
                await asyncio.wait_for(writer.drain(), 0.5)
            except TimeoutError:
                stalled = True
                break
        assert stalled, "the server kept reading a client that never reads"
        await asyncio.sleep(0.2)
        (connection,) = server.connections
        assert connection.write_backlog() <= 1024 * 1024
    finally:
        writer.transport.abort()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def test_over_a_socket_each_limit_is_announced_and_a_violation_gets_its_code(
    listen: Listen,
) -> None:
    """The listener's SETTINGS carry the limits; a header list just under its limit is
    served, one over it is GOAWAY ENHANCE_YOUR_CALM; a frame over the frame size is GOAWAY
    FRAME_SIZE_ERROR; each ends only its own connection."""
    handlers = Handlers()
    limits = H2Limits(max_header_list_size=8192, max_frame_size=20000, max_concurrent_streams=9)
    server = await listen(limits, handlers)
    client = await H2Client.connect(server.address)
    try:
        await asyncio.sleep(0.05)  # our SETTINGS ACK reaches the server
        settings = client.conn.remote_settings
        assert (settings.max_header_list_size, settings.max_frame_size) == (8192, 20000)
        assert settings.max_concurrent_streams == 9
        assert settings.initial_window_size == limits.initial_window_size
        assert settings.enable_push == 0
        fits = client.open("/a", {"x-fill": "v" * 7000}, method="GET", end=True)
        assert (await fits.headers())[":status"] == "200"
        assert await fits.body() == b"ok"
        client.open("/b", {"x-fill": "v" * 9000}, method="GET", end=True)
        await asyncio.wait_for(client.closed.wait(), 2)
        assert client.goaway is not None
        assert client.goaway.error_code == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM
    finally:
        await client.aclose()
    second = await H2Client.connect(server.address)
    try:
        stream = second.open("/c", method="POST")
        frame = hyperframe.frame.DataFrame(stream_id=stream.stream_id, data=b"z" * 20001)
        second.writer.write(frame.serialize())
        await asyncio.wait_for(second.closed.wait(), 2)
        assert second.goaway is not None
        assert second.goaway.error_code == h2.errors.ErrorCodes.FRAME_SIZE_ERROR
    finally:
        await second.aclose()
    third = await H2Client.connect(server.address)  # the listener itself is unharmed
    try:
        stream = third.open("/d", method="GET", end=True)
        assert await stream.body() == b"ok"
    finally:
        await third.aclose()


async def test_a_silent_client_is_pinged_and_one_that_never_answers_is_dropped(
    listen: Listen,
) -> None:
    """A client that answers our PINGs keeps its stream through many silent intervals; one
    that stops answering loses the connection, and its stream ends as a disconnect."""
    handlers = Handlers()
    limits = H2Limits(ping_after_s=0.2, ping_timeout_s=0.3)
    server = await listen(limits, handlers)
    alive = await PingClient.connect(server.address)
    deaf = await PingClient.connect(server.address)
    try:
        alive.open("/hold", end=True)
        deaf.open("/hold", end=True)
        await asyncio.sleep(0.1)
        deaf.go_deaf()
        await asyncio.sleep(1.5)
        assert alive.pinged >= 3
        assert len(server.connections) == 1 and alive.goaway is None
        assert sorted(stream.gone.is_set() for stream in handlers.held) == [False, True]
    finally:
        handlers.release.set()
        await alive.aclose()
        await deaf.aclose()


async def test_a_run_whose_client_stops_answering_pings_is_cancelled(
    make_h2: StartH2, fake: FakeProvider, public_id: str, server_store: Store, tmp_path: Path
) -> None:
    """Mid-tool, the client vanishes without a FIN or RST (its socket stays open, nothing
    is read): the unanswered PING ends the connection and the run is cancelled, where it
    would otherwise wait for the exec's result for good."""
    tool_turn(fake, tmp_path)
    server = await make_h2(h2_limits=H2Limits(ping_after_s=0.2, ping_timeout_s=0.3))
    assert server.h2 is not None
    client = await PingClient.connect(server.h2.address)
    try:
        stream, reader = await open_run(client, user_turn_message("read it", public_id), "deaf")
        await read_until(stream, reader, "exec_server_message")
        client.go_deaf()
        await wait_for(lambda: run_status(server_store, "deaf") == "cancelled", "the cancel")
    finally:
        await client.aclose()
    assert len(fake.requests) == 1
