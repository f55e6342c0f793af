"""The fake Cursor client over aiohttp instead of httpx, for the benchmarks.

The tests' ``FakeCursor`` speaks through httpx, which spends about 1.5 ms of client CPU on each
request on this machine (aiohttp about 0.4 ms). In a turn the client posts one BidiAppend per
KV ACK and per exec result, so with httpx a good part of what the bench timed was the fake
client's own work, which the real editor does not have. Same protocol, same frames; only the
HTTP library differs. ``CursorSession`` reads ``status_code`` and ``text`` of an append's answer,
which ``Answer`` provides.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
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
    default when None)."""

    def __init__(self, base_url: str, connector: aiohttp.BaseConnector | None = None) -> None:
        self.base_url = base_url
        self.session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=None)
        )

    async def aclose(self) -> None:
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


class TimedSession(CursorSession):
    """A ``CursorSession`` that notes when it starts answering each exec (``perf_counter``),
    for the benchmarks that time a tool round's overhead."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent_at: list[float] = []

    async def _answer(self, exec_message: agent.ExecServerMessage) -> None:
        self.sent_at.append(time.perf_counter())
        await super()._answer(exec_message)
