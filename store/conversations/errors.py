"""The conversation store's refusals: one exception per reason, so a caller can tell a lost
run (``StaleRun``) from its own bug (``InvalidInput``) without parsing messages."""

from __future__ import annotations


class ConversationStoreError(Exception):
    """A refused conversation-store operation; the message says what and why."""


class InvalidInput(ConversationStoreError, ValueError):
    """Malformed arguments (unknown role, duplicate ids in one call, empty tool round, ...)."""


class ConversationNotFound(ConversationStoreError):
    """No conversation has this id (``ensure_conversation`` creates one)."""


class HeadMoved(ConversationStoreError):
    """The conversation's head is not the one the caller expected (another run moved it)."""


class RevisionNotFound(ConversationStoreError):
    """No revision has this id, or it belongs to another conversation."""


class RunNotFound(ConversationStoreError):
    """No run has this id."""


class RunConflict(ConversationStoreError):
    """The run id cannot be claimed: it is running, or it belongs to another conversation."""


class RunHeldByPeer(RunConflict):
    """The run id is running on another instance whose lease has not expired: a retry after
    the lease expires takes the run over (the client retried on this server too early)."""


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
