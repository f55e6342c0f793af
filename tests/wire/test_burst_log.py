"""A burst of like refusals is one log line, and the next line counts what it left out."""

from __future__ import annotations

import logging

import pytest

from wire.burst_log import MAX_KEYS, BurstLog

LOGGER = logging.getLogger("cursor_server.test.burst")


def test_a_burst_is_one_line_and_the_next_counts_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    log = BurstLog(LOGGER, "connection refused", quiet_s=10, clock=lambda: now[0])
    caplog.set_level(logging.WARNING, LOGGER.name)
    logged = []
    for _ in range(500):
        now[0] += 0.01
        logged.append(log("10.0.0.1", peer="10.0.0.1"))
    assert logged.count(True) == 1 and logged[0]
    assert len(caplog.records) == 1
    assert caplog.records[0].getMessage() == "connection refused peer=10.0.0.1 quiet_for_s=10"
    assert log("10.0.0.2", peer="10.0.0.2")  # another key is its own burst
    now[0] += 10.5
    assert log("10.0.0.1", peer="10.0.0.1")
    assert caplog.records[-1].getMessage().endswith("left_out_before=499")


def test_the_table_of_bursts_stays_bounded() -> None:
    log = BurstLog(LOGGER, "refused", clock=lambda: 0.0)
    for n in range(MAX_KEYS * 3):
        log(f"peer-{n}")
    assert len(log) == MAX_KEYS
