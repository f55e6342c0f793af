"""Protobuf wire bytes by hand: fields our schema does not declare, appended to real encodings."""

from __future__ import annotations


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if not value:
            out.append(low)
            return bytes(out)
        out.append(low | 0x80)


def varint_field(number: int, value: int) -> bytes:
    """Field ``number`` as a varint (wire type 0)."""
    return varint(number << 3) + varint(value)


def length_field(number: int, body: bytes) -> bytes:
    """Field ``number`` length-delimited (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(body)) + body


def fixed32_field(number: int, value: int) -> bytes:
    """Field ``number`` as four little-endian bytes (wire type 5)."""
    return varint(number << 3 | 5) + value.to_bytes(4, "little")
