"""Whether a Cursor client has reached the agent RPCs yet: the console's "Connect Cursor" step.

The agent routes record, the console reads; one instance is made by the composition root and
handed to both. Recording is on every agent request, so it only counts in memory. With a
``shared`` store (the database every server instance behind one balancer uses) what was counted
is added to the shared record in the background, ``FLUSH_AFTER_S`` after the first request not
yet added (and at shutdown), and the console reads the shared record plus what this process has
not added yet: a request that reached another instance shows here within about that time.
Without one the record is this process's only (a restart starts from "never").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import Protocol

import msgspec

from wire.http.background_adds import BackgroundAdds

logger = logging.getLogger("cursor_server.agent_activity")

CLIENT_VERSION_HEADER = "x-cursor-client-version"
# A client version longer than this is cut: the header is the client's to choose, and the
# console shows it back.
MAX_CLIENT_VERSION_CHARS = 100
# How long after a request it is added to the shared record (one write for every request of
# that time).
FLUSH_AFTER_S = 1.0


class AgentActivitySnapshot(msgspec.Struct, frozen=True):
    """The recorded facts at one moment."""

    last_request_ms: int | None
    client_version: str | None
    requests: int


class SharedActivity(Protocol):
    """The record every instance adds to (``store.agent_activity.ActivityRows``); synchronous,
    so it is called in a thread."""

    def add(
        self,
        requests: int,
        last_request_ms: int,
        client_version: str | None,
        version_ms: int | None,
    ) -> None:
        """Add ``requests``, the latest at ``last_request_ms``; ``client_version`` is the
        latest version sent among them (at ``version_ms``), if any."""

    def read(self) -> tuple[int | None, str | None, int]:
        """(last request's time, client version, requests)."""


class _Unadded(msgspec.Struct):
    """What this process counted since its last addition to the shared record."""

    requests: int = 0
    last_request_ms: int = 0
    client_version: str | None = None
    version_ms: int | None = None

    def merged(self, later: _Unadded) -> _Unadded:
        """These counts followed by ``later``'s."""
        if later.requests == 0:
            return self
        newer_version = later.client_version is not None
        return _Unadded(
            self.requests + later.requests,
            later.last_request_ms,
            later.client_version if newer_version else self.client_version,
            later.version_ms if newer_version else self.version_ms,
        )


def _add_to(shared: SharedActivity, counted: _Unadded) -> None:
    shared.add(
        counted.requests, counted.last_request_ms, counted.client_version, counted.version_ms
    )


def _combined(shared: AgentActivitySnapshot, local: _Unadded) -> AgentActivitySnapshot:
    """The shared record with ``local`` added, by the rule the store adds by."""
    if local.requests == 0:
        return shared
    last = shared.last_request_ms
    version = shared.client_version
    if local.version_ms is not None and (last is None or local.version_ms >= last):
        version = local.client_version
    return AgentActivitySnapshot(
        last_request_ms=local.last_request_ms if last is None else max(last, local.last_request_ms),
        client_version=version,
        requests=shared.requests + local.requests,
    )


class AgentActivity:
    """Counts agent RPC requests and remembers the last one's time and client version.

    Used on the event loop only, so plain attributes suffice. ``start`` (with ``shared``)
    begins the background additions, ``stop`` makes the last one.
    """

    def __init__(
        self,
        clock: Callable[[], int],
        shared: SharedActivity | None = None,
        flush_after_s: float = FLUSH_AFTER_S,
    ) -> None:
        self._clock = clock  # wall-clock milliseconds since the epoch
        self._last_request_ms: int | None = None
        self._client_version: str | None = None
        self._requests = 0
        self._shared = shared
        self._unadded = _Unadded()
        self._turn = asyncio.Lock()  # one addition or read of the shared record at a time
        self._adds = BackgroundAdds(
            self._take,
            None if shared is None else partial(_add_to, shared),
            self._keep,
            self._turn,
            flush_after_s,
            "agent activity",
            logger,
        )

    def record(self, client_version: str | None) -> None:
        """One agent RPC arrived (refused ones too: the client did reach us). A request without
        the version header keeps the version seen before."""
        now = self._clock()
        self._requests += 1
        self._last_request_ms = now
        version = client_version[:MAX_CLIENT_VERSION_CHARS] if client_version else None
        if version is not None:
            self._client_version = version
        if self._shared is not None:
            self._unadded = self._unadded.merged(
                _Unadded(1, now, version, None if version is None else now)
            )
            self._adds.counted()

    def snapshot(self) -> AgentActivitySnapshot:
        """What this process recorded (since it started)."""
        return AgentActivitySnapshot(
            last_request_ms=self._last_request_ms,
            client_version=self._client_version,
            requests=self._requests,
        )

    async def current(self) -> AgentActivitySnapshot:
        """What the console shows: the shared record and what this process has not added to
        it yet, or without one this process's record. Raises the store's error."""
        if self._shared is None:
            return self.snapshot()
        async with self._turn:  # no addition in flight: the record and the rest are disjoint
            last, version, requests = await asyncio.to_thread(self._shared.read)
            return _combined(AgentActivitySnapshot(last, version, requests), self._unadded)

    async def flush(self) -> None:
        """Add what was counted to the shared record now; on failure it is kept for the next
        one and the store's error raised."""
        await self._adds.flush()

    def _take(self) -> _Unadded | None:
        counted, self._unadded = self._unadded, _Unadded()
        return counted if counted.requests else None

    def _keep(self, counted: _Unadded) -> None:
        self._unadded = counted.merged(self._unadded)

    def start(self) -> None:
        """Begin adding to the shared record in the background (on the running loop)."""
        self._adds.start()

    async def stop(self) -> None:
        """Stop the background additions and add what is left."""
        await self._adds.stop()
