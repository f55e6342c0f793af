"""The two agent RPCs: RunSSE (server stream) and BidiAppend (client messages).

Thin: HTTP in, typed values to the registry, frames out. No loop logic lives here. A
RunRequest is checked here for the model it names (``wire.model_routing`` over the store's
routing settings, through ``serves_run`` off the loop), so that a run of one of Cursor's own
models that no routing setting maps to ours is relayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Mapping

from aiohttp import StreamReader, web
from multidict import CIMultiDict

from wire.bidi import BidiAppend, parse_bidi_append, parse_run_sse
from wire.burst_log import BurstLog
from wire.connect import decode_unary_body
from wire.errors import Code, ConnectError
from wire.hop_by_hop import response_headers
from wire.http.agent_activity import CLIENT_VERSION_HEADER, AgentActivity
from wire.http.append_reply import ACCEPTED, error_reply, misdirected_reply, reply_response
from wire.http.gate import peer_of
from wire.http.limits import EdgeLimits
from wire.http.outbound import Subscription
from wire.http.peer_forwarding import PeerForwarder
from wire.http.protocol_drift import ProtocolDrift
from wire.http.proxy import header_text
from wire.http.registry import RunRegistry
from wire.http.responses import connect_error_response
from wire.http.upstream_run import RawRequest, ServesRun, runs_upstream
from wire.inbox import BufferPool
from wire.log import log_event
from wire.peer_budget import PeerBudget
from wire.peer_frames import AppendCall, AppendReply

logger = logging.getLogger("cursor_server.edge")

RUN_SSE_PATH = "/agent.v1.AgentService/RunSSE"
BIDI_APPEND_PATH = "/aiserver.v1.BidiService/BidiAppend"

# More than a write adds to a frame: its chunk's size line, and the response's head with the
# first one.
WRITE_FRAMING_BYTES = 4096

RUN_SSE_HEADERS = {
    # The official backend answers RunSSE with this content type although the body is
    # binary Connect envelopes; the Cursor client expects it.
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "Connect-Protocol-Version": "1",
}


async def read_body_limited(
    request: web.Request,
    limit: int,
    hold: BodyHold | None = None,
    idle_s: float | None = None,
) -> bytes:
    """The raw request body, refusing more than ``limit`` bytes without reading it all.
    ``hold``: the bytes are counted against the bodies being received in all (the caller
    releases them); ``idle_s``: a client that sends nothing for so long mid-body is cut off."""
    if request.content_length is not None and request.content_length > limit:
        raise _too_large(limit)
    if hold is not None and request.content_length:
        hold.take(request.content_length)  # what it declared, before a byte is read
    body = bytearray()
    while True:
        chunk = await _next_chunk(request.content, idle_s)
        if not chunk:
            return bytes(body)
        body += chunk
        if len(body) > limit:
            raise _too_large(limit)
        if hold is not None and request.content_length is None:
            hold.take(len(chunk))


async def _next_chunk(content: StreamReader, idle_s: float | None) -> bytes:
    """The body's next bytes (empty at its end). What has arrived is taken as it is: a small
    body comes with its headers, and a timer armed and cancelled per read cost more than the
    read. Only a read that has to wait is limited to ``idle_s``."""
    chunk = content.read_nowait()
    if chunk or content.is_eof():
        return chunk
    try:
        async with asyncio.timeout(idle_s):
            return await content.readany()
    except TimeoutError:
        raise ConnectError(
            Code.DEADLINE_EXCEEDED, f"the request body stalled for {idle_s:g} s"
        ) from None


def _write_may_wait(request: web.Request, size: int) -> bool:
    """Whether writing ``size`` more bytes of the response could wait for its client: its
    writes are paused, or those bytes (and their chunk framing) could take the connection's
    buffer past its high-water mark, which pauses them. A write that cannot wait needs no
    stall timer (a RunSSE stream writes a few frames a turn, each would arm and cancel one)."""
    transport = request.transport
    if transport is None or request.protocol.writing_paused:
        return True
    _, high = transport.get_write_buffer_limits()
    return transport.get_write_buffer_size() + size + WRITE_FRAMING_BYTES > high


def _too_large(limit: int) -> ConnectError:
    return ConnectError(Code.RESOURCE_EXHAUSTED, f"request body exceeds the limit of {limit} bytes")


class BodyHold:
    """One request's share of ``BufferPool`` of the bodies being received; ``release`` once
    its handler is done with them (the inbox counts what it keeps on its own)."""

    def __init__(self, pool: BufferPool) -> None:
        self._pool = pool
        self._held = 0

    def take(self, size: int) -> None:
        if not self._pool.take(size):
            raise ConnectError(
                Code.RESOURCE_EXHAUSTED,
                f"request bodies being received hold {self._pool.used} bytes, near the "
                f"server's limit of {self._pool.max_bytes}; try again shortly",
            )
        self._held += size

    def release(self) -> None:
        self._pool.give(self._held)
        self._held = 0


async def read_protocol_payload(
    request: web.Request, limits: EdgeLimits, hold: BodyHold | None = None
) -> tuple[RawRequest, bytes]:
    """The request as sent and the protobuf payload of its RunSSE/BidiAppend body (raw or
    enveloped, maybe gzip)."""
    body = await read_body_limited(request, limits.max_body_bytes, hold, limits.body_idle_s)
    payload = decode_unary_body(
        body,
        content_encoding=request.headers.get("Content-Encoding"),
        connect_content_encoding=request.headers.get("Connect-Content-Encoding"),
        max_bytes=limits.max_body_bytes,
    )
    return RawRequest(body, tuple(request.raw_headers)), payload


class AgentRoutes:
    """Handlers bound to one registry and one set of limits; each request is told to the
    ``activity`` recorder (the console's "has Cursor connected yet")."""

    def __init__(
        self,
        registry: RunRegistry,
        limits: EdgeLimits,
        activity: AgentActivity | None = None,
        serves_run: ServesRun | None = None,
        peers: PeerForwarder | None = None,
        drift: ProtocolDrift | None = None,
    ) -> None:
        """Without ``serves_run`` (no store) every run is served here; without ``peers`` (one
        instance) every run is held here; ``drift`` is told each client message where its
        client connected (not again where a peer forwarded it)."""
        self._drift = drift
        self._peers = peers
        self._registry = registry
        self._limits = limits
        self._activity = activity
        self._serves_run = serves_run
        self._streams = PeerBudget(
            "RunSSE streams",
            per_peer=limits.max_run_streams_per_peer,
            total=limits.max_run_streams,
        )
        self._refused_log = BurstLog(logger, "RunSSE refused: stream limit")
        # Bytes of RunSSE and BidiAppend bodies being received, over all requests.
        self._bodies = BufferPool(limits.body_bytes_in_flight)

    @property
    def open_streams(self) -> int:
        """RunSSE streams open now, over all peers."""
        return self._streams.held

    def _record(self, request: web.Request) -> None:
        if self._activity is not None:
            self._activity.record(request.headers.get(CLIENT_VERSION_HEADER))

    def register(self, app: web.Application) -> None:
        app.router.add_post(RUN_SSE_PATH, self.run_sse)
        app.router.add_post(BIDI_APPEND_PATH, self.bidi_append)

    def register_held_here(self, app: web.Application) -> None:
        """The same RPCs on the peer listener: a peer forwarded them because this instance
        holds their run, so they are served here, never forwarded again, and were counted
        against the client's budgets (and on the Connect page) where the client connected."""
        app.router.add_post(RUN_SSE_PATH, functools.partial(self._run_sse, here=True))
        app.router.add_post(BIDI_APPEND_PATH, self._bidi_append_here)

    async def _held_elsewhere(
        self, request: web.Request, raw: RawRequest, request_id: str, here: bool
    ) -> web.StreamResponse | None:
        """For a RunSSE: the holder's stream when a peer holds ``request_id``; None to serve
        it here. One a peer forwarded (``here``) for a run not in memory is checked against
        the route: another holder's gets ``misdirected``, and the peer asks again."""
        if self._peers is None or self._registry.has(request_id):
            return None
        if here:
            if await self._peers.held_here(request_id):
                return None
            return await reply_response(request, misdirected_reply(request_id))
        url = await self._peers.destination(request_id)
        if url is None:
            return None
        return await self._peers.forward(request, raw, request_id, url)

    async def run_sse(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        peer = peer_of(request)
        refusal = self._streams.admit(peer)
        if refusal is not None:
            self._refused_log(peer, peer=peer, reason=refusal)
            return connect_error_response(ConnectError(Code.RESOURCE_EXHAUSTED, refusal))
        try:
            return await self._run_sse(request)
        finally:
            self._streams.release(peer)

    async def _run_sse(self, request: web.Request, here: bool = False) -> web.StreamResponse:
        hold = BodyHold(self._bodies)
        try:
            raw, payload = await read_protocol_payload(request, self._limits, hold)
            request_id = parse_run_sse(payload)
            hold.release()
            forwarded = await self._held_elsewhere(request, raw, request_id, here)
            if forwarded is not None:
                return forwarded
            stream = self._registry.stream_for(request_id, raw)
        except ConnectError as error:
            log_event(
                logger, logging.INFO, "RunSSE refused", code=error.code.value, message=error.message
            )
            return connect_error_response(error)
        finally:
            hold.release()  # a RunSSE body is a request id: done with once read
        response = web.StreamResponse(status=200, headers=RUN_SSE_HEADERS)
        await response.prepare(request)
        log_event(logger, logging.INFO, "RunSSE opened", request_id=request_id)
        subscription = Subscription(stream)
        frames = subscription.frames()
        watcher = asyncio.create_task(self._watch_client(request, request_id, subscription))
        stall_s = self._limits.slow_reader_timeout_s
        try:
            async for frame in frames:
                try:
                    if _write_may_wait(request, len(frame)):
                        async with asyncio.timeout(stall_s):
                            await response.write(frame)
                    else:
                        await response.write(frame)
                except TimeoutError:
                    # The client stopped reading: its buffer is full and the write waits.
                    log_event(
                        logger,
                        logging.WARNING,
                        "RunSSE client stopped reading; stream cut",
                        request_id=request_id,
                        waited_s=stall_s,
                    )
                    if request.transport is not None:
                        request.transport.abort()
                    self._registry.reader_stalled(request_id, stall_s)
                    return response
        except (ConnectionResetError, ConnectionError):
            log_event(logger, logging.INFO, "RunSSE client went away", request_id=request_id)
            self._registry.sse_left(request_id)
            return response
        finally:
            watcher.cancel()
            await frames.aclose()
        if subscription.left:
            log_event(logger, logging.INFO, "RunSSE client went away", request_id=request_id)
            return response
        with contextlib.suppress(ConnectionResetError, ConnectionError):
            await response.write_eof()
        log_event(logger, logging.INFO, "RunSSE closed", request_id=request_id)
        return response

    async def _watch_client(
        self, request: web.Request, request_id: str, subscription: Subscription
    ) -> None:
        """Once the RunSSE client has gone, even while nothing is written (aiohttp notices a
        lost client only on a write): its stream ends here, so it no longer counts against
        the stream limits, and the registry hears of it (a relayed run's upstream closes)."""
        poll_s = self._limits.client_poll_s
        while (transport := request.transport) is not None and not transport.is_closing():
            await asyncio.sleep(poll_s)
        subscription.leave()
        self._registry.sse_left(request_id)

    async def _relayed(self, append: BidiAppend) -> bool:
        """Whether this append's RunRequest goes to Cursor's backend, not to a model of ours."""
        if append.message.WhichOneof("message") != "run_request":
            return False
        return await runs_upstream(append.message.run_request, self._serves_run)

    async def bidi_append(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        hold = BodyHold(self._bodies)
        try:
            return await self._bidi_append(request, hold)
        finally:
            hold.release()

    async def _bidi_append_here(self, request: web.Request) -> web.StreamResponse:
        hold = BodyHold(self._bodies)
        try:
            return await self._bidi_append(request, hold, here=True)
        finally:
            hold.release()

    async def _bidi_append(
        self, request: web.Request, hold: BodyHold, here: bool = False
    ) -> web.StreamResponse:
        try:
            raw, payload = await read_protocol_payload(request, self._limits, hold)
        except ConnectError as error:
            return await reply_response(request, self._refused(error))
        reply = await self.append_reply(raw, payload, request.headers, here)
        return await reply_response(request, reply)

    async def peer_append(self, call: AppendCall) -> AppendReply:
        """An append a peer forwarded on its channel, for a run this instance holds."""
        headers = CIMultiDict((header_text(n), header_text(v)) for n, v in call.headers)
        try:
            if len(call.body) > self._limits.max_body_bytes:
                raise ConnectError(
                    Code.RESOURCE_EXHAUSTED,
                    f"request body exceeds the limit of {self._limits.max_body_bytes} bytes",
                )
            payload = decode_unary_body(
                call.body,
                content_encoding=headers.get("Content-Encoding"),
                connect_content_encoding=headers.get("Connect-Content-Encoding"),
                max_bytes=self._limits.max_body_bytes,
            )
        except ConnectError as error:
            return self._refused(error)
        return await self.append_reply(RawRequest(call.body, call.headers), payload, headers, True)

    async def append_reply(
        self, raw: RawRequest, payload: bytes, headers: Mapping[str, str], here: bool
    ) -> AppendReply:
        """What a BidiAppend is answered: taken here, the holder's answer when a peer holds
        its run (``here``: a peer forwarded it, so it is never forwarded again, and a run this
        instance does not hold is ``misdirected``), or the upstream's for a relayed run."""
        try:
            append = parse_bidi_append(payload, headers)
            if self._drift is not None and not here:
                self._drift.message(append.message, headers.get(CLIENT_VERSION_HEADER))
            request_id = append.request_id
            if self._peers is not None and not self._registry.has(request_id):
                if here and not await self._peers.held_here(request_id):
                    return misdirected_reply(request_id)
                url = None if here else await self._peers.destination(request_id)
                if url is not None:
                    forwarded = await self._peers.forward_append(raw, request_id, url)
                    if forwarded is not None:
                        return forwarded
            answer = self._registry.append(append, raw, relay=await self._relayed(append))
            if answer is not None:
                upstream = await answer
                headers_out = tuple(response_headers(upstream.headers))
                return AppendReply(
                    0, upstream.status, upstream.reason, headers_out, upstream.body, True
                )
        except ConnectError as error:
            return self._refused(error)
        log_event(
            logger,
            logging.DEBUG,
            "BidiAppend accepted",
            request_id=append.request_id,
            seqno=append.seqno,
            variant=append.message.WhichOneof("message"),
        )
        return ACCEPTED

    @staticmethod
    def _refused(error: ConnectError) -> AppendReply:
        log_event(
            logger, logging.INFO, "BidiAppend refused", code=error.code.value, message=error.message
        )
        return error_reply(error)
