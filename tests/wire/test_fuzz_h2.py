"""Fuzzing the HTTP/2 connection state machine with mutated recordings of a real client's
bytes (preface, SETTINGS, HEADERS with HPACK, DATA, WINDOW_UPDATE, PING, RST_STREAM, GOAWAY).
Whatever arrives, ``receive`` returns events (a violation is ``ConnectionEnded`` with the
GOAWAY queued); nothing raises, in receiving or in answering the streams it opened."""

from __future__ import annotations

import h2.config
import h2.connection
import h2.errors
import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzz import chunked, fuzz_settings, mutated
from wire.h2_connection import (
    ConnectionEnded,
    H2Limits,
    H2ServerConnection,
    RequestData,
    RequestEnded,
    RequestOpened,
    StreamAborted,
)

LIMITS = H2Limits(max_concurrent_streams=4, initial_window_size=4096, max_pending_per_stream=8192)


def _recorded_client() -> bytes:
    """What a client writes for two requests, with the control frames around them."""
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "127.0.0.1"),
        (":path", "/agent.v1.AgentService/Run"),
        ("content-type", "application/connect+proto"),
        ("connect-protocol-version", "1"),
    ]
    client.send_headers(1, headers)
    client.send_data(1, b"\x00\x00\x00\x00\x05hello")
    client.ping(b"12345678")
    client.send_headers(3, headers, end_stream=False)
    client.send_data(3, b"x" * 300, end_stream=True)
    client.end_stream(1)
    client.reset_stream(3, h2.errors.ErrorCodes.CANCEL)
    client.increment_flow_control_window(70_000, stream_id=1)
    client.increment_flow_control_window(70_000)
    client.close_connection()
    return client.data_to_send()


RECORDED = _recorded_client()


def _frame_edges(data: bytes) -> tuple[int, ...]:
    """Where each frame of the recording ends (after the 24-byte preface)."""
    edges, at = [24], 24
    while at + 9 <= len(data):
        at += 9 + int.from_bytes(data[at : at + 3], "big")
        edges.append(at)
    return tuple(edges)


EDGES = _frame_edges(RECORDED)


def _serve(chunks: list[bytes]) -> None:
    """The edge's loop in miniature: feed, acknowledge what was read, then (as the edge's
    handler tasks do, after the batch) answer the open requests while the connection lives."""
    conn = H2ServerConnection(LIMITS)
    conn.data_to_send()
    opened: set[int] = set()
    answered: set[int] = set()
    for chunk in chunks:
        ended: set[int] = set()
        for event in conn.receive(chunk):
            match event:
                case RequestOpened(stream_id=stream_id):
                    opened.add(stream_id)
                case RequestData(stream_id=stream_id, flow_length=flow):
                    conn.acknowledge(stream_id, flow)
                case RequestEnded(stream_id=stream_id):
                    ended.add(stream_id)
                case StreamAborted(stream_id=stream_id):
                    opened.discard(stream_id)
                case ConnectionEnded():
                    assert conn.closed
                    opened.clear()
        for stream_id in sorted(opened - answered):
            conn.send_headers(stream_id, ((":status", "200"),))
            conn.send_data(stream_id, b"y" * 70_000)  # beyond the client's first window
            answered.add(stream_id)
        for stream_id in sorted(opened & ended):
            conn.end_stream(stream_id)
        opened -= ended
        conn.data_to_send()
        assert all(conn.pending(s) <= 70_000 for s in (1, 3, 5))


def test_the_recording_is_served_without_a_violation() -> None:
    conn = H2ServerConnection(LIMITS)
    events = conn.receive(RECORDED)
    assert any(isinstance(e, RequestOpened) for e in events)
    ended = [e for e in events if isinstance(e, ConnectionEnded)]
    assert ended and ended[0].by_client and ended[0].error_code == 0


@fuzz_settings()
@given(mutated(RECORDED, max_ops=4).flatmap(lambda data: chunked(data, EDGES)))
def test_mutated_client_bytes_end_in_events_never_an_exception(chunks: list[bytes]) -> None:
    _serve(chunks)


@fuzz_settings()
@given(st.binary(max_size=128).map(lambda b: RECORDED[:24] + b).flatmap(chunked))
def test_random_frames_after_the_preface_end_in_events_never_an_exception(
    chunks: list[bytes],
) -> None:
    _serve(chunks)


def test_a_window_update_and_goaway_in_one_read_do_not_send_on_the_closed_connection() -> None:
    """Found by the fuzzer: with a response waiting for window, a read holding the client's
    WINDOW_UPDATE then its GOAWAY made ``receive`` flush into h2's closed state machine, and
    its ProtocolError escaped into the edge's ``data_received``."""
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    client.send_headers(
        1, [(":method", "POST"), (":scheme", "http"), (":authority", "a"), (":path", "/")]
    )
    server = H2ServerConnection(LIMITS)
    server.receive(client.data_to_send())
    client.receive_data(server.data_to_send())
    server.send_headers(1, ((":status", "200"),))
    server.send_data(1, b"y" * 100_000)
    assert server.pending(1) > 0
    client.receive_data(server.data_to_send())
    client.increment_flow_control_window(50_000, stream_id=1)
    client.increment_flow_control_window(50_000)
    client.close_connection()
    events = server.receive(client.data_to_send())
    assert next(e for e in events if isinstance(e, ConnectionEnded)).by_client
    assert server.closed and server.pending(1) == 0
