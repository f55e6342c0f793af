"""An editor whose every request reaches the next server in turn, as behind a round-robin
balancer with no stickiness: one run's RunSSE and BidiAppends land on different instances."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import httpx

from tests.support.fake_cursor import FakeCursor, RunBody, RunStream
from wire.connect import Envelope
from wire.proto import agent_v1_pb2 as agent


class RoundRobinCursor:
    """An ``EditorClient`` over several ``FakeCursor``s; request ``k`` goes to the
    ``(start + k) % n``-th. ``sent_to`` records which server each request went to."""

    def __init__(
        self, cursors: Sequence[FakeCursor], start: int = 0, *, run_sse_late: bool = False
    ) -> None:
        """``run_sse_late``: the RunSSE is opened only when its first frame is read, so the
        run's first append reaches an instance before it (as a slow stream setup would)."""
        self._run_sse_late = run_sse_late
        self._cursors = list(cursors)
        self._next = start
        self.sent_to: list[int] = []

    def _take(self) -> FakeCursor:
        index = self._next % len(self._cursors)
        self._next += 1
        self.sent_to.append(index)
        return self._cursors[index]

    async def open_run_sse(self, request_id: str) -> RunBody:
        if self._run_sse_late:
            return LateRunSse(self, request_id)
        return await self._take().open_run_sse(request_id)

    async def append(
        self,
        request_id: str,
        seqno: int,
        message: agent.AgentClientMessage,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        return await self._take().append(request_id, seqno, message, headers=headers)


class LateRunSse:
    """A RunSSE opened (on the client's next server) when its first frame is asked for."""

    def __init__(self, client: RoundRobinCursor, request_id: str) -> None:
        self._client = client
        self._request_id = request_id
        self._stream: RunStream | None = None

    async def next_envelope(self, timeout: float = 5.0) -> Envelope | None:
        if self._stream is None:
            self._stream = await self._client._take().open_run_sse(self._request_id)
        return await self._stream.next_envelope(timeout)

    async def aclose(self) -> None:
        if self._stream is not None:
            await self._stream.aclose()
