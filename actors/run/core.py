"""What every kind of run holds and answers alike: its ids, request and route, its child actors
(``RunChildren``), its checkpoint jobs and its ending (``RunEnd``); a failed checkpoint or blob
sync ends it, the editor's KV messages go to its children, and a cancel from outside ends it.
``AgentRun``, ``ShellCommandRun`` and ``SummarizeRun`` are this core with their own phases, so
none of them can drift from the others in these.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from actors.conversation.request import ModelRoute
from actors.protocols.blob_sync import BlobSyncFailed
from actors.protocols.checkpoint import CheckpointFailed
from actors.protocols.edge import ModelSilenceDue
from actors.protocols.mailbox import ActorHandle
from actors.protocols.run_output import RunOutput
from actors.protocols.session import SessionMessage
from actors.run.children import AgentDeps, RunChildren
from actors.run.end import RunEnd, run_guarded
from actors.run.tool_relay import ToolRelay
from actors.turn import timeline
from actors.turn.plan import CheckpointJobs
from store.base.clock import now_ms
from store.conversations import ConversationStore
from wire.errors import ConnectError
from wire.proto import agent_v1_pb2 as agent


class RunSetup(msgspec.Struct, frozen=True):
    """What the SessionActor gives the run it starts, whatever its kind: ``end`` is the
    session's, called exactly once, with None on success."""

    request_id: str
    request: agent.AgentRunRequest
    route: ModelRoute
    deps: AgentDeps
    output: RunOutput
    self_ref: ActorHandle[SessionMessage]
    end: Callable[[ConnectError | None], None]


class RunCore(ToolRelay):
    """One run's shared state and handlers; the run kind supplies its phases and ``_finish``."""

    def __init__(self, setup: RunSetup) -> None:
        request_id, request, deps = setup.request_id, setup.request, setup.deps
        self.request_id = request_id
        self._request = request
        self._route = setup.route
        self._deps = deps
        self._output = setup.output
        self._self = setup.self_ref
        self._store = ConversationStore(deps.store.database)
        self.conversation_id = request.conversation_id or request_id
        self._children = RunChildren(
            request_id, setup.output, deps, setup.self_ref, self.conversation_id
        )
        self._jobs = CheckpointJobs()
        self._ending = RunEnd(
            request_id, self.conversation_id, self._store, self._children, deps.owners, setup.end
        )

    # ---- the checkpoint and the other actors ----

    def on_model_silence(self, message: ModelSilenceDue) -> None:
        """A keep-alive timer of a model call fired; only a run that keeps one cares."""

    def on_checkpoint_failed(self, message: CheckpointFailed) -> None:
        self._children.record(timeline.checkpoint_ended(message, now_ms()))
        self._finish(message.error)

    def on_blob_sync_failed(self, message: BlobSyncFailed) -> None:
        self._finish(message.error)

    def on_kv_message(self, message: agent.KvClientMessage) -> None:
        self._children.kv_message(message)

    def tell_recorded(self) -> None:  # the SessionActor is done with a message
        self._children.tell_recorded()

    # ---- the end ----

    def cancel(self, error: ConnectError) -> None:
        """Cancel from outside (client cancel, superseding run, shutdown)."""
        self._finish(error)

    def _guarded(self, step: Callable[[], object]) -> None:
        """Run a step that reads or writes the store or decodes the client's state; its
        failure ends the run with the matching error."""
        run_guarded(step, self._finish)
