"""The run of the user's "summarize" command (``summarize_action``), driven by its SessionActor
in place of an ``AgentRun``: the decisions are ``actors.turn.summarize``'s and the summary call
is the compaction phase (``actors.turn.compaction.Compaction``); this driver does their IO.

It finds the base as a turn does (the checkpoint index, else the state's roots fetched and
imported; no state: the conversation's head) and claims the conversation there
(``actors.run.base_claim``). Then one
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

from actors.conversation.model import CanonicalMessage
from actors.protocols.checkpoint import CheckpointPublished, PublishSettled
from actors.protocols.provider import ProviderReply
from actors.protocols.tool_runtime import ToolCompleted
from actors.run.base_claim import ClaimingRun
from actors.run.core import RunSetup
from actors.run.start import plan_mode
from actors.turn import timeline
from actors.turn.compaction import Compaction, Compactor, fixed_tokens
from actors.turn.model_call import CallCancelled, CallFailed, CallSummarized, add_usage, turn_ended
from actors.turn.plan import TurnKind, TurnPlan, checkpoint_setup, stored
from actors.turn.summarize import nothing_frames, nothing_to_summarize, summary_call
from store.base.clock import now_ms
from wire.errors import Code, ConnectError
from wire.interaction_updates import summary_completed_frame
from wire.log import log_event

logger = logging.getLogger("cursor_server.run")


class SummarizeRun(ClaimingRun):
    """The run of one ``summarize_action``; its ``RunSetup.end`` is called exactly once."""

    def __init__(self, setup: RunSetup) -> None:
        super().__init__(setup)
        self._phase: Compaction | None = None  # the summary call while it runs
        self._head = 0
        self._messages: tuple[CanonicalMessage, ...] = ()

    # ---- the start ----

    def _planned(self, plan: TurnPlan) -> None:
        if plan.kind is not TurnKind.SUMMARIZE:
            raise ConnectError(Code.INTERNAL, "not a summarize action")

    def _open(self) -> None:
        """Claim the conversation on the base, then summarise it (or end: nothing to)."""
        mode = plan_mode(self._deps, self._base.plan)
        claimed = self._base.claim()
        plan = claimed.plan
        self._head, self._messages = claimed.head, claimed.messages
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

    def on_provider_message(self, message: ProviderReply) -> None:
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
                self._guarded(lambda: self._summarized(summary))
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

    # ---- the checkpoint ----

    def on_tool_completed(self, message: ToolCompleted) -> None:
        raise TypeError(f"a summarize run runs no tool, yet got {type(message).__name__}")

    def on_checkpoint_published(self, message: CheckpointPublished) -> None:
        self._children.record(timeline.checkpoint_ended(message, now_ms()))
        if message.job_id == self._jobs.barrier and not self._ending.started:
            self._finish(None)  # the only checkpoint: the summary is out

    # ---- the end ----

    def cancel(self, error: ConnectError) -> None:
        """Cancel from outside (client cancel, superseding run, shutdown): a summary call
        in flight is shown as failed first."""
        if self._phase is not None and not self._ending.started:
            self._phase = None
            self._output.send(summary_completed_frame(failed=True))
        self._finish(error)
