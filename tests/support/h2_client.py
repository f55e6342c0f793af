"""Our own HTTP/2 client for the tests, on ``h2`` over a real socket (not the server's code).

``H2Client`` is one connection (h2c with prior knowledge, or TLS with ALPN ``h2``);
``ClientStream`` one request. ``H2Cursor`` gives ``CursorSession`` (``fake_cursor.py``) the
``open_run_sse`` / ``append`` it drives, both on one bidi ``Run`` stream, so every behaviour
the fake editor checks over the HTTP/1.1 pair runs over ``Run`` unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
import uuid
from collections.abc import Mapping
from typing import Any, Self

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings

from wire.connect import Envelope, EnvelopeReader, encode_envelope
from wire.proto import agent_v1_pb2 as agent

RUN = "/agent.v1.AgentService/Run"


class ClientStream:
    """One request: send the body, read the response (data is acknowledged when read,
    unless ``auto_ack`` is off: then ``ack`` opens the window by hand)."""

    def __init__(self, client: H2Client, stream_id: int, auto_ack: bool) -> None:
        self.client = client
        self.stream_id = stream_id
        self.auto_ack = auto_ack
        self.response_headers: asyncio.Future[dict[str, str]] = (
            asyncio.get_running_loop().create_future()
        )
        self.chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.reset_code: int | None = None
        self.ended = asyncio.Event()  # the server ended or reset its side
        self.received = 0
        self._unacked = 0

    async def headers(self, timeout: float = 5.0) -> dict[str, str]:
        return await asyncio.wait_for(asyncio.shield(self.response_headers), timeout)

    async def send(self, data: bytes, *, end: bool = False) -> None:
        await self.client.send_data(self.stream_id, data, end=end)

    def end(self) -> None:
        self.client.conn.end_stream(self.stream_id)
        self.client.flush()

    def reset(self, code: int = h2.errors.ErrorCodes.CANCEL) -> None:
        self.client.conn.reset_stream(self.stream_id, code)
        self.client.flush()

    async def read(self, timeout: float = 5.0) -> bytes | None:
        chunk = await asyncio.wait_for(self.chunks.get(), timeout)
        if chunk is not None and self.auto_ack:
            self.ack(len(chunk))
        return chunk

    def ack(self, size: int) -> None:
        with contextlib.suppress(Exception):
            self.client.conn.acknowledge_received_data(size, self.stream_id)
        self.client.flush()

    async def body(self, timeout: float = 5.0) -> bytes:
        out = bytearray()
        while (chunk := await self.read(timeout)) is not None:
            out += chunk
        return bytes(out)


class H2Client:
    """One HTTP/2 connection to the server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        config = h2.config.H2Configuration(client_side=True, header_encoding=None)
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.initiate_connection()
        self.streams: dict[int, ClientStream] = {}
        self.goaway: h2.events.ConnectionTerminated | None = None
        self.goaway_seen = asyncio.Event()
        self.closed = asyncio.Event()
        self.settings_seen = asyncio.Event()
        self._window = asyncio.Event()
        self.flush()
        self._task = asyncio.get_running_loop().create_task(self._receive())

    @classmethod
    async def connect(
        cls, address: str, *, tls: ssl.SSLContext | None = None, source: str | None = None
    ) -> Self:
        """``source``: the local address to connect from (another peer on loopback)."""
        host, _, port = address.rpartition(":")
        reader, writer = await asyncio.open_connection(
            host.strip("[]"),
            int(port),
            ssl=tls,
            server_hostname="127.0.0.1" if tls else None,
            local_addr=None if source is None else (source, 0),
        )
        if tls is not None:
            assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "h2"
        client = cls(reader, writer)
        await asyncio.wait_for(client.settings_seen.wait(), 5)
        return client

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data and not self.writer.is_closing():
            self.writer.write(data)

    def open(
        self,
        path: str,
        headers: Mapping[str, str] | None = None,
        *,
        method: str = "POST",
        end: bool = False,
        auto_ack: bool = True,
        authority: str = "127.0.0.1",
    ) -> ClientStream:
        stream_id = self.conn.get_next_available_stream_id()
        fields = [
            (":method", method),
            (":scheme", "http"),
            (":authority", authority),
            (":path", path),
            *((k.lower(), v) for k, v in (headers or {}).items()),
        ]
        stream = ClientStream(self, stream_id, auto_ack)
        self.streams[stream_id] = stream
        self.conn.send_headers(stream_id, fields, end_stream=end)
        self.flush()
        return stream

    async def send_data(self, stream_id: int, data: bytes, *, end: bool = False) -> None:
        view = memoryview(data)
        while view:
            window = min(
                self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size
            )
            if window <= 0:
                self._window.clear()
                await asyncio.wait_for(self._window.wait(), 10)
                continue
            self.conn.send_data(stream_id, bytes(view[:window]))
            view = view[window:]
            self.flush()
        if end:
            self.conn.end_stream(stream_id)
        self.flush()
        await self.writer.drain()

    async def _receive(self) -> None:
        try:
            while data := await self.reader.read(65536):
                for event in self.conn.receive_data(data):
                    self._event(event)
                self.flush()
        except (ConnectionError, OSError):
            pass
        finally:
            self.closed.set()
            for stream in self.streams.values():
                if not stream.ended.is_set():
                    stream.chunks.put_nowait(None)
                    stream.ended.set()

    def _event(self, event: h2.events.Event) -> None:
        stream = self.streams.get(getattr(event, "stream_id", 0) or 0)
        match event:
            case h2.events.RemoteSettingsChanged() | h2.events.SettingsAcknowledged():
                self.settings_seen.set()
                self._window.set()
            case h2.events.ResponseReceived() if stream is not None:
                headers = {k.decode(): v.decode() for k, v in event.headers or ()}
                stream.response_headers.set_result(headers)
            case h2.events.DataReceived() if stream is not None:
                stream.received += len(event.data or b"")
                stream.chunks.put_nowait(bytes(event.data or b""))
                if event.stream_ended is not None:
                    stream.chunks.put_nowait(None)
                    stream.ended.set()
            case h2.events.StreamEnded() if stream is not None:
                stream.chunks.put_nowait(None)
                stream.ended.set()
            case h2.events.StreamReset() if stream is not None:
                stream.reset_code = int(event.error_code or 0)
                stream.chunks.put_nowait(None)
                stream.ended.set()
            case h2.events.WindowUpdated():
                self._window.set()
            case h2.events.ConnectionTerminated():
                self.goaway = event
                self.goaway_seen.set()
                if event.error_code == 0:
                    # h2 closes its state machine on any GOAWAY; a graceful one lets the
                    # streams it covers finish (RFC 9113 §6.8), so reopen it to read them.
                    self.conn.state_machine.state = h2.connection.ConnectionState.CLIENT_OPEN
            case _:
                pass

    async def aclose(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()


class H2RunStream:
    """A ``Run`` response read frame by frame, like ``fake_cursor.RunStream``. An Exec
    ``request_context_args`` is answered here, as a CLI does, with ``context`` (then the
    exec's close), and not shown to the session; ``asked`` counts them."""

    def __init__(self, stream: ClientStream, context: agent.RequestContext | None) -> None:
        self.stream = stream
        self.context = context
        self.asked = 0
        self.ended_at: float | None = None  # time.perf_counter() when the EndStream came
        self._reader = EnvelopeReader()
        self._pending: list[Envelope] = []

    async def next_envelope(self, timeout: float = 5.0) -> Envelope | None:
        while not self._pending:
            chunk = await self.stream.read(timeout)
            if chunk is None:
                self._reader.close()
                return None
            for envelope in self._reader.feed(chunk):
                if not await self._answered_here(envelope):
                    self._pending.append(envelope)
        return self._pending.pop(0)

    async def _answered_here(self, envelope: Envelope) -> bool:
        if envelope.is_end_stream:
            self.ended_at = time.perf_counter()
            return False
        message = agent.AgentServerMessage.FromString(envelope.payload)
        if not message.exec_server_message.HasField("request_context_args"):
            return False
        self.asked += 1
        if self.context is None:
            return True  # this client never answers
        wire_id = message.exec_server_message.id
        success = agent.RequestContextSuccess(request_context=self.context)
        result = agent.ExecClientMessage(
            id=wire_id, request_context_result=agent.RequestContextResult(success=success)
        )
        close = agent.ExecClientControlMessage(stream_close=agent.ExecClientStreamClose(id=wire_id))
        for reply in (
            agent.AgentClientMessage(exec_client_message=result),
            agent.AgentClientMessage(exec_client_control_message=close),
        ):
            await self.stream.send(encode_envelope(0, reply.SerializeToString()))
        return True

    async def aclose(self) -> None:
        if not self.stream.ended.is_set():
            self.stream.reset()


class _Answer:
    """What ``CursorSession`` reads of an append's answer."""

    def __init__(self, status_code: int) -> None:
        self.status_code = status_code
        self.text = ""


class _Run:
    def __init__(self, stream: ClientStream) -> None:
        self.stream = stream
        self.next_seqno = 0
        self.turn = asyncio.Condition()


class H2Cursor:
    """``FakeCursor``'s two calls on one ``Run`` stream per request id: ``open_run_sse`` opens
    it, each ``append`` is the next frame of its body (in seqno order). A RunRequest without a
    ``run_id`` gets the request id as its run id; ``x-request-id`` is new per stream, as a
    CLI's retry would send."""

    def __init__(
        self,
        client: H2Client,
        headers: Mapping[str, str] | None = None,
        context: agent.RequestContext | None = None,
    ) -> None:
        """``context``: the answer to ``request_context_args`` (None: never answered)."""
        self.client = client
        self.headers = dict(headers or {})
        self.context = context
        self.runs: dict[str, _Run] = {}
        self.streams: dict[str, H2RunStream] = {}

    async def open_run_sse(self, request_id: str) -> H2RunStream:
        headers = {
            "content-type": "application/connect+proto",
            "connect-protocol-version": "1",
            "x-request-id": str(uuid.uuid4()),
            **self.headers,
        }
        stream = self.client.open(RUN, headers)
        self.runs[request_id] = _Run(stream)
        self.streams[request_id] = H2RunStream(stream, self.context)
        return self.streams[request_id]

    async def append(
        self,
        request_id: str,
        seqno: int,
        message: agent.AgentClientMessage,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> _Answer:
        run = self.runs[request_id]
        if message.HasField("run_request") and not message.run_request.run_id:
            copy = agent.AgentClientMessage()
            copy.CopyFrom(message)
            copy.run_request.run_id = request_id
            message = copy
        async with run.turn:
            await run.turn.wait_for(lambda: run.next_seqno == seqno)
            run.next_seqno += 1
            run.turn.notify_all()
            if run.stream.ended.is_set():
                return _Answer(404)
            try:
                await run.stream.send(encode_envelope(0, message.SerializeToString()))
            except Exception as exc:
                answer = _Answer(404)
                answer.text = repr(exc)
                return answer
        return _Answer(200)

    async def aclose(self) -> None:
        await self.client.aclose()


def end_json(envelope: Envelope) -> dict[str, Any]:
    """The EndStream's JSON as decoded (``{}``, or Connect's ``error``)."""
    end: dict[str, Any] = json.loads(envelope.payload)
    return end
