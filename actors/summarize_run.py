"""The run of the user's "summarize" command (``summarize_action``), driven by its SessionActor
in place of an ``AgentRun``: the decisions are ``actors.turn.summarize``'s and the summary call
is the compaction phase (``actors.turn.compaction.Compaction``); this driver does their IO.

It finds the base as a turn does (the checkpoint index, else the state's roots fetched and
imported; no state: the conversation's head) and claims the conversation there. Then one
summary call: the editor sees ``summary_started``, ``summary`` and ``summary_completed``; the
summary is appended as a new message, and one settled checkpoint (``summary``,
``summary_archives``, ``self_summary_count``), led by ``turn_ended``, ends the run with
EndStream ``{}``. No model call follows. A failed summary call sends
``summary_completed{failed}`` and ends the run with its error (``unavailable`` for a provider
failure), nothing stored; a cancel during the call does the same with ``canceled``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import msgspec
import pykka

from actors.blob_sync import BlobFetched, BlobSyncFailed
from actors.checkpoint import CheckpointFailed, CheckpointPublished, PublishSettled
from actors.conversation.events import Usage
from actors.conversation.model import CanonicalMessage
from actors.conversation.request import ModelRoute
from actors.providers.actor import ProviderCallEnded, ProviderEventsReceived
from actors.run_base import RunBase
from actors.run_children import AgentDeps, RunChildren
from actors.run_end import RunEnd, run_guarded
from actors.run_output import RunOutput
from actors.run_start import stored_pre_fetched, took_over
from actors.tool_relay import ToolRelay
from actors.tool_runtime import ToolCompleted
from actors.turn import timeline
from actors.turn.compaction import Compaction, Compactor, fixed_tokens
from actors.turn.model_call import CallCancelled, CallFailed, CallSummarized, add_usage, turn_ended
from actors.turn.plan import (
    BaseFetch,
    CheckpointJobs,
    TurnKind,
    TurnPlan,
    checkpoint_setup,
    plan_turn,
    stored,
    wanted_blobs,
)
from actors.turn.summarize import nothing_frames, nothing_to_summarize, summary_call
from prompt.assets import UnknownModeError
from store.clock import now_ms
from store.conversations import ConversationStore
from wire.errors import Code, ConnectError, protocol_error
from wire.interaction_updates import summary_completed_frame
from wire.log import log_event
from wire.proto import agent_v1_pb2 as agent

logger = logging.getLogger("cursor_server.run")


class _Fetching(msgspec.Struct, frozen=True):
    """What the start knows while the base's blobs are fetched."""

    plan: TurnPlan
    base: RunBase
    indexed: int | None  # the checkpoint index's revision for the client's roots
    fetch: BaseFetch


class SummarizeRun(ToolRelay):
    """The run of one ``summarize_action``. ``end`` is called exactly once."""

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
        self._output = output
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
        self._phase: Compaction | None = None  # the summary call while it runs
        self._head = 0
        self._messages: tuple[CanonicalMessage, ...] = ()
        self._usage: Usage | None = None

    # ---- the start ----

    def start(self) -> None:
        run_guarded(self._start, self._finish)

    def _start(self) -> None:
        self._children.record(timeline.run_started(self._request, self._route.public_id, now_ms()))
        plan = plan_turn(self.request_id, self._request)
        if plan.kind is not TurnKind.SUMMARIZE:
            raise ConnectError(Code.INTERNAL, "not a summarize action")
        have = stored_pre_fetched(self._deps, self._request)
        self._children.start_blob_sync()
        base = RunBase(self._store, self._deps.histories, self.request_id, plan)
        indexed = base.indexed_base()
        fetch = BaseFetch(wanted_blobs(plan, roots_indexed=indexed is not None), have)
        self._children.fetch(fetch.requests())
        self._fetching = _Fetching(plan, base, indexed, fetch)
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
        """Claim the conversation on the base, then summarise it (or end: nothing to)."""
        assert self._fetching is not None
        known, self._fetching = self._fetching, None
        plan = known.plan
        try:
            mode = self._deps.prompts.mode(plan.mode_name)
        except UnknownModeError as exc:
            raise protocol_error(str(exc)) from exc
        revision = known.base.base_revision(known.indexed, known.fetch.fetched)
        if revision is None:
            revision = self._store.ensure_conversation(plan.conversation_id)
        claimed = self._store.claim_run(self.request_id, plan.conversation_id, revision)
        self._claimed = True
        took_over(self._deps, self._self, plan, claimed, self._route.public_id, revision)
        self._head, self._messages = revision, known.base.history(revision)
        reason = nothing_to_summarize(self._messages)
        if reason is not None:
            return self._nothing(reason)
        instructions = mode.system_prompt(self._route.model_id)
        setup = checkpoint_setup(
            self.request_id, plan, mode, instructions, self._route, len(self._messages), None
        )
        self._children.start_checkpoint(setup)
        compactor = Compactor(self.request_id, self._route)
        compactor.fixed = fixed_tokens(instructions, mode.tools)
        call_index = self._store.begin_provider_call(self.request_id)
        phase = summary_call(compactor, call_index, self._messages)
        if phase is None:
            return self._nothing("nothing before the newest message to summarise")
        self._phase = phase
        self._output.send(phase.started())
        self._children.call(phase.call)

    def _nothing(self, reason: str) -> None:
        log_event(
            logger, logging.INFO, "nothing to summarise", request_id=self.request_id, reason=reason
        )
        for frame in nothing_frames():
            self._output.send(frame)
        self._finish(None)

    # ---- the summary call ----

    def on_provider_message(self, message: ProviderEventsReceived | ProviderCallEnded) -> None:
        phase = self._phase
        if phase is None or self._ending.started:
            return
        step = phase.receive(message, time.monotonic())
        for frame in step.frames:
            self._output.send(frame)
        match step.outcome:
            case None:
                return
            case CallSummarized(message=summary):
                self._children.call_ended()
                self._phase = None
                self._usage = add_usage(self._usage, phase.usage)
                run_guarded(lambda: self._summarized(summary), self._finish)
            case CallFailed(error=error):
                self._children.call_ended()
                self._phase = None
                self._finish(error)
            case CallCancelled():
                self._children.call_ended()  # cancelled by this run, which is ending
            case _:
                raise TypeError(f"a summary call cannot end with {step.outcome!r}")

    def _summarized(self, summary: CanonicalMessage) -> None:
        """Append the summary, then publish the settled state with it (the run's end)."""
        self._head = self._store.append_messages(self.request_id, self._head, [stored(summary)])
        self._messages = (*self._messages, summary)
        # The next turn of this conversation starts from this revision.
        self._deps.histories.put(self._head, self._messages)
        job = PublishSettled(
            self._jobs.next(),
            self._messages,
            (),
            None,
            self._head,
            ends_run=True,
            lead_frames=(turn_ended(self._usage),),
        )
        self._children.checkpoint(job)

    # ---- the checkpoint and the other actors ----

    def on_tool_completed(self, message: ToolCompleted) -> None:
        raise TypeError(f"a summarize run runs no tool, yet got {type(message).__name__}")

    def on_checkpoint_published(self, message: CheckpointPublished) -> None:
        self._children.record(timeline.checkpoint_ended(message, now_ms()))
        if message.job_id == self._jobs.barrier and not self._ending.started:
            self._finish(None)  # the only checkpoint: the summary is out

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
        """Cancel from outside (client cancel, superseding run, shutdown): a summary call
        in flight is shown as failed first."""
        if self._phase is not None and not self._ending.started:
            self._phase = None
            self._output.send(summary_completed_frame(failed=True))
        self._finish(error)

    def _finish(self, error: ConnectError | None) -> None:
        self._ending.finish(error, claimed=self._claimed, usage=self._usage)
