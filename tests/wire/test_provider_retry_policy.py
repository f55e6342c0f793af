"""The retry decision as a pure function: which failures, how many attempts, which waits."""

from __future__ import annotations

import email.utils

import pytest

from wire.providers.retry import (
    TRANSIENT_STATUSES,
    AttemptFailure,
    GiveUp,
    RetryAfter,
    RetryPolicy,
    backoff_s,
    decide,
    parse_retry_after,
)

POLICY = RetryPolicy(
    max_attempts=3, budget_s=30.0, base_delay_s=0.5, max_delay_s=8.0, retry_after_cap_s=20.0
)
NOW = 1_800_000_000.0


def status(code: int, retry_after: str | None = None, reached: bool = False) -> AttemptFailure:
    return AttemptFailure(code, False, reached, retry_after)


def ask(
    failure: AttemptFailure,
    *,
    attempts: int = 1,
    elapsed: float = 0.0,
    policy: RetryPolicy = POLICY,
    jitter: float = 1.0,
) -> RetryAfter | GiveUp:
    return decide(
        policy,
        failure,
        attempts_made=attempts,
        elapsed_s=elapsed,
        now_epoch_s=NOW,
        random=lambda: jitter,
    )


def test_exactly_the_transient_statuses_are_retried() -> None:
    assert {408, 409, 425, 429, 500, 502, 503, 504, 529} == TRANSIENT_STATUSES
    for code in range(400, 600):
        decision = ask(status(code))
        assert isinstance(decision, RetryAfter) == (code in TRANSIENT_STATUSES), code


def test_connection_and_read_errors_are_retried_our_whole_call_limit_is_not() -> None:
    assert isinstance(ask(AttemptFailure(None, True, False)), RetryAfter)
    assert isinstance(ask(AttemptFailure(None, False, False)), GiveUp)


def test_nothing_is_retried_once_an_event_reached_the_turn() -> None:
    assert ask(status(503, reached=True)) == GiveUp("not transient")
    assert ask(AttemptFailure(None, True, True)) == GiveUp("not transient")


def test_at_most_max_attempts_in_all() -> None:
    assert isinstance(ask(status(529), attempts=2), RetryAfter)
    assert ask(status(529), attempts=3) == GiveUp("3 attempts made")
    assert ask(status(529), attempts=1, policy=RetryPolicy(max_attempts=1)) == GiveUp(
        "1 attempts made"
    )


def test_backoff_doubles_with_full_jitter_up_to_the_maximum() -> None:
    assert [backoff_s(POLICY, n, lambda: 1.0) for n in range(1, 7)] == [
        0.5,
        1.0,
        2.0,
        4.0,
        8.0,
        8.0,
    ]
    assert backoff_s(POLICY, 3, lambda: 0.25) == 0.5
    assert backoff_s(POLICY, 3, lambda: 0.0) == 0.0
    assert ask(status(500), attempts=2, jitter=0.5) == RetryAfter(0.5)


def test_retry_after_in_seconds_or_as_an_http_date_is_honoured_up_to_the_cap() -> None:
    assert ask(status(429, "3")) == RetryAfter(3.0)
    date = email.utils.formatdate(NOW + 7, usegmt=True)
    assert ask(status(503, date)) == RetryAfter(7.0)
    assert ask(status(429, "120")) == RetryAfter(20.0)  # cut to the cap
    # Unreadable: the backoff applies instead.
    assert ask(status(429, "soon")) == RetryAfter(0.5)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("0", 0.0),
        (" 12 ", 12.0),
        (email.utils.formatdate(NOW + 90, usegmt=True), 90.0),
        (email.utils.formatdate(NOW - 90, usegmt=True), 0.0),  # in the past: now
        ("Sun, 06 Nov 1994 08:49:37 GMT", 0.0),
        ("-3", None),
        ("1.5", None),
        ("tomorrow", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value, NOW) == seconds


def test_no_wait_may_end_past_the_budget() -> None:
    assert ask(status(500), elapsed=29.6, jitter=1.0) == GiveUp(
        "the next attempt would start past 30 s"
    )
    assert ask(status(500), elapsed=29.6, jitter=0.5) == RetryAfter(0.25)
    assert isinstance(ask(status(429, "15"), elapsed=16.0), GiveUp)
