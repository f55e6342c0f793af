"""One agent turn, driven by its SessionActor: it carries out what the turn's phases return.

The SessionActor owns this object and calls it on its own thread, so nothing here is shared.
Every wait (a KV GET, a checkpoint barrier, a provider stream, the editor's tools) is a phase
left by returning; the reply arrives later as a message the SessionActor hands back. The
phases (``actors.turn``) hold the turn's logic and do no IO: finding the base (``BaseFetch``
and ``actors.run_base``), one model call (``ModelCall``), one tool round (``ToolRound``), and
the one way to end (``RunEnding``). This driver makes their store writes, sends their frames
and tells the run's other actors.

A user message appends the runtime message once; a ``resume_action`` continues the interrupted
tool round (adopted from the store, only its pending calls dispatched) or calls the model again.
A model that asks for tools starts a round: stored, published staged, run by the editor, each
result committed as a pair in completion order; the next call starts once the round is
committed. Every call is sent while its settled checkpoint is still being acknowledged, and its
events are held until that checkpoint is published (the barrier).
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import time
from collections.abc import Callable

import msgspec
import peewee
import pykka

from actors.blob_sync import (
    BlobFetched,
    BlobSyncFailed,
    CancelBlobSync,
    FetchBlob,
    KvClientMessageReceived,
    KvLimits,
)
from actors.blob_sync import start_blob_sync as start_blob_sync_actor
from actors.checkpoint import (
    CheckpointFailed,
    CheckpointPublished,
    CheckpointSetup,
    MessagesCommitted,
    PublishFinal,
    PublishSettled,
    PublishStaged,
    start_checkpoint_actor,
)
from actors.checkpoint_json import CheckpointJsonError, PendingRound
from actors.checkpoint_state import CheckpointStateError
from actors.conversation.events import Usage
from actors.conversation.model import AssistantContent, CanonicalMessage, Origin, Role, ToolCall
from actors.conversation.projection import project
from actors.conversation.request import LlmRequest, ModelRoute
from actors.history_cache import HistoryCache
from actors.loop.bridge import LoopTasks
from actors.messages import CancelRun
from actors.providers.actor import (
    CancelProviderCall,
    ProviderCallEnded,
    ProviderDeps,
    ProviderEventsReceived,
    StartProviderCall,
    start_provider_call,
)
from actors.run_base import ResumeStart, RunBase
from actors.run_output import RunOutput
from actors.run_owners import RunOwners
from actors.tool_runtime import (
    AbortPendingExecs,
    ExecControlReceived,
    ExecMessageReceived,
    InteractionResponseReceived,
    RoundSettled,
    StartToolRound,
    ToolCompleted,
    ToolRuntimeFailed,
    ToolRuntimeStopped,
    start_tool_runtime,
)
from actors.turn import ending
from actors.turn.ending import EndEffect, RunEnding
from actors.turn.model_call import (
    CallAnswered,
    CallCancelled,
    CallFailed,
    CallStep,
    CallWantsTools,
    ModelCall,
    add_usage,
)
from actors.turn.plan import (
    BaseFetch,
    TurnKind,
    TurnPlan,
    exec_context,
    plan_turn,
    runtime_message,
    runtime_parts,
    stored,
    wanted_blobs,
)
from actors.turn.tool_round import ToolRound
from prompt.assets import ModeAssets, PromptAssets, UnknownModeError
from store import Store
from store.clock import now_ms
from store.conversations import ClaimedRun, ConversationStore, ConversationStoreError, StaleRun
from wire.errors import Code, ConnectError, cancelled_error, protocol_error
from wire.interaction_updates import turn_ended_frame
from wire.log import log_event
from wire.proto import agent_v1_pb2 as agent

logger = logging.getLogger("cursor_server.run")


class AgentDeps(msgspec.Struct, frozen=True):
    """What every run needs, shared by all SessionActors of the server."""

    store: Store
    prompts: PromptAssets
    provider: ProviderDeps
    owners: RunOwners
    tasks: LoopTasks
    kv_limits: KvLimits = KvLimits()
    histories: HistoryCache = msgspec.field(default_factory=HistoryCache)


class PublishingFinal:
    """The last phase: the final checkpoint is being acknowledged."""


Phase = BaseFetch | ModelCall | ToolRound | PublishingFinal | None


class AgentRun:
    """The turn of one RunRequest. ``end`` is called exactly once, with None on success."""

    def __init__(
        self,
        request_id: str,
        request: agent.AgentRunRequest,
        route: ModelRoute,
        deps: AgentDeps,
        output: RunOutput,
        self_ref: pykka.ActorRef,
        end: Callable[[ConnectError | None], None],
    ) -> None:
        self.request_id = request_id
        self._request = request
        self._route = route
        self._deps = deps
        self._output = output
        self._self = self_ref
        self._end_session = end
        self._conversations = ConversationStore(deps.store.database)
        self.conversation_id = request.conversation_id or request_id
        self._plan: TurnPlan | None = None
        self._mode: ModeAssets | None = None
        self._base: RunBase | None = None
        self._indexed_base: int | None = None
        self._phase: Phase = None
        self._ending = RunEnding()
        self._claimed = False
        self._head = 0
        self._messages: tuple[CanonicalMessage, ...] = ()
        self._usage: Usage | None = None
        self._last_call_tokens: int | None = None
        self._job_id = 1
        self._barrier_job = 0
        self._blob_sync: pykka.ActorRef | None = None
        self._checkpoint: pykka.ActorRef | None = None
        self._provider: pykka.ActorRef | None = None
        self._tools: pykka.ActorRef | None = None

    # ---- finding the base ----

    def start(self) -> None:
        """Read the request, then fetch what its base needs (local CAS, else KV GET)."""
        self._guarded(self._start)

    def _start(self) -> None:
        plan = self._plan = plan_turn(self.request_id, self._request)
        try:
            self._mode = self._deps.prompts.mode(plan.mode_name)
        except UnknownModeError as exc:
            raise protocol_error(str(exc)) from exc
        deps = self._deps
        self._blob_sync = start_blob_sync_actor(
            self.request_id, self._output, deps.store, deps.tasks, deps.kv_limits
        )
        self._base = RunBase(self._conversations, deps.histories, self.request_id, plan)
        self._indexed_base = self._base.indexed_base()
        fetch = self._phase = BaseFetch(
            wanted_blobs(plan, roots_indexed=self._indexed_base is not None)
        )
        for fetch_id, blob_id in fetch.requests():
            self._blob_sync.tell(FetchBlob(fetch_id, blob_id, self._self))
        if fetch.done:
            self._prepare(fetch)

    def on_blob_fetched(self, message: BlobFetched) -> None:
        fetch = self._phase
        if isinstance(fetch, BaseFetch) and not self._ending.started:
            self._guarded(lambda: fetch.receive(message) and self._prepare(fetch))

    def _prepare(self, fetch: BaseFetch) -> None:
        plan, mode, base = self._plan, self._mode, self._base
        assert plan is not None and mode is not None and base is not None
        self._phase = None
        content = ()
        if plan.user_message is not None:
            now = datetime.datetime.now(datetime.UTC)
            content = runtime_parts(mode, self._request, fetch.fetched, now)
        revision = base.base_revision(self._indexed_base, fetch.fetched)
        self._instructions = mode.system_prompt(self._route.model_id)
        if plan.kind is TurnKind.NEW:
            self._start_user_turn(base, revision, runtime_message(self.request_id, content))
        else:
            self._start_resume(base, revision, fetch.fetched)

    def _start_user_turn(
        self, base: RunBase, revision: int | None, runtime: CanonicalMessage
    ) -> None:
        """The first checkpoint is built, and its blobs SET, while the turn's start is being
        committed; it is published once both the ACKs and the commit are in. The commit is
        checked against the predicted history, so a mismatch ends the run unpublished."""
        turn = base.user_turn(revision, runtime)
        self._start_checkpoint_actor(len(turn.history))
        job = self._next_job()
        self._tell_checkpoint(
            PublishSettled(job, turn.predicted, (), self._last_call_tokens, awaits_commit=True)
        )
        started = base.commit_user_turn(turn)
        self._claimed = True
        self._head, self._messages = started.head, turn.predicted
        self._call_provider(started.call_index)
        self._tell_checkpoint(MessagesCommitted(job, started.head))
        self._supersede_previous()
        self._log_started(started.claimed, turn.base)

    def _start_resume(
        self, base: RunBase, revision: int | None, fetched: dict[bytes, bytes]
    ) -> None:
        """A resume continues its unfinished turn from the client's state."""
        resume = base.start_resume(revision)
        self._head, self._claimed = resume.claimed.base_revision_id, True
        self._supersede_previous()
        turn_id = self._plan.resume_turn_id if self._plan is not None else None
        self._start_checkpoint_actor(resume.base_count, fetched[turn_id] if turn_id else None)
        self._log_started(resume.claimed, revision)
        if resume.pending is None:
            self._messages = base.history(self._head)
            last = self._messages[-1].content if self._messages else None
            if isinstance(last, AssistantContent) and not last.tool_calls:
                raise protocol_error("resume_action: the turn of this state has already ended")
            self._publish_settled_then_call()
        else:
            self._resume_round(base, resume, resume.pending)

    def _resume_round(self, base: RunBase, resume: ResumeStart, pending: PendingRound) -> None:
        """Its calls without a committed result run again at once (the client sees the staged
        checkpoint and the execs before any model call); the client's entry stays as it is."""
        if resume.existing is not None:
            adopted = self._conversations.adopt_tool_round(
                self.request_id, resume.existing.round_id
            )
            round_ = ToolRound.adopted(adopted, pending.started_at_ms)
        else:  # a round this server never stored (e.g. after losing its database)
            calls = tuple(
                ToolCall(c.index, c.call_id, c.name, c.arguments, pending.model_call_id)
                for c in pending.calls
            )
            content = AssistantContent(
                text=pending.text, thinking=pending.thinking, replay_state=pending.replay_state
            )
            round_ = self._open_round(
                f"{self.request_id}:round:resume", calls, content, pending.started_at_ms
            )
        self._messages = base.history(self._head)
        # The stable roots stay those of the base: committed pairs join them when it settles.
        self._run_round(round_, self._messages[: resume.base_count], ())

    def _start_checkpoint_actor(self, base_count: int, resume_turn: bytes | None = None) -> None:
        """The run's CheckpointActor; ``base_count`` messages stand for the client's roots."""
        plan, mode = self._plan, self._mode
        assert plan is not None and mode is not None and self._blob_sync is not None
        setup = CheckpointSetup(
            request_id=self.request_id,
            instructions=self._instructions,
            model_name=self._route.model_id,
            mode=plan.mode_number,
            tools=mode.tools,
            context_window=self._route.context_window_tokens,
            user_message=plan.user_message,
            base=plan.state,
            base_roots=plan.stable_roots,
            base_message_count=base_count if plan.stable_roots else 0,
            resume_turn=resume_turn,
            conversation_id=self.conversation_id,
        )
        store = ConversationStore(self._deps.store.database)
        self._checkpoint = start_checkpoint_actor(
            setup, self._output, self._blob_sync, self._self, store
        )

    def _supersede_previous(self) -> None:
        """This run now owns the conversation in this process: the one before it is cancelled."""
        previous = self._deps.owners.claim(self.conversation_id, self.request_id, self._self)
        if previous is not None:
            with contextlib.suppress(pykka.ActorDeadError):  # it may have just ended
                previous.tell(CancelRun(f"superseded by {self.request_id}"))

    def _log_started(self, claimed: ClaimedRun, base: int | None) -> None:
        resumed = self._plan is not None and self._plan.kind is TurnKind.RESUME
        log_event(
            logger,
            logging.INFO,
            "run started",
            request_id=self.request_id,
            conversation_id=self.conversation_id,
            model=self._route.public_id,
            superseded=claimed.superseded_run_id,
            resumed=resumed,
            base_revision=base,
        )

    # ---- the model call ----

    def _call_provider(self, call_index: int | None = None) -> None:
        """Ask the model; ``call_index`` when it was reserved already. Its events are held."""
        assert self._mode is not None
        if call_index is None:
            call_index = self._conversations.begin_provider_call(self.request_id)
        call = self._phase = ModelCall(f"{self.request_id}:{call_index}", call_index)
        request = LlmRequest(self._instructions, self._mode.tools, project(self._messages))
        self._provider = start_provider_call(
            StartProviderCall(self.request_id, call.model_call_id, request, self._route),
            self._self,
            self._deps.provider,
        )

    def _publish_settled_then_call(self, call_index: int | None = None, lead: bytes = b"") -> None:
        """Call the model, then publish the settled state: the request goes first, so
        ``lead`` and building the checkpoint are not on its path, and the client still sees
        both before any of the call's events (held until the checkpoint is out)."""
        steps = tuple(self._phase.steps) if isinstance(self._phase, ToolRound) else ()
        self._call_provider(call_index)
        if lead:
            self._output.send(lead)
        job = self._next_job()
        self._tell_checkpoint(
            PublishSettled(job, self._messages, steps, self._last_call_tokens, self._head)
        )

    def on_provider_message(self, message: ProviderEventsReceived | ProviderCallEnded) -> None:
        call = self._phase
        if isinstance(call, ModelCall) and not self._ending.started:
            self._on_call_step(call, call.receive(message, time.monotonic()))

    def _on_call_step(self, call: ModelCall, step: CallStep) -> None:
        for frame in step.frames:
            self._output.send(frame)
        outcome = step.outcome
        if outcome is None:
            return
        self._provider = None
        if isinstance(outcome, CallAnswered | CallWantsTools):
            self._usage = add_usage(self._usage, call.usage)
            self._last_call_tokens = call.last_tokens or self._last_call_tokens
        match outcome:
            case CallFailed(error=error):
                self._finish(error)
            case CallCancelled():
                pass  # cancelled by this run, which is already ending
            case CallWantsTools(calls=calls, content=content):
                round_id = f"{self.request_id}:round:{call.call_index}"
                self._guarded(
                    lambda: self._run_round(
                        self._open_round(round_id, calls, content, now_ms()),
                        self._messages,
                        tuple(call.steps),
                    )
                )
            case CallAnswered(content=content):
                self._guarded(lambda: self._answer(call, content))

    def _answer(self, call: ModelCall, content: AssistantContent) -> None:
        """The final message: committed, then published with ``turn_ended`` in front."""
        final = CanonicalMessage(
            f"{self.request_id}:assistant:{call.call_index}",
            Role.ASSISTANT,
            Origin.ASSISTANT,
            content,
        )
        self._head = self._conversations.append_messages(
            self.request_id, self._head, [stored(final)]
        )
        # The next turn of this conversation starts from this revision.
        self._deps.histories.put(self._head, (*self._messages, final))
        usage = self._usage or Usage()
        lead = turn_ended_frame(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            reasoning_tokens=usage.reasoning_tokens,
        )
        self._phase = PublishingFinal()
        publish = PublishFinal(
            self._next_job(),
            self._messages,
            final,
            tuple(call.steps),
            self._last_call_tokens,
            (lead,),
            now_ms(),
            self._head,
        )
        self._tell_checkpoint(publish)

    # ---- the tool round ----

    def _open_round(
        self, round_id: str, calls: tuple[ToolCall, ...], content: AssistantContent, at_ms: int
    ) -> ToolRound:
        """A new round, stored on the head with every call pending."""
        round_ = ToolRound.opened(round_id, calls, content, at_ms)
        new = round_.new_round()
        self._conversations.create_tool_round(
            self.request_id,
            new.round_id,
            self._head,
            new.assistant_json,
            list(new.calls),
            created_at_ms=new.created_at_ms,
        )
        return round_

    def _run_round(
        self, round_: ToolRound, stable: tuple[CanonicalMessage, ...], steps: tuple
    ) -> None:
        """Publish the round staged (``stable`` as roots) and have the editor run its calls."""
        self._phase = round_
        self._tell_checkpoint(
            PublishStaged(
                self._next_job(barrier=False),
                stable,
                round_.assistant,
                steps,
                self._last_call_tokens,
                round_.started_at_ms,
            )
        )
        if self._tools is None:
            assert self._plan is not None
            context = exec_context(self._plan, self._request)
            self._tools = start_tool_runtime(self.request_id, self._output, self._self, context)
        self._tools.tell(StartToolRound(round_.round_id, round_.pending))

    def on_tool_completed(self, message: ToolCompleted) -> None:
        """Commit the pair (in completion order), then show the card as completed."""
        round_ = self._phase
        if not isinstance(round_, ToolRound) or message.round_id != round_.round_id:
            return
        if self._ending.started:
            return
        pair = round_.pair_for(message)
        try:
            committed = self._conversations.commit_tool_result(
                self.request_id,
                round_.round_id,
                pair.call.call_id,
                (stored(pair.assistant), stored(pair.result)),
                message.content,
                message.is_error,
                reserve_call_when_settled=True,
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
            self._output.send(completed)
            return
        # The next request first; the card's completion, the settled state and the runtime's
        # release of the round follow it.
        tools = self._tools
        self._publish_settled_then_call(committed.call_index, lead=completed)
        with contextlib.suppress(pykka.ActorDeadError):  # the run may have ended meanwhile
            if tools is not None:
                tools.tell(RoundSettled(round_.round_id))

    def on_tool_runtime_failed(self, message: ToolRuntimeFailed) -> None:
        self._finish(message.error)

    def on_tool_runtime_stopped(self, message: ToolRuntimeStopped) -> None:
        self._tools = None
        self._apply(self._ending.tools_stopped())

    def on_exec_message(self, message: agent.ExecClientMessage) -> None:
        self._to_tools(ExecMessageReceived(message), f"unknown ExecClientMessage id: {message.id}")

    def on_exec_control(self, message: agent.ExecClientControlMessage) -> None:
        if message.WhichOneof("message") != "heartbeat":
            self._to_tools(ExecControlReceived(message), "exec control message before any exec")

    def on_interaction_response(self, message: agent.InteractionResponse) -> None:
        error = f"unknown InteractionResponse id: {message.id}"
        self._to_tools(InteractionResponseReceived(message), error)

    def _to_tools(self, message: object, error_without_tools: str) -> None:
        if self._tools is None:
            self._finish(protocol_error(error_without_tools))
        else:
            self._tools.tell(message)

    # ---- the checkpoint barrier and the other actors ----

    def _next_job(self, *, barrier: bool = True) -> int:
        """A new checkpoint job id; a barrier job is the one the loop waits for next."""
        self._job_id += 1
        if barrier:
            self._barrier_job = self._job_id
        return self._job_id

    def _tell_checkpoint(self, message: object) -> None:
        if self._checkpoint is not None:  # None: the run has ended
            self._checkpoint.tell(message)

    def on_checkpoint_published(self, message: CheckpointPublished) -> None:
        if message.job_id != self._barrier_job or self._ending.started:
            return  # a job nothing waits for (the staged checkpoint of a tool round)
        phase = self._phase
        if isinstance(phase, PublishingFinal):
            self._finish(None)
        elif isinstance(phase, ModelCall):
            self._on_call_step(phase, phase.release())

    def on_checkpoint_failed(self, message: CheckpointFailed) -> None:
        self._finish(message.error)

    def on_blob_sync_failed(self, message: BlobSyncFailed) -> None:
        self._finish(message.error)

    def on_kv_message(self, message: agent.KvClientMessage) -> None:
        if self._blob_sync is not None:
            self._blob_sync.tell(KvClientMessageReceived(message))

    # ---- the end ----

    def cancel(self, error: ConnectError) -> None:
        """Cancel from outside (client cancel, superseding run, shutdown)."""
        self._finish(error)

    def _guarded(self, step: Callable[[], object]) -> None:
        """Run a step that reads or writes the store or decodes the client's state; its
        failure ends the run with the matching error."""
        try:
            step()
        except ConnectError as error:
            self._finish(error)
        except StaleRun:
            self._finish(cancelled_error())
        except (CheckpointJsonError, CheckpointStateError) as exc:
            self._finish(protocol_error(f"conversation_state: {exc}"))
        except (peewee.DatabaseError, ConversationStoreError) as exc:
            self._finish(ConnectError(Code.INTERNAL, f"store error: {exc}"))

    def _finish(self, error: ConnectError | None) -> None:
        """End the run (None: completed); only the first end counts."""
        tools_running = self._tools is not None
        self._apply(
            self._ending.end(
                error, claimed=self._claimed, usage=self._usage, tools_running=tools_running
            )
        )

    def _apply(self, effects: tuple[EndEffect, ...]) -> None:
        for effect in effects:
            match effect:
                case ending.RecordRunEnd():
                    self._record_end(effect)
                case ending.AbortPendingCalls(reason=reason) if self._tools is not None:
                    self._tools.tell(AbortPendingExecs(reason))
                case ending.AbortPendingCalls():
                    pass
                case ending.StopChildren():
                    self._stop_children()
                case ending.ReleaseConversation():
                    self._deps.owners.release(self.conversation_id, self.request_id)
                case ending.EndStream(error=error):
                    self._end_session(error)
                case _:
                    raise TypeError(f"unknown end effect {effect!r}")

    def _record_end(self, record: ending.RecordRunEnd) -> None:
        try:
            self._conversations.finish_run(
                self.request_id,
                record.status,
                record.usage_json,
                record.failure_category,
                record.failure_message,
            )
        except (peewee.DatabaseError, ConversationStoreError):
            logger.exception("recording the end of run %s failed", self.request_id)

    def _stop_children(self) -> None:
        """Stop the run's child actors; one that already stopped itself (a provider call
        whose end is still held behind the barrier) is simply gone."""
        provider, blob_sync, checkpoint = self._provider, self._blob_sync, self._checkpoint
        self._provider = self._blob_sync = self._checkpoint = None
        with contextlib.suppress(pykka.ActorDeadError):
            if provider is not None:
                provider.tell(CancelProviderCall("the run ended"))
        with contextlib.suppress(pykka.ActorDeadError):
            if blob_sync is not None:
                blob_sync.tell(CancelBlobSync("the run ended"))
                blob_sync.stop(block=False)
        with contextlib.suppress(pykka.ActorDeadError):
            if checkpoint is not None:
                checkpoint.stop(block=False)
