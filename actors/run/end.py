"""The end of a run, carried out: what ``actors.turn.ending.RunEnding`` returns, done in order
(the run's row, the aborts of pending execs, the child actors, the conversation's owner, the
EndStream). Every kind of run (``AgentRun``, ``ShellCommandRun``, ``SummarizeRun``) ends through
one of these.
"""

from __future__ import annotations

from collections.abc import Callable

import peewee

from actors.codecs.checkpoint_json import CheckpointJsonError
from actors.codecs.checkpoint_state import CheckpointStateError
from actors.conversation.events import Usage
from actors.run.base import record_run_end
from actors.run.children import RunChildren
from actors.run.owners import RunOwners
from actors.store_failure import store_failure
from actors.turn import ending, timeline
from actors.turn.ending import EndEffect, RunEnding
from store.base.clock import now_ms
from store.conversations import (
    ConversationStore,
    ConversationStoreError,
    RunConflict,
    RunHeldByPeer,
    StaleRun,
)
from wire.errors import Code, ConnectError, cancelled_error, protocol_error


def run_guarded(step: Callable[[], object], finish: Callable[[ConnectError], None]) -> None:
    """Run a step that reads or writes the store or decodes the client's state; its failure
    ends the run (``finish``) with the matching error."""
    try:
        step()
    except ConnectError as error:
        finish(error)
    except StaleRun:
        finish(cancelled_error())
    except (CheckpointJsonError, CheckpointStateError) as exc:
        finish(protocol_error(f"conversation_state: {exc}"))
    except peewee.DatabaseError as exc:
        finish(store_failure(exc))
    except RunHeldByPeer as exc:
        finish(ConnectError(Code.UNAVAILABLE, str(exc)))
    except RunConflict as exc:
        finish(ConnectError(Code.ABORTED, str(exc)))
    except ConversationStoreError as exc:
        finish(ConnectError(Code.INTERNAL, f"store error: {exc}"))


class RunEnd:
    """One run's ending; ``end_session`` (the SessionActor's) is called exactly once."""

    def __init__(
        self,
        request_id: str,
        conversation_id: str,
        store: ConversationStore,
        children: RunChildren,
        owners: RunOwners,
        end_session: Callable[[ConnectError | None], None],
    ) -> None:
        self._request_id = request_id
        self._conversation_id = conversation_id
        self._store = store
        self._children = children
        self._owners = owners
        self._end_session = end_session
        self._ending = RunEnding()

    @property
    def started(self) -> bool:
        """True once the run is ending: no phase may act any more."""
        return self._ending.started

    def finish(self, error: ConnectError | None, *, claimed: bool, usage: Usage | None) -> None:
        """End the run (None: completed); only the first end counts."""
        running = self._children.tools_running
        self._apply(self._ending.end(error, claimed=claimed, usage=usage, tools_running=running))

    def tools_stopped(self) -> None:
        """The tool runtime stopped (after an abort, or on its own)."""
        self._children.tools_stopped()
        self._apply(self._ending.tools_stopped())

    def _apply(self, effects: tuple[EndEffect, ...]) -> None:
        after: tuple[EndEffect, ...] = ()
        for effect in effects:
            match effect:
                case ending.RecordRunEnd():
                    record_run_end(self._store, self._request_id, effect)
                case ending.AbortPendingCalls(reason=reason):
                    if not self._children.abort_tools(reason):
                        after = self._ending.tools_stopped()  # it had stopped: no answer comes
                case ending.StopChildren():
                    self._children.stop()
                case ending.ReleaseConversation():
                    self._owners.release(self._conversation_id, self._request_id)
                case ending.EndStream(error=error):
                    self._children.record(timeline.run_ended(error, now_ms()))
                    self._end_session(error)
                case _:
                    raise TypeError(f"unknown end effect {effect!r}")
        if after:
            self._apply(after)
