"""RunSSE and BidiAppend bodies being received are bounded over all requests (each counted at
its declared length from the start) and may not stall mid-way: a client cannot hold the
server's memory with many slow, large uploads."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from tests.conftest import TEST_LIMITS, StartServer

BIDI_APPEND = "/aiserver.v1.BidiService/BidiAppend"
MIB = 1024 * 1024


async def partial_upload(
    port: int, declared: int, sent: bytes
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"POST {BIDI_APPEND} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/proto\r\n"
        f"Content-Length: {declared}\r\n\r\n".encode()
        + sent
    )
    await writer.drain()
    return reader, writer


async def answer_of(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    status = int(head.split(b" ", 2)[1])
    length = int(
        next(
            line.split(b":", 1)[1]
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
    )
    return status, msgspec.json.decode(await reader.readexactly(length))


async def test_bodies_in_flight_are_bounded_over_all_requests(make_server: StartServer) -> None:
    limits = msgspec.structs.replace(
        TEST_LIMITS, max_body_bytes=4 * MIB, body_bytes_in_flight=10 * MIB, body_idle_s=30.0
    )
    server = await make_server(limits=limits)
    held = [await partial_upload(server.port, 4 * MIB, b"x" * 1000) for _ in range(2)]
    try:
        # 8 MiB declared and held; a third 4 MiB upload would pass 10 MiB: refused at once.
        reader, writer = await partial_upload(server.port, 4 * MIB, b"x" * 1000)
        status, body = await answer_of(reader)
        writer.close()
        assert status == 413 and body["code"] == "resource_exhausted"
        assert "request bodies being received hold" in body["message"]
        # A small one still fits beside them.
        reader, writer = await partial_upload(server.port, 1000, b"\x00" * 1000)
        status, _ = await answer_of(reader)
        writer.close()
        assert status != 413
    finally:
        for _, writer in held:
            writer.close()
    # Once those clients are gone their share is free again.
    await asyncio.sleep(0.2)
    reader, writer = await partial_upload(server.port, 4 * MIB, b"x" * 1000)
    try:
        with pytest.raises(TimeoutError):  # no answer: the server is still reading it
            await asyncio.wait_for(reader.read(1), 0.3)
    finally:
        writer.close()


async def test_a_body_that_stalls_is_cut_off(make_server: StartServer) -> None:
    limits = msgspec.structs.replace(TEST_LIMITS, body_idle_s=0.4)
    server = await make_server(limits=limits)
    reader, writer = await partial_upload(server.port, 1000, b"x" * 10)
    try:
        status, body = await answer_of(reader)
    finally:
        writer.close()
    assert status == 504 and body["code"] == "deadline_exceeded"
    assert body["message"] == "the request body stalled for 0.4 s"
