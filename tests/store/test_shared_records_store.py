"""What server instances on one database share, at the store: console login sessions, the
Connect page's record of agent requests and the subagent links (migration 13's tables), each
written through one instance's store and read through another's; SQLite and PostgreSQL alike."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from store import Store, connect_store
from store.agent_activity import ActivityRows
from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql
from store.console_sessions import ConsoleSessionRows
from store.subagent_links import STALE_AFTER_MS, SubagentLinkRows

DAY_MS = 24 * 3600 * 1000
NOW = 1_700_000_000_000


@pytest.fixture
def two(db_url: str) -> Iterator[tuple[Store, Store]]:
    """Two stores on one database, as two server processes open it."""
    a = connect_store(db_url)
    b = connect_store(db_url)
    yield a, b
    b.close()
    a.close()


def digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def count(store: Store, table: str) -> int:
    (n,) = execute_sql(store.database, f'SELECT COUNT(*) FROM "{table}"').fetchone()
    return int(n)


# ---- console sessions ----


def test_a_session_started_on_one_instance_is_live_and_ended_on_the_other(
    two: tuple[Store, Store],
) -> None:
    a, b = ConsoleSessionRows(two[0].database), ConsoleSessionRows(two[1].database)
    a.start(digest("s1"), NOW + DAY_MS, NOW, keep=64)
    assert b.expiry(digest("s1"), NOW) == NOW + DAY_MS
    assert b.expiry(digest("unknown"), NOW) is None
    b.end(digest("s1"))
    assert a.expiry(digest("s1"), NOW) is None
    b.end(digest("s1"))  # ending an ended session changes nothing


def test_a_session_is_live_until_its_expiry_and_expired_rows_go_at_the_next_login(
    two: tuple[Store, Store],
) -> None:
    rows = ConsoleSessionRows(two[0].database)
    rows.start(digest("old"), NOW + 1000, NOW, keep=64)
    assert rows.expiry(digest("old"), NOW + 999) == NOW + 1000
    assert rows.expiry(digest("old"), NOW + 1000) is None
    assert count(two[1], "console_sessions") == 1
    ConsoleSessionRows(two[1].database).start(digest("new"), NOW + 1000 + DAY_MS, NOW + 1000, 64)
    assert count(two[0], "console_sessions") == 1
    assert rows.expiry(digest("new"), NOW + 1000) == NOW + 1000 + DAY_MS


def test_beyond_the_cap_the_oldest_sessions_go_whichever_instance_started_them(
    two: tuple[Store, Store],
) -> None:
    a, b = ConsoleSessionRows(two[0].database), ConsoleSessionRows(two[1].database)
    for i in range(4):
        (a if i % 2 else b).start(digest(f"s{i}"), NOW + DAY_MS + i, NOW + i, keep=3)
    assert a.expiry(digest("s0"), NOW) is None
    assert [b.expiry(digest(f"s{i}"), NOW) for i in (1, 2, 3)] == [
        NOW + DAY_MS + i for i in (1, 2, 3)
    ]
    assert count(two[0], "console_sessions") == 3


def test_the_table_holds_the_digest_never_the_session_id(two: tuple[Store, Store]) -> None:
    ConsoleSessionRows(two[0].database).start(digest("the-id"), NOW + DAY_MS, NOW, keep=64)
    stored = execute_sql(two[1].database, 'SELECT "digest" FROM "console_sessions"').fetchall()
    assert [row[0] for row in stored] == [digest("the-id")]


# ---- the Connect page's record ----


def test_the_record_starts_empty_and_adds_every_instances_counts(
    two: tuple[Store, Store],
) -> None:
    a, b = ActivityRows(two[0].database), ActivityRows(two[1].database)
    assert a.read() == (None, None, 0)
    a.add(3, NOW + 10, "1.0", NOW + 5)
    b.add(2, NOW + 20, "1.1", NOW + 20)
    assert a.read() == (NOW + 20, "1.1", 5)
    assert count(two[0], "agent_activity") == 1


def test_a_late_flush_of_older_requests_keeps_the_newer_time_and_version(
    two: tuple[Store, Store],
) -> None:
    a, b = ActivityRows(two[0].database), ActivityRows(two[1].database)
    b.add(1, NOW + 20, "new", NOW + 20)
    a.add(4, NOW + 10, "old", NOW + 10)  # counted earlier, flushed later
    assert b.read() == (NOW + 20, "new", 5)


def test_requests_without_a_version_keep_the_version_seen_before(
    two: tuple[Store, Store],
) -> None:
    a, b = ActivityRows(two[0].database), ActivityRows(two[1].database)
    a.add(1, NOW, "1.0", NOW)
    b.add(2, NOW + 30, None, None)
    assert a.read() == (NOW + 30, "1.0", 3)
    a.add(1, NOW + 40, "2.0", NOW + 40)
    assert b.read() == (NOW + 40, "2.0", 4)


# ---- subagent links ----


def test_a_link_written_by_one_instance_is_read_and_removed_by_the_other(
    two: tuple[Store, Store],
) -> None:
    a, b = SubagentLinkRows(two[0].database), SubagentLinkRows(two[1].database)
    a.link("parent-req", "agent-1", "call_task")
    assert b.tool_call("parent-req", "agent-1") == "call_task"
    assert b.tool_call("other-req", "agent-1") is None
    assert b.tool_call("parent-req", "agent-2") is None
    b.link("parent-req", "agent-1", "call_again")  # a second link of the pair replaces the first
    assert a.tool_call("parent-req", "agent-1") == "call_again"
    b.unlink("parent-req", "agent-1")
    assert a.tool_call("parent-req", "agent-1") is None
    a.unlink("parent-req", "agent-1")  # unlinking twice changes nothing


def test_a_link_left_by_a_dead_instance_goes_at_a_later_link_once_stale(
    two: tuple[Store, Store],
) -> None:
    db = two[0].database
    p = db.param
    insert = (
        'INSERT INTO "subagent_links" ("parent_request_id", "conversation_id", "tool_call_id", '
        f'"created_at_ms") VALUES ({p}, {p}, {p}, {p})'
    )
    with db.atomic():
        execute_sql(db, insert, ("gone-req", "agent-1", "call_1", now_ms() - STALE_AFTER_MS - 1))
        execute_sql(db, insert, ("recent-req", "agent-1", "call_2", now_ms() - DAY_MS))
    rows = SubagentLinkRows(two[1].database)
    rows.link("parent-req", "agent-1", "call_3")
    assert rows.tool_call("gone-req", "agent-1") is None
    assert rows.tool_call("recent-req", "agent-1") == "call_2"
    assert count(two[0], "subagent_links") == 2
