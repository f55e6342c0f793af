"""The conversation store: immutable messages in a revision chain, runs, tool rounds,
checkpoint states.

One part per record, each a module: ``revisions`` (the chain: conversations, messages,
revisions, imports), ``runs`` (claims, call indexes, ends, ownership), ``appends`` (a run's
writes to its history), ``tool_rounds``, ``checkpoint_index``; and what they share: ``records``,
``errors``, ``digests``, ``checks`` and ``sql`` (tables and precompiled statements). Each part
is a class over the part it builds on, so a call across parts is typed and points one way
(appends and tool rounds → runs → revisions; the checkpoint index → revisions), and
``ConversationStore`` is their union, with no method of its own.

The store never imports ``actors``: callers hand it already-encoded canonical message bytes
(``actors.conversation.model.encode_message``) plus the metadata it indexes. Every write runs in
one transaction (SQLite ``BEGIN IMMEDIATE``; on PostgreSQL the conversation row is locked
``FOR UPDATE`` first, always before any run or round row, so writers cannot deadlock). Methods are
synchronous and safe to share between threads (peewee keeps one connection per thread); callers
on an event loop use ``asyncio.to_thread``. Times are UTC milliseconds since the epoch
(``store.base.clock``).
"""

from __future__ import annotations

from store.conversations.appends import Appends
from store.conversations.checkpoint_index import CheckpointIndex
from store.conversations.digests import (
    DIGEST_SIZE,
    EMPTY_STATE_DIGEST,
    extend_digest,
    roots_digest,
    state_digest,
)
from store.conversations.errors import (
    ConversationNotFound,
    ConversationStoreError,
    DuplicateToolResult,
    HeadMoved,
    InvalidInput,
    MessageConflict,
    RevisionConflict,
    RevisionNotFound,
    RunConflict,
    RunHeldByPeer,
    RunNotFound,
    StaleRun,
    ToolRoundConversationMismatch,
    ToolRoundExists,
    ToolRoundNotFound,
    ToolRoundSettled,
    UnknownToolCall,
)
from store.conversations.records import (
    ANY_HEAD,
    ORIGINS,
    ROLES,
    ClaimedRun,
    ConversationRecord,
    RevisionRecord,
    RunRecord,
    RunStatus,
    StartedTurn,
    StoredMessage,
    ToolCallRecord,
    ToolCallSpec,
    ToolCallStatus,
    ToolResultCommitted,
    ToolRoundRecord,
    ToolRoundStatus,
)
from store.conversations.tool_rounds import ToolRounds


class ConversationStore(Appends, ToolRounds, CheckpointIndex):
    """Typed, synchronous access to conversations; see the package docstring for the rules.

    Its methods are its parts' (``Appends``, ``ToolRounds``, ``CheckpointIndex``, and below
    them ``Runs`` and ``Revisions``); each part binds its own tables."""


__all__ = [
    "ANY_HEAD",
    "DIGEST_SIZE",
    "EMPTY_STATE_DIGEST",
    "ORIGINS",
    "ROLES",
    "ClaimedRun",
    "ConversationNotFound",
    "ConversationRecord",
    "ConversationStore",
    "ConversationStoreError",
    "DuplicateToolResult",
    "HeadMoved",
    "InvalidInput",
    "MessageConflict",
    "RevisionConflict",
    "RevisionNotFound",
    "RevisionRecord",
    "RunConflict",
    "RunHeldByPeer",
    "RunNotFound",
    "RunRecord",
    "RunStatus",
    "StaleRun",
    "StartedTurn",
    "StoredMessage",
    "ToolCallRecord",
    "ToolCallSpec",
    "ToolCallStatus",
    "ToolResultCommitted",
    "ToolRoundConversationMismatch",
    "ToolRoundExists",
    "ToolRoundNotFound",
    "ToolRoundRecord",
    "ToolRoundSettled",
    "ToolRoundStatus",
    "UnknownToolCall",
    "extend_digest",
    "roots_digest",
    "state_digest",
]
