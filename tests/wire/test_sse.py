"""The SSE decoder: same events for any chunking, every line ending, the spec's field rules."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fake_provider import split_at
from wire.providers.errors import FailureKind, ProviderFailure
from wire.providers.sse import MAX_LINE_BYTES, ServerSentEvent, SseDecoder


def decode(chunks: list[bytes], **kwargs: int) -> list[ServerSentEvent]:
    decoder = SseDecoder(**kwargs)
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.finish())
    return events


STREAM = (
    "\ufeff: a comment first\r\n"
    "event: message_start\r\n"
    'data: {"type":"message_start","text":"h\u00e9llo \u2603 \U0001f600"}\r\n'
    "\r\n"
    "id: 7\n"
    "data: line one\n"
    "data:line two\n"
    "data\n"
    "retry: 1000\n"
    "unknown: field\n"
    "\n"
    ": keep-alive\r"
    "event: ping\r"
    "data: {}\r"
    "\r"
    "event: only-a-name\n"
    "\n"
    "data: after the empty event\n"
    "\n"
).encode()

EXPECTED = [
    ServerSentEvent(
        event="message_start",
        data='{"type":"message_start","text":"h\u00e9llo \u2603 \U0001f600"}',
    ),
    ServerSentEvent(event="message", data="line one\nline two\n", id="7"),
    ServerSentEvent(event="ping", data="{}", id="7"),
    ServerSentEvent(event="message", data="after the empty event", id="7"),
]


def test_whole_stream_in_one_chunk() -> None:
    assert decode([STREAM]) == EXPECTED


@settings(max_examples=300)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=40))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    assert decode(split_at(STREAM, cuts)) == EXPECTED


def test_byte_at_a_time_splits_utf8_and_crlf() -> None:
    assert decode([bytes([b]) for b in STREAM]) == EXPECTED


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_each_line_ending(newline: str) -> None:
    body = newline.join(["event: a", "data: 1", "data: 2", "", "data: 3", "", ""]).encode()
    assert decode([body]) == [
        ServerSentEvent(event="a", data="1\n2"),
        ServerSentEvent(event="message", data="3"),
    ]


def test_cr_at_chunk_end_then_lf_is_one_line_end() -> None:
    # Were "\r" + "\n" two line ends, the empty line between would dispatch "1" alone.
    events = decode([b"data: 1\r", b"\ndata: 2\r", b"\n\r", b"\n"])
    assert events == [ServerSentEvent(event="message", data="1\n2")]


def test_comments_and_space_rules() -> None:
    body = b":comment\ndata:no space\ndata:  two spaces\n:another\n\n"
    assert decode([body]) == [ServerSentEvent(event="message", data="no space\n two spaces")]


def test_unfinished_event_at_eof_is_discarded() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: complete\n\ndata: cut off\n") == [
        ServerSentEvent(event="message", data="complete")
    ]
    assert decoder.finish() == []


def test_unterminated_last_line_at_eof_is_discarded() -> None:
    assert decode([b"data: complete\n\ndata: no newline"]) == [
        ServerSentEvent(event="message", data="complete")
    ]


def test_leading_byte_order_mark_is_dropped() -> None:
    assert decode([b"\xef\xbb", b"\xbfdata: first\n\n"]) == [
        ServerSentEvent(event="message", data="first")
    ]


def test_event_name_does_not_leak_into_the_next_event() -> None:
    events = decode([b"event: error\ndata: 1\n\ndata: 2\n\n"])
    assert [e.event for e in events] == ["error", "message"]


def test_id_with_nul_is_ignored() -> None:
    events = decode([b"id: good\ndata: 1\n\nid: b\x00d\ndata: 2\n\n"])
    assert [e.id for e in events] == ["good", "good"]


def test_invalid_utf8_is_a_protocol_failure() -> None:
    with pytest.raises(ProviderFailure) as raised:
        decode([b"data: \xff\xfe\n\n"])
    assert raised.value.kind is FailureKind.PROTOCOL


def test_default_line_limit_is_named() -> None:
    assert MAX_LINE_BYTES == 8 * 1024 * 1024


def test_line_at_the_limit_passes() -> None:
    line = b"data: " + b"x" * 58  # 64 bytes
    assert decode([line + b"\n\n"], max_line_bytes=64)[0].data == "x" * 58


def test_complete_line_over_the_limit_fails() -> None:
    with pytest.raises(ProviderFailure) as raised:
        decode([b"data: " + b"x" * 59 + b"\n\n"], max_line_bytes=64)
    assert raised.value.kind is FailureKind.PROTOCOL
    assert "64 bytes" in raised.value.message


def test_endless_line_fails_before_it_ends() -> None:
    decoder = SseDecoder(max_line_bytes=64)
    decoder.feed(b"data: " + b"x" * 50)
    with pytest.raises(ProviderFailure) as raised:
        decoder.feed(b"x" * 20)
    assert raised.value.kind is FailureKind.PROTOCOL


def test_event_of_many_short_lines_is_bounded_too() -> None:
    decoder = SseDecoder(max_line_bytes=64)
    with pytest.raises(ProviderFailure) as raised:
        decoder.feed(b"data: 0123456789\n" * 10)
    assert raised.value.kind is FailureKind.PROTOCOL


def test_long_line_in_small_chunks_is_linear() -> None:
    """A 2 MiB line in 1 KiB chunks: ~0.05 s when each byte is scanned once, ~20 s when the
    buffer is rescanned on every chunk."""
    payload = b"y" * (2 * 1024 * 1024)
    body = b"data: " + payload + b"\n\n"
    decoder = SseDecoder()
    events: list[ServerSentEvent] = []
    began = time.perf_counter()
    for at in range(0, len(body), 1024):
        events.extend(decoder.feed(body[at : at + 1024]))
    assert time.perf_counter() - began < 1.5
    assert len(events) == 1 and len(events[0].data) == len(payload)
