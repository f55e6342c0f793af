"""Every HTTP/2 request other than ``Run``: relayed to our own HTTP/1.1 app, streamed both ways.

So the model-list splices, ``GetServerConfig`` and the reverse proxy to Cursor's backend work
on the HTTP/2 listener exactly as on the main one (one owner for each route). The request's
pseudo-headers become the HTTP/1.1 request line, hop-by-hop fields go in both directions
(RFC 9113 §8.2.2: ``connection``, ``keep-alive``, ``te``, ``transfer-encoding``, ``upgrade``,
``proxy-connection``), response field names are lower-cased as HTTP/2 requires. Bodies are
streamed: the answer is read from the app only as fast as the client's window lets it leave.
The console is not reachable here: its loopback check would see this relay as the peer.
The app is reached through its private Unix socket (``wire.http.relay_socket``), never a URL
built from what the client sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from urllib.parse import unquote

import httpx

from wire.edge_rules import is_console_path, target_refusal
from wire.errors import http_error_json
from wire.hop_by_hop import RELAY_PEER_HEADER, strip_hop_by_hop
from wire.http.h2_server import H2Stream, StreamGone
from wire.log import log_event

logger = logging.getLogger("cursor_server.h2")

_H2_FORBIDDEN = (b"proxy-connection", b"host")
_PEER = RELAY_PEER_HEADER.lower().encode("ascii")
# Headers httpx adds to every request unless given: not ours to invent on the client's behalf.
_CLIENT_DEFAULTS = (b"accept", b"accept-encoding", b"user-agent")


# The relay's URLs name no host: its client reaches the app's Unix socket whatever they say.
RELAY_ORIGIN = "http://cursor-server.relay"


class H2Relay:
    """Forwards a stream to the HTTP/1.1 app through ``client`` (``RelaySocket.client()``)
    and streams its answer back."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def handle(self, stream: H2Stream) -> None:
        path = stream.path
        refused = target_refusal(path)
        if refused is not None:  # the edge refuses these first; never sent on either way
            await self._answer(stream, 400, "invalid_argument", refused)
            return
        if is_console_path(unquote(path.partition("?")[0])):
            message = "the console is served on the main listener only"
            await self._answer(stream, 404, "not_found", message)
            return
        raw = [(k.encode(), v.encode("utf-8", "surrogateescape")) for k, v in stream.headers]
        headers = strip_hop_by_hop(
            [(k, v) for k, v in raw if not k.startswith(b":")], drop=(*_H2_FORBIDDEN, _PEER)
        )
        # The app reads the host the client asked for (the browser rules, server config) and
        # counts the client's streams under its own address, not the relay's.
        authority = stream.header(":authority") or "localhost"
        headers.append((b"host", authority.encode("utf-8", "surrogateescape")))
        headers.append((_PEER, (stream.peer or "").encode("ascii", "replace")))
        try:
            request = self._client.build_request(
                stream.method, RELAY_ORIGIN + path, headers=headers, content=self._body(stream)
            )
        except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
            await self._answer(stream, 400, "invalid_argument", f"unusable request: {exc}")
            return
        # The app sees what the client sent: nothing of httpx's own defaults.
        sent = {name.lower() for name, _ in headers}
        for name in _CLIENT_DEFAULTS:
            if name not in sent and name.decode("ascii") in request.headers:
                del request.headers[name.decode("ascii")]
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            log_event(logger, logging.WARNING, "HTTP/2 relay failed", path=path, error=str(exc))
            await self._answer(stream, 502, "unavailable", f"relay failed: {exc}")
            return
        try:
            out = [
                (name.lower().decode("latin-1"), value.decode("utf-8", "surrogateescape"))
                for name, value in strip_hop_by_hop(response.headers.raw, drop=_H2_FORBIDDEN)
            ]
            stream.respond(response.status_code, tuple(out))
            if await self._copy_until_gone(response, stream):
                stream.end()
            else:
                log_event(logger, logging.INFO, "HTTP/2 client left a relayed stream", path=path)
        except StreamGone:
            log_event(logger, logging.INFO, "HTTP/2 client left a relayed stream", path=path)
        finally:
            await response.aclose()

    @staticmethod
    async def _copy_until_gone(response: httpx.Response, stream: H2Stream) -> bool:
        """Copy the app's answer to the client; False when the client left first. A quiet
        answer (a RunSSE waiting for its run) must not outlive its client: closing the
        response closes the relay's connection, which the app sees as that client leaving."""

        async def copy() -> None:
            async for chunk in response.aiter_raw():
                await stream.write(chunk)

        copying = asyncio.ensure_future(copy())
        gone = asyncio.ensure_future(stream.gone.wait())
        try:
            await asyncio.wait((copying, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not copying.done():
                copying.cancel()
            with contextlib.suppress(asyncio.CancelledError, StreamGone):
                await copying
        return not copying.cancelled() and copying.exception() is None

    @staticmethod
    async def _body(stream: H2Stream) -> AsyncIterator[bytes]:
        while (chunk := await stream.read()) is not None:
            yield chunk

    @staticmethod
    async def _answer(stream: H2Stream, status: int, code: str, message: str) -> None:
        body = http_error_json(code, message)
        stream.respond(status, (("content-type", "application/json"),))
        await stream.write(body)
        stream.end()
