"""Requests for a run another instance holds, passed to it as they came and answered as it
answers.

Why: behind a round-robin balancer a run's RunSSE and BidiAppends reach any instance, but the
run lives in one process's memory. The edge asks the ``RouteBook`` (the database's
``run_routes``, reached through a port) who holds the request id: itself (the id was new and it
just claimed it, or it held it already), or a peer. To a peer, an append goes on the channel
this instance keeps open to it (``wire.http.peer_channel``: one WebSocket, a frame per append,
far cheaper than an HTTP exchange each), and a RunSSE goes as an HTTP request on a kept-alive
connection whose answer is streamed back byte for byte as the holder writes it, so reconnect
replay, heartbeats and EndStreams are the holder's own. Both carry the peer token (derived
from the secret key every instance shares) in place of the client's.

A peer that does not answer is asked about again: if its lease has ended (it died), the route
moves here and the request is served here, as a standby would serve it; if its lease still
runs, the request ends ``unavailable`` (the editor retries). A peer that answers that it does
not hold the run (421: it restarted on the same address, or the route moved) makes the
forwarder read the route again. A peer that dies mid-stream breaks the client's stream too,
as its own death would.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections import OrderedDict
from typing import Final, Protocol

import aiohttp
from aiohttp import web

from wire.errors import Code, ConnectError
from wire.hop_by_hop import PEER_TOKEN_HEADER, request_headers, response_headers
from wire.http.append_reply import MISDIRECTED
from wire.http.limits import EdgeLimits
from wire.http.peer_channel import PeerChannel, PeerChannelBroken, PeerUnreachable
from wire.http.proxy import ForwardedResponse, header_text
from wire.http.upstream_run import RawRequest
from wire.log import log_event
from wire.peer_frames import AppendReply

logger = logging.getLogger("cursor_server.peers")

# Request ids whose holder is a peer, remembered so later requests of the run cost no query.
ROUTE_MEMORY: Final = 4096
# Holders asked about, per forwarded request, before it ends ``unavailable`` (each one dead,
# or no longer the holder when asked).
MAX_FORWARD_ATTEMPTS: Final = 3
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


def new_peer_session() -> aiohttp.ClientSession:
    """Kept-alive connections to the peers, bodies passed as they are (never decompressed);
    no environment proxies, no cookies."""
    return aiohttp.ClientSession(
        auto_decompress=False,
        # Nothing the client did not send: a relayed run's requests go on to Cursor as sent.
        skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent", "Content-Type"),
        trust_env=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        timeout=aiohttp.ClientTimeout(
            total=None, connect=PEER_CONNECT_TIMEOUT_S, sock_read=PEER_READ_TIMEOUT_S
        ),
        connector=aiohttp.TCPConnector(limit=0, enable_cleanup_closed=True),
    )


class PeerForwarder:
    """Decides where a run's request is served and forwards it when that is a peer."""

    def __init__(
        self, book: RouteBook, session: aiohttp.ClientSession, token: str, limits: EdgeLimits
    ) -> None:
        self._limits = limits
        self._book = book
        self._session = session
        self._token = token
        self._remembered: OrderedDict[str, str] = OrderedDict()
        self._channels: dict[str, PeerChannel] = {}

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

    async def held_here(self, request_id: str) -> bool:
        """For a forwarded request whose run this instance has not in memory: whether the
        route names this instance (claimed now if it named none, or a dead one)."""
        return await self._book.holder(request_id) is None

    async def _moved(self, request_id: str, url: str, unreachable: bool) -> str | None:
        """Where to try next after the peer at ``url`` did not answer or did not hold it."""
        self._remembered.pop(request_id, None)
        if unreachable:
            log_event(
                logger, logging.WARNING, "peer not answering", request_id=request_id, peer=url
            )
            moved = await self._book.unreachable(request_id, url)
        else:
            moved = await self._book.holder(request_id)
        if moved is not None:
            self._remember(request_id, moved)
        return moved

    def _channel(self, url: str) -> PeerChannel:
        channel = self._channels.get(url)
        if channel is None:
            channel = PeerChannel(
                self._session,
                url,
                self._token,
                self._limits.max_body_bytes,
                reply_timeout_s=PEER_READ_TIMEOUT_S,
            )
            self._channels[url] = channel
        return channel

    async def forward_append(
        self, raw: RawRequest, request_id: str, url: str
    ) -> AppendReply | None:
        """The holder's reply to the append ``raw``; None when the request is to be served
        here (the holder turned out dead and the route moved here)."""
        headers = tuple(request_headers(raw.headers))
        next_url: str | None = url
        for _ in range(MAX_FORWARD_ATTEMPTS):
            assert next_url is not None
            try:
                reply = await self._channel(next_url).call(headers, raw.body)
            except PeerUnreachable:
                self._channels.pop(next_url, None)  # a dead peer's channel goes
                next_url = await self._moved(request_id, next_url, unreachable=True)
            except PeerChannelBroken as exc:
                raise _failed(request_id, str(exc)) from None
            else:
                if reply.status != MISDIRECTED:
                    log_event(
                        logger,
                        logging.DEBUG,
                        "request forwarded to its run's holder",
                        request_id=request_id,
                        holder=next_url,
                        path="channel",
                    )
                    return reply
                next_url = await self._moved(request_id, next_url, unreachable=False)
            if next_url is None:
                return None
        raise _keeps_changing(request_id)

    async def forward(
        self, request: web.Request, raw: RawRequest, request_id: str, url: str
    ) -> web.StreamResponse | None:
        """Send the RunSSE to the peer at ``url`` and stream back what it answers; None when
        the request is to be served here."""
        headers = [
            (header_text(name), header_text(value)) for name, value in request_headers(raw.headers)
        ]
        headers.append((PEER_TOKEN_HEADER, self._token))
        next_url: str | None = url
        for _ in range(MAX_FORWARD_ATTEMPTS):
            assert next_url is not None
            try:
                upstream = await self._session.post(
                    next_url + request.path, data=raw.body, headers=headers
                )
            except (aiohttp.ClientConnectorError, TimeoutError):
                next_url = await self._moved(request_id, next_url, unreachable=True)
            except aiohttp.ClientError as exc:
                raise _failed(request_id, str(exc) or type(exc).__name__) from None
            else:
                if upstream.status == 401:
                    upstream.release()
                    log_event(
                        logger,
                        logging.ERROR,
                        "a peer refused this instance's peer token: their secret keys differ",
                        peer=next_url,
                    )
                    raise _failed(request_id, "it refused this instance's peer token")
                if upstream.status != MISDIRECTED:
                    break
                upstream.release()
                next_url = await self._moved(request_id, next_url, unreachable=False)
            if next_url is None:
                return None
        else:
            raise _keeps_changing(request_id)
        log_event(
            logger,
            logging.DEBUG,
            "request forwarded to its run's holder",
            request_id=request_id,
            holder=next_url,
            path=request.path,
        )
        try:
            return await self._relay(request, upstream, request_id)
        finally:
            upstream.release()

    async def _relay(
        self, request: web.Request, upstream: aiohttp.ClientResponse, request_id: str
    ) -> web.StreamResponse:
        response = ForwardedResponse(
            status=upstream.status,
            reason=upstream.reason or None,
            headers=[
                (header_text(name), header_text(value))
                for name, value in response_headers(upstream.raw_headers)
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
            # Their own ends, not a cancellation of this handler, are what is let go here.
            await asyncio.gather(copying, watching, return_exceptions=True)
        if copying.done() and not copying.cancelled() and copying.result():
            with contextlib.suppress(ConnectionResetError, ConnectionError):
                await response.write_eof()
        else:
            # The client left, stopped reading or the peer broke: closing the peer's stream
            # tells the holder its RunSSE client left.
            upstream.close()
        return response

    async def _copy(
        self,
        request: web.Request,
        upstream: aiohttp.ClientResponse,
        response: web.StreamResponse,
        request_id: str,
    ) -> bool:
        """The peer's body to the client; True when it ended cleanly."""
        stall_s = self._limits.slow_reader_timeout_s
        try:
            async for chunk in upstream.content.iter_any():
                async with asyncio.timeout(stall_s):
                    await response.write(chunk)
        except ConnectionResetError:
            return False  # the client left (a write to it failed)
        except (aiohttp.ClientError, asyncio.IncompleteReadError) as exc:
            # The holder died or cut the stream: so does this one (the editor resumes).
            log_event(
                logger,
                logging.WARNING,
                "peer stream broke",
                request_id=request_id,
                error=str(exc) or type(exc).__name__,
            )
        except TimeoutError:
            log_event(
                logger,
                logging.WARNING,
                "forwarded RunSSE client stopped reading; stream cut",
                request_id=request_id,
                waited_s=stall_s,
            )
        except ConnectionError:
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

    async def aclose(self) -> None:
        for channel in list(self._channels.values()):
            await channel.close()
        self._channels.clear()


def _failed(request_id: str, why: str) -> ConnectError:
    return ConnectError(Code.UNAVAILABLE, f"the instance holding run {request_id} failed: {why}")


def _keeps_changing(request_id: str) -> ConnectError:
    return ConnectError(Code.UNAVAILABLE, f"run {request_id}: its holder keeps changing; retry")
