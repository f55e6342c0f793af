"""Requests for a run another instance holds, passed to it as they came and answered with its
bytes as they come back.

Why: behind a round-robin balancer a run's RunSSE and BidiAppends reach any instance, but the
run lives in one process's memory. The edge asks the ``RouteBook`` (the database's
``run_routes``, reached through a port) who holds the request id: itself (the id was new and it
just claimed it, or it held it already), or a peer, to whom the body goes unchanged over one
kept-alive HTTP/1.1 connection to the peer's internal listener, with the peer token (derived
from the secret key every instance shares) in place of the client's. The peer's answer comes
back byte for byte, a RunSSE streamed as it is written, so reconnect replay, heartbeats and
EndStreams are the owner's own.

A peer that does not answer is asked about again: if its lease has ended (it died), the route
moves here and the request is served here, as a standby would serve it; if its lease still
runs, the request ends ``unavailable`` (the editor retries). A peer that dies mid-stream breaks
the client's stream too, as its own death would.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections import OrderedDict
from typing import Final, Protocol

import httpx
from aiohttp import web

from wire.errors import Code, ConnectError
from wire.hop_by_hop import PEER_TOKEN_HEADER, request_headers, response_headers
from wire.http.limits import EdgeLimits
from wire.http.proxy import ForwardedResponse, header_text
from wire.http.responses import json_error
from wire.http.upstream_run import RawRequest
from wire.log import log_event

logger = logging.getLogger("cursor_server.peers")

# Request ids whose owner is a peer, remembered so later requests of the same run cost no query.
ROUTE_MEMORY: Final = 4096
# Holders asked about, per forwarded request, before it ends ``unavailable`` (each one dead,
# or no longer the holder when asked).
MAX_FORWARD_ATTEMPTS: Final = 3
# What an instance answers a forwarded request for a run it does not hold (it restarted
# with the same address, or the route moved): the forwarder asks the database again.
MISDIRECTED: Final = 421
# How long a forward waits to connect to a peer (loopback or a LAN) before asking who holds it.
PEER_CONNECT_TIMEOUT_S: Final = 2.0
# A forwarded RunSSE is quiet at most a heartbeat interval; this is many of them.
PEER_READ_TIMEOUT_S: Final = 120.0


def is_peer_token(candidate: str | None, token: str) -> bool:
    return candidate is not None and hmac.compare_digest(candidate.encode(), token.encode())


class RouteBook(Protocol):
    """Who holds each request id (the database's ``run_routes``, off the loop)."""

    async def holder(self, request_id: str) -> str | None:
        """The internal URL of the peer that holds ``request_id``; None when it is this
        instance (claimed now if nobody had it)."""
        ...

    async def unreachable(self, request_id: str, url: str) -> str | None:
        """The peer at ``url`` did not answer for ``request_id``: None to serve it here (the
        peer is dead and the route moved here), else the URL of whoever holds it now.
        ``ConnectError`` (unavailable) when the peer is alive but does not answer."""
        ...


def new_peer_client() -> httpx.AsyncClient:
    """Kept-alive HTTP/1.1 connections to the peers; no environment proxies, no redirects."""
    return httpx.AsyncClient(
        trust_env=False,
        follow_redirects=False,
        http1=True,
        http2=False,
        timeout=httpx.Timeout(PEER_READ_TIMEOUT_S, connect=PEER_CONNECT_TIMEOUT_S),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
    )


class PeerForwarder:
    """Decides where a run's request is served and forwards it when that is a peer."""

    def __init__(
        self, book: RouteBook, client: httpx.AsyncClient, token: str, limits: EdgeLimits
    ) -> None:
        self._limits = limits
        self._book = book
        self._client = client
        self._token = token
        self._remembered: OrderedDict[str, str] = OrderedDict()

    async def destination(self, request_id: str) -> str | None:
        """The peer's URL for ``request_id``, or None to serve it here."""
        url = self._remembered.get(request_id)
        if url is not None:
            self._remembered.move_to_end(request_id)
            return url
        url = await self._book.holder(request_id)
        if url is not None:
            self._remember(request_id, url)
        return url

    def _remember(self, request_id: str, url: str) -> None:
        self._remembered[request_id] = url
        self._remembered.move_to_end(request_id)
        while len(self._remembered) > ROUTE_MEMORY:
            self._remembered.popitem(last=False)

    async def forward(
        self, request: web.Request, raw: RawRequest, request_id: str, url: str
    ) -> web.StreamResponse | None:
        """Send the request to the peer at ``url`` and answer with what it answers; None when
        the peer turned out dead (or the route moved here) and the request is to be served
        here."""
        for _ in range(MAX_FORWARD_ATTEMPTS):
            outgoing = self._request(request, raw, url)
            try:
                upstream = await self._client.send(outgoing, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                self._remembered.pop(request_id, None)
                log_event(
                    logger, logging.WARNING, "peer not answering", request_id=request_id, peer=url
                )
                moved = await self._book.unreachable(request_id, url)
            except httpx.HTTPError as exc:
                raise ConnectError(
                    Code.UNAVAILABLE, f"the instance holding run {request_id} failed: {exc}"
                ) from None
            else:
                if upstream.status_code != MISDIRECTED:
                    break
                await upstream.aclose()
                self._remembered.pop(request_id, None)
                moved = await self._book.holder(request_id)
            if moved is None:
                return None
            self._remember(request_id, moved)
            url = moved
        else:
            raise ConnectError(
                Code.UNAVAILABLE, f"run {request_id}: its holder keeps changing; retry shortly"
            )
        log_event(
            logger,
            logging.DEBUG,
            "request forwarded to its run's holder",
            request_id=request_id,
            holder=url,
            path=request.path,
        )
        try:
            return await self._relay(request, upstream, request_id)
        finally:
            await upstream.aclose()

    async def held_here(self, request_id: str) -> bool:
        """For a forwarded request whose run this instance has not in memory: whether the
        route names this instance (claimed now if it named none, or a dead one)."""
        return await self._book.holder(request_id) is None

    def _request(self, request: web.Request, raw: RawRequest, url: str) -> httpx.Request:
        headers = [
            *request_headers(raw.headers),
            (PEER_TOKEN_HEADER.encode(), self._token.encode()),
        ]
        return httpx.Request("POST", url + request.path, headers=headers, content=raw.body)

    async def _relay(
        self, request: web.Request, upstream: httpx.Response, request_id: str
    ) -> web.StreamResponse:
        response = ForwardedResponse(
            status=upstream.status_code,
            reason=upstream.reason_phrase or None,
            headers=[
                (header_text(name), header_text(value))
                for name, value in response_headers(upstream.headers.raw)
            ],
        )
        await response.prepare(request)
        copying = asyncio.ensure_future(self._copy(request, upstream, response, request_id))
        watching = asyncio.ensure_future(self._client_left(request))
        try:
            await asyncio.wait((copying, watching), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (copying, watching):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if copying.done() and not copying.cancelled() and copying.result():
            with contextlib.suppress(ConnectionResetError, ConnectionError):
                await response.write_eof()
        # Otherwise the client left, stopped reading or the peer broke: leaving the peer's
        # stream (closed by the caller) tells the owner its RunSSE client left.
        return response

    async def _copy(
        self,
        request: web.Request,
        upstream: httpx.Response,
        response: web.StreamResponse,
        request_id: str,
    ) -> bool:
        """The peer's body to the client; True when it ended cleanly."""
        stall_s = self._limits.slow_reader_timeout_s
        try:
            async for chunk in upstream.aiter_raw():
                async with asyncio.timeout(stall_s):
                    await response.write(chunk)
        except httpx.HTTPError as exc:
            # The owner died or cut the stream: so does this one (the editor resumes).
            log_event(
                logger, logging.WARNING, "peer stream broke", request_id=request_id, error=str(exc)
            )
        except TimeoutError:
            log_event(
                logger,
                logging.WARNING,
                "forwarded RunSSE client stopped reading; stream cut",
                request_id=request_id,
                waited_s=stall_s,
            )
        except (ConnectionResetError, ConnectionError):
            return False
        else:
            return True
        if request.transport is not None:
            request.transport.abort()
        return False

    async def _client_left(self, request: web.Request) -> None:
        """Returns once the client's connection is gone (aiohttp notices only on a write)."""
        poll_s = self._limits.client_poll_s
        while (transport := request.transport) is not None and not transport.is_closing():
            await asyncio.sleep(poll_s)


def misdirected(request_id: str) -> web.Response:
    """The answer to a forwarded request for a run another instance holds."""
    return json_error(MISDIRECTED, "unavailable", f"run {request_id} is not held by this instance")
