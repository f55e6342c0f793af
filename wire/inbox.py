"""The per-request ordering inbox for BidiAppend's ``append_seqno``.

Several BidiAppend requests of one run may be in flight at once and arrive in any order.
The inbox releases each sequence number exactly once, in order, starting at 0: a number
below the next expected one is stale (a duplicate or a replay) and dropped; a number already
buffered keeps its first copy; a gap holds everything after it until it is filled. How long
a gap may stay open is the edge's deadline (``EdgeLimits.append_gap_timeout_s``), which
watches ``missing``.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from wire.errors import Code, ConnectError

T = TypeVar("T")

# How many out-of-order appends one request may hold while waiting for a gap to fill.
MAX_BUFFERED_APPENDS = 1024


class SeqnoInbox(Generic[T]):
    """Orders appends by sequence number; the caller owns what the items are."""

    def __init__(self, max_buffered: int = MAX_BUFFERED_APPENDS) -> None:
        self.next_expected = 0
        self._buffered: dict[int, T] = {}
        self._max_buffered = max_buffered

    @property
    def buffered(self) -> int:
        """How many appends wait for an earlier sequence number."""
        return len(self._buffered)

    @property
    def missing(self) -> int | None:
        """The sequence number later appends wait for, or None when nothing waits."""
        return self.next_expected if self._buffered else None

    def offer(self, seqno: int, item: T) -> list[T]:
        """Take one append; return the items now released, in sequence order."""
        if seqno < self.next_expected or seqno in self._buffered:
            return []
        if seqno != self.next_expected and len(self._buffered) >= self._max_buffered:
            raise ConnectError(
                Code.RESOURCE_EXHAUSTED,
                f"too many out-of-order appends: {self._max_buffered} wait for "
                f"append_seqno {self.next_expected}",
            )
        self._buffered[seqno] = item
        released: list[T] = []
        while self.next_expected in self._buffered:
            released.append(self._buffered.pop(self.next_expected))
            self.next_expected += 1
        return released

    def drain(self) -> list[T]:
        """Every waiting item, in sequence order, leaving none: their run no longer orders
        them here (a relayed run's upstream does)."""
        items = [self._buffered[seqno] for seqno in sorted(self._buffered)]
        self._buffered.clear()
        return items
