"""The ``protocol_drift`` record every instance adds to (``store.protocol_drift``), on SQLite and
PostgreSQL: counts add up, the first sighting is the earliest, the last the latest, and the
table keeps its bound."""

from __future__ import annotations

from store import Store
from store.migrations.later import protocol_drift
from store.protocol_drift import DriftRows


def test_batches_from_several_instances_add_up(opened: Store) -> None:
    rows = DriftRows(opened.database)
    assert rows.read(10) == []
    field = ("field", "agent.v1.AgentRunRequest", "31", 0, "2.1.3")
    rows.add([(*field, 100, 200, 2), ("path", "", "/a.B/C", 0, "", 150, 150, 1)])
    rows.add([(*field, 50, 120, 3)])  # another instance: an earlier first, an older last
    assert rows.read(10) == [(*field, 50, 200, 5), ("path", "", "/a.B/C", 0, "", 150, 150, 1)]
    assert rows.read(1) == [(*field, 50, 200, 5)]  # the latest sighting first
    rows.add([(*field[:4], "2.2.0", 300, 300, 1)])  # another client version: its own row
    assert [(r[4], r[7]) for r in rows.read(10)][:2] == [("2.2.0", 1), ("2.1.3", 5)]


def test_the_table_keeps_the_latest_rows_within_its_bound(opened: Store) -> None:
    rows = DriftRows(opened.database, max_rows=3)
    rows.add([("path", "", f"/a.B/M{n}", 0, "", n, n, 1) for n in range(5)])
    assert [r[2] for r in rows.read(10)] == ["/a.B/M4", "/a.B/M3", "/a.B/M2"]


def test_the_migration_runs_again_without_harm(opened: Store) -> None:
    rows = DriftRows(opened.database)
    rows.add([("enum", "agent.v1.UserMessage", "mode", 42, "", 1, 1, 1)])
    protocol_drift(opened.database)
    assert rows.read(10) == [("enum", "agent.v1.UserMessage", "mode", 42, "", 1, 1, 1)]
