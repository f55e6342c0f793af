"""Wrong secret tokens, throttled per peer address: a token bucket each, sans-IO.

Every place a secret token from outside is compared (the console login, a console bearer
token, ``X-Cursor-Server-Token`` beyond loopback) asks the server's one ``PeerThrottle``
first. A peer may send ``CAPACITY`` wrong tokens at once and one more every ``REFILL_S``
seconds; past that its requests that carry a token are refused unread (the token is not
compared, so a right one is refused too and the answer tells nothing) until the bucket has
room for one attempt again. A right token changes nothing: only time refills, so mixing in a
known-good guess gains an attacker nothing. A request without a token is no guess and is
never counted.

Why these numbers: the console token has at least 16 visible ASCII characters, so guessing is
hopeless at any rate; the throttle is there to keep a weak token, the log and the CPU safe
from a flood. Ten wrong tokens in a row lets a person mistype and retry; one every 3 s caps a
single address at 20 guesses a minute (1 200 an hour) and empties a full bucket of ten in
30 s of quiet, when the peer is forgotten.

A burst runs from the failure that empties the bucket until it is full again; the caller logs
its start (``Engaged``) and its end (``BurstEnded``, found lazily: on the peer's next token or
when a sweep sees the bucket full), and nothing per attempt in between (``Verdict.quiet``).
At most ``MAX_PEERS`` peers are held, the one whose last wrong token is oldest dropped first.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable

import msgspec

from wire.peers import peer_key

# Wrong tokens a peer may send in a row before it is throttled.
CAPACITY = 10
# One more wrong token is allowed per this many seconds (a full bucket after 30 s of quiet).
REFILL_S = 3.0
# Peers held at once; beyond it the one whose last wrong token is oldest is forgotten.
MAX_PEERS = 10_000
# Full buckets looked for at the oldest end on each check, so forgetting stays O(1) a call.
SWEEP_PER_CHECK = 4


def whole_seconds(seconds: float) -> int:
    """Seconds for ``Retry-After`` and messages: rounded up, at least 1 (0 would invite an
    immediate retry that is still refused)."""
    return max(1, math.ceil(seconds))


def throttled_message(peer: str, retry_after_s: float) -> str:
    return f"too many wrong tokens from {peer}; try again in {whole_seconds(retry_after_s)} s"


class Verdict(msgspec.Struct, frozen=True):
    """What a token check found: ``matched``; else refused unread for ``retry_after_s``; else
    wrong, with ``quiet`` when the peer's burst already has its log line."""

    peer: str
    matched: bool = False
    retry_after_s: float | None = None
    quiet: bool = False

    @property
    def throttled(self) -> bool:
        return self.retry_after_s is not None


class Engaged(msgspec.Struct, frozen=True):
    """A peer's bucket just ran empty: the one warning of its burst."""

    peer: str
    failures: int
    retry_after_s: float


class BurstEnded(msgspec.Struct, frozen=True):
    """A throttled peer's bucket is full again (or it was dropped to make room)."""

    peer: str
    failures: int
    refused: int
    dropped: bool = False


Event = Engaged | BurstEnded


class _Bucket:
    __slots__ = ("at", "burst", "failures", "refused", "tokens")

    def __init__(self, tokens: float, at: float) -> None:
        self.tokens = tokens
        self.at = at  # when ``tokens`` was last brought up to date
        self.burst = False
        self.failures = 0
        self.refused = 0


class PeerThrottle:
    """The buckets of every peer that sent a wrong token lately; one per server, on one
    thread (the event loop). ``clock`` is monotonic seconds, injected so tests drive time."""

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        capacity: int = CAPACITY,
        refill_s: float = REFILL_S,
        max_peers: int = MAX_PEERS,
    ) -> None:
        if capacity < 1 or refill_s <= 0 or max_peers < 1:
            raise ValueError("capacity and max_peers must be at least 1, refill_s positive")
        self._clock = clock
        self._capacity = capacity
        self._refill_s = refill_s
        self._max_peers = max_peers
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()  # oldest last failure first
        self._events: list[Event] = []

    def __len__(self) -> int:
        return len(self._buckets)

    def retry_after(self, peer: str | None) -> float | None:
        """Seconds until ``peer`` may try a token again, or None when it may now."""
        bucket = self._current(peer_key(peer), self._clock())
        if bucket is None or bucket.tokens >= 1:
            return None
        return (1 - bucket.tokens) * self._refill_s

    def check(self, peer: str | None, matches: Callable[[], bool]) -> Verdict:
        """The one way a token is compared: ``matches`` is called only if ``peer`` is not
        throttled; a refusal counts toward the burst, a wrong token takes one from the
        bucket."""
        key, now = peer_key(peer), self._clock()
        self._sweep(now)
        bucket = self._current(key, now)
        if bucket is not None and bucket.tokens < 1:
            bucket.refused += 1
            return Verdict(key, retry_after_s=(1 - bucket.tokens) * self._refill_s)
        if matches():
            return Verdict(key, matched=True)
        return self._failed(key, now, bucket)

    def failed(self, peer: str | None) -> Verdict:
        """Record one wrong token from ``peer`` (``check`` does this itself)."""
        key, now = peer_key(peer), self._clock()
        return self._failed(key, now, self._current(key, now))

    def take_events(self) -> list[Event]:
        """The bursts that began or ended since the last call, oldest first."""
        events, self._events = self._events, []
        return events

    def _failed(self, key: str, now: float, bucket: _Bucket | None) -> Verdict:
        if bucket is None:
            while len(self._buckets) >= self._max_peers:
                oldest_key, oldest = self._buckets.popitem(last=False)
                self._ended(oldest_key, oldest, dropped=True)
            bucket = self._buckets[key] = _Bucket(float(self._capacity), now)
        else:
            self._buckets.move_to_end(key)
        bucket.tokens -= 1
        bucket.failures += 1
        quiet = bucket.burst
        if bucket.tokens < 1 and not bucket.burst:
            bucket.burst = quiet = True
            wait = (1 - bucket.tokens) * self._refill_s
            self._events.append(Engaged(key, bucket.failures, wait))
        return Verdict(key, quiet=quiet)

    def _current(self, key: str, now: float) -> _Bucket | None:
        """``key``'s bucket refilled up to ``now``; None (and forgotten) once it is full."""
        bucket = self._buckets.get(key)
        if bucket is None:
            return None
        self._refill(bucket, now)
        if bucket.tokens >= self._capacity:
            del self._buckets[key]
            self._ended(key, bucket)
            return None
        return bucket

    def _refill(self, bucket: _Bucket, now: float) -> None:
        elapsed = max(0.0, now - bucket.at)  # a clock that steps back refills nothing
        bucket.tokens = min(float(self._capacity), bucket.tokens + elapsed / self._refill_s)
        bucket.at = now

    def _sweep(self, now: float) -> None:
        """Forget the oldest peers whose buckets are full again (ending their bursts)."""
        for _ in range(SWEEP_PER_CHECK):
            if not self._buckets:
                return
            key = next(iter(self._buckets))
            if self._current(key, now) is not None:
                return

    def _ended(self, key: str, bucket: _Bucket, *, dropped: bool = False) -> None:
        if bucket.burst:
            self._events.append(BurstEnded(key, bucket.failures, bucket.refused, dropped))
