"""The one way a run ends, as a small state machine that returns what to do.

``end`` is called for every ending (success, failure, cancel, superseded, shutdown); only the
first call counts. A claimed run records its end first. If the run's tool runtime is alive its
pending execs are aborted (ascending ids, before the EndStream) and the ending waits for
``tools_stopped``; then the conversation is released and the stream ends.
"""

from __future__ import annotations

from enum import Enum, auto

import msgspec

from actors.conversation.events import Usage
from store.conversations import RunStatus
from wire.errors import Code, ConnectError


class RecordRunEnd(msgspec.Struct, frozen=True):
    """The store write that ends the run's row (usage only on success)."""

    status: RunStatus
    usage_json: str | None = None
    failure_category: str | None = None
    failure_message: str | None = None


class AbortPendingCalls(msgspec.Struct, frozen=True):
    """Have the tool runtime abort the execs still pending, then stop."""

    reason: str


class StopChildren(msgspec.Struct, frozen=True):
    """Stop the run's provider call, blob sync and checkpoint actors."""


class ReleaseConversation(msgspec.Struct, frozen=True):
    """This process's map of conversation owners forgets the run."""


class EndStream(msgspec.Struct, frozen=True):
    """End the client's stream: with ``error``, or successfully when it is None."""

    error: ConnectError | None


EndEffect = RecordRunEnd | AbortPendingCalls | StopChildren | ReleaseConversation | EndStream


class _Stage(Enum):
    RUNNING = auto()
    ABORTING = auto()  # waiting for the tool runtime to abort its execs and stop
    ENDED = auto()


def run_end_record(error: ConnectError | None, usage: Usage | None) -> RecordRunEnd:
    if error is None:
        usage_json = msgspec.json.encode(usage).decode() if usage is not None else None
        return RecordRunEnd(RunStatus.COMPLETED, usage_json)
    status = RunStatus.CANCELLED if error.code is Code.CANCELED else RunStatus.FAILED
    return RecordRunEnd(status, None, error.code.value, error.message)


class RunEnding:
    def __init__(self) -> None:
        self._stage = _Stage.RUNNING
        self._error: ConnectError | None = None

    @property
    def started(self) -> bool:
        """True once the run is ending: no phase may act any more."""
        return self._stage is not _Stage.RUNNING

    def end(
        self,
        error: ConnectError | None,
        *,
        claimed: bool,
        usage: Usage | None,
        tools_running: bool,
    ) -> tuple[EndEffect, ...]:
        """End the run with ``error`` (None: completed); nothing if it is already ending."""
        if self._stage is not _Stage.RUNNING:
            return ()
        self._error = error
        record: tuple[EndEffect, ...] = (run_end_record(error, usage),) if claimed else ()
        if tools_running:
            self._stage = _Stage.ABORTING
            return (*record, AbortPendingCalls("the run ended"), StopChildren())
        self._stage = _Stage.ENDED
        return (*record, StopChildren(), ReleaseConversation(), EndStream(error))

    def tools_stopped(self) -> tuple[EndEffect, ...]:
        """The tool runtime stopped: an ending that waited for it finishes."""
        if self._stage is not _Stage.ABORTING:
            return ()
        self._stage = _Stage.ENDED
        return (ReleaseConversation(), EndStream(self._error))
