"""The fakes take a client that leaves mid-body quietly: the server under test cancelling a
provider call while its body is on the way is not a fault of the test that runs it."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from tests.support.error_lines import ErrorLines
from tests.support.fake_provider import FakeProvider


async def _leave_mid_body(base_url: str) -> None:
    """POST a chat completion announcing 10 000 bytes, send 20 of them and close."""
    target = urlsplit(base_url)
    _reader, writer = await asyncio.open_connection(target.hostname, target.port)
    writer.write(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: provider\r\n"
        b"Content-Type: application/json\r\nContent-Length: 10000\r\n\r\n"
        b'{"model": "fake-mod'
    )
    await writer.drain()
    await asyncio.sleep(0.05)  # the handler is waiting for the rest of the body
    writer.transport.abort()


async def test_a_client_leaving_mid_body_logs_no_error_at_the_fake_provider() -> None:
    with ErrorLines() as caught:
        async with FakeProvider() as fake:
            await _leave_mid_body(fake.base_url)
            await asyncio.sleep(0.2)  # the handler sees the reset
            assert fake.requests == []  # a body that never arrived is not a request
    assert caught.lines == []
