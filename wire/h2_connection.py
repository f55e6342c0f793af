"""One HTTP/2 server connection as a pure state machine: bytes in, our typed events out.

The ``h2`` library owns the protocol (framing, HPACK, stream states, flow-control windows,
the RFC's error codes); this adapter fixes the limits we advertise, turns h2's events into a
closed union of our own, and holds what a stream still has to send until its window opens,
so the IO edge (``wire/http/h2_server.py``) never writes past a window and never has to know
h2's API. Inbound DATA is acknowledged (the window reopened) only when the edge says it
consumed it, so a client can never make us hold more than one window per stream.
"""

from __future__ import annotations

import contextlib

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hyperframe.frame
import msgspec

KIB = 1024
MIB = 1024 * KIB


class H2Limits(msgspec.Struct, frozen=True):
    """What the listener advertises in its SETTINGS and enforces (RFC 9113 §6.5.2)."""

    # Streams a client may have open at once on one connection (and handlers running at
    # once, a reset stream's included); the next is refused: RST_STREAM REFUSED_STREAM.
    max_concurrent_streams: int = 100
    # ... and over all connections together (not announced): the next is refused alike.
    max_streams: int = 4096
    # Bytes a client may send on one stream before we have consumed them (its window).
    initial_window_size: int = 1 * MIB
    # Bytes all streams of a connection together may send before we consumed them.
    connection_window: int = 16 * MIB
    # Largest frame payload we accept; a larger one is a FRAME_SIZE_ERROR.
    max_frame_size: int = 64 * KIB
    # Largest decoded header list we accept (name + value + 32 per field); beyond: GOAWAY
    # ENHANCE_YOUR_CALM (the block is only partly decoded, so HPACK state is lost).
    max_header_list_size: int = 64 * KIB
    # Bytes waiting for a stream's window before its writer is made to wait.
    max_pending_per_stream: int = 1 * MIB
    # A connection without a stream for this long is ended: GOAWAY NO_ERROR, then closed.
    idle_timeout_s: float = 300.0
    # After this long without a byte from the client we send a PING (RFC 9113 §6.7) ...
    ping_after_s: float = 30.0
    # ... and a client that has not answered it this long after is gone: the connection is
    # closed, each stream on it a disconnect (a Run's run is cancelled, as for a drop).
    ping_timeout_s: float = 15.0


Headers = tuple[tuple[str, str], ...]


class RequestOpened(msgspec.Struct, frozen=True):
    """A client opened a stream with a request's headers (pseudo-headers included)."""

    stream_id: int
    headers: Headers
    ended: bool  # no body follows


class RequestData(msgspec.Struct, frozen=True):
    """Body bytes of a stream; ``flow_length`` is what to acknowledge once consumed."""

    stream_id: int
    data: bytes
    flow_length: int


class RequestEnded(msgspec.Struct, frozen=True):
    """The client half-closed its side of the stream (END_STREAM)."""

    stream_id: int


class StreamAborted(msgspec.Struct, frozen=True):
    """The stream was reset, by the client (RST_STREAM) or by h2 for a stream error."""

    stream_id: int
    error_code: int
    by_client: bool


class WindowOpened(msgspec.Struct, frozen=True):
    """Some stream may send again (pending bytes were flushed or a window grew)."""


class PingAnswered(msgspec.Struct, frozen=True):
    """The client acknowledged one of our PINGs."""

    opaque: bytes


class ConnectionEnded(msgspec.Struct, frozen=True):
    """The connection is over: the client's GOAWAY, or a protocol violation we answered
    with GOAWAY carrying ``error_code``."""

    error_code: int
    by_client: bool
    reason: str


H2Event = (
    RequestOpened
    | RequestData
    | RequestEnded
    | StreamAborted
    | WindowOpened
    | PingAnswered
    | ConnectionEnded
)


class _Connection(h2.connection.H2Connection):
    """h2's connection, but a stream past MAX_CONCURRENT_STREAMS is a stream error here, not
    a connection error: RFC 9113 §5.1.2 allows REFUSED_STREAM, which tells the client the
    stream was never processed and may be retried, where h2's GOAWAY would cut every other
    stream. h2 consults ``open_inbound_streams`` only for that check; seen through this
    property the count never reaches a limit, so h2 still decodes the header block (keeping
    HPACK state in step with the client) and opens the stream, and ``H2ServerConnection``
    counts with ``inbound_open`` and refuses it."""

    @property
    def open_inbound_streams(self) -> int:
        self.inbound_open()  # h2 drops closed streams from its table while counting
        return 0

    def inbound_open(self) -> int:
        """Client streams open or half-closed now (the one just opened included)."""
        return super().open_inbound_streams


def _text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


class H2ServerConnection:
    """The server side of one connection; ``data_to_send`` is what the edge must write."""

    def __init__(self, limits: H2Limits) -> None:
        self.limits = limits
        config = h2.config.H2Configuration(client_side=False, header_encoding=None)
        self._conn = _Connection(config=config)
        self._conn.initiate_connection()
        # Proposed, then in force once the client acknowledges them (RFC 9113 §6.5.3).
        self._conn.update_settings(
            {
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: limits.max_concurrent_streams,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: limits.initial_window_size,
                h2.settings.SettingCodes.MAX_FRAME_SIZE: limits.max_frame_size,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: limits.max_header_list_size,
                h2.settings.SettingCodes.ENABLE_PUSH: 0,
            }
        )
        default_window = self._conn.inbound_flow_control_window
        if limits.connection_window > default_window:
            self._conn.increment_flow_control_window(limits.connection_window - default_window)
        self._pending: dict[int, bytearray] = {}
        self._end_after: set[int] = set()
        self._goaway_last: int | None = None
        self._extra = b""
        self.closed = False

    def data_to_send(self) -> bytes:
        data = self._conn.data_to_send() + self._extra
        self._extra = b""
        return data

    def receive(self, data: bytes) -> list[H2Event]:
        """Feed bytes read from the socket; a violation ends the connection with GOAWAY."""
        if self.closed:
            return []
        try:
            raw = self._conn.receive_data(data)
        except h2.exceptions.ProtocolError as exc:
            # h2 has already queued the GOAWAY with the RFC's code for this violation.
            self.closed = True
            return [ConnectionEnded(int(exc.error_code), by_client=False, reason=str(exc))]
        events: list[H2Event] = []
        for event in raw:
            events.extend(self._translate(event))
        if self.closed:
            # The client's GOAWAY closed h2's state machine: nothing queued may leave now, even
            # if a WINDOW_UPDATE came in the same read (sending would raise ProtocolError).
            self._pending.clear()
            self._end_after.clear()
        elif any(isinstance(event, WindowOpened) for event in events):
            self._flush_all()
        return events

    def _translate(self, event: h2.events.Event) -> list[H2Event]:
        match event:
            case h2.events.RequestReceived() if self._refused(event.stream_id or 0):
                self.refuse(event.stream_id or 0)
                return []
            case h2.events.RequestReceived():
                headers = tuple((_text(k), _text(v)) for k, v in event.headers or ())
                ended = event.stream_ended is not None
                return [RequestOpened(event.stream_id or 0, headers, ended)]
            case h2.events.DataReceived():
                stream_id = event.stream_id or 0
                data = bytes(event.data or b"")
                flow = event.flow_controlled_length or 0
                out: list[H2Event] = [RequestData(stream_id, data, flow)]
                if event.stream_ended is not None:
                    out.append(RequestEnded(stream_id))
                return out
            case h2.events.StreamEnded():
                return [RequestEnded(event.stream_id or 0)]
            case h2.events.StreamReset():
                self._forget(event.stream_id or 0)
                code = int(event.error_code or 0)
                return [StreamAborted(event.stream_id or 0, code, bool(event.remote_reset))]
            case h2.events.WindowUpdated() | h2.events.RemoteSettingsChanged():
                return [WindowOpened()]
            case h2.events.PingAckReceived():
                return [PingAnswered(bytes(event.ping_data or b""))]
            case h2.events.ConnectionTerminated():
                self.closed = True
                code = int(event.error_code or 0)
                return [ConnectionEnded(code, by_client=True, reason="client sent GOAWAY")]
            case _:
                return []

    def _refused(self, stream_id: int) -> bool:
        """A stream opened after our GOAWAY's last stream id is never processed, nor one
        past the concurrency limit."""
        if self._goaway_last is not None and stream_id > self._goaway_last:
            return True
        return self._conn.inbound_open() > self.limits.max_concurrent_streams

    def refuse(self, stream_id: int) -> None:
        """RST_STREAM REFUSED_STREAM: the stream was not processed, the client may retry it
        (RFC 9113 §8.7); DATA still arriving on it is counted and answered by h2. A stream the
        client reset in the same read is closed already: there is nothing left to refuse."""
        with contextlib.suppress(h2.exceptions.StreamClosedError):
            self._conn.reset_stream(stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)

    @property
    def idle(self) -> bool:
        """No client stream is open (what the edge's idle timeout waits for)."""
        return self._conn.inbound_open() == 0

    # ---- sending ------------------------------------------------------------------------

    def send_headers(self, stream_id: int, headers: Headers, *, end: bool = False) -> None:
        self._conn.send_headers(stream_id, list(headers), end_stream=end)

    def send_data(self, stream_id: int, data: bytes) -> None:
        """Queue body bytes; they leave as the stream's and the connection's windows allow."""
        self._pending.setdefault(stream_id, bytearray()).extend(data)
        self._flush(stream_id)

    def end_stream(self, stream_id: int) -> None:
        """Close our side once every queued byte has gone."""
        self._end_after.add(stream_id)
        self._flush(stream_id)

    def pending(self, stream_id: int) -> int:
        """Bytes of the stream still waiting for a window."""
        return len(self._pending.get(stream_id, b""))

    def reset(self, stream_id: int, error_code: int = h2.errors.ErrorCodes.CANCEL) -> None:
        self._forget(stream_id)
        with contextlib.suppress(h2.exceptions.StreamClosedError):
            self._conn.reset_stream(stream_id, error_code)

    def goaway(self) -> None:
        """Announce a graceful end (RFC 9113 §6.8): NO_ERROR, the streams opened so far may
        finish, later ones are refused. Written as a bare frame because h2's own
        ``close_connection`` closes the state machine, which would cut those streams off."""
        if self._goaway_last is not None:
            return
        self._goaway_last = self._conn.highest_inbound_stream_id
        frame = hyperframe.frame.GoAwayFrame(stream_id=0)
        frame.last_stream_id = self._goaway_last
        frame.error_code = h2.errors.ErrorCodes.NO_ERROR
        self._extra += frame.serialize()

    def ping(self, opaque: bytes) -> None:
        """Ask the client for a sign of life; its answer is ``PingAnswered(opaque)``."""
        self._conn.ping(opaque)

    def acknowledge(self, stream_id: int, flow_length: int) -> None:
        """The edge consumed ``flow_length`` bytes of the stream: let the client send more."""
        if flow_length <= 0:
            return
        # A stream that is gone still reopens the connection's window (h2 does both).
        self._conn.acknowledge_received_data(flow_length, stream_id)

    def _release(self, stream_id: int) -> None:
        """A complete response to a request still open: ask the client to stop sending with
        RST_STREAM NO_ERROR (RFC 9113 §8.1), so the stream stops counting against the
        concurrency limit (a Run client that keeps its side open would exhaust it)."""
        stream = self._conn.streams.get(stream_id)
        if stream is not None and not stream.closed:
            self._conn.reset_stream(stream_id, h2.errors.ErrorCodes.NO_ERROR)

    def _forget(self, stream_id: int) -> None:
        self._pending.pop(stream_id, None)
        self._end_after.discard(stream_id)

    def _flush_all(self) -> None:
        for stream_id in list(self._pending):
            self._flush(stream_id)
        for stream_id in list(self._end_after):
            self._flush(stream_id)

    def _flush(self, stream_id: int) -> None:
        buffer = self._pending.get(stream_id)
        try:
            while buffer:
                window = self._conn.local_flow_control_window(stream_id)
                size = min(window, self._conn.max_outbound_frame_size, len(buffer))
                if size <= 0:
                    return
                self._conn.send_data(stream_id, bytes(buffer[:size]))
                del buffer[:size]
            self._pending.pop(stream_id, None)
            if stream_id in self._end_after:
                self._end_after.discard(stream_id)
                self._conn.end_stream(stream_id)
                self._release(stream_id)
        except h2.exceptions.StreamClosedError:
            self._forget(stream_id)
