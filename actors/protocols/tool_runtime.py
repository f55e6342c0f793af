"""The ToolRuntimeActor's protocol: what it tells its listener, and every message it takes,
as one closed union."""

from __future__ import annotations

from typing import Protocol

import msgspec

from actors.conversation.model import CanonicalToolCall
from actors.protocols.call_actions import UserActedOnCall
from wire.errors import ConnectError
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import (
    Todo,
    ToolImage,
)

# ---- replies ----


class ToolCompleted(msgspec.Struct, frozen=True):
    """One call finished: what the LLM reads, and the typed ToolCall for ``tool_call_completed``.

    ``tool_call`` is a serialized ``agent.ToolCall`` with args, result, id and both times, or
    empty for a call of a tool that does not exist (it has no card).
    """

    round_id: str
    call_id: str
    name: str
    model_call_id: str
    content: str
    is_error: bool
    tool_call: bytes
    started_at_ms: int
    completed_at_ms: int
    # The wire ids of the call's execs, in order (an edit reads, then writes); none for a call
    # completed without the editor (bad arguments, a local tool).
    wire_ids: tuple[int, ...] = ()
    images: tuple[ToolImage, ...] = ()  # what the result shows the model besides its text


class ToolRuntimeFailed(msgspec.Struct, frozen=True):
    """The run must end with ``error`` (told once; pending execs wait for the abort)."""

    error: ConnectError


class EndedCall(msgspec.Struct, frozen=True):
    """A call ended unfinished: the wire ids of its requests and queries, the pending one last
    (none for a call that was only pausing)."""

    call_id: str
    name: str
    wire_ids: tuple[int, ...]


class ToolRuntimeStopped(msgspec.Struct, frozen=True):
    """Aborts were sent for these calls' pending execs (ascending ids); ``closed`` calls were
    waiting on a query or a pause and ended with no wire message; the actor has stopped."""

    aborted: tuple[EndedCall, ...]
    closed: tuple[EndedCall, ...] = ()

    @property
    def aborted_ids(self) -> tuple[int, ...]:
        """The wire ids the aborts were sent for, ascending."""
        return tuple(exec_.wire_ids[-1] for exec_ in self.aborted)


ToolRuntimeReply = ToolCompleted | ToolRuntimeFailed | ToolRuntimeStopped


class ToolRuntimeListener(Protocol):
    """Who hears about the run's tools: the SessionActor, or anything with a thread-safe tell."""

    def tell(self, message: ToolRuntimeReply) -> None: ...


# ---- messages told to the actor ----


class StartToolRound(msgspec.Struct, frozen=True):
    """Run these calls of the committed round ``round_id`` (dispatched in index order);
    ``todos`` holds, for each TodoWrite call, the list it merges onto."""

    round_id: str
    calls: tuple[CanonicalToolCall, ...]
    todos: dict[str, tuple[Todo, ...]] = msgspec.field(default_factory=dict)
    message_indexes: dict[str, int] = msgspec.field(default_factory=dict)  # UpdateCurrentStep's
    cut: tuple[str, ...] = ()  # calls whose arguments the output limit cut: an error, not run


class RunUserCommand(msgspec.Struct, frozen=True):
    """Run the command the user typed in the chat (``ShellCommandAction``) as one Shell exec
    whose ``exec_id`` is ``exec_id``: no card is started for it (the model did not call it),
    its output streams as the Shell card's deltas under ``exec_id``, and it completes as
    ``ToolCompleted`` of round ``round_id`` like any call."""

    round_id: str
    exec_id: str
    command: str


class ExecMessageReceived(msgspec.Struct, frozen=True):
    """The editor answered an exec (forwarded by the SessionActor in seqno order)."""

    message: agent.ExecClientMessage


class ExecControlReceived(msgspec.Struct, frozen=True):
    """An exec stream control message: stream_close, throw or heartbeat."""

    message: agent.ExecClientControlMessage


class InteractionResponseReceived(msgspec.Struct, frozen=True):
    """The editor answered an interaction query."""

    message: agent.InteractionResponse


class ToolWakeDue(msgspec.Struct, frozen=True):
    """The pause numbered ``wake_id`` is over (told by its timer)."""

    wake_id: int


class ExecAnswerDue(msgspec.Struct, frozen=True):
    """The exec ``wire_id`` of a kind the editor answers on its own has waited ``waited_s``
    (told by its timer; ``wire.tools.exec_deadline``)."""

    wire_id: int
    waited_s: float


class ServerWorkDone(msgspec.Struct, frozen=True):
    """The server work numbered ``work_id`` answered (told by its worker)."""

    work_id: int
    answer: object


class RoundSettled(msgspec.Struct, frozen=True):
    """Every result of the round is committed: its tombstones can go."""

    round_id: str


class AbortPendingExecs(msgspec.Struct, frozen=True):
    """The run ends: abort every pending exec, report ``ToolRuntimeStopped`` and stop."""

    reason: str


ToolRuntimeMessage = (
    StartToolRound
    | RunUserCommand
    | ExecMessageReceived
    | ExecControlReceived
    | InteractionResponseReceived
    | ToolWakeDue
    | ExecAnswerDue
    | ServerWorkDone
    | RoundSettled
    | AbortPendingExecs
    | UserActedOnCall
)
