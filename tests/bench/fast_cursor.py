"""The fake Cursor client over aiohttp instead of httpx, for the benchmarks.

The tests' ``FakeCursor`` speaks through httpx, which spends about 1.5 ms of client CPU on each
request on this machine (aiohttp about 0.4 ms). In a turn the client posts one BidiAppend per
KV ACK and per exec result, so with httpx a good part of what the bench timed was the fake
client's own work, which the real editor does not have. Same protocol, same frames; only the
HTTP library differs. ``CursorSession`` reads ``status_code`` and ``text`` of an append's answer,
which ``Answer`` provides. ``RotatingCursor`` spreads one run's requests over several servers,
each request to the next, as a round-robin balancer with no stickiness does. ``SharedH2Cursor``
runs the turns over the other transport, the HTTP/2 ``Run`` RPC, on one connection they share.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
import msgspec

from tests.support.fake_cursor import (
    BIDI_APPEND,
    RUN_SSE,
    CursorSession,
    RunStream,
    bidi_append_body,
    frame_body,
)
from tests.support.h2_client import H2Client, H2Cursor
from wire.connect import EnvelopeReader
from wire.proto import agent_v1_pb2 as agent


class Answer(msgspec.Struct, frozen=True):
    """What the session reads of an append's HTTP answer."""

    status_code: int
    text: str


class AiohttpRunStream(RunStream):
    """A RunSSE body read with aiohttp."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.aio_response = response
        self._reader = EnvelopeReader()
        self._pending = []
        self._chunks = response.content.iter_any()
        self.raw = bytearray()

    async def aclose(self) -> None:
        self.aio_response.close()


class AiohttpCursor:
    """``FakeCursor``'s two calls (an ``EditorClient`` for ``CursorSession``): RunSSE and
    BidiAppend, sent through one aiohttp session (``connector``: its connection pool, aiohttp's
    default when None). Given a ``session``, it uses that one and leaves it open at ``aclose``
    (several cursors, one per server, sharing one pool)."""

    def __init__(
        self,
        base_url: str,
        connector: aiohttp.BaseConnector | None = None,
        *,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.base_url = base_url
        self._owns_session = session is None
        self.session = session or aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=None)
        )

    async def aclose(self) -> None:
        if self._owns_session:
            await self.session.close()

    async def open_run_sse(
        self, request_id: str, *, enveloped: bool = True, gzipped: bool = False
    ) -> RunStream:
        payload = agent.BidiRequestId(request_id=request_id).SerializeToString()
        body, headers = frame_body(payload, enveloped=enveloped, gzipped=gzipped)
        response = await self.session.post(
            self.base_url + RUN_SSE, data=body, headers=headers, auto_decompress=False
        )
        return AiohttpRunStream(response)

    async def append(
        self,
        request_id: str,
        seqno: int,
        message: agent.AgentClientMessage,
        *,
        enveloped: bool = False,
        gzipped: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        body, base_headers = frame_body(
            bidi_append_body(request_id, seqno, message), enveloped=enveloped, gzipped=gzipped
        )
        async with self.session.post(
            self.base_url + BIDI_APPEND, data=body, headers={**base_headers, **(headers or {})}
        ) as response:
            return Answer(response.status, await response.text())


class RotatingCursor:
    """An ``EditorClient`` over one ``AiohttpCursor`` per server: request ``k`` goes to the
    ``(start + k) % n``-th (as ``tests.support.round_robin.RoundRobinCursor`` does over httpx).
    ``sent_to`` records which server each request went to; the first, the RunSSE, reaches the
    server that then holds the run."""

    def __init__(self, cursors: Sequence[AiohttpCursor], start: int = 0) -> None:
        self._cursors = list(cursors)
        self._next = start
        self.sent_to: list[int] = []

    def _take(self) -> AiohttpCursor:
        index = self._next % len(self._cursors)
        self._next += 1
        self.sent_to.append(index)
        return self._cursors[index]

    @property
    def crossed(self) -> int:
        """Requests that reached another server than the first (which held the run there)."""
        return sum(1 for index in self.sent_to[1:] if index != self.sent_to[0])

    async def open_run_sse(self, request_id: str) -> RunStream:
        return await self._take().open_run_sse(request_id)

    async def append(
        self,
        request_id: str,
        seqno: int,
        message: agent.AgentClientMessage,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        return await self._take().append(request_id, seqno, message, headers=headers)


class TimedSession(CursorSession):
    """A ``CursorSession`` that notes when it starts answering each exec (``perf_counter``),
    for the benchmarks that time a tool round's overhead."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent_at: list[float] = []

    async def _answer(self, exec_message: agent.ExecServerMessage) -> None:
        self.sent_at.append(time.perf_counter())
        await super()._answer(exec_message)


class SharedH2Cursor(H2Cursor):
    """The tests' ``H2Cursor`` (one bidi ``Run`` stream per turn) on an HTTP/2 connection every
    turn of a client process shares, as an editor keeps one connection for all its
    conversations. A RunRequest without a request context is answered, as a CLI does, with
    an empty one. ``forget`` drops a finished turn's stream, so the maps stay the size of the
    turns in flight over a long run."""

    def __init__(self, client: H2Client) -> None:
        super().__init__(client, context=agent.RequestContext())

    def forget(self, request_id: str) -> None:
        run = self.runs.pop(request_id, None)
        self.streams.pop(request_id, None)
        if run is not None:
            self.client.streams.pop(run.stream.stream_id, None)
