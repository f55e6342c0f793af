"""The frames instances exchange on a peer channel, as pure values and bytes.

Why a channel and not one HTTP request per forwarded append: an append is a few hundred bytes,
and an HTTP exchange between two instances (a client request built and parsed, a response
built and parsed) cost more CPU than the append itself. One WebSocket between two instances
carries every append one forwards to the other, each a binary message (msgpack): the call
names the append by a number of the channel's own, the holder's reply names the same number.
The append goes as the client sent it (its end-to-end headers and body bytes) and the reply is
what the holder would have answered over HTTP (status, reason, headers, body), so the
forwarding instance answers its client exactly as the holder would have.
"""

from __future__ import annotations

import msgspec

from wire.hop_by_hop import Header


class AppendCall(msgspec.Struct, frozen=True, array_like=True):
    """A BidiAppend as its client sent it, forwarded to the run's holder."""

    call_id: int
    headers: tuple[Header, ...]
    body: bytes


class AppendReply(msgspec.Struct, frozen=True, array_like=True):
    """The holder's answer to one ``AppendCall``, as it would have answered over HTTP.
    ``verbatim``: an upstream's answer to a relayed append, sent on without our headers."""

    call_id: int
    status: int
    reason: str
    headers: tuple[Header, ...]
    body: bytes
    verbatim: bool = False


_CALLS = msgspec.msgpack.Decoder(AppendCall)
_REPLIES = msgspec.msgpack.Decoder(AppendReply)
_ENCODER = msgspec.msgpack.Encoder()


class PeerFrameError(ValueError):
    """A channel message that is not the frame its side expects (a peer's bug)."""


def encode_frame(frame: AppendCall | AppendReply) -> bytes:
    return _ENCODER.encode(frame)


def decode_call(data: bytes) -> AppendCall:
    try:
        return _CALLS.decode(data)
    except msgspec.DecodeError as exc:
        raise PeerFrameError(f"not an append call: {exc}") from None


def decode_reply(data: bytes) -> AppendReply:
    try:
        return _REPLIES.decode(data)
    except msgspec.DecodeError as exc:
        raise PeerFrameError(f"not an append reply: {exc}") from None
