"""The CheckpointActor's protocol: the steps and jobs it takes, what it answers, and the
ports it is given, as one closed union."""

from __future__ import annotations

from typing import Protocol

import msgspec

from actors.conversation.model import AssistantContent, CanonicalMessage
from actors.conversation.request import ToolSpec
from actors.protocols.blob_sync import BlobsPersisted, BlobSyncFailed
from wire.errors import ConnectError
from wire.proto import agent_v1_pb2 as agent


class ThinkingStep(msgspec.Struct, frozen=True):
    text: str
    duration_ms: int


class AssistantStep(msgspec.Struct, frozen=True):
    text: str


class ToolCallStep(msgspec.Struct, frozen=True):
    """A completed tool call's typed ``ToolCall`` protobuf, serialized."""

    tool_call: bytes


Step = ThinkingStep | AssistantStep | ToolCallStep


class CheckpointSetup(msgspec.Struct, frozen=True):
    """What every checkpoint of the run shares."""

    request_id: str
    instructions: str
    model_name: str
    mode: int
    tools: tuple[ToolSpec, ...]
    context_window: int | None
    user_message: agent.UserMessage | None
    base: agent.ConversationStateStructure | None = None
    # The client's stable roots (system root excluded) and how many leading canonical
    # messages of every job they stand for: those are reused as they are, never re-encoded.
    base_roots: tuple[bytes, ...] = ()
    base_message_count: int = 0
    # A resumed turn (no new user message): the client's last turn blob, extended with the
    # steps of this run instead of starting a new turn.
    resume_turn: bytes | None = None
    conversation_id: str = ""
    # A subagent run's parent Task call id (its parent headers): the checkpoint keeps the
    # run's UpdateCurrentStep state under it. Empty for any other run.
    parent_tool_call_id: str = ""
    # The run's dynamic MCP tools among ``tools``: offered name -> Cursor's name of the tool
    # (a pending call's ``toolIdentifier``).
    dynamic_tools: tuple[tuple[str, str], ...] = ()


class ShellTurn(msgspec.Struct, frozen=True):
    """A command the user ran from the chat, as the checkpoint's turn keeps it: a serialized
    ``ShellCommand`` and its serialized ``ShellOutput``."""

    command: bytes
    output: bytes


class PublishSettled(msgspec.Struct, frozen=True):
    """Publish the settled state of ``messages`` (no pending calls), e.g. the new user turn.
    ``revision_id`` is the revision those messages are (indexed so the state maps back).
    ``shell_turn``: the run's turn is that command (the run ends with this checkpoint, so it
    is indexed before the run hears it is out).

    ``awaits_commit``: the messages are still being committed; the blobs are SET now, and
    the checkpoint is published only after ``MessagesCommitted`` (which names the revision).

    ``ends_run``: the run ends with this checkpoint (indexed before the run hears it is out),
    sent after ``lead_frames`` once its blobs are acknowledged (a summarize run's
    ``turn_ended``)."""

    job_id: int
    messages: tuple[CanonicalMessage, ...]
    steps: tuple[Step, ...]
    used_tokens: int | None
    revision_id: int | None = None
    awaits_commit: bool = False
    shell_turn: ShellTurn | None = None
    ends_run: bool = False
    lead_frames: tuple[bytes, ...] = ()


class MessagesCommitted(msgspec.Struct, frozen=True):
    """The messages of job ``job_id`` are committed: they are revision ``revision_id``."""

    job_id: int
    revision_id: int


class PublishStaged(msgspec.Struct, frozen=True):
    """A tool round started, or one of its calls completed: the stable roots stay as they are,
    ``pending`` (the round's one complete assistant message, every call in it) is published as
    the pending tool call, followed by ``results``, the tool messages of the calls completed
    so far (what proves to a later resume that they ran)."""

    job_id: int
    messages: tuple[CanonicalMessage, ...]
    pending: AssistantContent
    steps: tuple[Step, ...]
    used_tokens: int | None
    started_at_ms: int
    results: tuple[CanonicalMessage, ...] = ()


class PublishFinal(msgspec.Struct, frozen=True):
    """The end of a successful turn: ``lead_frames`` (turn_ended), then the staged checkpoint
    (the final assistant pending), the settled one, and the settled one again."""

    job_id: int
    messages: tuple[CanonicalMessage, ...]
    final: CanonicalMessage
    steps: tuple[Step, ...]
    used_tokens: int | None
    lead_frames: tuple[bytes, ...]
    started_at_ms: int
    revision_id: int | None = None


class CheckpointPublished(msgspec.Struct, frozen=True):
    job_id: int


class CheckpointFailed(msgspec.Struct, frozen=True):
    job_id: int
    error: ConnectError


# Everything the CheckpointActor takes: its jobs, the commits they wait for, and the KV facts
# its BlobSyncActor reports.
CheckpointMessage = (
    PublishSettled
    | PublishStaged
    | PublishFinal
    | MessagesCommitted
    | BlobsPersisted
    | BlobSyncFailed
)


CheckpointJob = PublishSettled | PublishStaged | PublishFinal


class CheckpointListener(Protocol):
    def tell(self, message: CheckpointPublished | CheckpointFailed) -> None: ...


class CheckpointIndex(Protocol):
    """Where published settled states are recorded (``store.conversations``)."""

    def record_checkpoint(
        self, conversation_id: str, roots_digest: bytes, revision_id: int
    ) -> None: ...
