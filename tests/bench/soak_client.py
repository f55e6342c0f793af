"""The soak's client: one run of a turn as the editor makes it, with the stream dropped on
purpose or broken by a restart.

``SoakCursor`` is the benchmarks' aiohttp client whose connection failures read as the httpx
transport errors ``CursorSession`` already treats as "the server is gone" (its appends in
flight then fail quietly and the run counts as dropped, not as a client bug).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import aiohttp
import httpx

from tests.bench.fast_cursor import AiohttpCursor, Answer
from tests.bench.soak_accounting import RunOutcome
from tests.support.fake_cursor import AppendAnswer, CursorSession, RunBody, RunStream
from wire.connect import Envelope
from wire.proto import agent_v1_pb2 as agent

# One run's limit: far beyond a turn's few seconds, so only a stuck run reaches it (execs are
# answered one at a time: a resumed round may send only the calls it still lacks).
RUN_TIMEOUT_S = 120.0


class SoakCursor(AiohttpCursor):
    """``AiohttpCursor`` without a connection cap; a refused or broken connection is an httpx
    ``TransportError``."""

    def __init__(self, base_url: str) -> None:
        super().__init__(base_url, aiohttp.TCPConnector(limit=0))

    async def open_run_sse(
        self, request_id: str, *, enveloped: bool = True, gzipped: bool = False
    ) -> RunStream:
        try:
            return await super().open_run_sse(request_id, enveloped=enveloped, gzipped=gzipped)
        except (aiohttp.ClientError, ConnectionError) as exc:
            raise httpx.ConnectError(repr(exc)) from exc

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
        try:
            return await super().append(
                request_id, seqno, message, enveloped=enveloped, gzipped=gzipped, headers=headers
            )
        except (aiohttp.ClientError, ConnectionError) as exc:
            raise httpx.ConnectError(repr(exc)) from exc


class SoakSession(CursorSession):
    """A ``CursorSession`` that, with ``drop``, closes its RunSSE stream once the turn is under
    way, as a client losing its connection would, answering none of its execs; a broken stream
    is a drop too."""

    def __init__(
        self,
        cursor: SoakCursor,
        request_id: str,
        *,
        drop: str,
        workspace: Path,
        blobs: Mapping[bytes, bytes],
    ) -> None:
        """``drop``: ``""`` (never), ``staged`` (once the turn is under way: a text delta after
        a checkpoint, or a round's staged checkpoint; no exec answered) or ``first-exec`` (as
        the first exec arrives, once it is answered, before the round's staged checkpoint)."""
        super().__init__(cursor, request_id, workspace=workspace, blobs=blobs)
        self.drop = drop

    def _on_exec(self, exec_message: agent.ExecServerMessage) -> None:
        if self.drop != "staged":  # it loses its connection before it answers
            super()._on_exec(exec_message)

    async def send(self, message: agent.AgentClientMessage) -> AppendAnswer:
        """``CursorSession.send``; a 404 (the request id unknown to a server that stopped or
        just started) reads as the server gone, so the run is made again."""
        response = await self.cursor.append(self.request_id, self._take_seqno(), message)
        if response.status_code == 404:
            raise httpx.ConnectError(f"append answered 404: {response.text}")
        assert response.status_code == 200, (message.WhichOneof("message"), response.text)
        return response

    def _under_way(self) -> bool:
        kinds = set(self.log.kinds())
        checkpoints = self.log.checkpoints()
        if self.drop == "first-exec" and "exec_server_message" in kinds:
            return True
        staged = any(c.pending_tool_calls for c in checkpoints)
        return bool(checkpoints) and (staged or "text_delta" in kinds)

    async def _next_or_drop(self, stream: RunBody, timeout: float) -> Envelope | None:
        if self.drop and self._under_way():
            await stream.aclose()
            self.log.dropped = True
            return None
        try:
            envelope = await stream.next_envelope(timeout)
        except (aiohttp.ClientError, ConnectionError, httpx.TransportError):
            envelope = None
        if envelope is None:
            self.log.dropped = True
        return envelope


async def run_one(
    cursor: SoakCursor,
    request_id: str,
    first: agent.AgentClientMessage,
    *,
    workspace: Path,
    blobs: Mapping[bytes, bytes],
    drop: str,
) -> RunOutcome:
    """One run until its EndStream, its drop, or a refused connection."""
    session = SoakSession(cursor, request_id, drop=drop, workspace=workspace, blobs=blobs)
    started = time.perf_counter()
    message = ""
    try:
        log = await session.run(first, timeout=60, total_timeout=RUN_TIMEOUT_S)
    except httpx.TransportError:
        code = "refused"
    except Exception as exc:  # counted and printed: a soak reports failures, not stops
        code = f"client error {exc!r}"[:300]
    else:
        if log.dropped or log.end is None:
            code = "dropped"
        elif log.end == {}:
            code = "ok"
        else:
            error = log.end.get("error", {})
            code = str(error.get("code", log.end))
            message = str(error.get("message", ""))
    checkpoints = session.log.checkpoints()
    return RunOutcome(
        code=code,
        message=message,
        started=started,
        ended=time.perf_counter(),
        blobs=dict(session.log.blobs),
        last_checkpoint=checkpoints[-1] if checkpoints else None,
    )
