"""When a failed provider attempt is tried again, and after how long: a pure decision.

Only a failure that left nothing behind is retried: an answer refused with a transient HTTP
status (or a 200 stream whose error event stands for one, ``stream_error_status``), or a
connection or read error, all before any event of the attempt reached the turn
(so no text is ever shown twice). The wait is exponential with full jitter, or the provider's
``Retry-After`` (seconds or an HTTP-date) up to a cap; no wait may end past the total budget
counted from the first attempt's start. The ProviderActor asks, and keeps the time as a timer
message; nothing here sleeps or reads a clock.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Callable
from datetime import UTC, datetime

import msgspec

# Statuses a provider uses for "not now" (timeouts, conflicts, rate limits, overload, gateways).
TRANSIENT_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


class RetryPolicy(msgspec.Struct, frozen=True):
    """``max_attempts`` counts the first; ``budget_s`` bounds the time from the first attempt's
    start to the start of the last; ``base_delay_s`` doubles per retry up to ``max_delay_s``;
    a ``Retry-After`` above ``retry_after_cap_s`` is cut to it."""

    max_attempts: int = 3
    budget_s: float = 30.0
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    retry_after_cap_s: float = 20.0


# One attempt and no wait: for callers (and tests) that want every failure to be final.
NO_RETRY = RetryPolicy(max_attempts=1)


class AttemptFailure(msgspec.Struct, frozen=True):
    """What the policy needs of a failed attempt. ``http_status`` is set for a refused answer;
    ``transport_error`` for a connection or read error (our own whole-call limit is neither);
    ``events_reached_turn`` once anything of the attempt was told to the turn."""

    http_status: int | None
    transport_error: bool
    events_reached_turn: bool
    retry_after: str | None = None


class RetryAfter(msgspec.Struct, frozen=True):
    """Try again after ``delay_s``."""

    delay_s: float


class GiveUp(msgspec.Struct, frozen=True):
    """The failure is final; ``reason`` says why it was not retried (for the log)."""

    reason: str


RetryDecision = RetryAfter | GiveUp


def is_transient(failure: AttemptFailure) -> bool:
    """A failure worth another attempt, whatever the budget."""
    if failure.events_reached_turn:
        return False
    if failure.http_status is not None:
        return failure.http_status in TRANSIENT_STATUSES
    return failure.transport_error


def parse_retry_after(value: str | None, now_epoch_s: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP-date), or None
    when absent or unreadable; a date in the past is 0."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - datetime.fromtimestamp(now_epoch_s, UTC).timestamp())


def backoff_s(policy: RetryPolicy, retry_number: int, random: Callable[[], float]) -> float:
    """Full jitter: uniform in [0, min(max, base * 2**(n-1))] for the n-th retry (n >= 1)."""
    ceiling = min(policy.max_delay_s, policy.base_delay_s * math.pow(2, retry_number - 1))
    return ceiling * random()


def decide(
    policy: RetryPolicy,
    failure: AttemptFailure,
    *,
    attempts_made: int,
    elapsed_s: float,
    now_epoch_s: float,
    random: Callable[[], float],
) -> RetryDecision:
    """Whether to make attempt ``attempts_made + 1``, ``elapsed_s`` after the first started."""
    if not is_transient(failure):
        return GiveUp("not transient")
    if attempts_made >= policy.max_attempts:
        return GiveUp(f"{attempts_made} attempts made")
    asked = parse_retry_after(failure.retry_after, now_epoch_s)
    if asked is not None:
        delay = min(asked, policy.retry_after_cap_s)
    else:
        delay = backoff_s(policy, attempts_made, random)
    if elapsed_s + delay > policy.budget_s:
        return GiveUp(f"the next attempt would start past {policy.budget_s:g} s")
    return RetryAfter(delay)
