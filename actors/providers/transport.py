"""The one provider HTTP request, as a coroutine on the server's loop (the only provider IO).

It reports what happens to the ProviderActor by ``tell``: headers, each body chunk, the end,
or a failure. The actor cancels it through the future ``actors.bridge.LoopTasks`` returned;
cancellation closes the response, and with it the connection, whether the request is still
waiting for headers or reading the stream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx
import msgspec

from actors.providers.request import HttpCall

# How much of an error response body is read to find the provider's message.
MAX_ERROR_BODY_BYTES = 64 * 1024


class CallLimits(msgspec.Struct, frozen=True):
    """``total_s`` bounds the whole call (``CURSOR_PROVIDER_TIMEOUT_SECONDS``); ``idle_s`` the
    silence between two body chunks once streaming, so a stalled stream ends early."""

    total_s: float = 300.0
    idle_s: float = 120.0


class ResponseHeadersReceived(msgspec.Struct, frozen=True):
    status: int
    at: float


class ResponseChunkReceived(msgspec.Struct, frozen=True):
    data: bytes
    at: float


class ErrorBodyReceived(msgspec.Struct, frozen=True):
    status: int
    body: bytes


class ResponseEnded(msgspec.Struct, frozen=True):
    at: float


class TransportFailed(msgspec.Struct, frozen=True):
    message: str


TransportMessage = (
    ResponseHeadersReceived
    | ResponseChunkReceived
    | ErrorBodyReceived
    | ResponseEnded
    | TransportFailed
)


def new_provider_client() -> httpx.AsyncClient:
    """The shared client for provider calls: limits come from ``CallLimits``, not httpx."""
    return httpx.AsyncClient(timeout=None, follow_redirects=False)


async def _read_error_body(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= MAX_ERROR_BODY_BYTES:
            break
    return bytes(body[:MAX_ERROR_BODY_BYTES])


async def stream_call(
    client: httpx.AsyncClient,
    call: HttpCall,
    limits: CallLimits,
    report: Callable[[TransportMessage], None],
) -> None:
    """Send ``call`` and report its response; never raises except on cancellation."""
    try:
        async with asyncio.timeout(limits.total_s):
            request = client.build_request(
                call.method, call.url, headers=list(call.headers), content=call.body
            )
            response = await client.send(request, stream=True)
            try:
                report(ResponseHeadersReceived(response.status_code, time.monotonic()))
                if not response.is_success:
                    report(
                        ErrorBodyReceived(response.status_code, await _read_error_body(response))
                    )
                    return
                chunks = response.aiter_bytes()
                while True:
                    try:
                        chunk = await asyncio.wait_for(anext(chunks), limits.idle_s)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        report(
                            TransportFailed(f"the provider sent nothing for {limits.idle_s:g} s")
                        )
                        return
                    report(ResponseChunkReceived(chunk, time.monotonic()))
                report(ResponseEnded(time.monotonic()))
            finally:
                await response.aclose()
    except TimeoutError:
        report(TransportFailed(f"the provider call took longer than {limits.total_s:g} s"))
    except httpx.HTTPError as exc:
        report(TransportFailed(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__))
