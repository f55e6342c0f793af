"""The conversation store: immutable messages in a revision chain, runs, tool rounds, anchors,
checkpoint states.

Why a revision chain: a conversation's history is append-only. A revision stores only the
messages it adds to its parent; the full history of a revision is the walk up its parents. So a
rollback, an edited user message or a hydrated client checkpoint starts a new branch that shares
the older rows, and nothing is ever edited in place (message rows are inserted once and never
updated). Every conversation has one root revision with no messages.

Why a chained digest: a revision's ``state_digest`` identifies its full history. The root's is
SHA-256 of nothing (``EMPTY_STATE_DIGEST``); adding message m to a history gives
SHA-256(digest of the history || len(m.payload) as 8 bytes big-endian || m.payload)
(``extend_digest``; ``state_digest`` folds a whole history). So a new revision needs only its
parent's digest, read from the parent row, and its own messages; the same full history gives
the same digest however it was split into revisions. The digest is unique per conversation, so
one full history exists at most once and landing on it again reuses it (migration 4 recomputed
the digests written with the earlier, whole-history formula).

Why appends cost O(new messages): besides the parent's row, an append looks up only its own
message ids and runtime event ids among the conversation's recorded messages (indexed); only if
one is recorded does it walk the parent's lineage, by revision id, for those ids alone. No
append reads the history's payloads; ``messages_at`` does, because its callers need them.
Reusing a revision found by digest (rare) compares both histories in full.

Why checkpoint states: the editor hands back the conversation state of a checkpoint it got from
us. ``roots_digest`` (SHA-256 of its stable root blob ids, in order) identifies that state, and
``record_checkpoint`` remembers which revision it showed (the first mapping of a digest wins),
so ``revision_for_checkpoint`` maps a client's state back to a revision without decoding it.

Why runs own the conversation: a run (one execution attempt, keyed by the Bidi request id) claims
the conversation; the claim cancels the run it supersedes and moves the conversation's head to
the run's base. Every later write names its run and the head it expects, and is refused with
``StaleRun`` unless that run still owns the conversation at that head, which makes a superseded
run's late events harmless.

Why exactly-once: a RunRequest's rendered user turn is one runtime-origin message with a stable
``runtime_event_id``. ``append_once`` appends it only if the lineage does not hold it yet, in the
same transaction as the check, and the database keeps the event id unique per conversation, so a
retry or a restart replays the turn instead of appending it again; the same message id or event id
with different bytes is refused (``MessageConflict``).

Why a run can adopt a tool round: when the client's stream drops mid-round, the next run finds
the round by its base and call ids (``find_pending_round``), claims the conversation on the
round's head (``round_head``: the revision of its last committed pair, or its base), takes the
round over (``adopt_tool_round``) and commits the remaining results, which continue the same
arrival numbering and chain of pairs.

The store never imports ``actors``: callers hand it already-encoded canonical message bytes
(``actors.conversation.model.encode_message``) plus the metadata it indexes. Every write runs in
one transaction (SQLite ``BEGIN IMMEDIATE``; on PostgreSQL the conversation row is locked
``FOR UPDATE`` first, always before any run or round row, so writers cannot deadlock). Methods are
synchronous and safe to share between threads (peewee keeps one connection per thread); callers
on an event loop use ``asyncio.to_thread``. Times are UTC milliseconds since the epoch.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any

import msgspec
import peewee

CONVERSATIONS = "conversations"
REVISIONS = "conversation_revisions"
MESSAGES = "conversation_messages"
REVISION_MESSAGES = "revision_messages"
RUNS = "runs"
TOOL_ROUNDS = "tool_rounds"
TOOL_ROUND_CALLS = "tool_round_calls"
INPUT_ANCHORS = "input_anchors"
CHECKPOINT_STATES = "checkpoint_states"

ROLES = frozenset({"system", "user", "assistant", "tool"})
ORIGINS = frozenset({"prompt", "user", "runtime", "assistant", "tool"})

# The revision ids of a revision's lineage with their distance from it, as a recursive CTE both
# SQLite and PostgreSQL run; the walk touches only conversation_revisions' primary key.
_LINEAGE_CTE = """
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
_LINEAGE_SQL = (
    _LINEAGE_CTE
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
_LINEAGE_METADATA_SQL = (
    _LINEAGE_CTE
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
_IN_LINEAGE_SQL = (
    _LINEAGE_CTE
    + """
SELECT rm.message_id
FROM lineage AS l
JOIN revision_messages AS rm ON rm.revision_id = l.revision_id
WHERE rm.message_id IN ({ids})
"""
)


# --- errors ------------------------------------------------------------------------------------


class ConversationStoreError(Exception):
    """A refused conversation-store operation; the message says what and why."""


class InvalidInput(ConversationStoreError, ValueError):
    """Malformed arguments (unknown role, duplicate ids in one call, empty tool round, ...)."""


class ConversationNotFound(ConversationStoreError):
    """No conversation has this id (``ensure_conversation`` creates one)."""


class HeadMoved(ConversationStoreError):
    """The conversation's head is not the one the caller expected (another run moved it)."""


class _AnyHead:
    """``start_turn`` takes whatever head the conversation has (the default)."""


ANY_HEAD = _AnyHead()


class RevisionNotFound(ConversationStoreError):
    """No revision has this id, or it belongs to another conversation."""


class RunNotFound(ConversationStoreError):
    """No run has this id."""


class RunConflict(ConversationStoreError):
    """The run id cannot be claimed: it is running, or it belongs to another conversation."""


class StaleRun(ConversationStoreError):
    """The run no longer owns its conversation (superseded or finished) or the head moved."""


class MessageConflict(ConversationStoreError):
    """A message id or runtime event id is already recorded with different content, or a
    message is already part of the history it would be appended to."""


class RevisionConflict(ConversationStoreError):
    """The digest names an existing revision whose messages differ (same payloads, different
    ids or metadata): the caller's payloads are not canonical encodings of its messages."""


class ToolRoundNotFound(ConversationStoreError):
    """No tool round has this id (for this run, when a run is named)."""


class ToolRoundConversationMismatch(ConversationStoreError):
    """The tool round belongs to another conversation than the run that would adopt it."""


class ToolRoundExists(ConversationStoreError):
    """A tool round with this id was already created."""


class ToolRoundSettled(ConversationStoreError):
    """Every call of the round already has its result."""


class UnknownToolCall(ConversationStoreError):
    """The round has no call with this id (a protocol error of the tool side)."""


class DuplicateToolResult(ConversationStoreError):
    """The call already has its result (a protocol error of the tool side)."""


# --- records -----------------------------------------------------------------------------------


class StoredMessage(msgspec.Struct, frozen=True):
    """One immutable message: ``payload`` is its canonical JSON (the digest input), ``role``,
    ``origin`` and ``runtime_event_id`` repeat what the payload says so the store can index them
    without decoding it."""

    message_id: str
    role: str
    origin: str
    payload: bytes
    runtime_event_id: str | None = None


class ConversationRecord(msgspec.Struct, frozen=True):
    conversation_id: str
    current_revision_id: int
    active_run_id: str | None
    created_at_ms: int
    updated_at_ms: int


class RevisionRecord(msgspec.Struct, frozen=True):
    """``message_count`` is the length of the full history, not of this revision's delta."""

    revision_id: int
    conversation_id: str
    parent_revision_id: int | None
    state_digest: bytes
    message_count: int
    created_at_ms: int


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class RunRecord(msgspec.Struct, frozen=True):
    run_id: str
    conversation_id: str
    status: RunStatus
    base_revision_id: int
    head_revision_id: int
    provider_call_index: int
    usage_json: str | None
    failure_category: str | None
    failure_message: str | None
    created_at_ms: int
    updated_at_ms: int
    finished_at_ms: int | None


class ClaimedRun(msgspec.Struct, frozen=True):
    """The claimed run's head is ``base_revision_id``; ``superseded_run_id`` was cancelled."""

    run_id: str
    conversation_id: str
    base_revision_id: int
    superseded_run_id: str | None


class StartedTurn(msgspec.Struct, frozen=True):
    """A claimed run with its turn's runtime message in the history (``inserted`` when this
    call appended it) and its first provider call index reserved; ``base_message_count`` is
    the length of the claimed base's history."""

    claimed: ClaimedRun
    head: int
    inserted: bool
    call_index: int
    base_message_count: int


class ToolCallSpec(msgspec.Struct, frozen=True):
    """One call of a tool round as the model made it (``arguments`` is the raw provider text)."""

    index: int
    call_id: str
    model_call_id: str
    name: str
    arguments: str


class ToolRoundStatus(StrEnum):
    PENDING = "pending"
    SETTLED = "settled"


class ToolCallStatus(StrEnum):
    PENDING = "pending"
    COMPLETED = "completed"


class ToolCallRecord(msgspec.Struct, frozen=True):
    """A call and, once completed, its result, arrival order and the revision holding its pair."""

    index: int
    call_id: str
    model_call_id: str
    name: str
    arguments: str
    status: ToolCallStatus
    completion_seq: int | None
    result_content: str | None
    result_is_error: bool | None
    committed_revision_id: int | None
    completed_at_ms: int | None


class ToolRoundRecord(msgspec.Struct, frozen=True):
    """A round with its calls in index order; ``assistant_json`` is the caller's bytes."""

    round_id: str
    run_id: str
    base_revision_id: int
    assistant_json: bytes
    status: ToolRoundStatus
    next_completion_seq: int
    created_at_ms: int
    updated_at_ms: int
    calls: tuple[ToolCallRecord, ...]


class ToolResultCommitted(msgspec.Struct, frozen=True):
    """The revision holding the pair (the run's new head), the result's arrival number,
    whether it was the round's last pending call, and (when asked for and settled) the next
    provider call index, reserved in the same transaction."""

    revision_id: int
    completion_seq: int
    settled: bool
    call_index: int | None = None


# --- helpers -----------------------------------------------------------------------------------


def utc_now_ms() -> int:
    return time.time_ns() // 1_000_000


# The root revision's digest (the empty history): SHA-256 of nothing.
EMPTY_STATE_DIGEST = hashlib.sha256(b"").digest()
DIGEST_SIZE = 32


def extend_digest(digest: bytes, payloads: Iterable[bytes]) -> bytes:
    """The digest of a history extended by ``payloads``, from the digest of the history.

    Each message is one link: SHA-256(previous digest || 8-byte big-endian payload length ||
    payload). Chained so a new revision needs only its parent's digest and its own messages
    (appending costs O(new messages)); the length prefix keeps message boundaries in the digest.
    """
    for payload in payloads:
        link = hashlib.sha256(digest)
        link.update(len(payload).to_bytes(8, "big"))
        link.update(payload)
        digest = link.digest()
    return digest


def state_digest(payloads: Iterable[bytes]) -> bytes:
    """The digest of a full history: the chain from ``EMPTY_STATE_DIGEST``.

    The same payloads give the same digest however the history is split into revisions.
    """
    return extend_digest(EMPTY_STATE_DIGEST, payloads)


def roots_digest(root_ids: Sequence[bytes]) -> bytes:
    """The identity of a checkpoint's stable history (system root excluded by the caller):
    SHA-256 over the concatenation of its 32-byte root blob ids, in order.

    It keys ``record_checkpoint``/``revision_for_checkpoint``, so a client's conversation state
    maps back to a revision without decoding its blobs.
    """
    if isinstance(root_ids, bytes | str) or not isinstance(root_ids, Sequence):
        raise InvalidInput(
            f"root_ids must be a sequence of 32-byte blob ids, got {type(root_ids).__name__}"
        )
    digest = hashlib.sha256()
    for position, root_id in enumerate(root_ids):
        _check_digest(root_id, f"root id {position}")
        digest.update(root_id)
    return digest.digest()


def _check_digest(value: object, what: str) -> bytes:
    if not isinstance(value, bytes) or len(value) != DIGEST_SIZE:
        raise InvalidInput(f"{what} must be {DIGEST_SIZE} raw bytes, got {value!r}")
    return value


def _check_id(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{what} must be a non-empty string, got {value!r}")
    return value


def _check_message(message: object) -> StoredMessage:
    """Validate one message (msgspec Structs do not check types on construction)."""
    if not isinstance(message, StoredMessage):
        raise InvalidInput(f"expected a StoredMessage, got {type(message).__name__}")
    _check_id(message.message_id, "message_id")
    if message.role not in ROLES:
        raise InvalidInput(f"message {message.message_id}: unknown role {message.role!r}")
    if message.origin not in ORIGINS:
        raise InvalidInput(f"message {message.message_id}: unknown origin {message.origin!r}")
    if not isinstance(message.payload, bytes):
        raise InvalidInput(f"message {message.message_id}: payload must be bytes")
    if message.runtime_event_id is not None:
        _check_id(message.runtime_event_id, f"message {message.message_id}: runtime_event_id")
    return message


def _check_messages(messages: Iterable[object]) -> list[StoredMessage]:
    """Validate messages and refuse an id or runtime event id repeated among them."""
    checked = [_check_message(m) for m in messages]
    ids: set[str] = set()
    events: set[str] = set()
    for message in checked:
        if message.message_id in ids:
            raise InvalidInput(f"repeated within one call: message {message.message_id}")
        ids.add(message.message_id)
        event = message.runtime_event_id
        if event is not None:
            if event in events:
                raise InvalidInput(f"repeated within one call: runtime event {event}")
            events.add(event)
    return checked


def _check_call_ids(call_ids: object) -> set[str]:
    """A non-empty set of distinct call ids (a repeat would make the set ambiguous)."""
    if isinstance(call_ids, str | bytes) or not isinstance(call_ids, Sequence):
        raise InvalidInput(f"call_ids must be a sequence of call ids, got {call_ids!r}")
    checked = [_check_id(call_id, "call_id") for call_id in call_ids]
    if not checked:
        raise InvalidInput("call_ids is empty: a tool round has at least one call")
    if len(set(checked)) != len(checked):
        raise InvalidInput(f"call_ids repeats a call id: {checked!r}")
    return set(checked)


def _check_revision_id(value: object, what: str = "revision_id") -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(f"{what} must be an integer, got {value!r}")
    return value


def _table(
    database: peewee.Database,
    name: str,
    columns: Iterable[str],
    primary_key: str | None = None,
) -> peewee.Table:
    return peewee.Table(name, tuple(columns), primary_key=primary_key, _database=database)


def _columns(table: peewee.Table, names: Iterable[str]) -> list[peewee.Column]:
    return [getattr(table, name) for name in names]


# tool_rounds columns are ToolRoundRecord's but its calls; tool_round_calls columns are
# round_id, call_index (the record's ``index``) and the rest of ToolCallRecord's.
_ROUND_COLUMNS = tuple(f for f in ToolRoundRecord.__struct_fields__ if f != "calls")
_CALL_FIELDS = tuple(f for f in ToolCallRecord.__struct_fields__ if f != "index")


def _bytes(value: Any) -> bytes:
    """PostgreSQL drivers return memoryview for BYTEA."""
    return bytes(value)


def _placeholders(param: str, count: int) -> str:
    return ", ".join([param] * count)


_RUNNING = f"'{RunStatus.RUNNING.value}'"
_CANCELLED = f"'{RunStatus.CANCELLED.value}'"
_CALL_PENDING = f"'{ToolCallStatus.PENDING.value}'"
_CALL_COMPLETED = f"'{ToolCallStatus.COMPLETED.value}'"


class _Statements:
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

    def __init__(self, param: str, for_update: bool, returning: bool) -> None:
        p = param
        self.param = p
        self.returning = returning
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
            f'"state_digest", "message_count", "created_at_ms") VALUES ({_placeholders(p, 5)})'
            + (' RETURNING "revision_id"' if returning else "")
        )
        self.insert_messages = (
            'INSERT INTO "conversation_messages" ("conversation_id", "message_id", "role", '
            '"origin", "payload", "runtime_event_id", "created_at_ms") VALUES '
        )
        self.message_row = f"({_placeholders(p, 7)})"
        self.insert_revision_messages = (
            'INSERT INTO "revision_messages" ("revision_id", "ordinal", "conversation_id", '
            '"message_id") VALUES '
        )
        self.revision_message_row = f"({_placeholders(p, 4)})"
        self.recorded = (
            'SELECT "message_id", "role", "origin", "payload", "runtime_event_id" '
            f'FROM "conversation_messages" WHERE "conversation_id" = {p} AND '
        )
        self.run = (
            'SELECT "conversation_id", "status", "provider_call_index" FROM "runs" '
            f'WHERE "run_id" = {p}'
        )
        self.run_conversation = f'SELECT "conversation_id" FROM "runs" WHERE "run_id" = {p}'
        self.run_status = f'SELECT "status" FROM "runs" WHERE "run_id" = {p}'
        self.run_call_index = (
            f'SELECT "status", "provider_call_index" FROM "runs" WHERE "run_id" = {p}'
        )
        self.cancel_run = (
            f'UPDATE "runs" SET "status" = {_CANCELLED}, "failure_message" = {p}, '
            f'"finished_at_ms" = {p}, "updated_at_ms" = {p} '
            f'WHERE "run_id" = {p} AND "status" = {_RUNNING}'
        )
        self.insert_run = (
            'INSERT INTO "runs" ("run_id", "conversation_id", "status", "base_revision_id", '
            '"head_revision_id", "provider_call_index", "usage_json", "failure_category", '
            '"failure_message", "created_at_ms", "updated_at_ms", "finished_at_ms") '
            f"VALUES ({p}, {p}, {_RUNNING}, {p}, {p}, {p}, NULL, NULL, NULL, {p}, {p}, NULL)"
        )
        self.restart_run = (
            f'UPDATE "runs" SET "status" = {_RUNNING}, "base_revision_id" = {p}, '
            f'"head_revision_id" = {p}, "provider_call_index" = {p}, "usage_json" = NULL, '
            '"failure_category" = NULL, "failure_message" = NULL, '
            f'"updated_at_ms" = {p}, "finished_at_ms" = NULL WHERE "run_id" = {p}'
        )
        self.move_run_head = (
            f'UPDATE "runs" SET "head_revision_id" = {p}, "updated_at_ms" = {p} '
            f'WHERE "run_id" = {p}'
        )
        self.reserve_call = (
            'UPDATE "runs" SET "provider_call_index" = "provider_call_index" + 1, '
            f'"updated_at_ms" = {p} WHERE "run_id" = {p} AND "status" = {_RUNNING}'
        )
        self.move_run_head_and_reserve = (
            f'UPDATE "runs" SET "head_revision_id" = {p}, '
            '"provider_call_index" = "provider_call_index" + 1, '
            f'"updated_at_ms" = {p} WHERE "run_id" = {p} AND "status" = {_RUNNING}'
        )
        # What commit_tool_result checks, in one read after the conversation lock: the run's
        # status, its round (NULLs: no such round of this run), the call (NULL: no such call)
        # and how many of the round's calls are pending, this one included.
        self.commit_state = (
            'SELECT u."status", r."status", r."next_completion_seq", c."status", '
            '(SELECT COUNT(*) FROM "tool_round_calls" AS p '
            f'WHERE p."round_id" = r."round_id" AND p."status" = {_CALL_PENDING}) '
            'FROM "runs" AS u '
            f'LEFT JOIN "tool_rounds" AS r ON r."round_id" = {p} AND r."run_id" = u."run_id" '
            'LEFT JOIN "tool_round_calls" AS c '
            f'ON c."round_id" = r."round_id" AND c."call_id" = {p} '
            f'WHERE u."run_id" = {p}'
        )
        self.complete_call = (
            f'UPDATE "tool_round_calls" SET "status" = {_CALL_COMPLETED}, '
            f'"completion_seq" = {p}, "result_content" = {p}, "result_is_error" = {p}, '
            f'"committed_revision_id" = {p}, "completed_at_ms" = {p} '
            f'WHERE "round_id" = {p} AND "call_id" = {p}'
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
            f'"created_at_ms") VALUES ({_placeholders(p, 4)}) ON CONFLICT DO NOTHING'
        )
        self.checkpoint_revision = (
            'SELECT "revision_id" FROM "checkpoint_states" '
            f'WHERE "conversation_id" = {p} AND "roots_digest" = {p}'
        )
        self.finish_run = (
            f'UPDATE "runs" SET "status" = {p}, "usage_json" = {p}, "failure_category" = {p}, '
            f'"failure_message" = {p}, "finished_at_ms" = {p}, "updated_at_ms" = {p} '
            f'WHERE "run_id" = {p} AND "status" = {_RUNNING}'
        )
        self.release_conversation = (
            f'UPDATE "conversations" SET "active_run_id" = NULL, "updated_at_ms" = {p} '
            f'WHERE "conversation_id" = {p} AND "active_run_id" = {p}'
        )


_STATEMENTS: dict[tuple[str, bool, bool], _Statements] = {}


def _statements_for(database: peewee.Database) -> _Statements:
    """The statements in ``database``'s dialect, built once per dialect (stores are made per
    run, so building them per store would repeat the work)."""
    key = (database.param, bool(database.for_update), bool(database.returning_clause))
    statements = _STATEMENTS.get(key)
    if statements is None:
        statements = _STATEMENTS[key] = _Statements(*key)
    return statements


# --- the store ---------------------------------------------------------------------------------


class ConversationStore:
    """Typed, synchronous access to conversations; see the module docstring for the rules."""

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        # Tables bound to this database only (not global Models), so several stores can coexist.
        # Columns follow the records they are read into.
        self._conversations = _table(database, CONVERSATIONS, ConversationRecord.__struct_fields__)
        self._revisions = _table(
            database, REVISIONS, RevisionRecord.__struct_fields__, primary_key="revision_id"
        )
        self._messages = _table(
            database,
            MESSAGES,
            ("conversation_id", *StoredMessage.__struct_fields__, "created_at_ms"),
        )
        self._revision_messages = _table(
            database, REVISION_MESSAGES, ("revision_id", "ordinal", "conversation_id", "message_id")
        )
        self._runs = _table(database, RUNS, RunRecord.__struct_fields__)
        self._rounds = _table(database, TOOL_ROUNDS, _ROUND_COLUMNS)
        self._calls = _table(database, TOOL_ROUND_CALLS, ("round_id", "call_index", *_CALL_FIELDS))
        self._anchors = _table(
            database,
            INPUT_ANCHORS,
            ("conversation_id", "input_id", "base_revision_id", "created_at_ms"),
        )
        self._checkpoints = _table(
            database,
            CHECKPOINT_STATES,
            ("conversation_id", "roots_digest", "revision_id", "created_at_ms"),
        )
        self._lineage_sql = _LINEAGE_SQL.format(param=database.param)
        self._sql = _statements_for(database)

    # --- conversations and revisions -----------------------------------------------------------

    def ensure_conversation(self, conversation_id: str) -> int:
        """The conversation's current head revision; creates it and its root revision if new."""
        _check_id(conversation_id, "conversation_id")
        with self._db.atomic():
            return self._ensure(conversation_id, utc_now_ms())

    def head(self, conversation_id: str) -> int | None:
        """The conversation's current head revision; None if there is no such conversation."""
        row = self._db.execute_sql(self._sql.head, (conversation_id,)).fetchone()
        return None if row is None else int(row[0])

    def conversation(self, conversation_id: str) -> ConversationRecord | None:
        t = self._conversations
        query = t.select(*_columns(t, ConversationRecord.__struct_fields__)).where(
            t.conversation_id == conversation_id
        )
        for row in query.tuples():
            return ConversationRecord(*row)
        return None

    def revision(self, revision_id: int) -> RevisionRecord | None:
        row = self._db.execute_sql(self._sql.revision_record, (revision_id,)).fetchone()
        if row is None:
            return None
        rid, cid, parent, digest, count, created = row
        return RevisionRecord(rid, cid, parent, _bytes(digest), count, created)

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
        _check_id(conversation_id, "conversation_id")
        wanted = _check_messages(messages)
        now = utc_now_ms()
        with self._db.atomic():
            head = self._ensure(conversation_id, now)
            head_digest, prefix = self._digest_and_count(head)
            if prefix < len(wanted) and self._holds(head, head_digest, wanted[:prefix]):
                return self._extend(conversation_id, head, wanted[prefix:], now)
            root = self._revision_by_digest(conversation_id, EMPTY_STATE_DIGEST)
            assert root is not None, f"conversation {conversation_id} has no root revision"
            return self._extend(conversation_id, root, wanted, now)

    def anchor_input(self, conversation_id: str, input_id: str, base_revision_id: int) -> int:
        """The base revision of a logical input (a user message): the first one recorded wins.

        So an edited or retried user message starts from the same base as its first run and
        discards that run's suffix, whatever history the client sent back.
        """
        _check_id(input_id, "input_id")
        with self._db.atomic():
            if self._lock_conversation(conversation_id) is None:
                raise ConversationNotFound(f"no conversation {conversation_id}")
            self._require_revision_of(conversation_id, base_revision_id)
            t = self._anchors
            t.insert(
                conversation_id=conversation_id,
                input_id=input_id,
                base_revision_id=base_revision_id,
                created_at_ms=utc_now_ms(),
            ).on_conflict_ignore().as_rowcount().execute()
            query = t.select(t.base_revision_id).where(
                (t.conversation_id == conversation_id) & (t.input_id == input_id)
            )
            return int(query.scalar())

    # --- checkpoints ---------------------------------------------------------------------------

    def record_checkpoint(
        self, conversation_id: str, roots_digest: bytes, revision_id: int
    ) -> None:
        """Remember that a checkpoint whose stable history has ``roots_digest`` (see the
        module-level ``roots_digest``) shows ``revision_id``, so the client's conversation state
        maps back to it without being decoded.

        Idempotent, and the first mapping of a digest wins: recording it again for another
        revision (the same roots published from two branches, say) keeps the first one and is
        no error. ``InvalidInput`` unless the digest is 32 bytes; ``ConversationNotFound``,
        ``RevisionNotFound`` unless the revision is the conversation's.
        """
        _check_id(conversation_id, "conversation_id")
        _check_digest(roots_digest, "roots_digest")
        _check_revision_id(revision_id)
        with self._db.atomic():
            if self._lock_conversation(conversation_id) is None:
                raise ConversationNotFound(f"no conversation {conversation_id}")
            self._require_revision_of(conversation_id, revision_id)
            self._db.execute_sql(
                self._sql.insert_checkpoint,
                (conversation_id, roots_digest, revision_id, utc_now_ms()),
            )

    def revision_for_checkpoint(self, conversation_id: str, roots_digest: bytes) -> int | None:
        """The revision first recorded for this checkpoint digest, or None."""
        _check_id(conversation_id, "conversation_id")
        _check_digest(roots_digest, "roots_digest")
        row = self._db.execute_sql(
            self._sql.checkpoint_revision, (conversation_id, roots_digest)
        ).fetchone()
        return None if row is None else int(row[0])

    # --- runs ----------------------------------------------------------------------------------

    def claim_run(self, run_id: str, conversation_id: str, base_revision_id: int) -> ClaimedRun:
        """Make ``run_id`` the conversation's active run, its head moved to ``base_revision_id``.

        A different active run is cancelled (it can no longer write). Choosing an old revision
        as base is how a rollback starts a new branch: later appends become its children and the
        old suffix stays readable from its own revisions. A finished run id is claimed again (a
        client retrying the same request after a restart): status back to ``running``, head
        reset to the base, ``provider_call_index`` kept so model call ids stay unique.
        """
        _check_id(run_id, "run_id")
        now = utc_now_ms()
        with self._db.atomic():
            locked = self._lock_conversation(conversation_id)
            if locked is None:
                raise ConversationNotFound(f"no conversation {conversation_id}")
            _, active = locked
            self._require_revision_of(conversation_id, base_revision_id)
            existing = self._claimable(run_id, conversation_id)
            superseded = self._write_claim(
                run_id,
                conversation_id,
                active,
                existing,
                base_revision_id,
                base_revision_id,
                -1 if existing is None else existing,
                now,
            )
        return ClaimedRun(run_id, conversation_id, base_revision_id, superseded)

    def run(self, run_id: str) -> RunRecord | None:
        t = self._runs
        query = t.select(*_columns(t, RunRecord.__struct_fields__)).where(t.run_id == run_id)
        for row in query.dicts():
            return msgspec.convert(row, RunRecord)
        return None

    def start_turn(
        self,
        run_id: str,
        conversation_id: str,
        base_revision_id: int | None,
        message: StoredMessage,
        *,
        expected_head: int | _AnyHead | None = ANY_HEAD,
    ) -> StartedTurn:
        """A user turn's start in ONE transaction (one commit before the model is asked):
        claim the conversation on ``base_revision_id`` (None: its current head, created if
        new), append the turn's runtime message once (``append_once``), and reserve the first
        provider call index (``begin_provider_call``).

        The same checks and errors as those three calls in a row, but it is on the critical path
        of every turn, so each row is read once and written once: the run row with its final
        head and call index, the conversation row with its final head and active run (8
        statements on a new conversation, 10 on an existing one, 11 when a run is superseded;
        the three calls took 18 to 23 plus a SAVEPOINT and RELEASE each).

        ``expected_head`` (with ``base_revision_id`` None): the head the caller read before,
        None for a conversation that did not exist; ``HeadMoved`` (nothing written) if the
        head is another one now, so a caller that prepared the turn's state from its read
        never commits on a history it did not see.
        """
        if base_revision_id is None:
            _check_id(conversation_id, "conversation_id")
        _check_id(run_id, "run_id")
        now = utc_now_ms()
        with self._db.atomic():
            if base_revision_id is None:
                # The head is the conversation's own revision: no ownership check needed.
                base, active, created = self._ensure_locked(conversation_id, now, set_head=False)
                if not isinstance(expected_head, _AnyHead) and (
                    (None if created else base) != expected_head
                ):
                    raise HeadMoved(
                        f"conversation {conversation_id} moved to revision "
                        f"{None if created else base}, expected {expected_head}"
                    )
                parent = (EMPTY_STATE_DIGEST, 0) if created else self._digest_and_count(base)
            else:
                locked = self._lock_conversation(conversation_id)
                if locked is None:
                    raise ConversationNotFound(f"no conversation {conversation_id}")
                _, active = locked
                base, created = base_revision_id, False
                parent = self._require_revision_of(conversation_id, base)
            existing = self._claimable(run_id, conversation_id)
            wanted = _check_message(message)
            # append_once on the claimed head (``base``); a conversation created by this
            # transaction holds no message and no revision but its root, so nothing to look up.
            recorded = {} if created else self._recorded(conversation_id, [wanted])
            found = [recorded[m] for m in sorted(self._in_history(base, recorded))]
            if found:
                if found != [wanted]:
                    raise MessageConflict(
                        f"message {wanted.message_id} (runtime event {wanted.runtime_event_id}) "
                        "is already in this history with different content"
                    )
                head, inserted = base, False
            else:
                head = self._append(
                    conversation_id, base, [wanted], recorded, now, parent, reuse=not created
                )
                inserted = True
            # begin_provider_call: a claimed run is running, so it gets the next index.
            call_index = 0 if existing is None else existing + 1
            superseded = self._write_claim(
                run_id, conversation_id, active, existing, base, head, call_index, now
            )
        return StartedTurn(
            ClaimedRun(run_id, conversation_id, base, superseded),
            head,
            inserted,
            call_index,
            parent[1],
        )

    def begin_provider_call(self, run_id: str) -> int:
        """Reserve the next provider call index (0, 1, 2, ...) BEFORE the request is sent.

        Only a ``running`` run gets one (``StaleRun`` otherwise), so a superseded run cannot
        start another model call; the index names the call (``{run_id}:{index}``).
        """
        with self._db.atomic():
            updated = self._db.execute_sql(self._sql.reserve_call, (utc_now_ms(), run_id))
            return self._reserved_index(run_id, updated.rowcount)

    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        usage_json: str | None = None,
        failure_category: str | None = None,
        failure_message: str | None = None,
    ) -> bool:
        """End a run; False (and nothing changed) if it was no longer ``running``.

        The first finish wins, so a superseded run cannot overwrite its ``cancelled``. The
        conversation's active run is released only if it is still this run.
        """
        status = RunStatus(status)
        if status is RunStatus.RUNNING:
            raise InvalidInput("finish_run needs a final status, not running")
        now = utc_now_ms()
        with self._db.atomic():
            conversation_id = self._run_conversation(run_id)
            self._lock_conversation(conversation_id)
            finished = self._db.execute_sql(
                self._sql.finish_run,
                (status.value, usage_json, failure_category, failure_message, now, now, run_id),
            ).rowcount
            if finished:
                self._db.execute_sql(self._sql.release_conversation, (now, conversation_id, run_id))
        return finished == 1

    def cancel_unfinished_runs(self, reason: str) -> int:
        """At startup: runs left ``running`` by a dead process become ``cancelled`` and release
        their conversations; returns how many."""
        now = utc_now_ms()
        t = self._runs
        c = self._conversations
        with self._db.atomic():
            running = t.select(t.run_id).where(t.status == RunStatus.RUNNING.value)
            c.update(active_run_id=None, updated_at_ms=now).where(
                c.active_run_id.in_(running)
            ).execute()
            return int(
                t.update(
                    status=RunStatus.CANCELLED.value,
                    failure_message=reason,
                    finished_at_ms=now,
                    updated_at_ms=now,
                )
                .where(t.status == RunStatus.RUNNING.value)
                .execute()
            )

    # --- appending -----------------------------------------------------------------------------

    def append_messages(
        self, run_id: str, expected_head: int, messages: Sequence[StoredMessage]
    ) -> int:
        """Append ``messages`` as one new revision on ``expected_head``; returns it (the new head).

        ``StaleRun`` unless ``run_id`` still owns the conversation and its head is
        ``expected_head``. A message already in this history, or recorded in the conversation
        with different content, is refused (``MessageConflict``).
        """
        additions = _check_messages(messages)
        if not additions:
            raise InvalidInput("append_messages needs at least one message")
        now = utc_now_ms()
        with self._db.atomic():
            conversation_id, _ = self._own(run_id, expected_head)
            revision_id = self._extend(conversation_id, expected_head, additions, now)
            self._move_head(conversation_id, run_id, revision_id, now)
            return revision_id

    def append_once(
        self, run_id: str, expected_head: int, message: StoredMessage
    ) -> tuple[int, bool]:
        """Append ``message`` unless the history already holds it; returns (head, inserted).

        Looks in the current head's history for the same message id or runtime event id:
        identical → (head, False), nothing written; different → ``MessageConflict``; absent →
        appended on ``expected_head`` like ``append_messages`` → (new head, True). The check and
        the insert share one transaction, so concurrent callers insert once. The head returned
        for an existing message is the run's current head, which is ``expected_head`` unless
        another append of the same run moved it meanwhile.

        ``inserted`` says the message joined the head's history (the head moved, so a new state
        must be published). A retry from the same base may land on the revision its first
        attempt made (same history, same digest): the head moves, no row is written.
        """
        wanted = _check_message(message)
        event = wanted.runtime_event_id
        now = utc_now_ms()
        with self._db.atomic():
            conversation_id, head = self._own(run_id, None)
            recorded = self._recorded(conversation_id, [wanted])
            held = self._in_history(head, recorded)
            found = [recorded[message_id] for message_id in sorted(held)]
            if found:
                if found == [wanted]:
                    return head, False
                raise MessageConflict(
                    f"message {wanted.message_id} (runtime event {event}) is already in this "
                    "history with different content"
                )
            if head != expected_head:
                raise StaleRun(self._moved(run_id, conversation_id, expected_head, head))
            revision_id = self._append(conversation_id, head, [wanted], recorded, now)
            self._move_head(conversation_id, run_id, revision_id, now)
            return revision_id, True

    # --- tool rounds ---------------------------------------------------------------------------

    def create_tool_round(
        self,
        run_id: str,
        round_id: str,
        expected_head: int,
        assistant_json: bytes,
        calls: Sequence[ToolCallSpec],
        *,
        created_at_ms: int | None = None,
    ) -> None:
        """Record a round of tool calls, all pending, based on the run's head.

        ``assistant_json`` (text, thinking, replay state of the model's message) is kept as
        given. ``created_at_ms`` lets a resumed round keep its original start time.
        """
        _check_id(round_id, "round_id")
        if not isinstance(assistant_json, bytes):
            raise InvalidInput("assistant_json must be bytes")
        checked = self._check_calls(round_id, calls)
        now = utc_now_ms()
        with self._db.atomic():
            self._own(run_id, expected_head)
            r = self._rounds
            if r.select(r.round_id).where(r.round_id == round_id).exists():
                raise ToolRoundExists(f"tool round {round_id} already exists")
            r.insert(
                round_id=round_id,
                run_id=run_id,
                base_revision_id=expected_head,
                assistant_json=assistant_json,
                status=ToolRoundStatus.PENDING.value,
                next_completion_seq=0,
                created_at_ms=now if created_at_ms is None else created_at_ms,
                updated_at_ms=now,
            ).execute()
            self._calls.insert(
                [
                    {
                        "round_id": round_id,
                        "call_index": call.index,
                        "call_id": call.call_id,
                        "model_call_id": call.model_call_id,
                        "name": call.name,
                        "arguments": call.arguments,
                        "status": ToolCallStatus.PENDING.value,
                    }
                    for call in checked
                ]
            ).execute()

    def commit_tool_result(
        self,
        run_id: str,
        round_id: str,
        call_id: str,
        pair: tuple[StoredMessage, StoredMessage],
        content: str,
        is_error: bool,
        *,
        reserve_call_when_settled: bool = False,
    ) -> ToolResultCommitted:
        """Append the (assistant call, tool result) pair as ONE revision on the run's head and
        mark the call completed, in one transaction. With ``reserve_call_when_settled``, the
        last result of a round also reserves the next provider call index
        (``begin_provider_call``) in that transaction: one commit before the model is asked.

        Results arrive in any order; ``completion_seq`` numbers them 0, 1, 2, ... in arrival
        order, and the round is ``settled`` when no call is pending. Refused: a run that lost
        ownership (``StaleRun``), an unknown round (``ToolRoundNotFound``), a settled round
        (``ToolRoundSettled``), an unknown call id (``UnknownToolCall``), a second result for a
        call (``DuplicateToolResult``).

        On the critical path of every tool round: the run, round and call are checked in one
        read, and the run row's new head and reserved index are one write (13 statements, 14
        when it reserves, where it took 16 and 20).
        """
        _check_id(call_id, "call_id")
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InvalidInput("pair must be a tuple (assistant message, tool result message)")
        messages = _check_messages(pair)
        if messages[0].role != "assistant" or messages[1].role != "tool":
            raise InvalidInput("pair must be an assistant message followed by a tool message")
        if not isinstance(content, str) or not isinstance(is_error, bool):
            raise InvalidInput("content must be a string and is_error a bool")
        now = utc_now_ms()
        sql = self._sql
        with self._db.atomic():
            # _own's checks, with the round and call read in the same statement as the run.
            conversation_id = self._run_conversation(run_id)
            locked = self._lock_conversation(conversation_id)
            assert locked is not None
            current, active = locked
            run_status, round_status, seq, call_status, pending = self._db.execute_sql(
                sql.commit_state, (round_id, call_id, run_id)
            ).fetchone()
            head = self._check_owner(run_id, conversation_id, current, active, run_status, None)
            if round_status is None:
                raise ToolRoundNotFound(f"run {run_id} has no tool round {round_id}")
            if round_status == ToolRoundStatus.SETTLED:
                raise ToolRoundSettled(f"tool round {round_id} is already settled")
            if call_status is None:
                raise UnknownToolCall(f"tool round {round_id} has no call {call_id}")
            if call_status != ToolCallStatus.PENDING:
                raise DuplicateToolResult(
                    f"call {call_id} of round {round_id} already has a result"
                )
            revision_id = self._extend(conversation_id, head, messages, now)
            settled = pending == 1  # this call was the round's last pending one
            call_index = None
            if settled and reserve_call_when_settled:
                # _move_head and begin_provider_call in one write of the run row.
                self._move_conversation_head(conversation_id, run_id, revision_id, now)
                updated = self._db.execute_sql(
                    sql.move_run_head_and_reserve, (revision_id, now, run_id)
                )
                call_index = self._reserved_index(run_id, updated.rowcount)
            else:
                self._move_head(conversation_id, run_id, revision_id, now)
            self._db.execute_sql(
                sql.complete_call, (seq, content, is_error, revision_id, now, round_id, call_id)
            )
            status = ToolRoundStatus.SETTLED if settled else ToolRoundStatus.PENDING
            self._db.execute_sql(sql.advance_round, (seq + 1, status.value, now, round_id))
        return ToolResultCommitted(revision_id, seq, settled, call_index)

    def tool_round(self, round_id: str) -> ToolRoundRecord | None:
        """A round with all its calls (index order), or None."""
        r = self._rounds
        query = r.select(*_columns(r, _ROUND_COLUMNS)).where(r.round_id == round_id)
        for row in query.dicts():
            row["assistant_json"] = _bytes(row["assistant_json"])
            row["calls"] = self._round_calls(round_id, pending_only=False)
            return msgspec.convert(row, ToolRoundRecord)
        return None

    def pending_calls(self, round_id: str) -> list[ToolCallRecord]:
        """The round's calls still waiting for a result, in index order."""
        r = self._rounds
        if not r.select(r.round_id).where(r.round_id == round_id).exists():
            raise ToolRoundNotFound(f"no tool round {round_id}")
        return list(self._round_calls(round_id, pending_only=True))

    # --- resuming a tool round ------------------------------------------------------------------

    def find_pending_round(
        self, conversation_id: str, base_revision_id: int, call_ids: Sequence[str]
    ) -> ToolRoundRecord | None:
        """The pending tool round of the conversation created on ``base_revision_id`` whose
        call ids are exactly ``call_ids`` (in any order), or None.

        How a run finds the round a dropped client stream interrupted, from what the client's
        state says (the round's base and its calls); ``adopt_tool_round`` then takes it over.
        Should several match, the most recently created one is returned.
        """
        _check_id(conversation_id, "conversation_id")
        _check_revision_id(base_revision_id, "base_revision_id")
        wanted = _check_call_ids(call_ids)
        r, u, c = self._rounds, self._runs, self._calls
        query = (
            r.select(r.round_id, c.call_id)
            .join(u, on=u.run_id == r.run_id)
            .join(c, on=c.round_id == r.round_id)
            .where(
                (u.conversation_id == conversation_id)
                & (r.base_revision_id == base_revision_id)
                & (r.status == ToolRoundStatus.PENDING.value)
            )
            .order_by(r.created_at_ms.desc(), r.round_id.desc())
        )
        rounds: dict[str, set[str]] = {}
        for round_id, call_id in query.tuples():
            rounds.setdefault(round_id, set()).add(call_id)
        for round_id, calls in rounds.items():  # newest first
            if calls == wanted:
                return self.tool_round(round_id)
        return None

    def adopt_tool_round(self, run_id: str, round_id: str) -> ToolRoundRecord:
        """Make ``run_id`` the owner of a still-pending round of its conversation, so it commits
        the remaining results (``commit_tool_result(run_id, round_id, ...)``); returns the round
        as adopted, its calls with their statuses and committed revisions.

        The run must own its conversation (``StaleRun``) and stand on the round's head
        (``round_head``: the revision holding its last committed pair, or its base when none
        completed), so the remaining pairs extend the same chain: claim the run on that revision
        first, else ``StaleRun``. Refused too: an unknown round (``ToolRoundNotFound``), one of
        another conversation (``ToolRoundConversationMismatch``), a settled one
        (``ToolRoundSettled``). Adopting a round the run already holds changes nothing.
        """
        _check_id(run_id, "run_id")
        _check_id(round_id, "round_id")
        now = utc_now_ms()
        with self._db.atomic():
            conversation_id, head = self._own(run_id, None)
            record = self.tool_round(round_id)
            if record is None:
                raise ToolRoundNotFound(f"no tool round {round_id}")
            owner = self._run_conversation(record.run_id)
            if owner != conversation_id:
                raise ToolRoundConversationMismatch(
                    f"tool round {round_id} belongs to conversation {owner}, "
                    f"not to conversation {conversation_id} of run {run_id}"
                )
            if record.status is ToolRoundStatus.SETTLED:
                raise ToolRoundSettled(f"tool round {round_id} is already settled")
            expected = self.round_head(record)
            if head != expected:
                raise StaleRun(
                    f"run {run_id} is at revision {head}, but tool round {round_id} continues "
                    f"from revision {expected}: claim the run there to adopt the round"
                )
            if record.run_id == run_id:
                return record
            r = self._rounds
            r.update(run_id=run_id, updated_at_ms=now).where(r.round_id == round_id).execute()
            return msgspec.structs.replace(record, run_id=run_id, updated_at_ms=now)

    @staticmethod
    def round_head(tool_round: ToolRoundRecord) -> int:
        """The revision holding the round's last committed pair (the call with the highest
        ``completion_seq``), or the round's base when no call completed yet: where a run that
        resumes the round must stand, and the history its next checkpoint shows."""
        committed = {
            call.completion_seq: call.committed_revision_id
            for call in tool_round.calls
            if call.completion_seq is not None
        }
        if not committed:
            return tool_round.base_revision_id
        revision = committed[max(committed)]
        assert revision is not None, f"round {tool_round.round_id}: a completed call has no pair"
        return revision

    # --- internals -----------------------------------------------------------------------------

    # Every helper below assumes the caller's transaction is open: none opens its own (a nested
    # ``atomic`` would cost a SAVEPOINT and its RELEASE). The statements are ``self._sql``'s.

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
            self._db.execute_sql(
                self._sql.insert_conversation, (conversation_id, now, now)
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
            self._db.execute_sql(self._sql.set_current, (root, now, conversation_id))
        return root, active, created

    def _lock_conversation(self, conversation_id: str) -> tuple[int | None, str | None] | None:
        """(current revision, active run) of the conversation, its row locked for this
        transaction on PostgreSQL (SQLite's IMMEDIATE transaction already holds the write lock)."""
        row = self._db.execute_sql(self._sql.lock_conversation, (conversation_id,)).fetchone()
        return None if row is None else (row[0], row[1])

    def _run_conversation(self, run_id: str) -> str:
        row = self._db.execute_sql(self._sql.run_conversation, (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(f"no run {run_id}")
        return str(row[0])

    def _own(self, run_id: str, expected_head: int | None) -> tuple[str, int]:
        """Lock the run's conversation and check the run owns it (at ``expected_head`` if
        given); returns (conversation id, current head)."""
        conversation_id = self._run_conversation(run_id)
        locked = self._lock_conversation(conversation_id)
        assert locked is not None
        current, active = locked
        row = self._db.execute_sql(self._sql.run_status, (run_id,)).fetchone()
        status = None if row is None else row[0]
        head = self._check_owner(run_id, conversation_id, current, active, status, expected_head)
        return conversation_id, head

    def _check_owner(
        self,
        run_id: str,
        conversation_id: str,
        current: int | None,
        active: str | None,
        status: str | None,
        expected_head: int | None,
    ) -> int:
        """``StaleRun`` unless the run is running and the conversation's active run (read under
        the conversation's lock), at ``expected_head`` if given; the current head."""
        if active != run_id or status != RunStatus.RUNNING:
            raise StaleRun(
                f"run {run_id} no longer owns conversation {conversation_id} "
                f"(run {status}, active run {active})"
            )
        assert current is not None
        if expected_head is not None and current != expected_head:
            raise StaleRun(self._moved(run_id, conversation_id, expected_head, current))
        return int(current)

    @staticmethod
    def _moved(run_id: str, conversation_id: str, expected: int, current: int) -> str:
        return (
            f"run {run_id} expected conversation {conversation_id} at revision {expected}, "
            f"but it is at revision {current}"
        )

    def _claimable(self, run_id: str, conversation_id: str) -> int | None:
        """The ``provider_call_index`` of the run if it exists (None if new), after checking
        it may be claimed on this conversation (``RunConflict`` otherwise).

        A run that is not running changes only under its conversation's lock, which the caller
        holds, so the index read here is still the run's when the claim writes it."""
        row = self._db.execute_sql(self._sql.run, (run_id,)).fetchone()
        if row is None:
            return None
        owner, status, call_index = row
        if owner != conversation_id:
            raise RunConflict(f"run {run_id} belongs to conversation {owner}")
        if status == RunStatus.RUNNING:
            raise RunConflict(f"run {run_id} is already running")
        return int(call_index)

    def _write_claim(
        self,
        run_id: str,
        conversation_id: str,
        active: str | None,
        existing: int | None,
        base: int,
        head: int,
        call_index: int,
        now: int,
    ) -> str | None:
        """A claim's writes: cancel the superseded active run, (re)start the run on ``base``
        at ``head`` with ``call_index``, make it the conversation's active run at ``head``;
        the superseded run's id. ``existing`` is ``_claimable``'s answer."""
        sql = self._sql
        superseded = None
        if active is not None and active != run_id:
            superseded = active
            self._db.execute_sql(sql.cancel_run, (f"superseded by run {run_id}", now, now, active))
        if existing is None:
            self._db.execute_sql(
                sql.insert_run, (run_id, conversation_id, base, head, call_index, now, now)
            )
        else:
            self._db.execute_sql(sql.restart_run, (base, head, call_index, now, run_id))
        self._db.execute_sql(sql.claim_conversation, (head, run_id, now, conversation_id))
        return superseded

    def _reserved_index(self, run_id: str, updated: int) -> int:
        """The index a ``provider_call_index + 1`` update of a running run (``updated`` rows)
        just reserved; ``RunNotFound``/``StaleRun`` when it updated nothing."""
        row = self._db.execute_sql(self._sql.run_call_index, (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(f"no run {run_id}")
        status, index = row
        if updated != 1:
            raise StaleRun(f"run {run_id} is {status}: it may not start a provider call")
        return int(index)

    def _move_head(self, conversation_id: str, run_id: str, revision_id: int, now: int) -> None:
        self._move_conversation_head(conversation_id, run_id, revision_id, now)
        self._db.execute_sql(self._sql.move_run_head, (revision_id, now, run_id))

    def _move_conversation_head(
        self, conversation_id: str, run_id: str, revision_id: int, now: int
    ) -> None:
        moved = self._db.execute_sql(
            self._sql.move_conversation_head, (revision_id, now, conversation_id, run_id)
        ).rowcount
        assert moved == 1, f"run {run_id} lost conversation {conversation_id} under its lock"

    def _require_revision_of(self, conversation_id: str, revision_id: int) -> tuple[bytes, int]:
        """``RevisionNotFound`` unless the revision is the conversation's; else its (state
        digest, history length), which a child needs."""
        row = self._db.execute_sql(self._sql.revision, (revision_id,)).fetchone()
        owner = None if row is None else row[0]
        if owner != conversation_id:
            raise RevisionNotFound(
                f"conversation {conversation_id} has no revision {revision_id}"
                + (f" (it belongs to {owner})" if owner is not None else "")
            )
        return _bytes(row[1]), int(row[2])

    def _revision_by_digest(self, conversation_id: str, digest: bytes) -> int | None:
        row = self._db.execute_sql(
            self._sql.revision_by_digest, (conversation_id, digest)
        ).fetchone()
        return None if row is None else int(row[0])

    def _lineage(self, revision_id: int) -> list[StoredMessage] | None:
        """The revision's full history, or None if there is no such revision."""
        rows = self._db.execute_sql(self._lineage_sql, (revision_id,)).fetchall()
        if not rows:
            return None
        return [
            StoredMessage(message_id, role, origin, _bytes(payload), event)
            for message_id, role, origin, payload, event in rows
            if message_id is not None
        ]

    def _known_lineage(self, revision_id: int) -> list[StoredMessage]:
        messages = self._lineage(revision_id)
        assert messages is not None, f"revision {revision_id} vanished"
        return messages

    def _digest_and_count(self, revision_id: int) -> tuple[bytes, int]:
        """(state digest, history length) of a revision known to exist: all a child needs."""
        row = self._db.execute_sql(self._sql.revision, (revision_id,)).fetchone()
        if row is None:
            raise AssertionError(f"revision {revision_id} vanished")
        return _bytes(row[1]), int(row[2])

    def _holds(self, revision_id: int, digest: bytes, messages: list[StoredMessage]) -> bool:
        """Whether the revision (of ``digest``) has exactly ``messages`` as its history: payloads
        compared by digest, ids and metadata row by row (no stored payload is read)."""
        if state_digest(m.payload for m in messages) != digest:
            return False
        sql = _LINEAGE_METADATA_SQL.format(param=self._db.param)
        rows = self._db.execute_sql(sql, (revision_id,)).fetchall()
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
        condition = f'"message_id" IN ({_placeholders(p, len(ids))})'
        if events:
            condition = f'({condition} OR "runtime_event_id" IN ({_placeholders(p, len(events))}))'
        rows = self._db.execute_sql(
            self._sql.recorded + condition, (conversation_id, *ids, *events)
        ).fetchall()
        return {
            row[0]: StoredMessage(row[0], row[1], row[2], _bytes(row[3]), row[4]) for row in rows
        }

    def _in_history(self, revision_id: int, message_ids: Iterable[str]) -> set[str]:
        """Which of these (recorded) message ids the revision's history holds; no query when
        there are none, which is the common case of an append."""
        ids = list(message_ids)
        if not ids:
            return set()
        param = self._db.param
        sql = _IN_LINEAGE_SQL.format(param=param, ids=", ".join([param] * len(ids)))
        return {row[0] for row in self._db.execute_sql(sql, (revision_id, *ids)).fetchall()}

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
            self._db.execute_sql(sql.insert_revision_messages + values, params)
        return revision_id

    def _insert_revision(
        self, conversation_id: str, parent: int | None, digest: bytes, count: int, now: int
    ) -> int:
        params = (conversation_id, parent, digest, count, now)
        cursor = self._db.execute_sql(self._sql.insert_revision, params)
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
            self._db.execute_sql(sql.insert_messages + values, params)

    @staticmethod
    def _check_calls(round_id: str, calls: Sequence[ToolCallSpec]) -> list[ToolCallSpec]:
        checked = list(calls)
        if not checked:
            raise InvalidInput(f"tool round {round_id} has no calls")
        for call in checked:
            if not isinstance(call, ToolCallSpec):
                raise InvalidInput(f"expected a ToolCallSpec, got {type(call).__name__}")
            if not isinstance(call.index, int) or call.index < 0:
                raise InvalidInput(f"tool call {call.call_id}: bad index {call.index!r}")
            _check_id(call.call_id, "call_id")
            for value, what in ((call.model_call_id, "model_call_id"), (call.name, "name")):
                _check_id(value, f"tool call {call.call_id}: {what}")
            if not isinstance(call.arguments, str):
                raise InvalidInput(f"tool call {call.call_id}: arguments must be a string")
        if len({c.index for c in checked}) != len(checked):
            raise InvalidInput(f"tool round {round_id} repeats a call index")
        if len({c.call_id for c in checked}) != len(checked):
            raise InvalidInput(f"tool round {round_id} repeats a call id")
        return checked

    def _round_calls(self, round_id: str, *, pending_only: bool) -> tuple[ToolCallRecord, ...]:
        c = self._calls
        condition = c.round_id == round_id
        if pending_only:
            condition &= c.status == ToolCallStatus.PENDING.value
        query = (
            c.select(c.call_index.alias("index"), *_columns(c, _CALL_FIELDS))
            .where(condition)
            .order_by(c.call_index)
        )
        calls = []
        for row in query.dicts():
            if row["result_is_error"] is not None:
                row["result_is_error"] = bool(row["result_is_error"])
            calls.append(msgspec.convert(row, ToolCallRecord))
        return tuple(calls)
