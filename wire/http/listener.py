"""The main listener's connections: how many each peer and all peers may hold, how long a
request's headers may take, and the answer to a request aiohttp cannot parse.

aiohttp has none of the first two and answers a malformed request line with text and an
ERROR traceback in the log, which any client can cause at will. So the app's connections are
made by ``GuardedRequestHandler``, aiohttp's own handler with those three added, through
``GuardedRunner`` (an ``AppRunner`` whose sites build it). The counts (``ConnectionGuard``)
are shared with the HTTP/2 listener, so the limits hold over both.

- A connection beyond ``max_connections_per_peer`` or ``max_connections`` is answered
  ``503 resource_exhausted`` at once, before anything is read, and closed.
- A request's headers must be complete within ``header_timeout_s`` of its first byte (a new
  connection's first request: of its opening); else ``408 deadline_exceeded`` and closed.
  A connection with no request in progress is closed after ``keepalive_timeout_s``.
- A request that cannot be parsed is answered ``400 invalid_argument`` as JSON with one log
  line per burst from that peer, never a traceback; a client that leaves in the middle of
  its request (its body cut off) is one INFO line per burst, not aiohttp's ERROR.

Connections on the HTTP/2 relay's Unix socket have no peer address: the HTTP/2 listener
counted their client already, so they are not counted again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.web_request import BaseRequest

from wire.burst_log import BurstLog
from wire.errors import http_error_json
from wire.http.limits import EdgeLimits
from wire.peer_budget import PeerBudget
from wire.peers import peer_key

logger = logging.getLogger("cursor_server.edge.listener")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def raw_error(status: int, reason: str, code: str, message: str) -> bytes:
    """A whole HTTP/1.1 error response that closes its connection, for the moments no
    aiohttp response exists (refused at once, headers too late)."""
    body = http_error_json(code, message)
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class ConnectionGuard:
    """The connection counts of one server (both listeners) and their log lines."""

    def __init__(self, limits: EdgeLimits) -> None:
        self.limits = limits
        self.budget = PeerBudget(
            "connections",
            per_peer=limits.max_connections_per_peer,
            total=limits.max_connections,
        )
        self._refused = BurstLog(logger, "connection refused: limit")
        self._late = BurstLog(logger, "connection closed: request headers too late")
        self._malformed = BurstLog(logger, "malformed request refused")
        self._left = BurstLog(logger, "client left mid-request", level=logging.INFO)

    def admit(self, peer: str) -> str | None:
        """Count a new connection from ``peer``, or say why it is refused (and log it)."""
        refusal = self.budget.admit(peer)
        if refusal is not None:
            self._refused(peer_key(peer), peer=peer, reason=refusal)
        return refusal

    def release(self, peer: str) -> None:
        self.budget.release(peer)

    def headers_late(self, peer: str) -> None:
        self._late(peer_key(peer), peer=peer, waited_s=f"{self.limits.header_timeout_s:g}")

    def left(self, peer: str, reason: str) -> None:
        self._left(peer_key(peer), peer=peer, reason=reason)

    def malformed(self, peer: str, status: int, reason: str) -> None:
        self._malformed(peer_key(peer), peer=peer, status=status, reason=reason)


class GuardedRequestHandler(web.RequestHandler):
    """aiohttp's connection handler with the connection limits, the header deadline and a
    JSON answer to what it cannot parse."""

    def __init__(self, manager: web.Server, *, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._guard = guard
        self._peer: str | None = None  # None: the relay's Unix socket (not counted)
        self._counted = False
        self._in_request = False
        # When the head being waited for started (None: none is being waited for), and the
        # one timer that looks at it (see ``_arm_headers``).
        self._headers_since: float | None = None
        self._headers_due: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peername = transport.get_extra_info("peername")
        self._peer = str(peername[0]) if isinstance(peername, tuple) else None
        super().connection_made(transport)
        if self._peer is not None:
            refusal = self._guard.admit(self._peer)
            if refusal is not None:
                self._refuse(503, "Service Unavailable", "resource_exhausted", refusal)
                return
            self._counted = True
        self._arm_headers()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm_headers()
        if self._headers_due is not None:
            self._headers_due.cancel()
            self._headers_due = None
        if self._counted:
            self._counted = False
            assert self._peer is not None
            self._guard.release(self._peer)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # The first byte of a next request starts its header clock: only while aiohttp waits
        # for one (not for the rest of a body it is draining, or while a response is being
        # written), and not for the blank lines a client may send between requests.
        waiting = self._waiter is not None and not self._waiter.done()
        if waiting and not self._in_request and self._headers_since is None and data.strip(b"\r\n"):
            self._arm_headers()
        super().data_received(data)

    def request_started(self) -> None:
        """Its headers are in (the app's first middleware says so)."""
        self._in_request = True
        self._disarm_headers()

    def request_done(self) -> None:
        self._in_request = False

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """A request aiohttp could not parse (4xx): JSON and one line per burst. A failure of
        our own (5xx) keeps aiohttp's answer and traceback: that is a bug to see."""
        if status >= 500 and isinstance(exc, ConnectionError):
            # The client went away while its request was read or answered: nothing to answer
            # and nothing of ours went wrong.
            self._guard.left(self._peer or "", repr(exc))
            response = web.Response(status=499)
            response.force_close()
            return response
        if status >= 500:
            return super().handle_error(request, status, exc, message)
        reason = message or (str(exc) if exc is not None else "malformed request")
        self._guard.malformed(self._peer or "", status, reason)
        if request.writer.output_size > 0:
            raise ConnectionError("a response was sent already; the connection is closed")
        response = web.Response(
            status=status,
            body=http_error_json("invalid_argument", f"malformed request: {reason}"),
            content_type="application/json",
        )
        response.force_close()
        return response

    def _arm_headers(self) -> None:
        """Start the clock of a request's head. The timer is not armed and cancelled per
        request (two heap operations on the loop for every request of a kept-alive
        connection): one timer stays, and when it fires it looks at the clock's start."""
        since = asyncio.get_running_loop().time()
        self._headers_since = since
        if self._headers_due is None:
            self._time_headers(since)

    def _time_headers(self, since: float) -> None:
        deadline = since + self._guard.limits.header_timeout_s
        loop = asyncio.get_running_loop()
        self._headers_due = loop.call_at(deadline, self._headers_check, since)

    def _disarm_headers(self) -> None:
        self._headers_since = None

    def _headers_check(self, timed: float) -> None:
        """The timer of the head that started at ``timed`` fired: that head is late if it is
        still the one waited for; a later one is timed to its own deadline; with none waited
        for, the timer ends."""
        self._headers_due = None
        since = self._headers_since
        if since is None:
            return
        if since != timed:
            self._time_headers(since)
            return
        self._headers_late()

    def _headers_late(self) -> None:
        if self._in_request or self.transport is None:
            return
        self._guard.headers_late(self._peer or "")
        timeout = self._guard.limits.header_timeout_s
        self._refuse(
            408,
            "Request Timeout",
            "deadline_exceeded",
            f"request headers did not arrive within {timeout:g} s",
        )

    def _refuse(self, status: int, reason: str, code: str, message: str) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(raw_error(status, reason, code, message))
            transport.close()


@web.middleware
async def track_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The app's first middleware: a request's headers are in, so its connection's header
    clock stops until the response is done."""
    protocol = request.protocol
    if not isinstance(protocol, GuardedRequestHandler):
        return await handler(request)
    protocol.request_started()
    try:
        return await handler(request)
    finally:
        protocol.request_done()


class GuardedRunner(web.AppRunner):
    """An ``AppRunner`` whose sites make ``GuardedRequestHandler`` connections. A site builds
    its connections by calling ``runner.server``; here that is the guarded factory, while
    the runner's own lifecycle (startup, shutdown, cleanup) stays aiohttp's."""

    def __init__(
        self,
        app: web.Application,
        guard: ConnectionGuard,
        *,
        shutdown_timeout: float,
        **handler_args: Any,
    ) -> None:
        handler_args.setdefault("keepalive_timeout", guard.limits.keepalive_timeout_s)
        super().__init__(
            app, handle_signals=False, shutdown_timeout=shutdown_timeout, **handler_args
        )
        self._guard = guard
        self._handler_args = handler_args

    @property
    def server(self) -> Any:
        base = super().server
        if base is None:
            return None
        # A site calls this factory on the loop, once per accepted connection.
        return lambda: GuardedRequestHandler(
            base, guard=self._guard, loop=asyncio.get_running_loop(), **self._handler_args
        )


# Descriptors kept out of the connection budget: database, clients, log, listeners; and how
# many one connection may need. The soft file limit is raised to this much when it may be.
FILES_KEPT_FREE = 128
FILES_PER_CONNECTION = 3
FILE_LIMIT_WANTED = 65536


def raise_file_limit() -> None:
    """Let the process open as many files as its hard limit allows: every connection is one
    (a proxied or relayed request two or three). A limit it may not raise stays as it is."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = FILE_LIMIT_WANTED if hard == resource.RLIM_INFINITY else hard
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (OSError, ValueError):
        pass


def default_max_connections() -> int:
    """``EdgeLimits.max_connections``, or fewer when the process may open fewer files: room
    is left for the database, the clients and the log, and each connection may need three
    (its own, an upstream's, the relay's)."""
    wanted = EdgeLimits().max_connections
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return wanted
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(16, min(wanted, (soft - FILES_KEPT_FREE) // FILES_PER_CONNECTION))


def local_addresses() -> list[str]:
    """This machine's addresses, as far as it can say without a network library: its host
    name's addresses and the source address of its default routes (a UDP socket's connect
    sends nothing). A listener bound to every address answers on each of them."""
    found: set[str] = set()
    with contextlib.suppress(OSError):
        found.update(str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None))
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as udp:
                udp.connect((probe, 9))
                found.add(str(udp.getsockname()[0]))
        except OSError:
            pass
    return sorted(found)
