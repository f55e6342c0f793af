"""The edge's drift record (``wire.http.protocol_drift``): counts in memory, what a failed
addition to the shared record keeps, and the bound on kinds."""

from __future__ import annotations

import logging

import pytest

from tests.support.wire_bytes import varint_field
from wire.drift_tally import MAX_KEYS
from wire.http.protocol_drift import DriftTuple, ProtocolDrift
from wire.proto import agent_v1_pb2 as agent


class FlakyShared:
    """A shared record that refuses its first addition."""

    def __init__(self) -> None:
        self.rows: list[DriftTuple] = []
        self.refuse = True

    def add(self, rows: list[DriftTuple]) -> None:
        if self.refuse:
            self.refuse = False
            raise OSError("database is locked")
        self.rows.extend(rows)

    def read(self, limit: int) -> list[DriftTuple]:
        return self.rows[:limit]


def drifting() -> agent.AgentClientMessage:
    return agent.AgentClientMessage.FromString(varint_field(90, 1))


async def test_a_refused_addition_is_kept_for_the_next() -> None:
    shared = FlakyShared()
    drift = ProtocolDrift(clock=lambda: 5, shared=shared)
    drift.message(drifting(), "1.0")
    with pytest.raises(OSError):
        await drift.flush()
    assert [(r.name, r.count) for r in await drift.current()] == [("90", 1)]
    drift.message(drifting(), "1.0")
    await drift.flush()
    assert shared.rows == [("field", "agent.v1.AgentClientMessage", "90", 0, "1.0", 5, 5, 2)]
    assert [(r.name, r.count) for r in await drift.current()] == [("90", 2)]


def test_only_rpc_paths_are_counted_and_kinds_are_bounded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="cursor_server.protocol_drift")
    drift = ProtocolDrift(clock=lambda: 1)
    drift.relayed("/auth/poll", None)
    drift.relayed("/favicon.ico", None)
    assert drift.snapshot() == []
    for n in range(MAX_KEYS + 3):
        drift.relayed(f"/a.Service/M{n}", None)
    assert len(drift.snapshot()) == MAX_KEYS
    full = [r for r in caplog.records if "too many kinds" in r.getMessage()]
    assert len(full) == 1 and full[0].levelno == logging.WARNING
    firsts = [r for r in caplog.records if "first sighting" in r.getMessage()]
    assert len(firsts) == MAX_KEYS
