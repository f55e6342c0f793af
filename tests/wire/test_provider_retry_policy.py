"""The retry decision as a pure function: which failures, how many attempts, which waits, and
which error events of a 200 stream stand for a transient status."""

from __future__ import annotations

import email.utils

import pytest

from wire.providers.errors import stream_error_status
from wire.providers.retry import (
    TRANSIENT_STATUSES,
    AttemptFailure,
    GiveUp,
    RetryAfter,
    RetryPolicy,
    backoff_s,
    decide,
    is_transient,
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


# ---- an error event inside a 200 stream ----


@pytest.mark.parametrize(
    ("event", "status"),
    [
        ({"type": "error", "error": {"type": "overloaded_error", "message": "x"}}, 529),
        ({"type": "error", "error": {"type": "rate_limit_error", "message": "x"}}, 429),
        ({"type": "error", "error": {"type": "api_error", "message": "x"}}, 500),
        ({"error": {"message": "x", "type": "server_error", "code": None}}, 500),
        ({"type": "error", "code": "rate_limit_exceeded", "message": "x"}, 429),
        ({"type": "response.failed", "response": {"error": {"code": "server_error"}}}, 500),
        ({"error": {"code": 503, "message": "x", "status": "UNAVAILABLE"}}, 503),
        ({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}, 429),
        ({"error": {"status": "DEADLINE_EXCEEDED"}}, 504),
    ],
)
def test_an_error_event_saying_not_now_stands_for_its_status(
    event: dict[str, object], status: int
) -> None:
    assert stream_error_status(event) == status
    failure = AttemptFailure(stream_error_status(event), False, events_reached_turn=False)
    assert is_transient(failure)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "error", "error": {"type": "invalid_request_error", "message": "x"}},
        {"type": "error", "error": {"type": "authentication_error", "message": "x"}},
        {"error": {"message": "x", "type": "invalid_request_error"}},
        {"type": "response.failed", "response": {"error": {"code": "invalid_prompt"}}},
        {"error": {"code": 400, "status": "INVALID_ARGUMENT"}},
        {"error": {"code": True}},
        {"error": {"type": "invalid_request_error", "code": "server_error"}},
        {"type": "error", "code": "internal", "status": "INVALID_ARGUMENT"},
        {"error": {"code": 503, "status": "FAILED_PRECONDITION"}},
        {"error": {"type": "insufficient_quota", "code": "rate_limit_exceeded"}},
        {"error": "overloaded"},
        {"type": "error"},
        [],
    ],
)
def test_an_error_event_naming_the_request_stands_for_no_status(event: object) -> None:
    assert stream_error_status(event) is None
