"""The append_seqno ordering inbox: exactly once, in order, first copy wins, bounded."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from wire.errors import Code, ConnectError
from wire.inbox import MAX_BUFFERED_APPENDS, BufferPool, SeqnoInbox


@st.composite
def arrivals(draw: st.DrawFn) -> tuple[int, list[int]]:
    """A permutation of 0..n-1 with duplicates and stale/negative numbers mixed in."""
    n = draw(st.integers(min_value=0, max_value=40))
    order = draw(st.permutations(range(n)))
    extras = draw(st.lists(st.integers(min_value=-5, max_value=max(n - 1, -1)), max_size=2 * n + 5))
    events = list(order)
    for extra in extras:
        events.insert(draw(st.integers(min_value=0, max_value=len(events))), extra)
    return n, events


@given(arrivals())
def test_each_seqno_released_once_in_order_first_copy_wins(case: tuple[int, list[int]]) -> None:
    n, events = case
    inbox: SeqnoInbox[tuple[int, int]] = SeqnoInbox()
    released: list[tuple[int, int]] = []
    first_copy: dict[int, tuple[int, int]] = {}
    offered: set[int] = set()
    for position, seqno in enumerate(events):
        payload = (seqno, position)  # distinct per copy: shows which copy came out
        first_copy.setdefault(seqno, payload)
        offered.add(seqno)
        released.extend(inbox.offer(seqno, payload))
        # Everything up to the first gap is out; nothing after it is.
        prefix = 0
        while prefix in offered:
            prefix += 1
        assert released == [first_copy[s] for s in range(prefix)]
        assert inbox.next_expected == prefix
        assert inbox.buffered == len({s for s in offered if s > prefix})
        # The gap the edge's deadline watches: the first missing number while any wait.
        assert inbox.missing == (prefix if inbox.buffered else None)
    assert released == [first_copy[s] for s in range(n)]
    assert inbox.buffered == 0


def test_gap_holds_later_appends_until_filled() -> None:
    inbox: SeqnoInbox[str] = SeqnoInbox()
    assert inbox.offer(0, "a") == ["a"]
    assert inbox.missing is None
    assert inbox.offer(2, "c") == []
    assert inbox.offer(3, "d") == []
    assert inbox.offer(5, "f") == []
    assert inbox.buffered == 3
    assert inbox.next_expected == 1 and inbox.missing == 1
    assert inbox.offer(1, "b") == ["b", "c", "d"]
    assert inbox.next_expected == 4 and inbox.missing == 4
    assert inbox.buffered == 1
    assert inbox.offer(4, "e") == ["e", "f"]
    assert inbox.buffered == 0 and inbox.missing is None


def test_stale_duplicate_and_negative_are_dropped() -> None:
    inbox: SeqnoInbox[str] = SeqnoInbox()
    assert inbox.offer(-1, "neg") == []
    assert inbox.offer(1, "first") == []
    assert inbox.offer(1, "second") == []
    assert inbox.offer(0, "zero") == ["zero", "first"]
    assert inbox.offer(0, "replay") == []
    assert inbox.offer(1, "replay") == []
    assert inbox.next_expected == 2
    assert inbox.buffered == 0


def test_starts_at_zero() -> None:
    inbox: SeqnoInbox[str] = SeqnoInbox()
    assert inbox.next_expected == 0
    assert inbox.offer(1, "b") == []


def _assert_exhausted(inbox: SeqnoInbox[int], seqno: int) -> None:
    with pytest.raises(ConnectError) as info:
        inbox.offer(seqno, seqno)
    assert info.value.code is Code.RESOURCE_EXHAUSTED


def test_overflow_limit() -> None:
    inbox: SeqnoInbox[int] = SeqnoInbox(max_buffered=3)
    for seqno in (1, 2, 3):
        assert inbox.offer(seqno, seqno) == []
    _assert_exhausted(inbox, 4)
    _assert_exhausted(inbox, 100)
    # A refused append is not buffered; stale and duplicate ones are still dropped quietly.
    assert inbox.buffered == 3
    assert inbox.offer(2, -2) == []
    assert inbox.offer(-7, -7) == []
    # The awaited number is always taken, and frees the buffer.
    assert inbox.offer(0, 0) == [0, 1, 2, 3]
    assert inbox.next_expected == 4
    assert inbox.offer(5, 5) == []
    assert inbox.offer(4, 4) == [4, 5]


def test_default_overflow_limit() -> None:
    inbox: SeqnoInbox[int] = SeqnoInbox()
    for seqno in range(1, MAX_BUFFERED_APPENDS + 1):
        assert inbox.offer(seqno, seqno) == []
    assert inbox.buffered == MAX_BUFFERED_APPENDS
    _assert_exhausted(inbox, MAX_BUFFERED_APPENDS + 1)
    assert inbox.offer(0, 0) == list(range(MAX_BUFFERED_APPENDS + 1))


def _weighed(max_bytes: int, pool: BufferPool) -> SeqnoInbox[int]:
    """An inbox whose item ``n`` weighs ``n`` bytes."""
    return SeqnoInbox(max_bytes=max_bytes, pool=pool, size=lambda n: n)


def test_a_request_holds_at_most_its_byte_budget() -> None:
    pool = BufferPool(1000)
    inbox = _weighed(100, pool)
    assert inbox.offer(60, 60) == []
    _assert_exhausted(inbox, 41)  # 60 + 41 > 100: refused, nothing of it kept
    assert inbox.buffered == 1 and inbox.buffered_bytes == 60 and pool.used == 60
    assert inbox.offer(40, 40) == []  # exactly the budget fits
    assert inbox.buffered_bytes == 100
    # The in-order append is never refused: it releases, and gives the bytes back.
    released = inbox.offer(0, 0)
    assert released == [0]
    assert inbox.buffered_bytes == 100  # 1..39 still missing


def test_every_request_together_holds_at_most_the_pool() -> None:
    pool = BufferPool(150)
    first, second = _weighed(100, pool), _weighed(100, pool)
    assert first.offer(90, 90) == []
    _assert_exhausted(second, 70)  # second's own budget has room, the pool has not
    assert second.buffered == 0 and pool.used == 90
    assert second.offer(60, 60) == []
    assert pool.used == 150
    # Released and discarded items give their bytes back to the pool.
    assert first.discard() == 1
    assert pool.used == 60 and first.buffered_bytes == 0
    assert second.drain() == [60]
    assert pool.used == 0


def test_weight_is_asked_only_of_an_append_that_waits() -> None:
    weighed: list[int] = []

    def size(item: int) -> int:
        weighed.append(item)
        return 1

    inbox: SeqnoInbox[int] = SeqnoInbox(size=size)
    assert inbox.offer(0, 0) == [0]
    assert inbox.offer(2, 2) == []
    assert inbox.offer(1, 1) == [1, 2]
    assert weighed == [2]
