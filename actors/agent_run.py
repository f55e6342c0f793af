"""One agent turn, driven by its SessionActor: prepare, call the model, publish, end.

The SessionActor owns this object and calls it on its own thread, so nothing here is shared.
The turn is a state machine: every wait (a checkpoint barrier, a provider stream) is a state
left by returning, and the reply arrives later as a message the SessionActor hands back here.
A model that asks for tools starts a tool round: the round is stored, a staged checkpoint
holds the complete assistant message, the ToolRuntimeActor has the editor run the calls, each
result is committed as an ``assistant(call) -> tool(result)`` pair in completion order, and the
next model call waits until the whole round is committed and its settled checkpoint published.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable
from enum import Enum, auto

import msgspec
import peewee
import pykka

from actors.blob_sync import BlobSyncFailed, CancelBlobSync, KvClientMessageReceived, KvLimits
from actors.blob_sync import start_blob_sync as start_blob_sync_actor
from actors.bridge import LoopTasks
from actors.checkpoint import (
    AssistantStep,
    CheckpointFailed,
    CheckpointPublished,
    CheckpointSetup,
    PublishFinal,
    PublishSettled,
    PublishStaged,
    Step,
    ThinkingStep,
    ToolCallStep,
    start_checkpoint_actor,
)
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    Origin,
    PartsContent,
    Role,
    TextPart,
    ToolCall,
    ToolResultContent,
    decode_message,
    encode_message,
)
from actors.conversation.projection import project
from actors.messages import CancelRun
from actors.providers.actor import (
    CancelProviderCall,
    ProviderCallEnded,
    ProviderDeps,
    ProviderEventsReceived,
    StartProviderCall,
    start_provider_call,
)
from actors.providers.errors import FailureKind, ProviderFailure
from actors.providers.events import (
    FinishReason,
    TextDelta,
    TextEnded,
    TextStarted,
    ThinkingDelta,
    ThinkingEnded,
    ThinkingStarted,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    Usage,
    UsageReported,
)
from actors.providers.grammar import CallResult
from actors.providers.request import LlmRequest, ModelRoute
from actors.request_context import runtime_context
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
from prompt.assets import ModeAssets, PromptAssets, UnknownModeError
from prompt.runtime_message import RuntimeContextError
from store import Store
from store.conversations import (
    ConversationStore,
    ConversationStoreError,
    RunStatus,
    StaleRun,
    StoredMessage,
    ToolCallSpec,
)
from wire.errors import Code, ConnectError, cancelled_error, protocol_error, provider_error_detail
from wire.exec_tools import UnsupportedTool, partial_tool_call_frame, tool_call_completed_frame
from wire.interaction_updates import (
    text_delta_frame,
    thinking_completed_frame,
    thinking_delta_frame,
    token_delta_frame,
    turn_ended_frame,
)
from wire.log import log_event
from wire.proto import agent_v1_pb2 as agent

logger = logging.getLogger("cursor_server.run")

RESUME_UNAVAILABLE = "this RunRequest carries no user message; resuming a turn is not available yet"

# Cursor's AgentMode number -> our mode asset name. Other modes come later.
MODE_NAMES = {agent.AGENT_MODE_AGENT: "agent"}


class AgentDeps(msgspec.Struct, frozen=True):
    """What every run needs, shared by all SessionActors of the server."""

    store: Store
    prompts: PromptAssets
    provider: ProviderDeps
    owners: RunOwners
    tasks: LoopTasks
    kv_limits: KvLimits = KvLimits()


class State(Enum):
    PUBLISHING_INITIAL = auto()
    CALLING_PROVIDER = auto()
    RUNNING_TOOLS = auto()
    PUBLISHING_SETTLED = auto()
    PUBLISHING_FINAL = auto()
    ABORTING = auto()
    ENDED = auto()


def add_usage(total: Usage | None, usage: Usage) -> Usage:
    """The turn's usage: a field is a sum only while every reporting call reported it."""
    if total is None:
        return usage

    def both(a: int | None, b: int | None) -> int | None:
        return None if a is None or b is None else a + b

    return Usage(
        input_tokens=both(total.input_tokens, usage.input_tokens),
        output_tokens=both(total.output_tokens, usage.output_tokens),
        cache_read_tokens=both(total.cache_read_tokens, usage.cache_read_tokens),
        cache_write_tokens=both(total.cache_write_tokens, usage.cache_write_tokens),
        reasoning_tokens=both(total.reasoning_tokens, usage.reasoning_tokens),
    )


def stored(message: CanonicalMessage) -> StoredMessage:
    return StoredMessage(
        message.message_id,
        message.role.value,
        message.origin.value,
        encode_message(message),
        message.runtime_event_id,
    )


def run_failure(failure: ProviderFailure) -> ConnectError:
    """How a failed provider call ends the run (with Cursor's retryable error details)."""
    if failure.kind is FailureKind.PROTOCOL:
        return protocol_error(failure.message)
    message = f"provider error: {failure.message}"
    return ConnectError(Code.UNAVAILABLE, message, (provider_error_detail(message),))


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
        self._state = State.PUBLISHING_INITIAL
        self._head = 0
        self._messages: tuple[CanonicalMessage, ...] = ()
        self._blob_sync: pykka.ActorRef | None = None
        self._checkpoint: pykka.ActorRef | None = None
        self._provider: pykka.ActorRef | None = None
        self._model_call_id = ""
        self._call_index = -1
        self._steps: list[Step] = []
        self._thinking_started = 0.0
        self._thinking_text: list[str] = []
        self._text: list[str] = []
        self._usage: Usage | None = None
        self._last_call_tokens: int | None = None
        self._mode: ModeAssets | None = None
        self._claimed = False
        self._tools: pykka.ActorRef | None = None
        self._round_id = ""
        self._round_assistant: AssistantContent | None = None
        self._round_first_pair = True
        self._calls_by_index: dict[int, tuple[str, str]] = {}
        self._job_id = 1
        self._barrier_job = 0
        self._ending: ConnectError | None = None

    # ---- start ----

    def start(self) -> None:
        """Prepare the turn; the first model call waits for the initial checkpoint."""
        try:
            self._prepare()
        except ConnectError as error:
            self._finish(error)
            return
        except StaleRun:
            self._finish(cancelled_error())
            return
        except (peewee.DatabaseError, ConversationStoreError) as exc:
            self._finish(ConnectError(Code.INTERNAL, f"store error: {exc}"))

    def _prepare(self) -> None:
        action = self._request.action
        if action.WhichOneof("action") != "user_message_action":
            raise ConnectError(Code.UNIMPLEMENTED, RESUME_UNAVAILABLE)
        user_message = action.user_message_action.user_message
        mode_name = MODE_NAMES.get(user_message.mode)
        if mode_name is None:
            label = (
                agent.AgentMode.Name(user_message.mode)
                if user_message.mode in agent.AgentMode.values()
                else str(user_message.mode)
            )
            raise protocol_error(
                f"unsupported agent mode: {label} (this server runs AGENT_MODE_AGENT)"
            )
        try:
            mode = self._deps.prompts.mode(mode_name)
        except UnknownModeError as exc:
            raise protocol_error(str(exc)) from exc
        self._mode = mode
        runtime_text = self._runtime_text(mode, user_message)
        store = self._conversations
        head = store.ensure_conversation(self.conversation_id)
        claimed = store.claim_run(self.request_id, self.conversation_id, head)
        self._claimed = True
        previous = self._deps.owners.claim(self.conversation_id, self.request_id, self._self)
        if previous is not None:
            previous.tell(CancelRun(f"superseded by {self.request_id}"))
        runtime_message = CanonicalMessage(
            message_id=f"runtime:run-request:{self.request_id}",
            role=Role.USER,
            origin=Origin.RUNTIME,
            content=PartsContent((TextPart(runtime_text),)),
            runtime_event_id=f"run-request:{self.request_id}",
        )
        self._head, _inserted = store.append_once(
            self.request_id, claimed.base_revision_id, stored(runtime_message)
        )
        self._messages = tuple(decode_message(m.payload) for m in store.messages_at(self._head))
        instructions = mode.system_prompt(self._route.model_id)
        self._instructions = instructions
        self._blob_sync = start_blob_sync_actor(
            self.request_id, self._output, self._deps.store, self._deps.tasks, self._deps.kv_limits
        )
        setup = CheckpointSetup(
            request_id=self.request_id,
            instructions=instructions,
            model_name=self._route.model_id,
            mode=user_message.mode,
            tools=mode.tools,
            context_window=self._route.context_window_tokens,
            user_message=user_message,
            base=self._request.conversation_state
            if self._request.HasField("conversation_state")
            else None,
        )
        self._checkpoint = start_checkpoint_actor(setup, self._output, self._blob_sync, self._self)
        log_event(
            logger,
            logging.INFO,
            "run started",
            request_id=self.request_id,
            conversation_id=self.conversation_id,
            model=self._route.public_id,
            superseded=claimed.superseded_run_id,
        )
        self._checkpoint.tell(PublishSettled(self._next_job(), self._messages, (), None))

    def _runtime_text(self, mode: ModeAssets, user_message: agent.UserMessage) -> str:
        action = self._request.action.user_message_action
        context = runtime_context(
            user_message,
            action.request_context if action.HasField("request_context") else None,
            datetime.datetime.now(datetime.UTC),
        )
        try:
            return mode.runtime_message(context)
        except RuntimeContextError as exc:
            raise protocol_error(str(exc)) from exc

    # ---- messages from the run's other actors ----

    def _next_job(self, *, barrier: bool = True) -> int:
        """A new checkpoint job id; a barrier job is the one the loop waits for next."""
        self._job_id += 1
        if barrier:
            self._barrier_job = self._job_id
        return self._job_id

    def on_checkpoint_published(self, message: CheckpointPublished) -> None:
        if message.job_id != self._barrier_job:
            return  # a job nothing waits for (the staged checkpoint of a tool round)
        if self._state in (State.PUBLISHING_INITIAL, State.PUBLISHING_SETTLED):
            self._call_provider()
        elif self._state is State.PUBLISHING_FINAL:
            self._complete()

    def on_checkpoint_failed(self, message: CheckpointFailed) -> None:
        self._finish(message.error)

    def on_blob_sync_failed(self, message: BlobSyncFailed) -> None:
        self._finish(message.error)

    def on_kv_message(self, message: agent.KvClientMessage) -> None:
        if self._blob_sync is not None:
            self._blob_sync.tell(KvClientMessageReceived(message))

    def on_provider_events(self, message: ProviderEventsReceived) -> None:
        if (
            message.model_call_id != self._model_call_id
            or self._state is not State.CALLING_PROVIDER
        ):
            return
        for event in message.events:
            match event:
                case TextDelta(text=text):
                    self._text.append(text)
                    self._output.send(text_delta_frame(text))
                case ThinkingStarted():
                    self._thinking_started = time.monotonic()
                    self._thinking_text = []
                case ThinkingDelta(text=text):
                    self._thinking_text.append(text)
                    self._output.send(thinking_delta_frame(text))
                case ThinkingEnded():
                    duration = round((time.monotonic() - self._thinking_started) * 1000)
                    self._output.send(thinking_completed_frame(duration))
                    text = "".join(self._thinking_text)
                    if text:
                        self._steps.append(ThinkingStep(text, max(duration, 1)))
                case TextStarted():
                    self._text = []
                case TextEnded():
                    text = "".join(self._text)
                    if text:
                        self._steps.append(AssistantStep(text))
                case ToolCallStarted(index=index, call_id=call_id, name=name):
                    self._calls_by_index[index] = (call_id, name)
                    self._partial_call(call_id, name, "")
                case ToolCallArgumentsDelta(index=index, delta=delta):
                    call_id, name = self._calls_by_index[index]
                    self._partial_call(call_id, name, delta)
                case UsageReported(usage=usage):
                    self._usage = add_usage(self._usage, usage)
                    if usage.input_tokens is not None and usage.output_tokens is not None:
                        self._last_call_tokens = usage.input_tokens + usage.output_tokens
                    if usage.output_tokens is not None:
                        self._output.send(token_delta_frame(usage.output_tokens))
                case _:
                    pass

    def _partial_call(self, call_id: str, name: str, delta: str) -> None:
        try:
            frame = partial_tool_call_frame(call_id, name, self._model_call_id, delta)
        except UnsupportedTool:
            return  # the round refuses the unknown tool when it starts
        self._output.send(frame)

    def on_provider_ended(self, message: ProviderCallEnded) -> None:
        if (
            message.model_call_id != self._model_call_id
            or self._state is not State.CALLING_PROVIDER
        ):
            return
        self._provider = None
        if message.failure is not None:
            self._finish(run_failure(message.failure))
            return
        result = message.result
        if result is None:  # cancelled by us: the run is already ending
            return
        if result.finish is FinishReason.LENGTH:
            failure = ProviderFailure(
                FailureKind.PROVIDER, "model stopped before completing the response"
            )
            self._finish(run_failure(failure))
            return
        if result.calls:
            self._start_round(result)
            return
        final = CanonicalMessage(
            message_id=f"{self.request_id}:assistant:{self._call_index}",
            role=Role.ASSISTANT,
            origin=Origin.ASSISTANT,
            content=AssistantContent(
                text=result.text, thinking=result.thinking, replay_state=result.replay
            ),
        )
        try:
            self._head = self._conversations.append_messages(
                self.request_id, self._head, [stored(final)]
            )
        except StaleRun:
            self._finish(cancelled_error())
            return
        usage = self._usage
        lead = turn_ended_frame(
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
            cache_read_tokens=usage.cache_read_tokens if usage else None,
            cache_write_tokens=usage.cache_write_tokens if usage else None,
            reasoning_tokens=usage.reasoning_tokens if usage else None,
        )
        self._state = State.PUBLISHING_FINAL
        assert self._checkpoint is not None
        self._checkpoint.tell(
            PublishFinal(
                job_id=self._next_job(),
                messages=self._messages,
                final=final,
                steps=tuple(self._steps),
                used_tokens=self._last_call_tokens,
                lead_frames=(lead,),
                started_at_ms=time.time_ns() // 1_000_000,
            )
        )
        self._steps = []

    # ---- the tool round ----

    def _start_round(self, result: CallResult) -> None:
        """Store the round, publish it staged, and have the editor run every call."""
        self._round_id = f"{self.request_id}:round:{self._call_index}"
        calls = tuple(
            ToolCall(c.index, c.call_id, c.name, c.arguments_json, self._model_call_id)
            for c in result.calls
        )
        self._round_assistant = AssistantContent(
            text=result.text,
            thinking=result.thinking,
            tool_round_id=self._round_id,
            replay_state=result.replay,
            tool_calls=calls,
        )
        self._round_first_pair = True
        try:
            self._conversations.create_tool_round(
                self.request_id,
                self._round_id,
                self._head,
                msgspec.json.encode(self._round_assistant),
                [
                    ToolCallSpec(c.index, c.call_id, c.model_call_id, c.name, c.arguments)
                    for c in calls
                ],
            )
        except StaleRun:
            self._finish(cancelled_error())
            return
        self._state = State.RUNNING_TOOLS
        assert self._checkpoint is not None
        self._checkpoint.tell(
            PublishStaged(
                job_id=self._next_job(barrier=False),
                messages=self._messages,
                pending=self._round_assistant,
                steps=tuple(self._steps),
                used_tokens=self._last_call_tokens,
                started_at_ms=time.time_ns() // 1_000_000,
            )
        )
        self._steps = []
        if self._tools is None:
            self._tools = start_tool_runtime(self.request_id, self._output, self._self)
        self._tools.tell(StartToolRound(self._round_id, calls))

    def on_tool_completed(self, message: ToolCompleted) -> None:
        """Commit the pair (in completion order), then show the card as completed."""
        if self._state is not State.RUNNING_TOOLS or message.round_id != self._round_id:
            return
        assert self._round_assistant is not None
        call = next(c for c in self._round_assistant.tool_calls if c.call_id == message.call_id)
        first = self._round_first_pair
        assistant = CanonicalMessage(
            message_id=f"{self._round_id}:{call.call_id}:assistant",
            role=Role.ASSISTANT,
            origin=Origin.ASSISTANT,
            content=AssistantContent(
                text=self._round_assistant.text if first else "",
                thinking=self._round_assistant.thinking if first else "",
                tool_round_id=self._round_id,
                replay_state=self._round_assistant.replay_state if first else None,
                tool_calls=(call,),
            ),
        )
        result = CanonicalMessage(
            message_id=f"{self._round_id}:{call.call_id}:result",
            role=Role.TOOL,
            origin=Origin.TOOL,
            content=ToolResultContent(
                call.call_id, message.name, message.content, message.is_error
            ),
        )
        try:
            committed = self._conversations.commit_tool_result(
                self.request_id,
                self._round_id,
                call.call_id,
                (stored(assistant), stored(result)),
                message.content,
                message.is_error,
            )
        except StaleRun:
            self._finish(cancelled_error())
            return
        except ConversationStoreError as exc:
            self._finish(protocol_error(str(exc)))
            return
        self._round_first_pair = False
        self._head = committed.revision_id
        self._messages = (*self._messages, assistant, result)
        self._output.send(
            tool_call_completed_frame(call.call_id, call.model_call_id, message.tool_call)
        )
        self._steps.append(ToolCallStep(message.tool_call))
        if committed.settled:
            assert self._tools is not None and self._checkpoint is not None
            self._tools.tell(RoundSettled(self._round_id))
            self._state = State.PUBLISHING_SETTLED
            self._checkpoint.tell(
                PublishSettled(
                    self._next_job(), self._messages, tuple(self._steps), self._last_call_tokens
                )
            )
            self._steps = []

    def on_tool_runtime_failed(self, message: ToolRuntimeFailed) -> None:
        self._finish(message.error)

    def on_tool_runtime_stopped(self, message: ToolRuntimeStopped) -> None:
        self._tools = None
        if self._state is State.ABORTING:
            self._end(self._ending)

    def on_exec_message(self, message: agent.ExecClientMessage) -> None:
        self._to_tools(ExecMessageReceived(message), f"unknown ExecClientMessage id: {message.id}")

    def on_exec_control(self, message: agent.ExecClientControlMessage) -> None:
        if message.WhichOneof("message") == "heartbeat":
            return
        self._to_tools(ExecControlReceived(message), "exec control message before any exec")

    def on_interaction_response(self, message: agent.InteractionResponse) -> None:
        self._to_tools(
            InteractionResponseReceived(message), f"unknown InteractionResponse id: {message.id}"
        )

    def _to_tools(self, message: object, error_without_tools: str) -> None:
        if self._tools is None:
            self._finish(protocol_error(error_without_tools))
        else:
            self._tools.tell(message)

    # ---- the model call ----

    def _call_provider(self) -> None:
        assert self._mode is not None
        try:
            self._call_index = self._conversations.begin_provider_call(self.request_id)
        except StaleRun:
            self._finish(cancelled_error())
            return
        self._model_call_id = f"{self.request_id}:{self._call_index}"
        request = LlmRequest(
            instructions=self._instructions,
            tools=self._mode.tools,
            messages=project(self._messages),
        )
        self._state = State.CALLING_PROVIDER
        self._provider = start_provider_call(
            StartProviderCall(self.request_id, self._model_call_id, request, self._route),
            self._self,
            self._deps.provider,
        )

    # ---- ends ----

    def _complete(self) -> None:
        usage = msgspec.json.encode(self._usage).decode() if self._usage is not None else None
        self._conversations.finish_run(self.request_id, RunStatus.COMPLETED, usage)
        self._end(None)

    def cancel(self, error: ConnectError) -> None:
        """Cancel from outside (client cancel, superseding run, shutdown)."""
        self._finish(error)

    def _finish(self, error: ConnectError | None) -> None:
        if self._state in (State.ENDED, State.ABORTING):
            return
        status = (
            RunStatus.CANCELLED
            if error is not None and error.code is Code.CANCELED
            else RunStatus.FAILED
        )
        if error is not None and self._claimed:
            try:
                self._conversations.finish_run(
                    self.request_id,
                    status,
                    failure_category=error.code.value,
                    failure_message=error.message,
                )
            except (peewee.DatabaseError, ConversationStoreError):
                logger.exception("recording the end of run %s failed", self.request_id)
        self._end(error)

    def _end(self, error: ConnectError | None) -> None:
        if self._tools is not None and self._state is not State.ABORTING:
            # Pending execs are aborted (ascending ids) before the EndStream; the runtime
            # answers ToolRuntimeStopped, which ends the run.
            self._state = State.ABORTING
            self._ending = error
            self._tools.tell(AbortPendingExecs("the run ended"))
            self._cancel_children()
            return
        self._state = State.ENDED
        self._cancel_children()
        self._deps.owners.release(self.conversation_id, self.request_id)
        self._end_session(error)

    def _cancel_children(self) -> None:
        if self._provider is not None:
            self._provider.tell(CancelProviderCall("the run ended"))
            self._provider = None
        if self._blob_sync is not None:
            self._blob_sync.tell(CancelBlobSync("the run ended"))
            self._blob_sync.stop(block=False)
            self._blob_sync = None
        if self._checkpoint is not None:
            self._checkpoint.stop(block=False)
            self._checkpoint = None
