"""Conversations and their revision chain: messages inserted once, revisions holding what they
add to their parent, appends and imports.

Why a revision chain: a conversation's history is append-only. A revision stores only the
messages it adds to its parent; the full history of a revision is the walk up its parents. So a
rollback, an edited user message or a hydrated client checkpoint starts a new branch that shares
the older rows, and nothing is ever edited in place (message rows are inserted once and never
updated). Every conversation has one root revision with no messages.

Why appends cost O(new messages): besides the parent's row, an append looks up only its own
message ids and runtime event ids among the conversation's recorded messages (indexed); only if
one is recorded does it walk the parent's lineage, by revision id, for those ids alone. No
append reads the history's payloads; ``messages_at`` does, because its callers need them.
Reusing a revision found by digest (rare) compares both histories in full.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import peewee

from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql
from store.conversations.checks import check_id, check_messages
from store.conversations.digests import EMPTY_STATE_DIGEST, extend_digest, state_digest
from store.conversations.errors import (
    MessageConflict,
    RevisionConflict,
    RevisionNotFound,
)
from store.conversations.records import ConversationRecord, RevisionRecord, StoredMessage
from store.conversations.sql import (
    CONVERSATIONS,
    IN_LINEAGE_SQL,
    LINEAGE_METADATA_SQL,
    LINEAGE_SQL,
    as_bytes,
    bind_table,
    columns_of,
    placeholders,
    statements_for,
)


class Revisions:
    """The bottom part of ``ConversationStore``: the database, its statements, and the
    revision chain every other part writes through.

    Every ``_`` helper assumes the caller's transaction is open: none opens its own (a nested
    ``atomic`` would cost a SAVEPOINT and its RELEASE). The statements are ``self._sql``'s.
    """

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        # Tables bound to this database only (not global Models), so several stores can coexist.
        # Columns follow the records they are read into.
        self._conversations = bind_table(
            database, CONVERSATIONS, ConversationRecord.__struct_fields__
        )
        self._lineage_sql = LINEAGE_SQL.format(param=database.param)
        self._sql = statements_for(database)

    def ensure_conversation(self, conversation_id: str) -> int:
        """The conversation's current head revision; creates it and its root revision if new."""
        check_id(conversation_id, "conversation_id")
        with self._db.atomic():
            return self._ensure(conversation_id, now_ms())

    def head(self, conversation_id: str) -> int | None:
        """The conversation's current head revision; None if there is no such conversation."""
        row = execute_sql(self._db, self._sql.head, (conversation_id,)).fetchone()
        return None if row is None else int(row[0])

    def conversation(self, conversation_id: str) -> ConversationRecord | None:
        t = self._conversations
        query = t.select(*columns_of(t, ConversationRecord.__struct_fields__)).where(
            t.conversation_id == conversation_id
        )
        for row in query.tuples():
            return ConversationRecord(*row)
        return None

    def revision(self, revision_id: int) -> RevisionRecord | None:
        row = execute_sql(self._db, self._sql.revision_record, (revision_id,)).fetchone()
        if row is None:
            return None
        rid, cid, parent, digest, count, created = row
        return RevisionRecord(rid, cid, parent, as_bytes(digest), count, created)

    def messages_at(self, revision_id: int) -> list[StoredMessage]:
        """The full history of a revision, oldest first, read in one query."""
        messages = self._lineage(revision_id)
        if messages is None:
            raise RevisionNotFound(f"no revision {revision_id}")
        return messages

    def import_revision(self, conversation_id: str, messages: Sequence[StoredMessage]) -> int:
        """The revision whose history is exactly ``messages`` (hydrated client history).

        Reuses the revision with the same digest; else makes a child of the current head holding
        only the suffix when the head's history is a prefix of ``messages``; else a new branch
        from the root holding all of them. Creates the conversation if new; never moves the head
        (``claim_run`` does that). Its input is the whole history, so it costs O(len(messages));
        the head's history is compared by digest and message metadata, never by its payloads.
        """
        check_id(conversation_id, "conversation_id")
        wanted = check_messages(messages)
        now = now_ms()
        with self._db.atomic():
            head = self._ensure(conversation_id, now)
            head_digest, prefix = self._digest_and_count(head)
            if prefix < len(wanted) and self._holds(head, head_digest, wanted[:prefix]):
                return self._extend(conversation_id, head, wanted[prefix:], now)
            root = self._revision_by_digest(conversation_id, EMPTY_STATE_DIGEST)
            assert root is not None, f"conversation {conversation_id} has no root revision"
            return self._extend(conversation_id, root, wanted, now)

    def _ensure(self, conversation_id: str, now: int) -> int:
        """Create the conversation and its root if missing, lock its row; the current head."""
        return self._ensure_locked(conversation_id, now)[0]

    def _ensure_locked(
        self, conversation_id: str, now: int, *, set_head: bool = True
    ) -> tuple[int, str | None, bool]:
        """(head, active run, created) of the conversation, created with its root revision if
        missing, its row locked. A conversation this call created holds only its root and no
        active run; ``set_head=False`` leaves its ``current_revision_id`` NULL for a caller that
        writes the row again in this transaction (``start_turn``)."""
        created = (
            execute_sql(
                self._db, self._sql.insert_conversation, (conversation_id, now, now)
            ).rowcount
            == 1
        )
        if created:  # the new row is this transaction's until it commits: no lock to take
            current, active = None, None
        else:
            locked = self._lock_conversation(conversation_id)
            assert locked is not None
            current, active = locked
        if current is not None:
            return int(current), active, False
        root = self._insert_revision(conversation_id, None, EMPTY_STATE_DIGEST, 0, now)
        if set_head:
            execute_sql(self._db, self._sql.set_current, (root, now, conversation_id))
        return root, active, created

    def _lock_conversation(self, conversation_id: str) -> tuple[int | None, str | None] | None:
        """(current revision, active run) of the conversation, its row locked for this
        transaction on PostgreSQL (SQLite's IMMEDIATE transaction already holds the write lock)."""
        row = execute_sql(self._db, self._sql.lock_conversation, (conversation_id,)).fetchone()
        return None if row is None else (row[0], row[1])

    def _require_revision_of(self, conversation_id: str, revision_id: int) -> tuple[bytes, int]:
        """``RevisionNotFound`` unless the revision is the conversation's; else its (state
        digest, history length), which a child needs."""
        row = execute_sql(self._db, self._sql.revision, (revision_id,)).fetchone()
        owner = None if row is None else row[0]
        if owner != conversation_id:
            raise RevisionNotFound(
                f"conversation {conversation_id} has no revision {revision_id}"
                + (f" (it belongs to {owner})" if owner is not None else "")
            )
        return as_bytes(row[1]), int(row[2])

    def _revision_by_digest(self, conversation_id: str, digest: bytes) -> int | None:
        row = execute_sql(
            self._db, self._sql.revision_by_digest, (conversation_id, digest)
        ).fetchone()
        return None if row is None else int(row[0])

    def _lineage(self, revision_id: int) -> list[StoredMessage] | None:
        """The revision's full history, or None if there is no such revision."""
        rows = execute_sql(self._db, self._lineage_sql, (revision_id,)).fetchall()
        if not rows:
            return None
        return [
            StoredMessage(message_id, role, origin, as_bytes(payload), event)
            for message_id, role, origin, payload, event in rows
            if message_id is not None
        ]

    def _known_lineage(self, revision_id: int) -> list[StoredMessage]:
        messages = self._lineage(revision_id)
        assert messages is not None, f"revision {revision_id} vanished"
        return messages

    def _digest_and_count(self, revision_id: int) -> tuple[bytes, int]:
        """(state digest, history length) of a revision known to exist: all a child needs."""
        row = execute_sql(self._db, self._sql.revision, (revision_id,)).fetchone()
        if row is None:
            raise AssertionError(f"revision {revision_id} vanished")
        return as_bytes(row[1]), int(row[2])

    def _holds(self, revision_id: int, digest: bytes, messages: list[StoredMessage]) -> bool:
        """Whether the revision (of ``digest``) has exactly ``messages`` as its history: payloads
        compared by digest, ids and metadata row by row (no stored payload is read)."""
        if state_digest(m.payload for m in messages) != digest:
            return False
        sql = LINEAGE_METADATA_SQL.format(param=self._db.param)
        rows = execute_sql(self._db, sql, (revision_id,)).fetchall()
        wanted = [(m.message_id, m.role, m.origin, m.runtime_event_id) for m in messages]
        return [tuple(row) for row in rows] == wanted

    def _recorded(
        self, conversation_id: str, messages: Sequence[StoredMessage]
    ) -> dict[str, StoredMessage]:
        """The conversation's recorded messages that have the id or the runtime event id of one
        of ``messages``, by message id: one indexed query, whatever the history's length."""
        ids = [m.message_id for m in messages]
        if not ids:
            return {}
        events = [m.runtime_event_id for m in messages if m.runtime_event_id is not None]
        p = self._sql.param
        condition = f'"message_id" IN ({placeholders(p, len(ids))})'
        if events:
            condition = f'({condition} OR "runtime_event_id" IN ({placeholders(p, len(events))}))'
        rows = execute_sql(
            self._db, self._sql.recorded + condition, (conversation_id, *ids, *events)
        ).fetchall()
        return {
            row[0]: StoredMessage(row[0], row[1], row[2], as_bytes(row[3]), row[4]) for row in rows
        }

    def _in_history(self, revision_id: int, message_ids: Iterable[str]) -> set[str]:
        """Which of these (recorded) message ids the revision's history holds; no query when
        there are none, which is the common case of an append."""
        ids = list(message_ids)
        if not ids:
            return set()
        param = self._db.param
        sql = IN_LINEAGE_SQL.format(param=param, ids=", ".join([param] * len(ids)))
        return {row[0] for row in execute_sql(self._db, sql, (revision_id, *ids)).fetchall()}

    def _extend(
        self, conversation_id: str, parent: int, additions: list[StoredMessage], now: int
    ) -> int:
        """Refuse additions already in the parent's history (by message id or runtime event id,
        ``MessageConflict``), then ``_append`` them.

        Only the additions are looked up: the conversation's rows with their ids or event ids,
        then, if any, whether the parent's lineage holds them.
        """
        recorded = self._recorded(conversation_id, additions)
        held = self._in_history(parent, recorded)
        if held:
            held_events = {
                m.runtime_event_id
                for m in recorded.values()
                if m.message_id in held and m.runtime_event_id is not None
            }
            for message in additions:
                if message.message_id in held:
                    raise MessageConflict(
                        f"message {message.message_id} is already in this history"
                    )
                if message.runtime_event_id in held_events:
                    raise MessageConflict(
                        f"runtime event {message.runtime_event_id} is already in this history"
                    )
        return self._append(conversation_id, parent, additions, recorded, now)

    def _append(
        self,
        conversation_id: str,
        parent: int,
        additions: list[StoredMessage],
        recorded: dict[str, StoredMessage],
        now: int,
        parent_state: tuple[bytes, int] | None = None,
        *,
        reuse: bool = True,
    ) -> int:
        """The revision whose history is the parent's plus ``additions``: the existing one with
        that digest, else a new child of ``parent`` holding ``additions``.

        The digest chains from the parent's, so this reads one parent row, not the history
        (none when the caller already read it: ``parent_state`` is its (digest, count)).
        Reusing by digest keeps one revision per history: a retried turn that lands on the same
        messages from the same base returns the revision the first attempt made. That hit is
        rare, so it is checked in full. ``recorded`` is ``_recorded`` of the additions.
        ``reuse=False`` skips the lookup when the conversation has no revision but ``parent``.
        """
        parent_digest, parent_count = (
            self._digest_and_count(parent) if parent_state is None else parent_state
        )
        digest = extend_digest(parent_digest, (m.payload for m in additions))
        existing = self._revision_by_digest(conversation_id, digest) if reuse else None
        if existing is not None:
            if self._known_lineage(existing) != self._known_lineage(parent) + additions:
                raise RevisionConflict(
                    f"revision {existing} has the same digest but different messages"
                )
            return existing
        self._store_messages(conversation_id, additions, recorded, now)
        count = parent_count + len(additions)
        revision_id = self._insert_revision(conversation_id, parent, digest, count, now)
        if additions:
            sql = self._sql
            params: list[Any] = []
            for ordinal, m in enumerate(additions):
                params += (revision_id, ordinal, conversation_id, m.message_id)
            values = ", ".join([sql.revision_message_row] * len(additions))
            execute_sql(self._db, sql.insert_revision_messages + values, params)
        return revision_id

    def _insert_revision(
        self, conversation_id: str, parent: int | None, digest: bytes, count: int, now: int
    ) -> int:
        params = (conversation_id, parent, digest, count, now)
        cursor = execute_sql(self._db, self._sql.insert_revision, params)
        if self._sql.returning:
            return int(cursor.fetchone()[0])
        return int(cursor.lastrowid)

    def _store_messages(
        self,
        conversation_id: str,
        messages: list[StoredMessage],
        recorded: dict[str, StoredMessage],
        now: int,
    ) -> None:
        """Insert the messages the conversation does not hold yet; a recorded one must be
        identical (same id → same role, origin, bytes and event; same event → same id).
        ``recorded`` is ``_recorded`` of ``messages``."""
        event_owners = {
            m.runtime_event_id: m.message_id
            for m in recorded.values()
            if m.runtime_event_id is not None
        }
        params: list[Any] = []
        for m in messages:
            old = recorded.get(m.message_id)
            if old is not None:
                if old != m:
                    raise MessageConflict(
                        f"message {m.message_id} of conversation {conversation_id} is already "
                        "recorded with different content"
                    )
                continue
            owner = event_owners.get(m.runtime_event_id) if m.runtime_event_id else None
            if owner is not None:
                raise MessageConflict(
                    f"runtime event {m.runtime_event_id} of conversation {conversation_id} is "
                    f"already recorded as message {owner}"
                )
            params += (
                conversation_id,
                m.message_id,
                m.role,
                m.origin,
                m.payload,
                m.runtime_event_id,
                now,
            )
        if params:
            sql = self._sql
            values = ", ".join([sql.message_row] * (len(params) // 7))
            execute_sql(self._db, sql.insert_messages + values, params)
