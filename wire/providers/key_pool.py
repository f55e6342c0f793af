"""Which key of a provider's pool an attempt sends, how long a refused key rests, and when a
refused attempt is tried again at once on another key: pure decisions.

A key that answered 429 (rate limited) or 401 (refused) cools down: for the provider's
``Retry-After`` up to a cap, else a default per status. Attempts rotate round-robin over the
keys that are not cooling; when every key is cooling, the one whose cool-down ends first is
sent (a pool never refuses to try). A 429 or 401 with another key not cooling is tried again at
once on that key, within the call's retry budget (``RetryPolicy``'s attempts and time). The
ProviderActor asks through the process's ``KeyHealth``; nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from wire.providers.retry import AttemptFailure, RetryPolicy, parse_retry_after

RATE_LIMITED = 429
UNAUTHORIZED = 401
# The statuses that say "this key, not now": they cool the key that got them.
COOLING_STATUSES = frozenset({RATE_LIMITED, UNAUTHORIZED})


class KeyCooling(msgspec.Struct, frozen=True):
    """How long a refused key rests: ``Retry-After`` up to ``retry_after_cap_s``, else
    ``rate_limited_s`` after a 429 and ``unauthorized_s`` after a 401."""

    rate_limited_s: float = 60.0
    unauthorized_s: float = 600.0
    retry_after_cap_s: float = 900.0


class KeyRefusal(msgspec.Struct, frozen=True):
    """The last refusal a key got: the message (credentials scrubbed), its HTTP status and
    when (ms since the epoch)."""

    message: str
    http_status: int
    at_ms: int


class KeyState(msgspec.Struct, frozen=True):
    """What the process knows of one key: until when it cools (ms since the epoch; None or
    past: healthy) and its last refusal."""

    cooling_until_ms: int | None = None
    last_error: KeyRefusal | None = None


HEALTHY = KeyState()


def is_cooling(state: KeyState, now_ms: int) -> bool:
    return state.cooling_until_ms is not None and state.cooling_until_ms > now_ms


def cool_down_until_ms(
    cooling: KeyCooling, status: int, retry_after: str | None, now_ms: int
) -> int | None:
    """Until when a key that got ``status`` rests, or None when the status does not cool it."""
    if status not in COOLING_STATUSES:
        return None
    asked = parse_retry_after(retry_after, now_ms / 1000)
    if asked is not None:
        seconds = min(asked, cooling.retry_after_cap_s)
    elif status == RATE_LIMITED:
        seconds = cooling.rate_limited_s
    else:
        seconds = cooling.unauthorized_s
    return now_ms + round(seconds * 1000)


def pick_key(key_ids: Sequence[int], states: Mapping[int, KeyState], now_ms: int, turn: int) -> int:
    """The index in ``key_ids`` of the key to send: round-robin, the first healthy key from
    position ``turn`` on (so a cooling key passes its turn to the next, and the others keep
    theirs), else (every key cooling) the one whose cool-down ends first."""
    if not key_ids:
        raise ValueError("a key pool holds at least one key")
    count = len(key_ids)
    for offset in range(count):
        index = (turn + offset) % count
        if not is_cooling(states.get(key_ids[index], HEALTHY), now_ms):
            return index
    return min(
        range(len(key_ids)),
        key=lambda index: states.get(key_ids[index], HEALTHY).cooling_until_ms or 0,
    )


def has_other_healthy(
    key_ids: Sequence[int], states: Mapping[int, KeyState], now_ms: int, current: int
) -> bool:
    """Whether a key other than ``current`` is not cooling."""
    return any(
        key_id != current and not is_cooling(states.get(key_id, HEALTHY), now_ms)
        for key_id in key_ids
    )


def retry_on_another_key(
    policy: RetryPolicy,
    failure: AttemptFailure,
    *,
    attempts_made: int,
    elapsed_s: float,
    another_healthy: bool,
) -> bool:
    """Whether a refused attempt is tried again at once on another key: a 429 or 401 before
    anything reached the turn, another key healthy, and the call's budget not spent."""
    return (
        failure.http_status in COOLING_STATUSES
        and not failure.events_reached_turn
        and another_healthy
        and attempts_made < policy.max_attempts
        and elapsed_s <= policy.budget_s
    )
