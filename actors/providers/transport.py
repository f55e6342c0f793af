"""The one provider HTTP request, as a coroutine on the server's loop (the only provider IO).

It reports what happens to the ProviderActor by ``tell``: headers, each body chunk, the end,
or a failure. The actor cancels it through the future ``actors.loop.bridge.LoopTasks`` returned;
cancellation closes the response, and with it the connection, whether the request is still
waiting for headers or reading the stream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx
import msgspec

from actors.conversation.request import HttpCall
from actors.protocols.provider import (
    ErrorBodyReceived,
    ResponseChunksReceived,
    ResponseEnded,
    ResponseHeadersReceived,
    TransportFailed,
    TransportMessage,
)

# How much of an error response body is read to find the provider's message.
MAX_ERROR_BODY_BYTES = 64 * 1024
# Body chunks reach the actor at most once per window: the first chunk after a quiet window
# goes at once, later ones are batched until the window ends. A provider writing one SSE event
# per network packet would otherwise cost one thread handoff per token.
CHUNK_BATCH_WINDOW_S = 0.002


class CallLimits(msgspec.Struct, frozen=True):
    """``total_s`` bounds the whole call (``CURSOR_PROVIDER_TIMEOUT_SECONDS``); ``idle_s`` the
    wait for the response headers and the silence between two body chunks once streaming
    (``CURSOR_PROVIDER_IDLE_SECONDS``), so a provider that stalls fails early."""

    total_s: float = 300.0
    idle_s: float = 120.0


class ChunkBatcher:
    """Leading-edge, window-bounded batching of body chunks on the loop."""

    def __init__(
        self,
        report: Callable[[TransportMessage], None],
        window_s: float = CHUNK_BATCH_WINDOW_S,
    ) -> None:
        self._report = report
        self._window_s = window_s
        self._pending: list[tuple[bytes, float]] = []
        self._last_flush = float("-inf")
        self._timer: asyncio.TimerHandle | None = None

    def add(self, chunk: bytes, at: float) -> None:
        self._pending.append((chunk, at))
        if self._timer is not None:
            return
        wait = self._last_flush + self._window_s - at
        if wait <= 0:
            self.flush()
        else:
            self._timer = asyncio.get_running_loop().call_later(wait, self.flush)

    def flush(self) -> None:
        """Report what is pending now (also before the end or a failure is reported)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending:
            self._report(ResponseChunksReceived(tuple(self._pending)))
            self._pending = []
            self._last_flush = time.monotonic()

    def discard(self) -> None:
        """Drop what is pending (the call was cancelled: nobody wants it; every other way out
        of the stream flushes first)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending = []


class IdleWatchdog:
    """Cancels the current task when no chunk arrived for ``idle_s``.

    Feeding it is one clock read per chunk; the timer re-arms itself only when it fires, so a
    fast stream does not reschedule a timer per chunk.
    """

    def __init__(self, idle_s: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._idle_s = idle_s
        self._last = self._loop.time()
        self.expired = False
        self._timer: asyncio.TimerHandle | None = self._loop.call_later(idle_s, self._check)

    def fed(self) -> None:
        self._last = self._loop.time()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        quiet = self._loop.time() - self._last
        if quiet < self._idle_s:
            self._timer = self._loop.call_later(self._idle_s - quiet, self._check)
            return
        self._timer = None
        self.expired = True
        if self._task is not None:
            self._task.cancel()


# Idle connections kept per process for the next provider call. httpx keeps 20 by default, so
# with more calls at once than that most calls opened a new connection (and its TLS handshake,
# with a real provider), a sixth of a text turn's CPU at 50 runs.
PROVIDER_KEEPALIVE_CONNECTIONS = 512


def new_provider_client() -> httpx.AsyncClient:
    """The shared client for provider calls: limits come from ``CallLimits``, not httpx, and no
    call waits for a connection (httpx would cap them at 100, queueing the rest unseen)."""
    limits = httpx.Limits(
        max_connections=None, max_keepalive_connections=PROVIDER_KEEPALIVE_CONNECTIONS
    )
    return httpx.AsyncClient(timeout=None, follow_redirects=False, limits=limits)


async def read_error_body(response: httpx.Response) -> bytes:
    """At most ``MAX_ERROR_BODY_BYTES`` of a refused call's body, for its message."""
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
            try:
                async with asyncio.timeout(limits.idle_s):
                    response = await client.send(request, stream=True)
            except TimeoutError:
                message = f"the provider sent no response headers for {limits.idle_s:g} s"
                report(TransportFailed(message, transient=True))
                return
            try:
                report(ResponseHeadersReceived(response.status_code, time.monotonic()))
                if not response.is_success:
                    body = await read_error_body(response)
                    retry_after = response.headers.get("retry-after")
                    report(ErrorBodyReceived(response.status_code, body, retry_after))
                    return
                batcher = ChunkBatcher(report)
                watchdog = IdleWatchdog(limits.idle_s)
                try:
                    async for chunk in response.aiter_bytes():
                        watchdog.fed()
                        batcher.add(chunk, time.monotonic())
                    batcher.flush()
                    report(ResponseEnded(time.monotonic()))
                except httpx.HTTPError:
                    # A read error (a reset, an EOF mid-body) can come in the same step as the
                    # last chunks: they go before the failure, so the turn sees what the
                    # provider wrote and the attempt is judged by it (never a silent retry).
                    batcher.flush()
                    raise
                except asyncio.CancelledError:
                    if not watchdog.expired:
                        raise
                    # The watchdog's own cancel, handled here: undo it so the task's cancel
                    # count stays true for the enclosing timeout.
                    task = asyncio.current_task()
                    if task is not None:
                        task.uncancel()
                    batcher.flush()
                    message = f"the provider sent nothing for {limits.idle_s:g} s"
                    report(TransportFailed(message, transient=True))
                finally:
                    watchdog.stop()
                    batcher.discard()
            finally:
                await response.aclose()
    except TimeoutError:
        report(TransportFailed(f"the provider call took longer than {limits.total_s:g} s"))
    except httpx.HTTPError as exc:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        report(TransportFailed(text, transient=isinstance(exc, httpx.TransportError)))
