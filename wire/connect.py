"""Connect envelopes: the 5-byte framing of RunSSE frames and enveloped request bodies.

Sans-IO: bytes in, bytes or typed values out. The envelope is one flags byte and a big-endian
u32 payload length, then the payload. Data frames (flags 0x00) carry protobuf; the EndStream
frame (flags 0x02) carries JSON, never protobuf.
"""

from __future__ import annotations

import struct
import zlib

import msgspec
from google.protobuf.message import Message

from wire.errors import Code, ConnectError, end_stream_json

FLAG_COMPRESSED = 0x01
FLAG_END_STREAM = 0x02
HEADER_SIZE = 5
_HEADER = struct.Struct(">BI")


class Envelope(msgspec.Struct, frozen=True):
    """One decoded Connect envelope."""

    flags: int
    payload: bytes

    @property
    def is_end_stream(self) -> bool:
        return bool(self.flags & FLAG_END_STREAM)


def encode_envelope(flags: int, payload: bytes) -> bytes:
    """Frame ``payload`` with its 5-byte header."""
    return _HEADER.pack(flags, len(payload)) + payload


def data_frame(message: Message) -> bytes:
    """A flags-0x00 frame holding a serialized protobuf message."""
    return encode_envelope(0, message.SerializeToString())


def end_stream_frame(error: ConnectError | None = None) -> bytes:
    """The EndStream frame: ``02 <len> {}`` on success, the error JSON otherwise."""
    return encode_envelope(FLAG_END_STREAM, end_stream_json(error))


class EnvelopeReader:
    """Splits a byte stream into envelopes, however the bytes were chunked."""

    def __init__(self, max_payload: int = 1 << 31) -> None:
        self._buffer = bytearray()
        self._max_payload = max_payload

    def feed(self, data: bytes) -> list[Envelope]:
        """Add bytes; return every envelope now complete."""
        self._buffer += data
        out: list[Envelope] = []
        while len(self._buffer) >= HEADER_SIZE:
            flags, length = _HEADER.unpack_from(self._buffer)
            if length > self._max_payload:
                raise ConnectError(
                    Code.RESOURCE_EXHAUSTED,
                    f"Connect envelope of {length} bytes exceeds {self._max_payload}",
                )
            end = HEADER_SIZE + length
            if len(self._buffer) < end:
                break
            out.append(Envelope(flags, bytes(self._buffer[HEADER_SIZE:end])))
            del self._buffer[:end]
        return out

    def close(self) -> None:
        """Check that the stream did not stop inside an envelope."""
        if not self._buffer:
            return
        if len(self._buffer) < HEADER_SIZE:
            raise ConnectError(Code.INVALID_ARGUMENT, "truncated Connect envelope")
        raise ConnectError(Code.INVALID_ARGUMENT, "truncated Connect payload")


def gunzip_limited(data: bytes, limit: int) -> bytes:
    """Decompress gzip ``data``, refusing output larger than ``limit`` bytes.

    Every member of a multi-member body (RFC 1952 §2.2) is decoded and counted against the
    limit; bytes after a member that are not another gzip member are an error, never dropped.
    """
    out = bytearray()
    rest = data
    while True:
        decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            # len(out) <= limit here, so the budget is >= 1 (0 would mean "unlimited").
            out += decompressor.decompress(rest, limit + 1 - len(out))
        except zlib.error as exc:
            raise ConnectError(Code.INVALID_ARGUMENT, f"invalid gzip body: {exc}") from exc
        if len(out) > limit:
            raise ConnectError(
                Code.RESOURCE_EXHAUSTED, f"decompressed body exceeds the limit of {limit} bytes"
            )
        if not decompressor.eof:
            raise ConnectError(Code.INVALID_ARGUMENT, "invalid gzip body: truncated stream")
        rest = decompressor.unused_data
        if not rest:
            return bytes(out)


def decode_unary_body(
    body: bytes,
    *,
    content_encoding: str | None,
    connect_content_encoding: str | None,
    max_bytes: int,
) -> bytes:
    """The protobuf payload of a RunSSE or BidiAppend request body.

    The body may be raw protobuf (``application/proto``) or one Connect envelope
    (``application/connect+proto``); either may be gzip-compressed as a whole
    (``Content-Encoding: gzip``), and an envelope may carry the compressed flag with
    ``Connect-Content-Encoding: gzip``. A valid protobuf message never starts with byte 0x00
    or 0x01 (field number 0), so a body starting with such a flags byte whose length field
    matches is an envelope, never a raw message.
    """
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "gzip":
        body = gunzip_limited(body, max_bytes)
    elif encoding != "identity":
        raise ConnectError(
            Code.INVALID_ARGUMENT,
            f"unsupported Content-Encoding: {encoding} (only gzip and identity)",
            http_status=415,
        )
    if len(body) < HEADER_SIZE:
        return body
    flags, length = _HEADER.unpack_from(body)
    if flags not in (0, FLAG_COMPRESSED) or length != len(body) - HEADER_SIZE:
        return body
    payload = body[HEADER_SIZE:]
    if flags & FLAG_COMPRESSED:
        envelope_encoding = (connect_content_encoding or "").strip().lower()
        if envelope_encoding != "gzip":
            raise ConnectError(
                Code.INVALID_ARGUMENT,
                "compressed Connect envelope needs Connect-Content-Encoding: gzip",
            )
        payload = gunzip_limited(payload, max_bytes)
    return payload


__all__ = [
    "FLAG_COMPRESSED",
    "FLAG_END_STREAM",
    "HEADER_SIZE",
    "Envelope",
    "EnvelopeReader",
    "data_frame",
    "decode_unary_body",
    "encode_envelope",
    "end_stream_frame",
    "gunzip_limited",
]
