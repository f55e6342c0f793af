"""One WebSocket from an instance to a peer, carrying the appends it forwards there
(``wire.peer_frames``): the client half (``PeerChannel``, one per peer URL, opened on first use
and again after it broke) and the holder's half (``serve_channel``).

A call waits for its reply; every call still waiting when the channel breaks fails with
``PeerChannelBroken`` (whether its append arrived is then unknown, as with an HTTP request cut
mid-exchange). A peer that cannot be reached at all raises ``PeerUnreachable``: the forwarder
then asks who holds the run now.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Final

import aiohttp
import msgspec
from aiohttp import web

from wire.errors import Code, ConnectError
from wire.hop_by_hop import PEER_TOKEN_HEADER
from wire.http.append_reply import error_reply
from wire.log import log_event
from wire.peer_frames import (
    AppendCall,
    AppendReply,
    PeerFrameError,
    decode_call,
    decode_reply,
    encode_frame,
)

logger = logging.getLogger("cursor_server.peers")

CHANNEL_PATH: Final = "/internal/v1/channel"
# A frame's overhead past the append body it carries (its headers, its numbers).
FRAME_OVERHEAD_BYTES: Final = 256 * 1024
# Both ends ping this often; a peer that sends no pong in half of it has its channel closed
# (a frozen or cut-off holder, whose connection never closes by itself).
CHANNEL_HEARTBEAT_S: Final = 10.0


class PeerUnreachable(Exception):
    """The peer's channel could not be opened (refused, timed out)."""


class PeerChannelBroken(Exception):
    """The channel broke with this call's reply outstanding."""


class PeerChannel:
    """The channel to one peer; calls from any task on the loop."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        url: str,
        token: str,
        max_body_bytes: int,
        reply_timeout_s: float,
    ) -> None:
        self._reply_timeout_s = reply_timeout_s
        self._session = session
        self._url = url + CHANNEL_PATH
        self._token = token
        self._max_msg = max_body_bytes + FRAME_OVERHEAD_BYTES
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        # The calls waiting on the open connection (each connection has its own).
        self._waiting: dict[int, asyncio.Future[AppendReply]] = {}
        self._opening = asyncio.Lock()
        self._ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None

    async def call(self, headers: tuple[tuple[bytes, bytes], ...], body: bytes) -> AppendReply:
        ws, waiting = await self._open()
        call_id = next(self._ids)
        reply: asyncio.Future[AppendReply] = asyncio.get_running_loop().create_future()
        waiting[call_id] = reply
        try:
            await ws.send_bytes(encode_frame(AppendCall(call_id, headers, body)))
            async with asyncio.timeout(self._reply_timeout_s):
                return await reply
        except TimeoutError:
            raise PeerChannelBroken(f"no reply in {self._reply_timeout_s:g} s") from None
        except (ConnectionError, aiohttp.ClientError) as exc:
            raise PeerChannelBroken(str(exc) or type(exc).__name__) from None
        finally:
            waiting.pop(call_id, None)
            if reply.done() and not reply.cancelled():
                reply.exception()  # retrieved: a send error was raised instead
            else:
                reply.cancel()

    async def _open(
        self,
    ) -> tuple[aiohttp.ClientWebSocketResponse, dict[int, asyncio.Future[AppendReply]]]:
        ws = self._ws
        if ws is not None and not ws.closed:
            return ws, self._waiting
        async with self._opening:
            if self._ws is not None and not self._ws.closed:
                return self._ws, self._waiting
            try:
                ws = await self._session.ws_connect(
                    self._url,
                    headers={PEER_TOKEN_HEADER: self._token},
                    max_msg_size=self._max_msg,
                    autoping=True,
                    heartbeat=CHANNEL_HEARTBEAT_S,
                    compress=0,
                )
            except (aiohttp.ClientConnectorError, TimeoutError) as exc:
                raise PeerUnreachable(str(exc) or type(exc).__name__) from None
            except aiohttp.WSServerHandshakeError as exc:
                if exc.status == 401:
                    log_event(
                        logger,
                        logging.ERROR,
                        "a peer refused this instance's peer token: their secret keys differ",
                        peer=self._url,
                    )
                raise PeerChannelBroken(str(exc) or type(exc).__name__) from None
            except aiohttp.ClientError as exc:
                raise PeerChannelBroken(str(exc) or type(exc).__name__) from None
            self._ws = ws
            self._waiting = {}
            self._reader = asyncio.ensure_future(self._read(ws, self._waiting))
            return ws, self._waiting

    @staticmethod
    async def _read(
        ws: aiohttp.ClientWebSocketResponse, waiting: dict[int, asyncio.Future[AppendReply]]
    ) -> None:
        try:
            async for message in ws:
                if message.type is not aiohttp.WSMsgType.BINARY:
                    continue
                reply = decode_reply(message.data)
                call = waiting.get(reply.call_id)
                if call is not None and not call.done():
                    call.set_result(reply)
        except PeerFrameError as exc:
            log_event(logger, logging.ERROR, "peer channel sent a bad frame", error=str(exc))
            await ws.close()
        finally:
            broken = PeerChannelBroken("the peer channel closed")
            for call in list(waiting.values()):
                if not call.done():
                    call.set_exception(broken)

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader


# What the holder does with one forwarded append: its reply (``call_id`` set by the channel).
AppendHandler = Callable[[AppendCall], Awaitable[AppendReply]]


async def serve_channel(
    request: web.Request, handle: AppendHandler, max_body_bytes: int
) -> web.WebSocketResponse:
    """The holder's half: every call handled in a task of its own (appends of many runs at
    once), each reply sent as it is ready."""
    ws = web.WebSocketResponse(
        max_msg_size=max_body_bytes + FRAME_OVERHEAD_BYTES,
        compress=False,
        heartbeat=CHANNEL_HEARTBEAT_S,
    )
    await ws.prepare(request)
    sending = asyncio.Lock()
    tasks: set[asyncio.Task[None]] = set()

    async def answer(call: AppendCall) -> None:
        try:
            reply = await handle(call)
        except Exception as exc:  # answered, as the HTTP path answers an unexpected error
            log_event(
                logger,
                logging.ERROR,
                "forwarded append failed",
                error=f"{type(exc).__name__}: {exc}",
            )
            reply = error_reply(ConnectError(Code.INTERNAL, "the run's holder failed"))
        frame = encode_frame(msgspec.structs.replace(reply, call_id=call.call_id))
        async with sending:
            if not ws.closed:
                with contextlib.suppress(ConnectionError, aiohttp.ClientError):
                    await ws.send_bytes(frame)

    try:
        async for message in ws:
            if message.type is not aiohttp.WSMsgType.BINARY:
                continue
            try:
                call = decode_call(message.data)
            except PeerFrameError as exc:
                log_event(logger, logging.ERROR, "peer sent a bad frame", error=str(exc))
                break
            task = asyncio.ensure_future(answer(call))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    finally:
        for task in list(tasks):
            task.cancel()
        await ws.close()
    return ws
