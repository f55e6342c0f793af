"""The run of a command the user ran from the chat (``shell_command_action``), driven by its
SessionActor in place of an ``AgentRun``: the decisions are ``actors.turn.shell_command``'s,
this driver does their IO.

It finds the base as a turn does (the checkpoint index, else the state's roots fetched and
imported; no state: the conversation's head) and claims the conversation there; then the
ToolRuntimeActor runs the command as one Shell exec under the action's ``exec_id`` (wire ids
from 1, as in any run). No model is called. Once the exec ends, the command's context message
is appended once, and one settled checkpoint, whose last turn is the shell turn, is published
(indexed before the run hears it is out); the run ends with EndStream ``{}`` and no
``turn_ended`` (no model turn ended). A cancel, a superseding run or a failure ends it as any
run ends (``actors.run_end``): the pending exec is aborted before the EndStream.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import msgspec
import pykka

from actors.blob_sync import BlobFetched, BlobSyncFailed
from actors.checkpoint import CheckpointFailed, CheckpointPublished, PublishSettled
from actors.conversation.model import CanonicalMessage, CanonicalToolCall
from actors.conversation.request import ModelRoute
from actors.providers.actor import ProviderCallEnded, ProviderEventsReceived
from actors.run_base import RunBase
from actors.run_children import AgentDeps, RunChildren
from actors.run_end import RunEnd, run_guarded
from actors.run_output import RunOutput
from actors.run_start import stored_pre_fetched, took_over
from actors.tool_relay import ToolRelay
from actors.tool_runtime import (
    ToolCompleted,
)
from actors.turn import timeline
from actors.turn.plan import (
    BaseFetch,
    CheckpointJobs,
    TurnPlan,
    checkpoint_setup,
    exec_context,
    plan_turn,
    stored,
    wanted_blobs,
)
from actors.turn.shell_command import ShellCommandPhase
from prompt.assets import ModeAssets, UnknownModeError
from store.clock import now_ms
from store.conversations import ConversationStore
from wire.errors import Code, ConnectError, protocol_error
from wire.proto import agent_v1_pb2 as agent
from wire.tools.shell import SHELL


class _Fetching(msgspec.Struct, frozen=True):
    """What the start knows while the base's blobs are fetched."""

    plan: TurnPlan
    mode: ModeAssets
    base: RunBase
    indexed: int | None  # the checkpoint index's revision for the client's roots
    fetch: BaseFetch


class ShellCommandRun(ToolRelay):
    """The run of one ``shell_command_action``. ``end`` is called exactly once."""

    def __init__(
        self,
        request_id: str,
        request: agent.AgentRunRequest,
        route: ModelRoute,
        deps: AgentDeps,
        output: RunOutput,
        self_ref: pykka.ActorRef[Any],
        end: Callable[[ConnectError | None], None],
    ) -> None:
        self.request_id = request_id
        self._request = request
        self._route = route
        self._deps = deps
        self._self = self_ref
        self._store = ConversationStore(deps.store.database)
        self.conversation_id = request.conversation_id or request_id
        self._children = RunChildren(request_id, output, deps, self_ref, self.conversation_id)
        self._jobs = CheckpointJobs()
        self._ending = RunEnd(
            request_id, self.conversation_id, self._store, self._children, deps.owners, end
        )
        self._claimed = False
        self._fetching: _Fetching | None = None
        self._phase: ShellCommandPhase | None = None
        self._head = 0
        self._messages: tuple[CanonicalMessage, ...] = ()

    # ---- the start ----

    def start(self) -> None:
        run_guarded(self._start, self._finish)

    def _start(self) -> None:
        self._children.record(timeline.run_started(self._request, self._route.public_id, now_ms()))
        plan = plan_turn(self.request_id, self._request)
        if plan.shell_command is None:
            raise ConnectError(Code.INTERNAL, "not a shell command action")
        try:
            mode = self._deps.prompts.mode(plan.mode_name)
        except UnknownModeError as exc:
            raise protocol_error(str(exc)) from exc
        have = stored_pre_fetched(self._deps, self._request)
        self._children.start_blob_sync()
        base = RunBase(self._store, self._deps.histories, self.request_id, plan)
        indexed = base.indexed_base()
        fetch = BaseFetch(wanted_blobs(plan, roots_indexed=indexed is not None), have)
        self._children.fetch(fetch.requests())
        self._fetching = _Fetching(plan, mode, base, indexed, fetch)
        if fetch.done:
            self._open()

    def on_blob_fetched(self, message: BlobFetched) -> None:
        if self._fetching is not None and not self._ending.started:
            run_guarded(lambda: self._on_blob(message), self._finish)

    def _on_blob(self, message: BlobFetched) -> None:
        assert self._fetching is not None
        if self._fetching.fetch.receive(message):
            self._open()  # every blob of the base is in

    def _open(self) -> None:
        """Claim the conversation on the base, then have the editor run the command."""
        assert self._fetching is not None
        known, self._fetching = self._fetching, None
        plan, mode = known.plan, known.mode
        assert plan.shell_command is not None
        revision = known.base.base_revision(known.indexed, known.fetch.fetched)
        if revision is None:
            revision = self._store.ensure_conversation(plan.conversation_id)
        claimed = self._store.claim_run(self.request_id, plan.conversation_id, revision)
        self._claimed = True
        took_over(self._deps, self._self, plan, claimed, self._route.public_id, revision)
        self._head, self._messages = revision, known.base.history(revision)
        instructions = mode.system_prompt(self._route.model_id)
        self._children.start_checkpoint(
            checkpoint_setup(
                self.request_id, plan, mode, instructions, self._route, len(self._messages), None
            )
        )
        phase = ShellCommandPhase(self.request_id, plan.shell_command)
        self._phase = phase
        command = phase.start()
        call = CanonicalToolCall(0, command.exec_id, SHELL.name, "", "")
        self._children.record(*timeline.tools_dispatched((call,), now_ms()))
        self._children.tools(command, exec_context(plan, mode, self._request))

    # ---- the command ----

    def on_tool_completed(self, message: ToolCompleted) -> None:
        self._children.record(timeline.tool_completed(message))
        if self._phase is not None and not self._ending.started:
            phase = self._phase
            run_guarded(lambda: self._record(phase, message), self._finish)

    def _record(self, phase: ShellCommandPhase, message: ToolCompleted) -> None:
        """Append the command's context once, then publish the checkpoint with its turn."""
        recorded = phase.completed(message, datetime.datetime.now(datetime.UTC))
        if recorded is None:
            return
        head, inserted = self._store.append_once(
            self.request_id, self._head, stored(recorded.message)
        )
        if inserted:
            self._messages = (*self._messages, recorded.message)
        self._head = head
        # The next turn of this conversation starts from this revision.
        self._deps.histories.put(head, self._messages)
        job = PublishSettled(
            self._jobs.next(), self._messages, (), None, head, shell_turn=recorded.turn
        )
        self._children.checkpoint(job)

    def on_provider_message(self, message: ProviderEventsReceived | ProviderCallEnded) -> None:
        raise TypeError(f"a shell command run calls no model, yet got {type(message).__name__}")

    # ---- the checkpoint and the other actors ----

    def on_checkpoint_published(self, message: CheckpointPublished) -> None:
        self._children.record(timeline.checkpoint_ended(message, now_ms()))
        if message.job_id == self._jobs.barrier and not self._ending.started:
            self._finish(None)  # the only checkpoint: the command's turn is out

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

    def _finish(self, error: ConnectError | None) -> None:
        self._ending.finish(error, claimed=self._claimed, usage=None)
