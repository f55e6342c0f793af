"""The conversation store's records: what its methods take and return, frozen so a record read
once can be handed between threads and actors as it is."""

from __future__ import annotations

from enum import StrEnum

import msgspec

ROLES = frozenset({"system", "user", "assistant", "tool"})
ORIGINS = frozenset({"prompt", "user", "runtime", "assistant", "tool"})


class AnyHead:
    """``start_turn`` takes whatever head the conversation has (the default)."""


ANY_HEAD = AnyHead()


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
    """One run. ``head_revision_id`` is where the run stood when it was claimed and, once it
    ended (finished, superseded or cancelled at startup), the revision it ended on; while it
    runs, the conversation's head is the one truth."""

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
    """A call and, once completed, its arrival order and the revision holding its pair (whose
    tool message is the result, its text and whether it is an error)."""

    index: int
    call_id: str
    model_call_id: str
    name: str
    arguments: str
    status: ToolCallStatus
    completion_seq: int | None
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
