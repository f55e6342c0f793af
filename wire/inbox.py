"""The per-request ordering inbox for BidiAppend's ``append_seqno``.

Several BidiAppend requests of one run may be in flight at once and arrive in any order.
The inbox releases each sequence number exactly once, in order, starting at 0: a number
below the next expected one is stale (a duplicate or a replay) and dropped; a number already
buffered keeps its first copy; a gap holds everything after it until it is filled. How long
a gap may stay open is the edge's deadline (``EdgeLimits.append_gap_timeout_s``), which
watches ``missing``.

What waits behind a gap is bounded three ways, since a client chooses how much it sends out
of order: a count and a byte budget per request, and a byte budget over every request
(``BufferPool``, shared by all inboxes of one server). An append that would pass one of them
is refused ``resource_exhausted`` and nothing of it is kept; the in-order append that fills a
gap is never refused, since it releases rather than holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from wire.errors import Code, ConnectError

T = TypeVar("T")

MIB = 1024 * 1024
# How many out-of-order appends one request may hold while waiting for a gap to fill.
MAX_BUFFERED_APPENDS = 1024
# Bytes of out-of-order appends one request may hold, and all requests together.
MAX_BUFFERED_BYTES = 16 * MIB
MAX_POOLED_BYTES = 256 * MIB


class BufferPool:
    """The bytes every inbox of one server holds out of order, against one budget."""

    def __init__(self, max_bytes: int = MAX_POOLED_BYTES) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def take(self, size: int) -> bool:
        """Reserve ``size`` bytes; False (nothing reserved) when they do not fit."""
        if self.used + size > self.max_bytes:
            return False
        self.used += size
        return True

    def give(self, size: int) -> None:
        self.used -= size
        assert self.used >= 0, "an inbox gave back more than it took"


class SeqnoInbox(Generic[T]):
    """Orders appends by sequence number; the caller owns what the items are and says what
    one weighs (``size``, asked only of an item that has to wait)."""

    def __init__(
        self,
        max_buffered: int = MAX_BUFFERED_APPENDS,
        *,
        max_bytes: int = MAX_BUFFERED_BYTES,
        pool: BufferPool | None = None,
        size: Callable[[T], int] = lambda _: 0,
    ) -> None:
        self.next_expected = 0
        self._buffered: dict[int, tuple[T, int]] = {}
        self._max_buffered = max_buffered
        self._max_bytes = max_bytes
        self._pool = pool if pool is not None else BufferPool(max_bytes)
        self._size = size
        self._bytes = 0

    @property
    def buffered(self) -> int:
        """How many appends wait for an earlier sequence number."""
        return len(self._buffered)

    @property
    def buffered_bytes(self) -> int:
        """What the waiting appends weigh."""
        return self._bytes

    @property
    def missing(self) -> int | None:
        """The sequence number later appends wait for, or None when nothing waits."""
        return self.next_expected if self._buffered else None

    def offer(self, seqno: int, item: T) -> list[T]:
        """Take one append; return the items now released, in sequence order."""
        if seqno < self.next_expected or seqno in self._buffered:
            return []
        if seqno != self.next_expected:
            self._hold(seqno, item)
            return []
        released = [item]
        self.next_expected += 1
        while self.next_expected in self._buffered:
            released.append(self._pop(self.next_expected))
            self.next_expected += 1
        return released

    def _hold(self, seqno: int, item: T) -> None:
        """Keep an append that waits for a gap, within the count and both byte budgets."""
        waiting = f"wait for append_seqno {self.next_expected}"
        if len(self._buffered) >= self._max_buffered:
            raise ConnectError(
                Code.RESOURCE_EXHAUSTED,
                f"too many out-of-order appends: {self._max_buffered} {waiting}",
            )
        size = self._size(item)
        if self._bytes + size > self._max_bytes:
            raise ConnectError(
                Code.RESOURCE_EXHAUSTED,
                f"out-of-order appends of this request would hold {self._bytes + size} bytes, "
                f"over the limit of {self._max_bytes}; they {waiting}",
            )
        if not self._pool.take(size):
            raise ConnectError(
                Code.RESOURCE_EXHAUSTED,
                f"out-of-order appends of all requests hold {self._pool.used} bytes, near the "
                f"limit of {self._pool.max_bytes}; send append_seqno {self.next_expected} first",
            )
        self._bytes += size
        self._buffered[seqno] = (item, size)

    def _pop(self, seqno: int) -> T:
        item, size = self._buffered.pop(seqno)
        self._bytes -= size
        self._pool.give(size)
        return item

    def drain(self) -> list[T]:
        """Every waiting item, in sequence order, leaving none: their run no longer orders
        them here (a relayed run's upstream does)."""
        return [self._pop(seqno) for seqno in sorted(self._buffered)]

    def discard(self) -> int:
        """Drop every waiting item (its run has ended); how many there were."""
        return len(self.drain())
