"""The conversation store's SQL: table bindings, the lineage walks and the precompiled
statements of the hot paths, in each database's dialect."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from typing import Any

import peewee

from store.base.typed_peewee import Table
from store.conversations.records import RunStatus, ToolCallStatus
from store.instances import instance_of, orphaned

CONVERSATIONS = "conversations"
RUNS = "runs"
TOOL_ROUNDS = "tool_rounds"
TOOL_ROUND_CALLS = "tool_round_calls"

# The revision ids of a revision's lineage with their distance from it, as a recursive CTE both
# SQLite and PostgreSQL run; the walk touches only conversation_revisions' primary key.
LINEAGE_CTE = """
WITH RECURSIVE lineage (revision_id, parent_revision_id, depth) AS (
    SELECT revision_id, parent_revision_id, 0
    FROM conversation_revisions WHERE revision_id = {param}
    UNION ALL
    SELECT r.revision_id, r.parent_revision_id, l.depth + 1
    FROM conversation_revisions AS r JOIN lineage AS l ON r.revision_id = l.parent_revision_id
)
"""

# The full history of a revision, oldest message first, in ONE statement. The LEFT JOINs keep
# one row for a revision without messages, so an unknown revision (no rows) is told apart from
# an empty one (one row of NULLs).
LINEAGE_SQL = (
    LINEAGE_CTE
    + """
SELECT rm.message_id, m.role, m.origin, m.payload, m.runtime_event_id
FROM lineage AS l
LEFT JOIN revision_messages AS rm ON rm.revision_id = l.revision_id
LEFT JOIN conversation_messages AS m
    ON m.conversation_id = rm.conversation_id AND m.message_id = rm.message_id
ORDER BY l.depth DESC, rm.ordinal
"""
)

# The history's messages without their payloads (an import compares payloads by digest).
LINEAGE_METADATA_SQL = (
    LINEAGE_CTE
    + """
SELECT rm.message_id, m.role, m.origin, m.runtime_event_id
FROM lineage AS l
JOIN revision_messages AS rm ON rm.revision_id = l.revision_id
JOIN conversation_messages AS m
    ON m.conversation_id = rm.conversation_id AND m.message_id = rm.message_id
ORDER BY l.depth DESC, rm.ordinal
"""
)

# Which of the given message ids a revision's history holds: the walk probes the
# (revision_id, message_id) index of revision_messages and reads no message row.
IN_LINEAGE_SQL = (
    LINEAGE_CTE
    + """
SELECT rm.message_id
FROM lineage AS l
JOIN revision_messages AS rm ON rm.revision_id = l.revision_id
WHERE rm.message_id IN ({ids})
"""
)


def bind_table(
    database: peewee.Database,
    name: str,
    columns: Iterable[str],
    primary_key: str | None = None,
) -> Table:
    """The table bound to ``database``, built once per database: a run builds its stores on
    every start, and peewee's ``Table`` with its columns cost a few percent of a turn's CPU.
    Shared across threads, which is safe: queries built from it are new objects."""
    key = (name, tuple(columns), primary_key)
    tables = _TABLES.get(database)
    table = None if tables is None else tables.get(key)
    if table is None:
        with _TABLES_LOCK:
            tables = _TABLES.setdefault(database, {})
            table = tables.get(key)
            if table is None:
                table = Table(name, key[1], primary_key=primary_key, _database=database)
                tables[key] = table
    return table


_TABLES_LOCK = threading.Lock()
_TABLES: weakref.WeakKeyDictionary[peewee.Database, dict[tuple[object, ...], Table]] = (
    weakref.WeakKeyDictionary()
)


def columns_of(table: Table, names: Iterable[str]) -> list[peewee.Column]:
    return [getattr(table, name) for name in names]


def as_bytes(value: Any) -> bytes:
    """PostgreSQL drivers return memoryview for BYTEA."""
    return bytes(value)


def placeholders(param: str, count: int) -> str:
    return ", ".join([param] * count)


_RUNNING = f"'{RunStatus.RUNNING.value}'"
_CANCELLED = f"'{RunStatus.CANCELLED.value}'"
_CALL_PENDING = f"'{ToolCallStatus.PENDING.value}'"
_CALL_COMPLETED = f"'{ToolCallStatus.COMPLETED.value}'"


class Statements:
    """The SQL text of the statements every turn and tool result runs, written once per
    placeholder style (``?`` on SQLite, ``%s`` on PostgreSQL) and executed with
    ``execute_sql``.

    Why not peewee queries: building one costs ~0.3 ms of Python, ten times what SQLite takes to
    run it, and a turn's start runs a dozen. Identifiers are double-quoted (both backends);
    ``ON CONFLICT DO NOTHING`` needs SQLite >= 3.24. ``lock_conversation`` ends in ``FOR UPDATE``
    where the database has row locks (SQLite's IMMEDIATE transaction already holds the write
    lock), and a new revision's id comes from ``RETURNING`` where the database has it, else from
    the cursor's ``lastrowid``.
    """

    def __init__(self, param: str, for_update: bool, returning: bool, leased: bool) -> None:
        p = param
        self.param = p
        self.returning = returning
        # A store of a process with a lease (``store.instances``) writes and reads the run's
        # instance (migration 12); one without writes and reads none, so it works on any schema.
        self.leased = leased
        instance = '"instance_id"' if leased else "NULL"
        self.head = (
            f'SELECT "current_revision_id" FROM "conversations" WHERE "conversation_id" = {p}'
        )
        self.lock_conversation = (
            'SELECT "current_revision_id", "active_run_id" FROM "conversations" '
            f'WHERE "conversation_id" = {p}' + (" FOR UPDATE" if for_update else "")
        )
        self.insert_conversation = (
            'INSERT INTO "conversations" ("conversation_id", "current_revision_id", '
            '"active_run_id", "created_at_ms", "updated_at_ms") '
            f"VALUES ({p}, NULL, NULL, {p}, {p}) ON CONFLICT DO NOTHING"
        )
        self.set_current = (
            f'UPDATE "conversations" SET "current_revision_id" = {p}, "updated_at_ms" = {p} '
            f'WHERE "conversation_id" = {p}'
        )
        self.claim_conversation = (
            f'UPDATE "conversations" SET "current_revision_id" = {p}, "active_run_id" = {p}, '
            f'"updated_at_ms" = {p} WHERE "conversation_id" = {p}'
        )
        self.move_conversation_head = (
            f'UPDATE "conversations" SET "current_revision_id" = {p}, "updated_at_ms" = {p} '
            f'WHERE "conversation_id" = {p} AND "active_run_id" = {p}'
        )
        self.revision = (
            'SELECT "conversation_id", "state_digest", "message_count" '
            f'FROM "conversation_revisions" WHERE "revision_id" = {p}'
        )
        self.revision_by_digest = (
            'SELECT "revision_id" FROM "conversation_revisions" '
            f'WHERE "conversation_id" = {p} AND "state_digest" = {p}'
        )
        self.insert_revision = (
            'INSERT INTO "conversation_revisions" ("conversation_id", "parent_revision_id", '
            f'"state_digest", "message_count", "created_at_ms") VALUES ({placeholders(p, 5)})'
            + (' RETURNING "revision_id"' if returning else "")
        )
        self.insert_messages = (
            'INSERT INTO "conversation_messages" ("conversation_id", "message_id", "role", '
            '"origin", "payload", "runtime_event_id", "created_at_ms") VALUES '
        )
        self.message_row = f"({placeholders(p, 7)})"
        self.insert_revision_messages = (
            'INSERT INTO "revision_messages" ("revision_id", "ordinal", "conversation_id", '
            '"message_id") VALUES '
        )
        self.revision_message_row = f"({placeholders(p, 4)})"
        self.recorded = (
            'SELECT "message_id", "role", "origin", "payload", "runtime_event_id" '
            f'FROM "conversation_messages" WHERE "conversation_id" = {p} AND '
        )
        self.run = (
            f'SELECT "conversation_id", "status", "provider_call_index", {instance} '
            f'FROM "runs" WHERE "run_id" = {p}'
        )
        self.run_conversation = f'SELECT "conversation_id" FROM "runs" WHERE "run_id" = {p}'
        self.lease_live = (
            'SELECT 1 FROM "server_instances" '
            f'WHERE "instance_id" = {p} AND "lease_expires_at_ms" >= {p}'
        )
        self.run_status = f'SELECT "status", {instance} FROM "runs" WHERE "run_id" = {p}'
        self.run_call_index = (
            f'SELECT "status", "provider_call_index" FROM "runs" WHERE "run_id" = {p}'
        )
        # A run's end records where it stood: the conversation's head while it is still the
        # active run (read before the conversation is released or claimed by another run).
        end_head = (
            '"head_revision_id" = COALESCE((SELECT c."current_revision_id" '
            'FROM "conversations" AS c WHERE c."conversation_id" = "runs"."conversation_id" '
            'AND c."active_run_id" = "runs"."run_id"), "head_revision_id")'
        )
        self.cancel_run = (
            f'UPDATE "runs" SET "status" = {_CANCELLED}, "failure_message" = {p}, '
            f'"finished_at_ms" = {p}, "updated_at_ms" = {p}, {end_head} '
            f'WHERE "run_id" = {p} AND "status" = {_RUNNING}'
        )
        # The runs of instances without a live lease (``store.instances``), at a time.
        orphaned_runs = f'"status" = {_RUNNING} AND {orphaned(p)}'
        self.record_orphaned_heads = f'UPDATE "runs" SET {end_head} WHERE {orphaned_runs}'
        self.release_orphaned = (
            f'UPDATE "conversations" SET "active_run_id" = NULL, "updated_at_ms" = {p} '
            f'WHERE "active_run_id" IN (SELECT "run_id" FROM "runs" WHERE {orphaned_runs})'
        )
        self.cancel_orphaned = (
            f'UPDATE "runs" SET "status" = {_CANCELLED}, "failure_message" = {p}, '
            f'"finished_at_ms" = {p}, "updated_at_ms" = {p} WHERE {orphaned_runs}'
        )
        # A claim naming its user writes ``user_id`` too (the ``*_for_user`` forms, with the
        # user's parameter after ``finished_at_ms``'s place); one without leaves it as it is.
        self.insert_run, self.insert_run_for_user = (
            'INSERT INTO "runs" ("run_id", "conversation_id", "status", "base_revision_id", '
            '"head_revision_id", "provider_call_index", "usage_json", "failure_category", '
            '"failure_message", "created_at_ms", "updated_at_ms", "finished_at_ms"'
            + user_column
            + (', "instance_id") ' if leased else ") ")
            + f"VALUES ({p}, {p}, {_RUNNING}, {p}, {p}, {p}, NULL, NULL, NULL, {p}, {p}, NULL"
            + user_value
            + (f", {p})" if leased else ")")
            for user_column, user_value in (("", ""), (', "user_id"', f", {p}"))
        )
        self.restart_run, self.restart_run_for_user = (
            f'UPDATE "runs" SET "status" = {_RUNNING}, "base_revision_id" = {p}, '
            f'"head_revision_id" = {p}, "provider_call_index" = {p}, "usage_json" = NULL, '
            '"failure_category" = NULL, "failure_message" = NULL, '
            f'"updated_at_ms" = {p}, "finished_at_ms" = NULL'
            + user_set
            + (f', "instance_id" = {p} ' if leased else " ")
            + f'WHERE "run_id" = {p}'
            for user_set in ("", f', "user_id" = {p}')
        )
        self.reserve_call = (
            'UPDATE "runs" SET "provider_call_index" = "provider_call_index" + 1, '
            f'"updated_at_ms" = {p} WHERE "run_id" = {p} AND "status" = {_RUNNING}'
        )
        # What commit_tool_result checks, in one read after the conversation lock: the run's
        # status, its round (NULLs: no such round of this run), the call (NULL: no such call)
        # and how many of the round's calls are pending, this one included.
        self.commit_state = (
            'SELECT u."status", r."status", r."next_completion_seq", c."status", '
            '(SELECT COUNT(*) FROM "tool_round_calls" AS p '
            f'WHERE p."round_id" = r."round_id" AND p."status" = {_CALL_PENDING}), '
            f'{"u." if leased else ""}{instance} FROM "runs" AS u '
            f'LEFT JOIN "tool_rounds" AS r ON r."round_id" = {p} AND r."run_id" = u."run_id" '
            'LEFT JOIN "tool_round_calls" AS c '
            f'ON c."round_id" = r."round_id" AND c."call_id" = {p} '
            f'WHERE u."run_id" = {p}'
        )
        self.complete_call = (
            f'UPDATE "tool_round_calls" SET "status" = {_CALL_COMPLETED}, '
            f'"completion_seq" = {p}, "committed_revision_id" = {p}, "completed_at_ms" = {p} '
            f'WHERE "round_id" = {p} AND "call_id" = {p}'
        )
        # The same, with the call's completion card (migration 10's column).
        self.complete_call_with_card = (
            f'UPDATE "tool_round_calls" SET "status" = {_CALL_COMPLETED}, '
            f'"completion_seq" = {p}, "committed_revision_id" = {p}, "completed_at_ms" = {p}, '
            f'"tool_call" = {p} WHERE "round_id" = {p} AND "call_id" = {p}'
        )
        self.advance_round = (
            f'UPDATE "tool_rounds" SET "next_completion_seq" = {p}, "status" = {p}, '
            f'"updated_at_ms" = {p} WHERE "round_id" = {p}'
        )
        # Once or more per turn too: the revision read, the checkpoint index, the run's end.
        self.revision_record = (
            'SELECT "revision_id", "conversation_id", "parent_revision_id", "state_digest", '
            '"message_count", "created_at_ms" FROM "conversation_revisions" '
            f'WHERE "revision_id" = {p}'
        )
        # The first mapping of a digest wins; every other constraint is checked beforehand, so
        # the only conflict is the primary key's (as peewee's ``on_conflict_ignore``).
        self.insert_checkpoint = (
            'INSERT INTO "checkpoint_states" ("conversation_id", "roots_digest", "revision_id", '
            f'"created_at_ms") VALUES ({placeholders(p, 4)}) ON CONFLICT DO NOTHING'
        )
        self.checkpoint_revision = (
            'SELECT "revision_id" FROM "checkpoint_states" '
            f'WHERE "conversation_id" = {p} AND "roots_digest" = {p}'
        )
        self.finish_run = (
            f'UPDATE "runs" SET "status" = {p}, "usage_json" = {p}, "failure_category" = {p}, '
            f'"failure_message" = {p}, "finished_at_ms" = {p}, "updated_at_ms" = {p}, '
            f'{end_head} WHERE "run_id" = {p} AND "status" = {_RUNNING}'
        )
        self.release_conversation = (
            f'UPDATE "conversations" SET "active_run_id" = NULL, "updated_at_ms" = {p} '
            f'WHERE "conversation_id" = {p} AND "active_run_id" = {p}'
        )


_STATEMENTS: dict[tuple[str, bool, bool, bool], Statements] = {}


def statements_for(database: peewee.Database) -> Statements:
    """The statements in ``database``'s dialect, built once per dialect (stores are made per
    run, so building them per store would repeat the work)."""
    key = (
        database.param,
        bool(database.for_update),
        bool(database.returning_clause),
        instance_of(database) is not None,
    )
    statements = _STATEMENTS.get(key)
    if statements is None:
        statements = _STATEMENTS[key] = Statements(*key)
    return statements
