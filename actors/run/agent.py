"""One agent turn, driven by its SessionActor: it carries out what the turn's phases return.

The SessionActor owns this object and calls it on its own thread, so nothing here is shared.
Every wait (a KV GET, a checkpoint barrier, a provider stream, the editor's tools) is a phase
left by returning; the reply arrives later as a message the SessionActor hands back. The
phases (``actors.turn``) hold the turn's logic and do no IO: the request's plan and the
base's blob fetch (``BaseFetch``, driven until the turn is committed by ``actors.run.start``,
with ``actors.run.base`` for the store side), one model call (``ModelCall``), one tool round
(``ToolRound``) and the one way to end (``RunEnding``). This driver makes their store writes,
sends their frames and tells the run's child actors (``actors.run.children``); what every
kind of run shares (its children, its ending, the handlers alike in all) is ``actors.run.core``.

A user message appends the runtime message once; a ``resume_action`` continues the interrupted
tool round (adopted from the store, only its pending calls dispatched) or calls the model again.
A model that asks for tools starts a round: stored, published staged, run by the editor, each
result committed as a pair in completion order; the next call starts once the round is
committed. Every call is sent while its settled checkpoint is still being acknowledged, and its
events are held until that checkpoint is published (the barrier).
"""

from __future__ import annotations

import contextlib
import logging
import time

import pykka

from actors.conversation.events import Usage
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    Role,
)
from actors.conversation.projection import project, visible
from actors.conversation.request import LlmRequest, conversation_cache_key
from actors.loop.bridge import LoopTimer
from actors.protocols.blob_sync import BlobFetched
from actors.protocols.checkpoint import (
    CheckpointPublished,
    MessagesCommitted,
    PublishFinal,
    PublishSettled,
    Step,
)
from actors.protocols.edge import ModelSilenceDue
from actors.protocols.provider import (
    ProviderReply,
    StartProviderCall,
)
from actors.protocols.tool_runtime import RoundSettled, ToolCompleted
from actors.run.base import open_round
from actors.run.core import RunCore, RunSetup
from actors.run.start import RunStart, TurnOpened
from actors.turn import timeline
from actors.turn.compaction import Compaction, Compactor, fixed_tokens
from actors.turn.length import continuation
from actors.turn.model_call import (
    CallAnswered,
    CallCancelled,
    CallCut,
    CallFailed,
    CallStep,
    CallSummarized,
    CallTooLong,
    CallWantsTools,
    ModelCall,
    add_usage,
    turn_ended,
)
from actors.turn.plan import (
    stored,
)
from actors.turn.tool_round import ToolRound
from store.base.clock import now_ms
from store.conversations import ConversationStoreError, StaleRun
from wire.bidi import ParentLink
from wire.errors import ConnectError, cancelled_error, protocol_error

logger = logging.getLogger("cursor_server.run")


class PublishingFinal:
    """The last phase: the final checkpoint is being acknowledged."""


Phase = ModelCall | Compaction | ToolRound | PublishingFinal | None


class AgentRun(RunCore):
    """The turn of one RunRequest; its ``RunSetup.end`` is called exactly once."""

    def __init__(self, setup: RunSetup, parent: ParentLink | None = None) -> None:
        super().__init__(setup)
        request_id, route = setup.request_id, setup.route
        self._start = RunStart(
            request_id,
            setup.request,
            route,
            setup.deps,
            self._store,
            self._children,
            self._jobs,
            setup.self_ref,
            parent.tool_call_id if parent is not None else "",
        )
        self._turn: TurnOpened | None = None
        self._phase: Phase = None
        self._head = 0
        self._messages: tuple[CanonicalMessage, ...] = ()
        self._usage: Usage | None = None
        self._compactor = Compactor(request_id, route)  # and the last call's tokens
        self._silence: LoopTimer | None = None  # the look at a silent model, when one is due

    # ---- the start ----

    def start(self) -> None:
        """Read the request, then fetch what its base needs (local CAS, else KV GET)."""
        self._guarded(lambda: self._take_over(self._start.start()))

    def on_blob_fetched(self, message: BlobFetched) -> None:
        if not self._ending.started:
            self._guarded(lambda: self._take_over(self._start.on_blob_fetched(message)))

    def _take_over(self, opened: TurnOpened | None) -> None:
        """The turn has started: the loop takes over (the model call or the round first)."""
        if opened is None:
            return  # blobs are still being fetched
        self._turn = opened
        self._head, self._messages = opened.head, opened.messages
        self._compactor.fixed = fixed_tokens(opened.instructions, opened.mode.tools)
        if opened.round is not None:
            self._run_round(opened.round, opened.stable, ())
        elif opened.commit_job is not None:
            self._call_provider(opened.call_index)
            self._children.checkpoint(MessagesCommitted(opened.commit_job, opened.head))
        else:
            self._publish_settled_then_call(steps=opened.steps)

    # ---- the model call ----

    def _call_provider(self, call_index: int | None = None, after: ModelCall | None = None) -> None:
        """Ask the model (compacting first when due), at ``call_index`` if reserved. Its events
        are held, unless it continues ``after`` (a cut answer, a refused call, a summary)."""
        opened = self._turn
        assert opened is not None
        if call_index is None:
            call_index = self._store.begin_provider_call(self.request_id)
        model_call_id = f"{self.request_id}:{call_index}"
        # What the model sees of the history, derived once for this call: the compactor's
        # estimate and summary read it, and the request sends its projection.
        view = visible(self._messages)
        summary = self._compactor.before_call(call_index, self._messages, after, view)
        if summary is not None:
            return self._summarize(summary)
        self._phase = ModelCall(
            model_call_id,
            call_index,
            opened.mode.tool_names,
            opened.context.dynamic,
            after,
            opened_at=time.monotonic(),
        )
        self._watch_silence(model_call_id)
        messages, key = project(view), conversation_cache_key(self.conversation_id)
        request = LlmRequest(opened.instructions, opened.mode.tools, messages, key)
        self._children.call(StartProviderCall(self.request_id, model_call_id, request, self._route))

    def _summarize(self, summary: Compaction | ConnectError) -> None:
        """Summarise the conversation first (an error: refused again right after that)."""
        if isinstance(summary, ConnectError):
            return self._finish(summary)
        self._phase = summary
        self._output.send(summary.started())
        self._children.call(summary.call)

    def _publish_settled_then_call(
        self, call_index: int | None = None, lead: bytes = b"", steps: tuple[Step, ...] = ()
    ) -> None:
        """Call the model, then publish the settled state: the request goes first, so
        ``lead`` and building the checkpoint are not on its path, and the client still sees
        both before any of the call's events (held until the checkpoint is out). Its steps are
        the round's (``steps`` when no round ran in this run)."""
        if isinstance(self._phase, ToolRound):
            steps = tuple(self._phase.steps)
        self._call_provider(call_index)
        if lead:
            self._output.send(lead)
        job = self._jobs.next()
        self._children.checkpoint(
            PublishSettled(job, self._messages, steps, self._compactor.last_tokens, self._head)
        )

    def _watch_silence(self, model_call_id: str) -> None:
        """Look again in ``silent_model_keepalive_s`` whether the model has said anything."""
        interval = self._deps.silent_model_keepalive_s
        if interval is None:
            return
        ref, due = self._self, ModelSilenceDue(model_call_id)

        def tell() -> None:
            with contextlib.suppress(pykka.ActorDeadError):
                ref.tell(due)

        self._silence = self._deps.tasks.call_later(interval, tell)

    def _heard(self, call: ModelCall) -> None:
        """The model said something, or its call is over: no look at its silence is due (the
        timer would otherwise still tell this run, most often after it ended)."""
        if self._silence is not None and not call.silent:
            self._silence.cancel()
            self._silence = None

    def on_model_silence(self, message: ModelSilenceDue) -> None:
        """Still nothing from the model: show it thinking (``ModelCall.keep_alive``), and
        look again after another interval, until its first event."""
        call = self._phase
        if not isinstance(call, ModelCall) or call.model_call_id != message.model_call_id:
            return  # that call is over
        if self._ending.started or not call.silent:
            return
        self._on_call_step(call, call.keep_alive())
        self._watch_silence(call.model_call_id)

    def on_provider_message(self, message: ProviderReply) -> None:
        call = self._phase
        if isinstance(call, ModelCall) and not self._ending.started:
            step = call.receive(message, time.monotonic())
            self._heard(call)  # before the step, which may start the next call and its watch
            self._on_call_step(call, step)

    def _on_call_step(self, call: ModelCall, step: CallStep) -> None:
        for frame in step.frames:
            self._output.send(frame)
        match step.outcome:
            case None:
                return
            case CallFailed(error=error):
                self._children.call_ended()
                self._finish(error)
            case CallCancelled():
                self._children.call_ended()  # cancelled by this run, which is ending
            case CallTooLong(error=error):
                self._children.call_ended()
                self._compactor.refuse(error)
                self._guarded(lambda: self._call_provider(after=call))
            case CallSummarized(message=summary):
                self._call_succeeded(call)
                self._guarded(lambda: self._compacted(call, summary))
            case CallWantsTools(calls=calls, content=content, cut=cut):
                self._call_succeeded(call)
                self._guarded(lambda: self._open_round(call, calls, content, cut))
            case CallCut(content=content):
                self._call_succeeded(call)
                self._guarded(lambda: self._continue(call, content))
            case CallAnswered(content=content):
                self._call_succeeded(call)
                self._guarded(lambda: self._answer(call, content))

    def _call_succeeded(self, call: ModelCall) -> None:
        self._children.call_ended()
        self._usage = add_usage(self._usage, call.usage)
        self._compactor.observe(call.last_tokens, len(self._messages))

    def _compacted(self, call: ModelCall, summary: CanonicalMessage) -> None:
        """The summary is a new message; the call is made again on summary + tail."""
        self._head = self._store.append_messages(self.request_id, self._head, [stored(summary)])
        self._messages = (*self._messages, summary)
        self._call_provider(after=call)

    def _continue(self, call: ModelCall, content: AssistantContent) -> None:
        """The output limit cut the answer: keep it and ask the model to go on (once the
        limit of continuations is reached, it is the answer as it is)."""
        added = continuation(self.request_id, call.call_index, content, self._messages)
        if added is None:
            return self._answer(call, content)
        self._head = self._store.append_messages(self.request_id, self._head, [*map(stored, added)])
        self._messages = (*self._messages, *added)
        self._call_provider(after=call)

    def _answer(self, call: ModelCall, content: AssistantContent) -> None:
        """The final message: committed, then published with ``turn_ended`` in front."""
        message_id = f"{self.request_id}:assistant:{call.call_index}"
        final = CanonicalMessage(message_id, Role.ASSISTANT, Origin.ASSISTANT, content)
        self._head = self._store.append_messages(self.request_id, self._head, [stored(final)])
        # The next turn of this conversation starts from this revision.
        self._deps.histories.put(self._head, (*self._messages, final))
        lead = turn_ended(self._usage)
        self._phase = PublishingFinal()
        self._children.checkpoint(
            PublishFinal(
                self._jobs.next(),
                self._messages,
                final,
                tuple(call.steps),
                self._compactor.last_tokens,
                (lead,),
                now_ms(),
                self._head,
            )
        )

    # ---- the tool round ----

    def _open_round(
        self,
        call: ModelCall,
        calls: tuple[CanonicalToolCall, ...],
        content: AssistantContent,
        cut: tuple[str, ...],
    ) -> None:
        """Store the round the model asked for, then run it (``cut`` calls get an error)."""
        round_id = f"{self.request_id}:round:{call.call_index}"
        round_ = open_round(
            self._store, self.request_id, self._head, round_id, calls, content, now_ms(), cut
        )
        self._run_round(round_, self._messages, tuple(call.steps))

    def _run_round(
        self, round_: ToolRound, stable: tuple[CanonicalMessage, ...], steps: tuple[Step, ...]
    ) -> None:
        """Publish the round staged (``stable`` as roots) and have the editor run its calls."""
        assert self._turn is not None
        self._phase = round_
        job, tokens = self._jobs.next(barrier=False), self._compactor.last_tokens
        self._children.checkpoint(round_.staged(job, self._messages, tokens, steps, len(stable)))
        context = self._turn.context
        self._children.record(*timeline.tools_dispatched(round_.pending, now_ms()))
        self._children.tools(round_.start(self._messages), context)

    def on_tool_completed(self, message: ToolCompleted) -> None:
        """Commit the pair (in completion order), then show the card as completed."""
        self._children.record(timeline.tool_completed(message))
        round_ = self._phase
        if not isinstance(round_, ToolRound) or message.round_id != round_.round_id:
            return
        if self._ending.started:
            return
        pair = round_.pair_for(message)
        try:
            committed = self._store.commit_tool_result(
                self.request_id,
                round_.round_id,
                pair.call.call_id,
                (stored(pair.assistant), stored(pair.result)),
                reserve_call_when_settled=True,
                tool_call=message.tool_call,
            )
        except StaleRun:
            self._finish(cancelled_error())
            return
        except ConversationStoreError as exc:
            self._finish(protocol_error(str(exc)))
            return
        self._head = committed.revision_id
        self._messages = (*self._messages, pair.assistant, pair.result)
        completed = round_.committed(pair, message)
        if not committed.settled:
            # Staged again: the state the client keeps now proves this call ran.
            if completed:
                self._output.send(completed)
            job, steps = self._jobs.next(barrier=False), tuple(round_.steps)
            staged = round_.staged(job, self._messages, self._compactor.last_tokens, steps)
            return self._children.checkpoint(staged)
        # The next request first; the card's completion, the settled state and the runtime's
        # release of the round follow it.
        self._publish_settled_then_call(committed.call_index, lead=completed)
        self._children.to_running_tools(RoundSettled(round_.round_id))

    # ---- the checkpoint barrier ----

    def on_checkpoint_published(self, message: CheckpointPublished) -> None:
        self._children.record(timeline.checkpoint_ended(message, now_ms()))
        if message.job_id != self._jobs.barrier or self._ending.started:
            return  # a job nothing waits for (the staged checkpoint of a tool round)
        phase = self._phase
        if isinstance(phase, PublishingFinal):
            self._finish(None)
        elif isinstance(phase, ModelCall):
            step = phase.release()
            self._heard(phase)
            self._on_call_step(phase, step)

    # ---- the end ----

    def _finish(self, error: ConnectError | None) -> None:
        """End the run (None: completed); only the first end counts."""
        self._ending.finish(error, claimed=self._start.claimed, usage=self._usage)
