"""The fake Cursor client over aiohttp instead of httpx, for the benchmarks.

The tests' ``FakeCursor`` speaks through httpx, which spends about 1.5 ms of client CPU on each
request on this machine (aiohttp about 0.4 ms). In a turn the client posts one BidiAppend per
KV ACK and per exec result, so with httpx a good part of what the bench timed was the fake
client's own work, which the real editor does not have. Same protocol, same frames; only the
HTTP library differs. ``CursorSession`` reads ``status_code`` and ``text`` of an append's answer,
which ``Answer`` provides.
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp
import msgspec

from tests.support.fake_cursor import (
    BIDI_APPEND,
    RUN_SSE,
    FakeCursor,
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


class AiohttpCursor(FakeCursor):
    """``FakeCursor`` with RunSSE and BidiAppend sent through one aiohttp session."""

    def __init__(self, base_url: str) -> None:
        super().__init__(base_url)
        self.base_url = base_url
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))

    async def aclose(self) -> None:
        await self.session.close()
        await super().aclose()

    async def open_run_sse(  # type: ignore[override]
        self, request_id: str, *, enveloped: bool = True, gzipped: bool = False
    ) -> RunStream:
        payload = agent.BidiRequestId(request_id=request_id).SerializeToString()
        body, headers = frame_body(payload, enveloped=enveloped, gzipped=gzipped)
        response = await self.session.post(
            self.base_url + RUN_SSE, data=body, headers=headers, auto_decompress=False
        )
        return AiohttpRunStream(response)

    async def append(  # type: ignore[override]
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
