"""``agent.v1.AgentService/Run``: the bidi stream, fed into the same registry as the pair.

The request body is a stream of enveloped ``AgentClientMessage``s; each becomes what a
BidiAppend would be (seqno = its index on the stream), so the inbox, the SessionActor and
everything behind it are the ones RunSSE + BidiAppend drive. The response is the run's
outbound stream, exactly the frames a RunSSE subscriber gets, ending with the EndStream.

The run id is the RunRequest's ``run_id`` (``x-request-id`` is new on each retry of a CLI and
only names the request in logs), else ``x-request-id``, else a fresh one. The client
half-closing, resetting the stream or dropping the connection before the EndStream is a
disconnect: nothing can answer the run's execs any more, so the run is cancelled. Errors
before the run starts are an EndStream inside HTTP 200, never a bare status.

A RunRequest naming one of Cursor's own models is relayed upstream as the pair would be
(``wire.http.run_pair``), every message as the client framed it; its request context is
never asked for here: Cursor's backend asks for what it needs itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

import msgspec
from google.protobuf.message import DecodeError

from wire.bidi import BidiAppend, ParentLink, parse_parent_headers
from wire.connect import (
    FLAG_COMPRESSED,
    Envelope,
    EnvelopeReader,
    data_frame,
    end_stream_frame,
    gunzip_limited,
)
from wire.errors import Code, ConnectError, decode_error, protocol_error
from wire.http.agent_activity import CLIENT_VERSION_HEADER, AgentActivity
from wire.http.h2_server import H2Stream, StreamGone
from wire.http.limits import EdgeLimits
from wire.http.protocol_drift import ProtocolDrift
from wire.http.registry import RunRegistry
from wire.http.run_pair import RunPair, run_pair
from wire.http.upstream_run import ServesRun, runs_upstream
from wire.identity import ANONYMOUS_USER, user_from_authorization
from wire.log import log_event
from wire.proto import agent_v1_pb2 as agent
from wire.run_context import (
    is_request_context_answer,
    lacks_request_context,
    request_context_exec,
    with_request_context,
)

logger = logging.getLogger("cursor_server.edge")

RUN_PATH = "/agent.v1.AgentService/Run"
REQUEST_ID_HEADER = "x-request-id"
RUN_HEADERS = (
    ("content-type", "application/connect+proto"),
    ("cache-control", "no-cache"),
    ("connect-protocol-version", "1"),
)
# Messages a client may send before its RunRequest (heartbeats, a prewarm); more is refused.
MAX_MESSAGES_BEFORE_RUN_REQUEST = 64


class Received(msgspec.Struct, frozen=True):
    """A client message and its payload as it came (what a relay sends on)."""

    message: agent.AgentClientMessage
    payload: bytes


class Started(msgspec.Struct, frozen=True):
    """A ``Run`` up to its RunRequest: the run id, its parent link, the messages so far, and
    the upstream pair when the run is relayed."""

    run_id: str
    parent: ParentLink | None
    early: list[Received]
    pair: RunPair | None
    user_id: str = ANONYMOUS_USER  # from the stream's ``authorization`` (``wire.identity``)


class _Messages:
    """The request body as a stream of ``AgentClientMessage``s."""

    def __init__(
        self, stream: H2Stream, limits: EdgeLimits, drift: ProtocolDrift | None = None
    ) -> None:
        self._stream = stream
        self._drift = drift  # told each message, for what it carries that is not known here
        self._limit = limits.max_body_bytes
        self._reader = EnvelopeReader(max_payload=limits.max_body_bytes)
        self._ready: list[Envelope] = []
        encoding = (stream.header("connect-content-encoding") or "identity").strip().lower()
        self._gzip = encoding == "gzip"

    async def next(self) -> Received | None:
        """The next message; None when the client half-closed."""
        while not self._ready:
            chunk = await self._stream.read()
            if chunk is None:
                self._reader.close()
                return None
            self._ready.extend(self._reader.feed(chunk))
        envelope = self._ready.pop(0)
        if envelope.is_end_stream:
            raise protocol_error("a client EndStream frame on the Run request stream")
        payload = envelope.payload
        if envelope.flags & FLAG_COMPRESSED:
            if not self._gzip:
                raise protocol_error("compressed frame needs Connect-Content-Encoding: gzip")
            payload = gunzip_limited(payload, self._limit)
        try:
            message = agent.AgentClientMessage.FromString(payload)
        except DecodeError as exc:
            raise decode_error(f"AgentClientMessage: {exc}") from exc
        if self._drift is not None:
            self._drift.message(message, self._stream.header(CLIENT_VERSION_HEADER))
        return Received(message, payload)


class AgentRunRoute:
    """Serves ``Run`` streams on the HTTP/2 listener against the shared run registry."""

    def __init__(
        self,
        registry: RunRegistry,
        limits: EdgeLimits,
        activity: AgentActivity | None = None,
        serves_run: ServesRun | None = None,
        drift: ProtocolDrift | None = None,
    ) -> None:
        """Without ``serves_run`` (no store) every run is served here."""
        self._drift = drift
        self._registry = registry
        self._serves_run = serves_run
        self._limits = limits
        self._activity = activity
        self._context_wait_s = limits.request_context_wait_s
        # Run ids between their RunRequest and their registry entry (the context wait is in
        # between): a second stream for one of them is refused as for an open run.
        self._starting: set[str] = set()

    async def handle(self, stream: H2Stream) -> None:
        if self._activity is not None:
            self._activity.record(stream.header(CLIENT_VERSION_HEADER))
        messages = _Messages(stream, self._limits, self._drift)
        try:
            started = await self._start(stream, messages)
            run_id = started.run_id
            run_sse = None if started.pair is None else started.pair.run_sse()
            try:
                # Refused when shutting down or the id was removed.
                outbound = self._registry.stream_for(run_id, run_sse, relayed=run_sse is not None)
            finally:
                self._starting.discard(run_id)
        except ConnectError as error:
            await self._refuse(stream, error)
            return
        log_event(
            logger,
            logging.INFO,
            "Run opened",
            request_id=run_id,
            x_request_id=stream.header(REQUEST_ID_HEADER),
            relayed=started.pair is not None,
        )
        frames = outbound.subscribe()
        if not stream.responded:
            stream.respond(200, RUN_HEADERS)
        feed = asyncio.ensure_future(self._feed(started, messages))
        ended = False
        stall_s = self._limits.slow_reader_timeout_s
        try:
            async for frame in frames:
                async with asyncio.timeout(stall_s):
                    await stream.write(frame)
            stream.end()
            ended = True
        except StreamGone:
            pass
        except TimeoutError:
            # As for RunSSE: a client that takes nothing for so long ends its run.
            log_event(
                logger,
                logging.WARNING,
                "Run client stopped reading; stream reset",
                request_id=run_id,
                waited_s=stall_s,
            )
            stream.reset()
            self._registry.reader_stalled(run_id, stall_s)
            ended = True  # the run ends deadline_exceeded, not as a disconnect
        finally:
            await frames.aclose()
            feed.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await feed
            if not ended:
                self._registry.disconnect(run_id, "the client left the Run stream")
        log_event(logger, logging.INFO, "Run closed", request_id=run_id, complete=ended)

    async def _start(self, stream: H2Stream, messages: _Messages) -> Started:
        """Read up to the RunRequest (and its context, for a run served here)."""
        parent = parse_parent_headers({k: v for k, v in stream.headers if not k.startswith(":")})
        user_id = user_from_authorization(stream.header("authorization"))
        early: list[Received] = []
        while True:
            received = await messages.next()
            if received is None:
                raise protocol_error("the Run request stream ended before its RunRequest")
            early.append(received)
            message = received.message
            if message.HasField("run_request"):
                break
            if len(early) >= MAX_MESSAGES_BEFORE_RUN_REQUEST:
                raise protocol_error(
                    f"no RunRequest in the first {MAX_MESSAGES_BEFORE_RUN_REQUEST} messages"
                )
        run_id = (
            message.run_request.run_id or stream.header(REQUEST_ID_HEADER) or f"run-{uuid.uuid4()}"
        )
        if self._registry.has(run_id) or run_id in self._starting:
            raise ConnectError(Code.ABORTED, f"run {run_id} is already open on another stream")
        # Taken before the first await below: a second stream for the id is refused meanwhile.
        self._starting.add(run_id)
        try:
            if await runs_upstream(message.run_request, self._serves_run):
                return Started(run_id, parent, early, run_pair(run_id, stream.headers), user_id)
            if lacks_request_context(message):
                early[-1] = await self._ask_context(stream, messages, message, early)
        except BaseException:
            self._starting.discard(run_id)
            raise
        return Started(run_id, parent, early, None, user_id)

    async def _ask_context(
        self,
        stream: H2Stream,
        messages: _Messages,
        run_request: agent.AgentClientMessage,
        early: list[Received],
    ) -> Received:
        """Ask for the context with ``request_context_args``; other messages wait in
        ``early`` meanwhile. Bounded: a client that never answers ends the run."""
        stream.respond(200, RUN_HEADERS)
        await stream.write(data_frame(request_context_exec()))
        try:
            async with asyncio.timeout(self._context_wait_s):
                while (answer := await messages.next()) is not None:
                    if is_request_context_answer(answer.message):
                        joined = with_request_context(run_request, answer.message)
                        return Received(joined, joined.SerializeToString())
                    early.insert(len(early) - 1, answer)
        except TimeoutError:
            raise ConnectError(
                Code.DEADLINE_EXCEEDED,
                f"the client did not answer request_context_args within {self._context_wait_s:g} s",
            ) from None
        raise protocol_error("the Run request stream ended before the request context")

    async def _feed(self, started: Started, messages: _Messages) -> None:
        """Every client message, in order, as the BidiAppend it stands for."""
        run_id, pair = started.run_id, started.pair
        seqno = 0

        def append(received: Received) -> None:
            nonlocal seqno
            item = BidiAppend(run_id, seqno, received.message, started.parent, started.user_id)
            if pair is None:
                self._registry.append(item)
            else:
                raw = pair.append(seqno, received.payload)
                self._registry.append(item, raw, relay=True, answered=False)
            seqno += 1

        try:
            for received in started.early:
                append(received)
            while (later := await messages.next()) is not None:
                if pair is None and is_request_context_answer(later.message):
                    continue  # the context exec's trailing close
                append(later)
            reason = "the client half-closed the Run stream"
        except StreamGone:
            reason = "the client reset the Run stream"
        except ConnectError as error:
            log_event(
                logger,
                logging.INFO,
                "Run message refused",
                code=error.code.value,
                message=error.message,
                request_id=run_id,
            )
            self._registry.fail(run_id, error)
            return
        log_event(logger, logging.INFO, "Run client gone", request_id=run_id, reason=reason)
        self._registry.disconnect(run_id, reason)

    @staticmethod
    async def _refuse(stream: H2Stream, error: ConnectError) -> None:
        """An error before the run: HTTP 200 and the EndStream carrying it."""
        log_event(logger, logging.INFO, "Run refused", code=error.code.value, message=error.message)
        with contextlib.suppress(StreamGone):
            if not stream.responded:
                stream.respond(200, RUN_HEADERS)
            await stream.write(end_stream_frame(error))
            stream.end()
