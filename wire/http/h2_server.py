"""The HTTP/2 listener's IO: an asyncio Protocol around ``wire.h2_connection``.

Thin: bytes from the socket go into the sans-IO connection, its events become one
``H2Stream`` per request handed to a handler task (chosen by path), and whatever the
connection has to send is written back. Handlers see a small stream API: read the body
(each chunk reopens the client's window once taken), respond, write (waiting while the
stream's window is shut, so a slow reader never makes us buffer more than
``max_pending_per_stream``), end or reset. A client RST_STREAM, a GOAWAY or a dropped
connection makes ``read``/``write`` raise ``StreamGone`` and sets ``gone``.

The edge also holds the limits that need a clock or the socket: a connection beyond the
per-peer or total counts it shares with the main listener (``ConnectionGuard``) is closed
at once, one that opens no stream within ``header_timeout_s`` gets GOAWAY and is closed, a
stream is refused while ``max_concurrent_streams`` handlers still run on its connection or
``max_streams`` on all of them (a client resetting each stream it opens never gets more
handlers than that), a connection left without streams for
``idle_timeout_s`` gets GOAWAY and is closed, a client silent for ``ping_after_s`` is sent
a PING and, unanswered ``ping_timeout_s`` later, taken for gone (its streams end as a
dropped connection's), and while the socket's write buffer is over
its high-water mark nothing more is read, so a client that sends (PINGs, SETTINGS, resets)
without reading what they make us answer only fills its own socket buffer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
from collections.abc import Awaitable, Callable

import h2.errors

from wire.h2_connection import (
    ConnectionEnded,
    H2Event,
    H2Limits,
    H2ServerConnection,
    Headers,
    PingAnswered,
    RequestData,
    RequestEnded,
    RequestOpened,
    StreamAborted,
    WindowOpened,
)
from wire.http.listener import ConnectionGuard
from wire.log import log_event

logger = logging.getLogger("cursor_server.h2")


class StreamGone(Exception):
    """The client reset the stream, or the connection ended."""


class _Gone:
    """The mark a lost stream leaves in its chunk queue."""


_GONE = _Gone()


class H2Stream:
    """One request/response exchange on an HTTP/2 connection, as a handler sees it."""

    def __init__(self, connection: H2Protocol, stream_id: int, headers: Headers) -> None:
        self._connection = connection
        self.stream_id = stream_id
        self.headers = headers
        self._fields = {name: value for name, value in reversed(headers)}
        self._chunks: asyncio.Queue[tuple[bytes, int] | _Gone | None] = asyncio.Queue()
        self.gone = asyncio.Event()
        self.reset_code: int | None = None  # the client's RST_STREAM code, if it sent one
        self.peer: str | None = connection.peer  # the client's IP address
        self.responded = False
        self.finished = False

    @property
    def method(self) -> str:
        return self._fields.get(":method", "")

    @property
    def path(self) -> str:
        return self._fields.get(":path", "")

    def header(self, name: str) -> str | None:
        """The first value of a (lower-case) header."""
        return self._fields.get(name)

    async def read(self) -> bytes | None:
        """The next body chunk, None once the client half-closed; acknowledged when taken.

        One wait on the chunk queue, where the stream's loss is queued too (``_GONE``): no
        helper task that a cancelled read could leave pending, and chunks that arrived
        before the loss are still read first."""
        if self.gone.is_set() and self._chunks.empty():
            raise StreamGone(self.stream_id)
        item = await self._chunks.get()
        if isinstance(item, _Gone):
            raise StreamGone(self.stream_id)
        if item is None:
            return None
        data, flow_length = item
        self._connection.acknowledge(self.stream_id, flow_length)
        return data

    def respond(self, status: int, headers: Headers = (), *, end: bool = False) -> None:
        if self.gone.is_set():
            raise StreamGone(self.stream_id)
        self.responded = True
        self._connection.send_headers(self.stream_id, ((":status", str(status)), *headers), end=end)
        if end:
            self.finished = True

    async def write(self, data: bytes) -> None:
        """Send body bytes; waits while more than the pending bound waits for a window."""
        if self.gone.is_set():
            raise StreamGone(self.stream_id)
        self._connection.send_data(self.stream_id, data)
        await self._connection.wait_writable(self)

    def end(self) -> None:
        if not self.gone.is_set() and not self.finished:
            self.finished = True
            self._connection.end_stream(self.stream_id)

    def reset(self, error_code: int = h2.errors.ErrorCodes.CANCEL) -> None:
        if not self.gone.is_set():
            self._connection.reset(self.stream_id, error_code)
            self._lose(None)

    def _data(self, data: bytes, flow_length: int) -> None:
        self._chunks.put_nowait((data, flow_length))

    def _unread(self) -> int:
        """Take the chunks no handler will read now (the stream is dropped); their flow-control
        length, which the connection must still acknowledge or its window shrinks for good."""
        owed, gone = 0, False
        while not self._chunks.empty():
            item = self._chunks.get_nowait()
            if isinstance(item, tuple):
                owed += item[1]
            gone = gone or item is _GONE
        if gone:
            self._chunks.put_nowait(_GONE)  # a read still waiting must hear of the loss
        return owed

    def _ended(self) -> None:
        self._chunks.put_nowait(None)

    def _lose(self, code: int | None) -> None:
        if code is not None and self.reset_code is None:
            self.reset_code = code
        if not self.gone.is_set():
            self.gone.set()
            self._chunks.put_nowait(_GONE)  # wakes a waiting read


StreamHandler = Callable[[H2Stream], Awaitable[None]]
Router = Callable[[H2Stream], StreamHandler]


class H2Protocol(asyncio.Protocol):
    """One HTTP/2 connection: feeds the sans-IO connection and runs a task per stream."""

    def __init__(self, server: H2Server) -> None:
        self._server = server
        self._conn = H2ServerConnection(server.limits)
        self._transport: asyncio.Transport | None = None
        self._streams: dict[int, H2Stream] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()  # set whenever a window opens or the socket drains
        self._paused = False
        self._idle: asyncio.TimerHandle | None = None
        self._keepalive: asyncio.TimerHandle | None = None
        self._ping: bytes | None = None  # the PING we wait an answer for
        self._last_in = 0.0  # loop time of the last bytes from the client
        self.closed = False
        self.peer: str | None = None
        self._counted = False  # in the connection counts (``ConnectionGuard``)
        self._first_due: asyncio.TimerHandle | None = None  # the first stream's deadline

    # ---- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peername = transport.get_extra_info("peername")
        self.peer = str(peername[0]) if peername else None
        guard = self._server.guard
        if guard is not None and self.peer is not None:
            if guard.admit(self.peer) is not None:
                transport.close()  # nothing read, nothing sent: a refusal at once
                self.closed = True
                return
            self._counted = True
            timeout = guard.limits.header_timeout_s
            self._first_due = asyncio.get_running_loop().call_later(timeout, self._no_request)
        self._server.connections.add(self)
        self._flush()
        self._arm_idle()
        self._last_in = asyncio.get_running_loop().time()
        self._arm_keepalive(self._server.limits.ping_after_s)

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self._last_in = asyncio.get_running_loop().time()
        for event in self._conn.receive(data):
            self._handle(event)
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._disarm_idle()
        self._cancel_first_due()
        if self._counted:
            self._counted = False
            assert self._server.guard is not None and self.peer is not None
            self._server.guard.release(self.peer)
        if self._keepalive is not None:
            self._keepalive.cancel()
        self._server.connections.discard(self)
        for stream in self._streams.values():
            stream._lose(None)
        self._streams.clear()
        self._wake()

    def pause_writing(self) -> None:
        self._paused = True
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self._paused = False
        if self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()
        self._wake()

    # ---- events -------------------------------------------------------------------------

    def _handle(self, event: H2Event) -> None:
        match event:
            case RequestOpened(stream_id=stream_id) if self._busy():
                self._conn.refuse(stream_id)
            case RequestOpened(stream_id=stream_id, headers=headers, ended=ended):
                self._open(stream_id, headers, ended)
            case RequestData(stream_id=stream_id, data=data, flow_length=flow_length):
                found = self._streams.get(stream_id)
                if found is None:
                    self._conn.acknowledge(stream_id, flow_length)
                else:
                    found._data(data, flow_length)
            case RequestEnded(stream_id=stream_id):
                if (found := self._streams.get(stream_id)) is not None:
                    found._ended()
            case StreamAborted(stream_id=stream_id, error_code=code):
                if (found := self._streams.pop(stream_id, None)) is not None:
                    found._lose(code)
                    self._give_back(found)
                self._wake()
            case WindowOpened():
                self._wake()
            case PingAnswered(opaque=opaque):
                if opaque == self._ping:  # else an answer to a PING we no longer wait for
                    self._ping = None
                    self._arm_keepalive(self._server.limits.ping_after_s)
            case ConnectionEnded(error_code=code, by_client=by_client, reason=reason):
                log_event(
                    logger,
                    logging.INFO,
                    "HTTP/2 connection ended",
                    error_code=code,
                    by_client=by_client,
                    reason=reason,
                )
                for stream in self._streams.values():
                    stream._lose(None)
                self._flush()
                if self._transport is not None:
                    self._transport.close()

    def _open(self, stream_id: int, headers: Headers, ended: bool) -> None:
        """A new stream: its handler runs as a task of its own."""
        self._disarm_idle()
        self._cancel_first_due()
        stream = H2Stream(self, stream_id, headers)
        self._streams[stream_id] = stream
        if ended:
            stream._ended()
        task = asyncio.get_running_loop().create_task(self._run(stream))
        self._tasks.add(task)
        self._server.tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(self._server.tasks.discard)
        task.add_done_callback(lambda _: self._arm_idle())

    def _busy(self) -> bool:
        """As many handlers run as streams may be open, on this connection or on all: a
        stream the client reset still counts until its handler has ended."""
        limits = self._server.limits
        return (
            len(self._tasks) >= limits.max_concurrent_streams
            or len(self._server.tasks) >= limits.max_streams
        )

    def _no_request(self) -> None:
        """No request's headers within ``header_timeout_s`` of the connection's opening."""
        self._first_due = None
        if self.closed or self._streams or self._tasks:
            return
        assert self._server.guard is not None
        self._server.guard.headers_late(self.peer or "")
        self.goaway()
        self.close()

    def _cancel_first_due(self) -> None:
        if self._first_due is not None:
            self._first_due.cancel()
            self._first_due = None

    def _arm_idle(self) -> None:
        """Start the idle clock once no handler runs (a stream opening stops it)."""
        self._disarm_idle()
        if not self.closed and not self._tasks:
            loop = asyncio.get_running_loop()
            self._idle = loop.call_later(self._server.limits.idle_timeout_s, self._idle_out)

    def _disarm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _idle_out(self) -> None:
        """No handler ran for a whole ``idle_timeout_s``: unless a response is still draining
        to its client, say GOAWAY and close (streams already sent on it are refused)."""
        self._idle = None
        if self.closed or self._tasks:
            return
        if not self._conn.idle:
            self._arm_idle()
            return
        log_event(logger, logging.INFO, "HTTP/2 connection idle, closed")
        self.goaway()
        self.close()

    def _arm_keepalive(self, delay: float) -> None:
        if self._keepalive is not None:
            self._keepalive.cancel()
        self._keepalive = asyncio.get_running_loop().call_later(delay, self._keepalive_due)

    def _keepalive_due(self) -> None:
        """Send a PING after ``ping_after_s`` of silence; close if it is not answered in
        ``ping_timeout_s``. Not while our writes are backed up: the PING would queue behind
        them, and a client slow to read is the stall limits' business, not this one's."""
        self._keepalive = None
        limits = self._server.limits
        if self.closed:
            return
        if self._paused:
            self._ping = None
            self._arm_keepalive(limits.ping_after_s)
            return
        if self._ping is not None:
            log_event(logger, logging.INFO, "HTTP/2 client did not answer a PING, closed")
            if self._transport is not None:
                self._transport.abort()
            return
        quiet = asyncio.get_running_loop().time() - self._last_in
        if quiet < limits.ping_after_s:
            self._arm_keepalive(limits.ping_after_s - quiet)
            return
        self._ping = os.urandom(8)
        self._conn.ping(self._ping)
        self._flush()
        self._arm_keepalive(limits.ping_timeout_s)

    async def _run(self, stream: H2Stream) -> None:
        try:
            await self._server.route(stream)(stream)
        except StreamGone:
            pass
        except Exception as exc:  # a handler's bug must not take the connection down
            log_event(logger, logging.ERROR, "HTTP/2 handler failed", error=repr(exc))
            stream.reset(h2.errors.ErrorCodes.INTERNAL_ERROR)
        finally:
            if not stream.gone.is_set() and not stream.finished:
                stream.reset(h2.errors.ErrorCodes.INTERNAL_ERROR)
            self._streams.pop(stream.stream_id, None)
            self._give_back(stream)
            self._flush()

    def _give_back(self, stream: H2Stream) -> None:
        """Acknowledge what ``stream`` received and nobody will read, so the connection's
        window is not lost to a reset or a handler that ended early."""
        owed = stream._unread()
        if owed and not self.closed:
            self._conn.acknowledge(stream.stream_id, owed)

    # ---- what streams call --------------------------------------------------------------

    def acknowledge(self, stream_id: int, flow_length: int) -> None:
        if not self.closed:
            self._conn.acknowledge(stream_id, flow_length)
            self._flush()

    def send_headers(self, stream_id: int, headers: Headers, *, end: bool) -> None:
        self._conn.send_headers(stream_id, headers, end=end)
        self._flush()

    def send_data(self, stream_id: int, data: bytes) -> None:
        self._conn.send_data(stream_id, data)
        self._flush()

    def end_stream(self, stream_id: int) -> None:
        self._conn.end_stream(stream_id)
        self._flush()

    def reset(self, stream_id: int, error_code: int) -> None:
        self._conn.reset(stream_id, error_code)
        self._streams.pop(stream_id, None)
        self._flush()

    async def wait_writable(self, stream: H2Stream) -> None:
        """Return once the stream's queued bytes are under the bound and the socket drains."""
        limit = self._server.limits.max_pending_per_stream
        while self._paused or self._conn.pending(stream.stream_id) > limit:
            if stream.gone.is_set() or self.closed:
                raise StreamGone(stream.stream_id)
            changed = self._changed
            gone = asyncio.ensure_future(stream.gone.wait())
            waiter = asyncio.ensure_future(changed.wait())
            try:
                await asyncio.wait((gone, waiter), return_when=asyncio.FIRST_COMPLETED)
            finally:
                gone.cancel()
                waiter.cancel()

    def pending(self, stream_id: int) -> int:
        """Bytes of a stream waiting for the client's window (what a slow reader costs)."""
        return self._conn.pending(stream_id)

    def write_backlog(self) -> int:
        """Bytes written to the socket that the kernel has not taken yet."""
        return self._transport.get_write_buffer_size() if self._transport is not None else 0

    def goaway(self) -> None:
        if not self.closed and not self._conn.closed:
            self._conn.goaway()
            self._flush()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _flush(self) -> None:
        data = self._conn.data_to_send()
        if data and self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)


class H2Server:
    """The listener: TLS with ALPN ``h2`` when given a context, else h2c (prior knowledge)."""

    def __init__(
        self,
        route: Router,
        limits: H2Limits,
        tls: ssl.SSLContext | None,
        guard: ConnectionGuard | None = None,
    ) -> None:
        """``guard``: the connection counts shared with the main listener (None: uncounted)."""
        self.route = route
        self.guard = guard
        self.limits = limits
        self.tls = tls
        self.connections: set[H2Protocol] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self.address = ""

    @property
    def url(self) -> str:
        """Where clients reach it (``https://`` with TLS, else ``http://``)."""
        return f"{'https' if self.tls is not None else 'http'}://{self.address}"

    async def start(self, host: str, port: int, reuse_port: bool = False) -> None:
        """Listen on ``host:port``; ``reuse_port``: SO_REUSEPORT, the port shared with the other
        workers of one server."""
        loop = asyncio.get_running_loop()
        # A TLS handshake is part of sending the first request: it gets the same time.
        handshake_s = None if self.guard is None else self.guard.limits.header_timeout_s
        self._server = await loop.create_server(
            lambda: H2Protocol(self),
            host,
            port,
            ssl=self.tls,
            ssl_handshake_timeout=handshake_s if self.tls is not None else None,
            reuse_port=reuse_port,
        )
        bound_host, bound_port = self._server.sockets[0].getsockname()[:2]
        self.address = (
            f"[{bound_host}]:{bound_port}" if ":" in bound_host else (f"{bound_host}:{bound_port}")
        )

    def stop_accepting(self) -> None:
        """Close the listening socket and send GOAWAY on every connection."""
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            connection.goaway()

    async def close(self, drain_s: float) -> None:
        """Give open streams ``drain_s`` to finish, then cut every connection."""
        if self.tasks:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*self.tasks, return_exceptions=True), drain_s)
        for task in list(self.tasks):
            task.cancel()
        for connection in list(self.connections):
            connection.close()
        if self._server is not None:
            await self._server.wait_closed()


def tls_context(cert_path: str, key_path: str) -> ssl.SSLContext:
    """A server context offering only ``h2`` by ALPN (raises ``ssl.SSLError``/``OSError``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_path, key_path)
    context.set_alpn_protocols(["h2"])
    return context
