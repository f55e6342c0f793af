"""Protocol drift as the edge sees it: counted on the hot path, shared in the background.

The agent routes hand each decoded client message (``message``) and the proxy each RPC path it
relays upstream because no route here serves it (``relayed``); both are counted in this
process's memory per key (``wire.drift_tally``) and, with a ``shared`` store, added to the
record every instance adds to, ``FLUSH_AFTER_S`` after the first sighting not yet added (and at
shutdown). A key this process sees for the first time is logged once at INFO (its kind, type,
field or path and client version, never a value). The console reads ``current`` (the shared
record plus what is not added yet); ``snapshot`` is this process's own counts since it started,
for an exporter that scrapes each instance.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import Protocol

from google.protobuf.message import Message

from wire.drift import drift_of
from wire.drift_tally import (
    DriftCount,
    DriftKey,
    DriftRow,
    DriftTally,
    combined,
    key_of,
    path_key,
    rpc_path,
    version_of,
)
from wire.http.background_adds import BackgroundAdds
from wire.log import log_event

logger = logging.getLogger("cursor_server.protocol_drift")

# How long after a first unadded sighting it is added to the shared record.
FLUSH_AFTER_S = 1.0
# Rows the console is shown, the latest sighting first.
MAX_SHOWN = 200

# A row as the store keeps it: (kind, message_type, name, value, client_version,
# first_seen_ms, last_seen_ms, count).
DriftTuple = tuple[str, str, str, int, str, int, int, int]


class SharedDrift(Protocol):
    """The record every instance adds to (``store.protocol_drift.DriftRows``); synchronous."""

    def add(self, rows: list[DriftTuple]) -> None: ...

    def read(self, limit: int) -> list[DriftTuple]: ...


def _add_to(shared: SharedDrift, counted: DriftTally) -> None:
    shared.add([_tuple(row) for row in counted.rows()])


def _tuple(row: DriftRow) -> DriftTuple:
    return (
        row.kind,
        row.message_type,
        row.name,
        row.value,
        row.client_version,
        row.first_seen_ms,
        row.last_seen_ms,
        row.count,
    )


class ProtocolDrift:
    """Counts what Cursor sent that is not known here. Used on the event loop only."""

    def __init__(
        self,
        clock: Callable[[], int],
        shared: SharedDrift | None = None,
        flush_after_s: float = FLUSH_AFTER_S,
    ) -> None:
        self._clock = clock  # wall-clock milliseconds since the epoch
        self._shared = shared
        self._seen = DriftTally()  # this process's counts since it started
        self._unadded = DriftTally()  # what the shared record does not have yet
        self._turn = asyncio.Lock()
        self._adds = BackgroundAdds(
            self._take,
            None if shared is None else partial(_add_to, shared),
            self._keep,
            self._turn,
            flush_after_s,
            "protocol drift",
            logger,
        )
        self._full_logged = False

    def message(self, message: Message, client_version: str | None) -> None:
        """Walk one decoded client message and count what it carried that is not known."""
        drift = drift_of(message)
        if not drift.findings:
            return
        version = version_of(client_version)
        now = self._clock()
        for finding in drift.findings:
            self._count(key_of(finding, version), now)

    def relayed(self, path: str, client_version: str | None) -> None:
        """One request relayed upstream because nothing here serves its path; only RPC paths
        (``/package.Service/Method``) are counted."""
        rpc = rpc_path(path)
        if rpc is not None:
            self._count(path_key(rpc, version_of(client_version)), self._clock())

    def _count(self, key: DriftKey, now: int) -> None:
        one = DriftCount(now, now, 1)
        new = key not in self._seen.counts
        if not self._seen.add(key, one):
            if not self._full_logged:
                self._full_logged = True
                log_event(
                    logger,
                    logging.WARNING,
                    "protocol drift: too many kinds seen; new ones are not counted",
                    kept=self._seen.max_keys,
                )
            return
        if new:
            log_event(
                logger,
                logging.INFO,
                "protocol drift: first sighting",
                kind=key.kind,
                message_type=key.message_type or None,
                name=key.name,
                value=key.value if key.kind != "path" else None,
                client_version=key.client_version or None,
            )
        if self._shared is not None:
            self._unadded.add(key, one)
            self._adds.counted()

    def snapshot(self) -> list[DriftRow]:
        """This process's counts since it started (for a per-instance exporter)."""
        return self._seen.rows()

    async def current(self) -> list[DriftRow]:
        """What the console shows: the shared record and what this process has not added yet
        (without one, this process's counts), the latest sighting first, at most
        ``MAX_SHOWN``. Raises the store's error."""
        if self._shared is None:
            return combined([], self._seen.rows())[:MAX_SHOWN]
        async with self._turn:
            shared = await asyncio.to_thread(self._shared.read, MAX_SHOWN)
            rows = [DriftRow(*row) for row in shared]  # type: ignore[arg-type]
            return combined(rows, self._unadded.rows())[:MAX_SHOWN]

    async def flush(self) -> None:
        """Add what was counted to the shared record now; on failure it is kept for the next
        one and the store's error raised."""
        await self._adds.flush()

    def _take(self) -> DriftTally | None:
        counted, self._unadded = self._unadded, DriftTally()
        return counted if counted.counts else None

    def _keep(self, counted: DriftTally) -> None:
        for key, count in counted.counts.items():
            self._unadded.add(key, count)

    def start(self) -> None:
        """Begin adding to the shared record in the background (on the running loop)."""
        self._adds.start()

    async def stop(self) -> None:
        """Stop the background additions and add what is left."""
        await self._adds.stop()
