"""The sans-IO HTTP/2 server connection (``wire/h2_connection.py``) against a client made of
``h2`` itself, bytes handed across by hand: limits, flow control, violations, GOAWAY."""

from __future__ import annotations

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings
import hyperframe.frame

from wire.h2_connection import (
    ConnectionEnded,
    H2Event,
    H2Limits,
    H2ServerConnection,
    RequestData,
    RequestOpened,
    StreamAborted,
)

REQUEST = [(":method", "POST"), (":path", "/x"), (":scheme", "http"), (":authority", "a")]


class Pair:
    """A client and our server connection with the preface and settings exchanged."""

    def __init__(self, limits: H2Limits | None = None) -> None:
        self.server = H2ServerConnection(limits or H2Limits())
        self.client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.client.initiate_connection()
        self.client_events: list[h2.events.Event] = []
        self.to_server()
        self.to_client()
        self.to_server()

    def to_server(self) -> list[H2Event]:
        return self.server.receive(self.client.data_to_send())

    def to_client(self) -> list[h2.events.Event]:
        events = self.client.receive_data(self.server.data_to_send())
        self.client_events.extend(events)
        return events

    def terminated(self) -> h2.events.ConnectionTerminated:
        (goaway,) = [e for e in self.client_events if isinstance(e, h2.events.ConnectionTerminated)]
        return goaway


def test_the_advertised_limits_are_in_force_once_acknowledged() -> None:
    limits = H2Limits(max_concurrent_streams=7, initial_window_size=1000, max_frame_size=20000)
    pair = Pair(limits)
    settings = pair.client.remote_settings
    assert settings.max_concurrent_streams == 7
    assert settings.initial_window_size == 1000
    assert settings.max_frame_size == 20000
    assert settings.max_header_list_size == limits.max_header_list_size


def test_a_slow_reader_keeps_the_rest_pending_not_sent() -> None:
    """The server writes 1 MiB to a client whose window is 64 KiB: only the window leaves,
    the rest waits (counted), and a WINDOW_UPDATE lets exactly that much more go."""
    pair = Pair()
    pair.client.send_headers(1, REQUEST)
    pair.to_server()
    pair.server.send_headers(1, ((":status", "200"),))
    pair.server.send_data(1, b"x" * (1 << 20))
    received = sum(
        len(e.data or b"") for e in pair.to_client() if isinstance(e, h2.events.DataReceived)
    )
    assert received == 65535
    assert pair.server.pending(1) == (1 << 20) - 65535
    pair.client.increment_flow_control_window(10000, stream_id=1)
    pair.client.increment_flow_control_window(10000)
    pair.to_server()
    more = sum(
        len(e.data or b"") for e in pair.to_client() if isinstance(e, h2.events.DataReceived)
    )
    assert more == 10000
    assert pair.server.pending(1) == (1 << 20) - 75535


def test_inbound_data_reopens_the_window_only_once_consumed() -> None:
    pair = Pair(H2Limits(initial_window_size=1000))
    pair.client.send_headers(1, REQUEST)
    pair.client.send_data(1, b"y" * 1000)
    events = pair.to_server()
    (data,) = [e for e in events if isinstance(e, RequestData)]
    pair.to_client()
    assert pair.client.local_flow_control_window(1) == 0  # nothing acknowledged yet
    pair.server.acknowledge(1, data.flow_length)
    pair.to_client()
    assert pair.client.local_flow_control_window(1) == 1000


def test_a_frame_over_the_limit_is_a_frame_size_error() -> None:
    pair = Pair(H2Limits(max_frame_size=16384))
    pair.client.send_headers(1, REQUEST)
    pair.to_server()
    frame = hyperframe.frame.DataFrame(stream_id=1, data=b"z" * 20000)
    events = pair.server.receive(frame.serialize())
    assert isinstance(events[-1], ConnectionEnded)
    assert events[-1].error_code == h2.errors.ErrorCodes.FRAME_SIZE_ERROR
    pair.to_client()
    assert pair.terminated().error_code == h2.errors.ErrorCodes.FRAME_SIZE_ERROR
    assert pair.server.receive(b"more") == []  # closed: nothing else is read


def test_a_header_list_over_the_limit_ends_the_connection_with_an_rfc_code() -> None:
    pair = Pair(H2Limits(max_header_list_size=1024))
    pair.client.send_headers(1, [*REQUEST, ("x-big", "v" * 4000)])
    events = pair.to_server()
    assert isinstance(events[-1], ConnectionEnded)
    pair.to_client()
    code = pair.terminated().error_code
    assert code in (h2.errors.ErrorCodes.PROTOCOL_ERROR, h2.errors.ErrorCodes.ENHANCE_YOUR_CALM)


def test_after_goaway_open_streams_finish_and_new_ones_are_refused() -> None:
    pair = Pair()
    pair.client.send_headers(1, REQUEST)
    pair.to_server()
    pair.server.goaway()
    pair.to_client()
    goaway = pair.terminated()
    assert (goaway.error_code, goaway.last_stream_id) == (0, 1)
    # The server still answers stream 1.
    pair.server.send_headers(1, ((":status", "200"),))
    pair.server.send_data(1, b"done")
    pair.server.end_stream(1)
    data = pair.server.data_to_send()
    assert b"done" in data
    # A stream opened after the GOAWAY is reset with REFUSED_STREAM.
    late = Pair()
    late.client.send_headers(1, REQUEST)
    late.to_server()
    late.server.goaway()
    late.client.send_headers(3, REQUEST)
    events = late.to_server()
    assert not [e for e in events if isinstance(e, RequestOpened)]
    late.to_client()
    (reset,) = [e for e in late.client_events if isinstance(e, h2.events.StreamReset)]
    assert (reset.stream_id, reset.error_code) == (3, h2.errors.ErrorCodes.REFUSED_STREAM)


def test_a_client_reset_is_a_stream_aborted_event() -> None:
    pair = Pair()
    pair.client.send_headers(1, REQUEST)
    pair.to_server()
    pair.server.send_headers(1, ((":status", "200"),))
    pair.server.send_data(1, b"q" * 100_000)
    assert pair.server.pending(1) == 100_000 - 65535
    pair.client.reset_stream(1, h2.errors.ErrorCodes.CANCEL)
    events = pair.to_server()
    assert events == [StreamAborted(1, h2.errors.ErrorCodes.CANCEL, by_client=True)]
    assert pair.server.pending(1) == 0  # nothing is kept for a stream that is gone


def test_a_complete_response_releases_a_request_still_open() -> None:
    """The client never half-closes (as a Run client may not): once the whole response is
    out, RST_STREAM NO_ERROR frees the stream, so streams never pile up against the limit."""
    pair = Pair(H2Limits(max_concurrent_streams=2))
    for stream_id in (1, 3, 5, 7):
        pair.client.send_headers(stream_id, REQUEST)
        opened = [e for e in pair.to_server() if isinstance(e, RequestOpened)]
        assert [e.stream_id for e in opened] == [stream_id]
        pair.server.send_headers(stream_id, ((":status", "200"),))
        pair.server.send_data(stream_id, b"answer")
        pair.server.end_stream(stream_id)
        events = pair.to_client()
        (reset,) = [e for e in events if isinstance(e, h2.events.StreamReset)]
        assert (reset.stream_id, reset.error_code) == (stream_id, h2.errors.ErrorCodes.NO_ERROR)
    assert not pair.server.closed
