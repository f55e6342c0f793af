"""A run's child actors: the BlobSyncActor, the CheckpointActor, the current ProviderActor
call and the ToolRuntimeActor, each started when the run first needs it and stopped once; and
the process's RunEventRecorderActor, which hears what the run did (``record``; every checkpoint
job is recorded as submitted as it is handed over). What the run records is told once it is
done with the message it is handling (``tell_recorded``), so the recorder's commit never races
the run's own writes for that message.

The run tells them through this object only, so a message for a child that has already
stopped (the run is ending, or a provider call ended itself) is dropped here rather than
raising ``ActorDeadError`` in the run's thread.
"""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
import pykka

from actors.blob_sync import KvLimits
from actors.blob_sync import start_blob_sync as start_blob_sync_actor
from actors.checkpoint import start_checkpoint_actor
from actors.loop.bridge import LoopTasks
from actors.protocols.blob_sync import (
    BlobSyncMessage,
    CancelBlobSync,
    FetchBlob,
    KvClientMessageReceived,
)
from actors.protocols.checkpoint import (
    CheckpointMessage,
    CheckpointSetup,
    PublishFinal,
    PublishSettled,
    PublishStaged,
)
from actors.protocols.mailbox import ActorHandle, Mailbox
from actors.protocols.provider import CancelProviderCall, ProviderMessage, StartProviderCall
from actors.protocols.run_events import RunEvent, RunEventMessage, RunEventsHappened
from actors.protocols.run_output import RunOutput
from actors.protocols.session import SessionMessage
from actors.protocols.tool_runtime import AbortPendingExecs, ToolRuntimeMessage
from actors.providers.actor import ProviderDeps, start_provider_call
from actors.run.budget_counters import BudgetCounters
from actors.run.history_cache import HistoryCache
from actors.run.owners import RemoteRuns, RunOwners
from actors.run.subagent_links import SubagentLinks, SubagentLinkTable
from actors.services.server_work import ServerWorkers
from actors.tool_runtime import start_tool_runtime
from actors.turn.timeline import checkpoint_submitted
from prompt.assets import PromptAssets
from store import Store
from store.base.clock import now_ms
from store.conversations import ConversationStore
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import ExecContext


class AgentDeps(msgspec.Struct, frozen=True):
    """What every run needs, shared by all SessionActors of the server."""

    store: Store
    prompts: PromptAssets
    provider: ProviderDeps
    owners: RunOwners
    tasks: LoopTasks
    kv_limits: KvLimits = KvLimits()
    histories: HistoryCache = msgspec.field(default_factory=HistoryCache)
    # The RunEventRecorderActor (``actors.run_events``); None: the runs' events are not kept.
    run_events: Mailbox[RunEventMessage] | None = None
    # What tools need the server itself to do (``actors.services.server_work``); None: no tool can.
    server_work: ServerWorkers | None = None
    # The runs other instances hold (one database, several servers); None: one server.
    remote_runs: RemoteRuns | None = None
    # The subagent runs in progress, by their parent run (``cancel_subagent_action``); the
    # composition root gives the shared table when there is a database.
    subagents: SubagentLinkTable = msgspec.field(default_factory=SubagentLinks)
    # How long an exec the editor answers on its own may go unanswered
    # (``wire.tools.exec_deadline``); None: no limit.
    exec_answer_timeout_s: float | None = None
    # A model call that showed nothing this long shows the model thinking, and again
    # every as long until it speaks (``ModelCall.keep_alive``); None: never.
    silent_model_keepalive_s: float | None = None
    # Each user's counts the budget check reads when a run starts
    # (``actors.run.budget_counters``); None: no budgets are checked.
    budgets: BudgetCounters | None = None


def _tell(actor: Mailbox[Any] | None, message: object) -> None:
    if actor is not None:
        with contextlib.suppress(pykka.ActorDeadError):
            actor.tell(message)


class RunChildren:
    """The child actors of one run; ``listener`` (the SessionActor) hears their replies."""

    def __init__(
        self,
        request_id: str,
        output: RunOutput,
        deps: AgentDeps,
        listener: Mailbox[SessionMessage],
        conversation_id: str = "",
    ) -> None:
        self._request_id = request_id
        self._conversation_id = conversation_id
        self._output = output
        self._deps = deps
        self._listener = listener
        self._blob_sync: ActorHandle[BlobSyncMessage] | None = None
        self._checkpoint: ActorHandle[CheckpointMessage] | None = None
        self._provider: ActorHandle[ProviderMessage] | None = None
        self._tools: ActorHandle[ToolRuntimeMessage] | None = None
        self._recorded: list[RunEvent] = []

    def start_blob_sync(self) -> None:
        deps = self._deps
        self._blob_sync = start_blob_sync_actor(
            self._request_id, self._output, deps.store, deps.tasks, deps.kv_limits
        )

    def fetch(self, requests: tuple[tuple[int, bytes], ...]) -> None:
        """Fetch blobs (local CAS, else KV GET); each answers ``BlobFetched``."""
        for fetch_id, blob_id in requests:
            _tell(self._blob_sync, FetchBlob(fetch_id, blob_id, self._listener))

    def kv_message(self, message: agent.KvClientMessage) -> None:
        _tell(self._blob_sync, KvClientMessageReceived(message))

    def start_checkpoint(self, setup: CheckpointSetup) -> None:
        assert self._blob_sync is not None
        index = ConversationStore(self._deps.store.database)
        self._checkpoint = start_checkpoint_actor(
            setup, self._output, self._blob_sync, self._listener, index
        )

    def checkpoint(self, message: CheckpointMessage) -> None:
        if isinstance(message, PublishSettled | PublishStaged | PublishFinal):
            self.record(checkpoint_submitted(message, now_ms()))
        _tell(self._checkpoint, message)

    def record(self, *events: RunEvent) -> None:
        """Keep what the run did (each with the time it happened) for ``tell_recorded``."""
        self._recorded.extend(events)

    def tell_recorded(self) -> None:
        """Tell the recorder what was recorded since the last call; it is never waited for."""
        events, self._recorded = tuple(self._recorded), []
        if events and self._deps.run_events is not None:
            happened = RunEventsHappened(self._request_id, self._conversation_id, events)
            _tell(self._deps.run_events, happened)

    def call(self, call: StartProviderCall) -> None:
        """Start a provider call (the run has one at a time)."""
        self._provider = start_provider_call(call, self._listener, self._deps.provider)

    def call_ended(self) -> None:
        self._provider = None  # it stopped itself

    @property
    def tools_running(self) -> bool:
        return self._tools is not None

    def tools(self, message: ToolRuntimeMessage, context: ExecContext) -> None:
        """Tell the ToolRuntimeActor, started on first use with the run's exec context."""
        if self._tools is None:
            self._tools = start_tool_runtime(
                self._request_id,
                self._output,
                self._listener,
                context,
                timers=self._deps.tasks,
                server_work=self._deps.server_work,
                exec_answer_timeout_s=self._deps.exec_answer_timeout_s,
            )
        _tell(self._tools, message)

    def to_running_tools(self, message: ToolRuntimeMessage) -> bool:
        """Tell the ToolRuntimeActor if it runs; False if there is none."""
        _tell(self._tools, message)
        return self._tools is not None

    def tools_stopped(self) -> None:
        self._tools = None

    def abort_tools(self, reason: str) -> bool:
        """Abort the pending execs; the runtime answers ``ToolRuntimeStopped`` and stops.
        False when it has already stopped (it failed): nothing will answer."""
        if self._tools is None:
            return False
        try:
            self._tools.tell(AbortPendingExecs(reason))
        except pykka.ActorDeadError:
            self._tools = None
            return False
        return True

    def stop(self) -> None:
        """Stop the provider call, the blob sync and the checkpoint actor (once)."""
        provider, blob_sync, checkpoint = self._provider, self._blob_sync, self._checkpoint
        self._provider = self._blob_sync = self._checkpoint = None
        _tell(provider, CancelProviderCall("the run ended"))
        _tell(blob_sync, CancelBlobSync("the run ended"))
        for actor in (blob_sync, checkpoint):
            if actor is not None:
                with contextlib.suppress(pykka.ActorDeadError):
                    actor.stop(block=False)
