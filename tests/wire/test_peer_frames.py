"""The peer channel's frames (``wire.peer_frames``): an append call and its reply survive the
trip byte for byte, and anything else is refused as a peer's bug, not decoded into nonsense."""

from __future__ import annotations

import msgspec
import pytest

from wire.peer_frames import (
    AppendCall,
    AppendReply,
    PeerFrameError,
    decode_call,
    decode_reply,
    encode_frame,
)


def test_a_call_and_its_reply_round_trip_byte_for_byte() -> None:
    headers = ((b"content-type", b"application/proto"), (b"x-cursor-client-version", b"\xff1"))
    call = AppendCall(7, headers, b"\x00\x01binary body")
    assert decode_call(encode_frame(call)) == call
    reply = AppendReply(7, 502, "Bad Gateway", ((b"content-type", b"text/plain"),), b"up", True)
    assert decode_reply(encode_frame(reply)) == reply


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not msgpack at all \xc1",
        msgspec.msgpack.encode([1, "headers not a list", b""]),
        msgspec.msgpack.encode({"call_id": 1}),
    ],
)
def test_anything_else_is_refused(data: bytes) -> None:
    with pytest.raises(PeerFrameError):
        decode_call(data)
    with pytest.raises(PeerFrameError):
        decode_reply(data)


def test_a_reply_is_not_taken_for_a_call() -> None:
    reply = AppendReply(1, 200, "", (), b"")
    with pytest.raises(PeerFrameError):
        decode_call(encode_frame(reply))
