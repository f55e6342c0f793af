"""Which Task call of which parent run started each subagent run, shared by every instance.

Why in the database: a subagent's run is a request of its own, which a balancer may send to
another instance than its parent's; the user's ``cancel_subagent_action`` arrives at the
parent's run and must still find the Task call. A row is written when the child run starts and
deleted when it ends; a row left by an instance that died is harmless (parent request ids are
never reused) and goes once it is older than ``STALE_AFTER_MS``, at a later link.
"""

from __future__ import annotations

import peewee

from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql

SUBAGENT_LINKS = "subagent_links"
# A link older than this belongs to a run that cannot still be running.
STALE_AFTER_MS = 7 * 24 * 3600 * 1000


class SubagentLinkRows:
    """The ``subagent_links`` table; synchronous (called from the runs' actor threads)."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        p = database.param
        t = f'"{SUBAGENT_LINKS}"'
        key = f'"parent_request_id" = {p} AND "conversation_id" = {p}'
        self._link = (
            f'INSERT INTO {t} ("parent_request_id", "conversation_id", "tool_call_id", '
            f'"created_at_ms") VALUES ({p}, {p}, {p}, {p}) '
            'ON CONFLICT ("parent_request_id", "conversation_id") DO UPDATE SET '
            '"tool_call_id" = excluded."tool_call_id", "created_at_ms" = excluded."created_at_ms"'
        )
        self._stale = f'DELETE FROM {t} WHERE "created_at_ms" < {p}'
        self._unlink = f"DELETE FROM {t} WHERE {key}"
        self._tool_call = f'SELECT "tool_call_id" FROM {t} WHERE {key}'

    def link(self, parent_request_id: str, conversation_id: str, tool_call_id: str) -> None:
        """The child run ``conversation_id`` of ``parent_request_id`` was started by the
        parent's Task call ``tool_call_id`` (a second link of the pair replaces the first)."""
        now = now_ms()
        with self._db.atomic():
            execute_sql(self._db, self._stale, (now - STALE_AFTER_MS,))
            execute_sql(
                self._db, self._link, (parent_request_id, conversation_id, tool_call_id, now)
            )

    def unlink(self, parent_request_id: str, conversation_id: str) -> None:
        with self._db.atomic():
            execute_sql(self._db, self._unlink, (parent_request_id, conversation_id))

    def tool_call(self, parent_request_id: str, subagent_id: str) -> str | None:
        """The Task call that started ``subagent_id`` for ``parent_request_id``, if linked."""
        row = execute_sql(self._db, self._tool_call, (parent_request_id, subagent_id)).fetchone()
        return None if row is None else str(row[0])
