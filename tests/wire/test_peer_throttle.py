"""The wrong-token bucket on its own (``wire.peer_throttle``), driven by a fake clock: what it
lets through, when, what it forgets, and the burst events its callers log."""

from __future__ import annotations

import pytest

from wire.peer_throttle import (
    CAPACITY,
    MAX_PEERS,
    REFILL_S,
    BurstEnded,
    Engaged,
    PeerThrottle,
    throttled_message,
    whole_seconds,
)
from wire.peers import peer_key


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def wrong() -> bool:
    return False


def right() -> bool:
    return True


def exhaust(throttle: PeerThrottle, peer: str, times: int = CAPACITY) -> None:
    for _ in range(times):
        assert not throttle.check(peer, wrong).throttled


def test_capacity_wrong_tokens_then_refused_unread_for_one_refill() -> None:
    clock = Clock()
    throttle = PeerThrottle(clock)
    exhaust(throttle, "10.0.0.1", CAPACITY - 1)
    assert throttle.retry_after("10.0.0.1") is None
    assert not throttle.check("10.0.0.1", wrong).matched  # the one that empties the bucket
    assert throttle.retry_after("10.0.0.1") == pytest.approx(REFILL_S)
    compared: list[str] = []

    def spy() -> bool:
        compared.append("compared")
        return True

    refused = throttle.check("10.0.0.1", spy)
    assert refused.throttled and not refused.matched
    assert refused.retry_after_s == pytest.approx(REFILL_S)
    assert compared == []  # the right token was never looked at
    clock.now += REFILL_S - 0.5
    assert throttle.retry_after("10.0.0.1") == pytest.approx(0.5)
    clock.now += 0.5
    assert throttle.retry_after("10.0.0.1") is None
    assert throttle.check("10.0.0.1", spy).matched and compared == ["compared"]
    # Other peers were never affected.
    assert throttle.retry_after("10.0.0.2") is None


def test_a_right_token_refills_nothing() -> None:
    clock = Clock()
    throttle = PeerThrottle(clock)
    exhaust(throttle, "10.0.0.1", CAPACITY - 1)
    for _ in range(5):
        assert throttle.check("10.0.0.1", right).matched
    assert not throttle.check("10.0.0.1", wrong).throttled
    assert throttle.check("10.0.0.1", right).throttled


def test_after_the_throttle_one_wrong_token_per_refill() -> None:
    clock = Clock()
    throttle = PeerThrottle(clock)
    exhaust(throttle, "10.0.0.1")
    allowed = 0
    for _ in range(60):  # 60 s, a request every second
        clock.now += 1.0
        if not throttle.check("10.0.0.1", wrong).throttled:
            allowed += 1
    assert allowed == pytest.approx(60 / REFILL_S, abs=1)


def test_one_engaged_event_per_burst_and_one_end_with_the_refused_count() -> None:
    clock = Clock()
    throttle = PeerThrottle(clock)
    verdicts = [throttle.check("10.0.0.1", wrong) for _ in range(200)]
    assert [v.quiet for v in verdicts[:CAPACITY]] == [False] * (CAPACITY - 1) + [True]
    assert all(v.throttled for v in verdicts[CAPACITY:])
    assert throttle.take_events() == [Engaged("10.0.0.1", CAPACITY, REFILL_S)]
    # A wrong token allowed later in the same burst starts no new one.
    clock.now += REFILL_S
    assert throttle.check("10.0.0.1", wrong).quiet
    assert throttle.take_events() == []
    # Full again after CAPACITY refills of quiet: the end is seen on the peer's next token.
    clock.now += CAPACITY * REFILL_S
    assert throttle.check("10.0.0.1", right).matched
    assert throttle.take_events() == [BurstEnded("10.0.0.1", CAPACITY + 1, 200 - CAPACITY)]
    assert len(throttle) == 0


def test_a_full_bucket_is_forgotten_and_a_sweep_ends_its_burst() -> None:
    clock = Clock()
    throttle = PeerThrottle(clock)
    exhaust(throttle, "10.0.0.1")
    throttle.check("10.0.0.2", wrong)
    assert len(throttle) == 2
    throttle.take_events()
    clock.now += CAPACITY * REFILL_S
    throttle.check("10.0.0.3", right)  # another peer's request sweeps the oldest
    assert throttle.take_events() == [BurstEnded("10.0.0.1", CAPACITY, 0)]
    assert len(throttle) == 0  # 10.0.0.2 was full too; it never had a burst to end


def test_the_table_is_bounded_and_drops_the_oldest() -> None:
    clock = Clock()
    throttle = PeerThrottle(clock, max_peers=100)
    exhaust(throttle, "10.0.0.1")
    for n in range(1000):
        throttle.check(f"10.1.{n // 256}.{n % 256}", wrong)
    assert len(throttle) == 100
    assert throttle.retry_after("10.0.0.1") is None  # dropped first: its last failure is oldest
    assert BurstEnded("10.0.0.1", CAPACITY, 0, dropped=True) in throttle.take_events()
    default = PeerThrottle(clock)
    for n in range(MAX_PEERS + 50):
        default.check(f"2001:db8::{n:x}", wrong)
    assert len(default) == MAX_PEERS


def test_an_ipv4_mapped_peer_is_the_ipv4_peer() -> None:
    throttle = PeerThrottle(Clock())
    exhaust(throttle, "::ffff:10.0.0.1", CAPACITY // 2)
    exhaust(throttle, "10.0.0.1", CAPACITY - CAPACITY // 2)
    assert throttle.check("10.0.0.1", right).throttled
    assert throttle.check("::ffff:10.0.0.1", right).peer == "10.0.0.1"
    assert peer_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert peer_key("2001:db8::1") == "2001:db8::1"
    assert peer_key(None) == "unknown"


def test_a_clock_that_steps_back_refills_nothing() -> None:
    clock = Clock()
    throttle = PeerThrottle(clock)
    exhaust(throttle, "10.0.0.1")
    clock.now -= 100
    assert throttle.check("10.0.0.1", right).throttled


def test_whole_seconds_round_up_and_the_message_names_the_peer() -> None:
    assert [whole_seconds(s) for s in (0.0, 0.01, 1.0, 2.2, 3.0)] == [1, 1, 1, 3, 3]
    assert throttled_message("10.0.0.1", 2.2) == (
        "too many wrong tokens from 10.0.0.1; try again in 3 s"
    )


def test_unfit_settings_are_refused() -> None:
    for kwargs in ({"capacity": 0}, {"refill_s": 0.0}, {"max_peers": 0}):
        with pytest.raises(ValueError):
            PeerThrottle(Clock(), **kwargs)
