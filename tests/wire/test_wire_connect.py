"""Connect envelopes: byte-exact frames, the streaming reader, and unary request bodies."""

from __future__ import annotations

import gzip
import itertools
import json
import struct

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from wire.connect import (
    FLAG_COMPRESSED,
    FLAG_END_STREAM,
    HEADER_SIZE,
    Envelope,
    EnvelopeReader,
    data_frame,
    decode_unary_body,
    encode_envelope,
    end_stream_frame,
    gunzip_limited,
)
from wire.errors import Code, ConnectError, cancelled_error
from wire.proto import agent_v1_pb2 as agent


def _header(flags: int, length: int) -> bytes:
    """An envelope header built independently of the code under test."""
    return bytes([flags]) + length.to_bytes(4, "big")


def _decode(
    body: bytes,
    *,
    content_encoding: str | None = None,
    connect_content_encoding: str | None = None,
    max_bytes: int = 1 << 20,
) -> bytes:
    return decode_unary_body(
        body,
        content_encoding=content_encoding,
        connect_content_encoding=connect_content_encoding,
        max_bytes=max_bytes,
    )


# A small BidiRequestId body, written out by hand: field 1 (0x0a), length 3, "abc".
RAW = bytes.fromhex("0a03616263")

# ---- byte-exact frames -----------------------------------------------------------------------


def test_data_frame_of_bidi_request_id() -> None:
    frame = data_frame(agent.BidiRequestId(request_id="abc"))
    assert frame == bytes.fromhex("00 00 00 00 05 0a 03 61 62 63")


def test_success_end_stream_frame() -> None:
    assert end_stream_frame() == bytes.fromhex("02 00 00 00 02 7b 7d")


def test_cancel_end_stream_frame() -> None:
    payload = b'{"error":{"code":"canceled","message":"run was cancelled"}}'
    assert len(payload) == 0x3B
    assert end_stream_frame(cancelled_error()) == bytes.fromhex("02 00 00 00 3b") + payload


def test_error_end_stream_frame_is_json_not_protobuf() -> None:
    frame = end_stream_frame(ConnectError(Code.INTERNAL, "boom"))
    assert frame[0] == FLAG_END_STREAM
    assert int.from_bytes(frame[1:5], "big") == len(frame) - 5
    assert json.loads(frame[5:]) == {"error": {"code": "internal", "message": "boom"}}


@pytest.mark.parametrize("size", [0, 1, 127, 128, 65_536])
def test_encode_envelope_header(size: int) -> None:
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert encode_envelope(FLAG_COMPRESSED, payload) == _header(0x01, size) + payload


def test_envelope_is_end_stream() -> None:
    assert Envelope(FLAG_END_STREAM, b"{}").is_end_stream
    assert Envelope(FLAG_END_STREAM | FLAG_COMPRESSED, b"").is_end_stream
    assert not Envelope(0, b"").is_end_stream
    assert not Envelope(FLAG_COMPRESSED, b"").is_end_stream


# ---- EnvelopeReader --------------------------------------------------------------------------

STREAM_ENVELOPES = [
    Envelope(0, RAW),
    Envelope(0, b""),
    Envelope(0, bytes(range(200))),
    Envelope(FLAG_END_STREAM, b"{}"),
]
STREAM = b"".join(_header(e.flags, len(e.payload)) + e.payload for e in STREAM_ENVELOPES)


def _read_chunks(chunks: list[bytes]) -> list[Envelope]:
    reader = EnvelopeReader()
    out: list[Envelope] = []
    for chunk in chunks:
        out.extend(reader.feed(chunk))
    reader.close()
    return out


def test_reader_whole_stream() -> None:
    assert _read_chunks([STREAM]) == STREAM_ENVELOPES


@pytest.mark.parametrize("cut", range(len(STREAM) + 1))
def test_reader_split_at_every_boundary(cut: int) -> None:
    assert _read_chunks([STREAM[:cut], STREAM[cut:]]) == STREAM_ENVELOPES


def test_reader_one_byte_at_a_time() -> None:
    # An envelope comes out exactly when its last byte arrives, never earlier or later.
    ends = {
        sum(HEADER_SIZE + len(e.payload) for e in STREAM_ENVELOPES[: i + 1]) - 1
        for i in range(len(STREAM_ENVELOPES))
    }
    reader = EnvelopeReader()
    seen: list[Envelope] = []
    for index in range(len(STREAM)):
        got = reader.feed(STREAM[index : index + 1])
        assert len(got) == (1 if index in ends else 0)
        seen.extend(got)
    reader.close()
    assert seen == STREAM_ENVELOPES


@given(
    envelopes=st.lists(
        st.builds(Envelope, st.sampled_from([0, FLAG_COMPRESSED, FLAG_END_STREAM]), st.binary()),
        max_size=8,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=4096), max_size=12),
)
def test_reader_any_chunking(envelopes: list[Envelope], cuts: list[int]) -> None:
    """However a stream of envelopes is chunked, the reader yields the same envelopes."""
    stream = b"".join(_header(e.flags, len(e.payload)) + e.payload for e in envelopes)
    points = sorted({min(cut, len(stream)) for cut in cuts} | {0, len(stream)})
    chunks = [stream[a:b] for a, b in itertools.pairwise(points)]
    assert _read_chunks(chunks) == envelopes


@pytest.mark.parametrize("kept", range(1, HEADER_SIZE))
def test_reader_truncated_header(kept: int) -> None:
    reader = EnvelopeReader()
    assert reader.feed(_header(0, 3)[:kept]) == []
    with pytest.raises(ConnectError) as info:
        reader.close()
    assert info.value.code is Code.INVALID_ARGUMENT
    assert info.value.message == "truncated Connect envelope"


@pytest.mark.parametrize("kept", range(0, 3))
def test_reader_truncated_payload(kept: int) -> None:
    reader = EnvelopeReader()
    assert reader.feed(_header(0, 3) + b"abc"[:kept]) == []
    with pytest.raises(ConnectError) as info:
        reader.close()
    assert info.value.code is Code.INVALID_ARGUMENT
    assert info.value.message == "truncated Connect payload"


def test_reader_truncated_after_complete_envelopes() -> None:
    reader = EnvelopeReader()
    assert reader.feed(_header(0, 1) + b"x" + _header(0, 2) + b"y") == [Envelope(0, b"x")]
    with pytest.raises(ConnectError, match="truncated Connect payload"):
        reader.close()


def test_reader_close_on_clean_boundary() -> None:
    reader = EnvelopeReader()
    reader.close()
    assert reader.feed(_header(0, 1) + b"x") == [Envelope(0, b"x")]
    reader.close()


def test_reader_refuses_oversize_payload_from_its_header() -> None:
    """The length field alone is enough to refuse: the payload is never awaited."""
    reader = EnvelopeReader(max_payload=4)
    assert reader.feed(_header(0, 4) + b"1234") == [Envelope(0, b"1234")]
    with pytest.raises(ConnectError) as info:
        reader.feed(_header(0, 5))
    assert info.value.code is Code.RESOURCE_EXHAUSTED


def test_reader_default_limit_refuses_huge_length() -> None:
    with pytest.raises(ConnectError) as info:
        EnvelopeReader().feed(_header(0, 0xFFFF_FFFF))
    assert info.value.code is Code.RESOURCE_EXHAUSTED


# ---- decode_unary_body -----------------------------------------------------------------------


def test_raw_body_is_returned_whole() -> None:
    assert _decode(RAW) == RAW


@pytest.mark.parametrize("body", [b"", b"\x0a", b"\x0a\x00", b"\x08\x01\x10\x02"])
def test_short_raw_bodies(body: bytes) -> None:
    assert _decode(body) == body


def test_enveloped_body() -> None:
    assert _decode(_header(0, len(RAW)) + RAW) == RAW


def test_enveloped_empty_message() -> None:
    assert _decode(_header(0, 0)) == b""


@pytest.mark.parametrize("name", ["gzip", "GZIP", " gzip "])
def test_gzip_content_encoding_raw(name: str) -> None:
    assert _decode(gzip.compress(RAW), content_encoding=name) == RAW


def test_gzip_content_encoding_enveloped() -> None:
    body = gzip.compress(_header(0, len(RAW)) + RAW)
    assert _decode(body, content_encoding="gzip") == RAW


@pytest.mark.parametrize("name", [None, "identity", "Identity"])
def test_identity_content_encoding(name: str | None) -> None:
    assert _decode(RAW, content_encoding=name) == RAW


def test_compressed_envelope_with_connect_content_encoding() -> None:
    compressed = gzip.compress(RAW)
    body = _header(FLAG_COMPRESSED, len(compressed)) + compressed
    assert _decode(body, connect_content_encoding="gzip") == RAW


@pytest.mark.parametrize("header", [None, "", "identity", "br"])
def test_compressed_envelope_without_gzip_header(header: str | None) -> None:
    compressed = gzip.compress(RAW)
    body = _header(FLAG_COMPRESSED, len(compressed)) + compressed
    with pytest.raises(ConnectError) as info:
        _decode(body, connect_content_encoding=header)
    assert info.value.code is Code.INVALID_ARGUMENT
    assert "Connect-Content-Encoding" in info.value.message


@pytest.mark.parametrize("name", ["br", "deflate", "zstd", "gzip, br"])
def test_unsupported_content_encoding(name: str) -> None:
    with pytest.raises(ConnectError) as info:
        _decode(RAW, content_encoding=name)
    assert info.value.http_status == 415
    assert info.value.code is Code.INVALID_ARGUMENT


def test_gzip_bomb_refused() -> None:
    bomb = gzip.compress(bytes(10_000_000))
    assert len(bomb) < 20_000
    with pytest.raises(ConnectError) as info:
        _decode(bomb, content_encoding="gzip", max_bytes=1 << 20)
    assert info.value.code is Code.RESOURCE_EXHAUSTED


def test_gzip_bomb_in_compressed_envelope_refused() -> None:
    bomb = gzip.compress(bytes(10_000_000))
    body = _header(FLAG_COMPRESSED, len(bomb)) + bomb
    with pytest.raises(ConnectError) as info:
        _decode(body, connect_content_encoding="gzip", max_bytes=1 << 20)
    assert info.value.code is Code.RESOURCE_EXHAUSTED


def test_gzip_limit_is_inclusive() -> None:
    data = b"y" * 1000
    assert gunzip_limited(gzip.compress(data), 1000) == data
    with pytest.raises(ConnectError) as info:
        gunzip_limited(gzip.compress(data), 999)
    assert info.value.code is Code.RESOURCE_EXHAUSTED


@pytest.mark.parametrize(
    "body",
    [
        b"not gzip at all",
        gzip.compress(RAW)[:-4],  # missing part of the trailer
        gzip.compress(RAW)[:12],  # cut inside the deflate stream
        gzip.compress(RAW)[:-8] + b"\x00" * 8,  # wrong CRC and size
    ],
    ids=["not-gzip", "no-trailer", "cut-stream", "bad-crc"],
)
def test_corrupt_gzip(body: bytes) -> None:
    with pytest.raises(ConnectError) as info:
        _decode(body, content_encoding="gzip")
    assert info.value.code is Code.INVALID_ARGUMENT
    assert info.value.http_status == 400


def test_corrupt_gzip_in_compressed_envelope() -> None:
    body = _header(FLAG_COMPRESSED, 4) + b"junk"
    with pytest.raises(ConnectError) as info:
        _decode(body, connect_content_encoding="gzip")
    assert info.value.code is Code.INVALID_ARGUMENT


def test_multi_member_gzip_is_decoded_whole() -> None:
    """RFC 1952 allows concatenated members; none of them may be dropped."""
    body = gzip.compress(RAW[:2]) + gzip.compress(RAW[2:])
    assert gzip.decompress(body) == RAW
    assert _decode(body, content_encoding="gzip") == RAW


def test_multi_member_gzip_counts_all_members_against_the_limit() -> None:
    body = gzip.compress(b"a" * 600) + gzip.compress(b"b" * 600)
    with pytest.raises(ConnectError) as info:
        gunzip_limited(body, 1000)
    assert info.value.code is Code.RESOURCE_EXHAUSTED


def test_trailing_garbage_after_gzip_refused() -> None:
    with pytest.raises(ConnectError) as info:
        _decode(gzip.compress(RAW) + b"garbage", content_encoding="gzip")
    assert info.value.code is Code.INVALID_ARGUMENT


def test_raw_message_that_looks_like_a_length_stays_raw() -> None:
    """Byte 0 is a valid tag, bytes 1..5 happen to equal ``len - 5``: still raw protobuf.

    Field 1 as fixed32 (tag 0x0d) holding 0x02000000, then field 2 varint 5. The reference
    implementation's rule (flag bit 0x02 clear and matching length) would call it enveloped.
    """
    body = bytes.fromhex("0d 00 00 00 02 10 05")
    assert struct.unpack(">I", body[1:5])[0] == len(body) - HEADER_SIZE
    assert not body[0] & FLAG_END_STREAM
    assert _decode(body) == body


def test_end_stream_flagged_body_stays_raw() -> None:
    body = _header(FLAG_END_STREAM, 2) + b"{}"
    assert _decode(body) == body


def test_length_mismatch_stays_raw() -> None:
    body = _header(0, len(RAW) + 1) + RAW
    assert _decode(body) == body
