"""The reverse proxy: whatever no local route answers goes to Cursor's backend untouched.

Cursor's editor talks to one origin; this server answers the Agent routes itself and must be
invisible for everything else. So the proxy changes nothing it does not have to: the method,
the raw path and query, every end-to-end header (repeats and order kept) and the body bytes go
through verbatim in both directions, streamed, without compression or decompression. Only the
hop-by-hop headers (``wire.hop_by_hop``) and ``Host`` are replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import logging
import time
from collections.abc import AsyncIterator
from typing import ClassVar

import httpx
from aiohttp import web

from wire.hop_by_hop import request_headers, response_headers
from wire.http.agent_activity import CLIENT_VERSION_HEADER
from wire.http.protocol_drift import ProtocolDrift
from wire.http.responses import json_error
from wire.log import log_event

logger = logging.getLogger("cursor_server.proxy")

# Failures of the upstream exchange before its response headers arrive. OSError covers the
# client's own body stream breaking (it disconnected mid-upload) while httpx is sending it.
_SEND_ERRORS = (httpx.HTTPError, httpx.InvalidURL, OSError)

# Headers aiohttp invents while preparing a response if they are missing; a proxy must not.
# (``Date`` is left to aiohttp: RFC 9110 section 6.6.1 asks a forwarding recipient to add it.)
_NOT_INVENTED = ("Content-Type", "Server")


def new_upstream_client() -> httpx.AsyncClient:
    """The httpx client :class:`ReverseProxy` expects.

    No timeout (proxied streams can be open for hours), redirects are returned rather than
    followed, HTTP/1.1 only, no cap on concurrent connections (a pool limit with no timeout
    would queue streams forever), and a cookie jar that stores nothing, so ``Set-Cookie`` from
    one user's upstream response is never kept in server memory. Bodies are read with
    ``aiter_raw`` by the proxy, so httpx never decompresses them. It is an async context
    manager; otherwise close it with ``await client.aclose()`` (or :meth:`ReverseProxy.aclose`)
    after the web server has shut down.
    """
    no_cookies = http.cookiejar.CookieJar(
        policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[])
    )
    return httpx.AsyncClient(
        timeout=None,
        follow_redirects=False,
        http1=True,
        http2=False,
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=20),
        cookies=no_cookies,
    )


def _elapsed_ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def _error_detail(exc: BaseException) -> str:
    """Some httpx errors have an empty message; the type name is better than nothing."""
    return str(exc) or type(exc).__name__


def header_text(raw: bytes) -> str:
    """aiohttp serialises header strings as UTF-8, so valid UTF-8 round-trips byte for byte.

    Anything else (legal but rare obs-text) falls back to Latin-1 rather than failing.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


async def _request_body(request: web.Request) -> AsyncIterator[bytes]:
    """The client's body chunk by chunk as it arrives, so nothing is buffered whole."""
    async for chunk in request.content.iter_any():
        yield chunk


class ForwardedResponse(web.StreamResponse):
    """A StreamResponse that sends the upstream's headers and invents no body metadata.

    aiohttp's ``_prepare_headers`` fills in ``Content-Type: application/octet-stream`` and its
    own ``Server`` when they are missing; those are removed again when the upstream sent
    neither, before the headers are serialised. Framing (``Content-Length`` or chunked) and
    ``Connection`` stay aiohttp's job; it never compresses unless asked to.
    """

    def __init__(self, *, status: int, reason: str | None, headers: list[tuple[str, str]]) -> None:
        super().__init__(status=status, reason=reason)
        for name, value in headers:
            self.headers.add(name, value)
        self._absent = tuple(name for name in _NOT_INVENTED if name not in self.headers)

    async def _prepare_headers(self) -> None:
        await super()._prepare_headers()
        for name in self._absent:
            self.headers.popall(name, None)


class ReverseProxy:
    """Forwards a request to the upstream and streams its answer back, verbatim."""

    # How often an open proxied exchange checks that its client is still connected.
    CLIENT_POLL_S: ClassVar[float] = 1.0

    def __init__(
        self, upstream_url: str, client: httpx.AsyncClient, drift: ProtocolDrift | None = None
    ) -> None:
        self._drift = drift  # told each path relayed because nothing here serves it
        base = upstream_url.rstrip("/")
        url = httpx.URL(base)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"upstream URL must be absolute http(s): {upstream_url!r}")
        if url.query or url.fragment:
            raise ValueError(f"upstream URL must not have a query or fragment: {upstream_url!r}")
        self._base = base
        self._base_url = url
        self._base_path = b"" if url.raw_path == b"/" else url.raw_path
        self._client = client

    @property
    def upstream_url(self) -> str:
        """The upstream origin (and path prefix) requests are sent to, without trailing ``/``."""
        return self._base

    async def aclose(self) -> None:
        """Close the httpx client; call once the web server has shut down."""
        await self._client.aclose()

    def _target(self, raw_path: str) -> tuple[httpx.URL, dict[str, object]]:
        """The URL to request, sending the client's path and query byte for byte.

        httpx normalises paths (dot segments, escaping); when that would change the target, the
        base URL is used and httpcore's ``target`` extension carries the exact bytes instead.
        aiohttp decoded the request line as UTF-8 with ``surrogateescape``; this inverts it.
        """
        target = self._base_path + raw_path.encode("utf-8", "surrogateescape")
        with contextlib.suppress(httpx.InvalidURL, UnicodeDecodeError):
            url = httpx.URL(self._base + raw_path)
            if url.raw_path == target:
                return url, {}
        return self._base_url, {"target": target}

    def _upstream_request(self, request: web.Request) -> httpx.Request:
        """The same method, raw target, end-to-end headers and (streamed) body.

        A client ``Content-Length`` is forwarded and makes httpx send exactly that many bytes
        without chunking; a chunked client body goes upstream chunked. Built directly rather
        than with ``client.build_request`` so the client's default headers (``Accept``,
        ``Accept-Encoding``, ``User-Agent``...) are not added to what the client sent.
        """
        url, extensions = self._target(request.raw_path)
        return httpx.Request(
            request.method,
            url,
            headers=request_headers(request.raw_headers),
            content=_request_body(request) if request.body_exists else None,
            extensions=extensions,
        )

    async def forward_unserved(self, request: web.Request) -> web.StreamResponse:
        """``forward`` a request no route here serves, its path told to the drift record first
        (a route that chooses to forward, like the default-model one, calls ``forward``)."""
        if self._drift is not None:
            self._drift.relayed(request.path, request.headers.get(CLIENT_VERSION_HEADER))
        return await self.forward(request)

    async def forward(self, request: web.Request) -> web.StreamResponse:
        """Answer ``request`` with whatever the upstream answers; 502 if it cannot be reached.

        The upstream response is closed on every way out, including cancellation (server
        shutdown, ``handler_cancellation``, or the client-disconnect watcher), so no upstream
        stream outlives its client.
        """
        started = time.monotonic()
        handler = asyncio.current_task()
        watcher = (
            asyncio.create_task(self._watch_client(request, handler, started))
            if handler is not None
            else None
        )
        try:
            return await self._exchange(request, started)
        finally:
            if watcher is not None:
                watcher.cancel()

    async def _watch_client(
        self, request: web.Request, handler: asyncio.Task[object], started: float
    ) -> None:
        """Cancel the handler once its client has gone, so the upstream stream is closed.

        Unless the runner sets ``handler_cancellation``, aiohttp reports a vanished client only
        on the next write, and an upstream stream that stays quiet would hold its upstream
        connection open until then. aiohttp drops ``request.transport`` when the connection
        is lost; there is no callback for it, hence the poll.
        """
        while (transport := request.transport) is not None and not transport.is_closing():
            await asyncio.sleep(self.CLIENT_POLL_S)
        log_event(
            logger,
            logging.DEBUG,
            "Cursor client disconnected from proxied request",
            method=request.method,
            path=request.raw_path,
            elapsed_ms=_elapsed_ms(started),
        )
        if not handler.cancelling():  # shutdown may have got there first; cancel only once
            handler.cancel()

    async def _exchange(self, request: web.Request, started: float) -> web.StreamResponse:
        """Send upstream; relay the answer, or a 502 if there is none."""
        try:
            upstream = await self._client.send(self._upstream_request(request), stream=True)
        except _SEND_ERRORS as exc:
            detail = _error_detail(exc)
            log_event(
                logger,
                logging.WARNING,
                "Cursor upstream request failed",
                method=request.method,
                path=request.raw_path.partition("?")[0],
                elapsed_ms=_elapsed_ms(started),
                error=detail,
            )
            return json_error(502, "unavailable", f"http error: {detail}")
        try:
            log_event(
                logger,
                logging.INFO,
                "forwarded Cursor backend request",
                method=request.method,
                path=request.raw_path,
                status=upstream.status_code,
                elapsed_ms=_elapsed_ms(started),
            )
            return await self._relay(request, upstream, started)
        finally:
            # httpcore shields its own cleanup, so this completes inside a cancelled task too.
            await upstream.aclose()

    async def _relay(
        self, request: web.Request, upstream: httpx.Response, started: float
    ) -> web.StreamResponse:
        """Stream the upstream status, headers and raw body bytes to the client."""
        response = ForwardedResponse(
            status=upstream.status_code,
            reason=upstream.reason_phrase or None,
            headers=[
                (header_text(name), header_text(value))
                for name, value in response_headers(upstream.headers.raw)
            ],
        )
        try:
            await response.prepare(request)
            async for chunk in upstream.aiter_raw():
                await response.write(chunk)
            await response.write_eof()
        except ConnectionError:
            # The client went away; returning lets aiohttp wind the connection down quietly.
            log_event(
                logger,
                logging.DEBUG,
                "Cursor client disconnected from proxied response",
                method=request.method,
                path=request.raw_path,
                elapsed_ms=_elapsed_ms(started),
            )
        except httpx.HTTPError as exc:
            # Headers (and maybe a Content-Length) are already out; a clean end of body would
            # tell the client it has everything. Abort the connection so it sees the failure.
            log_event(
                logger,
                logging.WARNING,
                "Cursor upstream response body failed",
                method=request.method,
                path=request.raw_path,
                elapsed_ms=_elapsed_ms(started),
                error=_error_detail(exc),
            )
            if request.transport is not None:
                request.transport.abort()
        return response
