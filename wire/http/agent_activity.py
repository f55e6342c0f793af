"""Whether a Cursor client has reached the agent RPCs yet: the console's "Connect Cursor" step.

Kept in memory only (a restart starts from "never"); the agent routes record, the console
reads. One instance is made by the composition root and handed to both.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

CLIENT_VERSION_HEADER = "x-cursor-client-version"
# A client version longer than this is cut: the header is the client's to choose, and the
# console shows it back.
MAX_CLIENT_VERSION_CHARS = 100


class AgentActivitySnapshot(msgspec.Struct, frozen=True):
    """The recorded facts at one moment."""

    last_request_ms: int | None
    client_version: str | None
    requests: int


class AgentActivity:
    """Counts agent RPC requests and remembers the last one's time and client version.

    Used on the event loop only, so plain attributes suffice.
    """

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock  # wall-clock milliseconds since the epoch
        self._last_request_ms: int | None = None
        self._client_version: str | None = None
        self._requests = 0

    def record(self, client_version: str | None) -> None:
        """One agent RPC arrived (refused ones too: the client did reach us). A request without
        the version header keeps the version seen before."""
        self._requests += 1
        self._last_request_ms = self._clock()
        if client_version:
            self._client_version = client_version[:MAX_CLIENT_VERSION_CHARS]

    def snapshot(self) -> AgentActivitySnapshot:
        return AgentActivitySnapshot(
            last_request_ms=self._last_request_ms,
            client_version=self._client_version,
            requests=self._requests,
        )
