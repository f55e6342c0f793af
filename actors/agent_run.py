"""One agent turn, driven by its SessionActor: find the base, prepare, call the model, publish.

The SessionActor owns this object and calls it on its own thread, so nothing here is shared.
The turn is a state machine: every wait (a KV GET, a checkpoint barrier, a provider stream) is
a state left by returning, and the reply arrives later as a message the SessionActor hands back.

The base is the revision the client's ``conversation_state`` stands for: found in the
checkpoint index when this server published that state, else its root blobs are fetched (CAS,
else KV GET), decoded and imported. An older state is a rollback (a new branch from it). A user
message then appends the runtime message once; a ``resume_action`` instead continues the
interrupted tool round (adopted from the store, only its pending calls dispatched) or calls the
model again. A model that asks for tools starts a tool round: the round is stored, a staged
checkpoint holds the complete assistant message, the ToolRuntimeActor has the editor run the
calls, each result is committed as an ``assistant(call) -> tool(result)`` pair in completion
order, and the next model call starts once the whole round is committed. Every model call is
sent while its settled checkpoint is still being acknowledged; its events are held until that
checkpoint is published, so the client never sees progress ahead of its checkpoint.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import time
from collections.abc import Callable
from enum import Enum, auto

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
    b64,
)
from actors.blob_sync import start_blob_sync as start_blob_sync_actor
from actors.checkpoint import (
    AssistantStep,
    CheckpointFailed,
    CheckpointPublished,
    CheckpointSetup,
    MessagesCommitted,
    PublishFinal,
    PublishSettled,
    PublishStaged,
    Step,
    ThinkingStep,
    ToolCallStep,
    start_checkpoint_actor,
)
from actors.checkpoint_json import (
    CheckpointJsonError,
    PendingRound,
    decode_pending,
    decode_root,
    hydrated_message_id,
)
from actors.checkpoint_state import CheckpointStateError
from actors.conversation.events import (
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
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    ImagePart,
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
from actors.providers.errors import FailureKind, ProviderFailure
from actors.providers.grammar import CallResult
from actors.request_context import image_blob_ids, runtime_context, runtime_images
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
from store.clock import now_ms
from store.conversations import (
    ANY_HEAD,
    ClaimedRun,
    ConversationStore,
    ConversationStoreError,
    HeadMoved,
    RevisionNotFound,
    RunStatus,
    StaleRun,
    StoredMessage,
    ToolCallSpec,
    ToolCallStatus,
    ToolRoundRecord,
    roots_digest,
)
from wire.errors import Code, ConnectError, cancelled_error, protocol_error, provider_error_detail
from wire.interaction_updates import (
    text_delta_frame,
    thinking_completed_frame,
    thinking_delta_frame,
    token_delta_frame,
    turn_ended_frame,
)
from wire.log import log_event
from wire.proto import agent_v1_pb2 as agent
from wire.streamed_args import StreamedArgsDecoder
from wire.tools.base import ExecContext
from wire.tools.frames import partial_tool_call_frame, tool_call_completed_frame
from wire.tools.registry import UnsupportedTool
from wire.tools.streaming import streamed_args_decoder, streamed_args_frames

logger = logging.getLogger("cursor_server.run")


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
    histories: HistoryCache = msgspec.field(default_factory=HistoryCache)


class State(Enum):
    HYDRATING = auto()
    CALLING_PROVIDER = auto()
    RUNNING_TOOLS = auto()
    PUBLISHING_FINAL = auto()
    ABORTING = auto()
    ENDED = auto()


class TurnKind(Enum):
    NEW = auto()  # a user message starts a turn
    RESUME = auto()  # the client reconnected: continue the turn of its last checkpoint


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


def _message_count(store: ConversationStore, revision_id: int) -> int:
    revision = store.revision(revision_id)
    if revision is None:
        raise RevisionNotFound(f"no revision {revision_id}")
    return revision.message_count


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
        self._state = State.HYDRATING
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
        self._mode_number = agent.AGENT_MODE_AGENT
        self._kind = TurnKind.NEW
        self._user_message: agent.UserMessage | None = None
        self._runtime_content: tuple[TextPart | ImagePart, ...] = ()
        self._claimed = False
        self._tools: pykka.ActorRef | None = None
        self._round_id = ""
        self._round_assistant: AssistantContent | None = None
        self._round_first_pair = True
        self._round_started_ms = 0
        self._round_calls_pending: tuple[ToolCall, ...] = ()
        self._calls_by_index: dict[int, tuple[str, str]] = {}
        self._arg_decoders: dict[int, StreamedArgsDecoder | None] = {}
        self._job_id = 1
        self._barrier_job = 0
        # Provider messages that arrived while the checkpoint barrier before their call was
        # still open: released, in order, once that checkpoint is published.
        self._held: list[tuple[ProviderEventsReceived | ProviderCallEnded, float]] | None = None
        self._ending: ConnectError | None = None
        # The client's state: its stable roots (system root dropped) and the blobs still
        # being fetched (KV GET) before the run can start.
        self._client_state: agent.ConversationStateStructure | None = (
            request.conversation_state if request.HasField("conversation_state") else None
        )
        self._stable_roots: tuple[bytes, ...] = ()
        self._fetching: dict[int, bytes] = {}
        self._fetched: dict[bytes, bytes] = {}
        self._indexed_base: int | None = None  # the checkpoint index's answer for the state
        self._resume_turn: bytes | None = None

    # ---- start ----

    def start(self) -> None:
        """Check the request, then find its base: from the checkpoint index, else by fetching
        the client's root blobs (local CAS, else KV GET) and importing them as a revision."""
        try:
            self._check_request()
            self._blob_sync = start_blob_sync_actor(
                self.request_id,
                self._output,
                self._deps.store,
                self._deps.tasks,
                self._deps.kv_limits,
            )
            self._fetch_missing()
        except ConnectError as error:
            self._finish(error)
            return
        except StaleRun:
            self._finish(cancelled_error())
            return
        except (peewee.DatabaseError, ConversationStoreError) as exc:
            self._finish(ConnectError(Code.INTERNAL, f"store error: {exc}"))
            return
        if not self._fetching:
            self._prepare_guarded()

    def _check_request(self) -> None:
        """The action, the mode and (for a user turn) the rendered runtime message."""
        action = self._request.action
        kind = action.WhichOneof("action")
        state = self._client_state
        if kind == "user_message_action":
            self._user_message = action.user_message_action.user_message
            self._mode_number = self._user_message.mode
        elif kind == "resume_action":
            if state is None or not state.root_prompt_messages_json:
                raise protocol_error("resume_action needs the conversation_state to resume from")
            self._kind = TurnKind.RESUME
            self._mode_number = state.mode or agent.AGENT_MODE_AGENT
        else:
            raise ConnectError(
                Code.UNIMPLEMENTED, f"conversation action {kind or 'none'} is not available"
            )
        mode_name = MODE_NAMES.get(self._mode_number)
        if mode_name is None:
            number = self._mode_number
            label = agent.AgentMode.Name(number) if number in agent.AgentMode.values() else number
            raise protocol_error(
                f"unsupported agent mode: {label} (this server runs AGENT_MODE_AGENT)"
            )
        try:
            self._mode = self._deps.prompts.mode(mode_name)
        except UnknownModeError as exc:
            raise protocol_error(str(exc)) from exc

    def _fetch_missing(self) -> None:
        """Ask the BlobSyncActor for what the run needs and the server may lack: the images
        sent by blob id, the client state's roots when the index does not know them, and
        for a resume its last turn."""
        wanted: list[bytes] = []
        if self._user_message is not None:
            wanted.extend(image_blob_ids(self._user_message))
        state = self._client_state
        if state is None:
            self._fetch(wanted)
            return
        roots = tuple(state.root_prompt_messages_json)
        self._stable_roots = roots[1:]
        if roots:
            digest = roots_digest(self._stable_roots)
            self._indexed_base = self._conversations.revision_for_checkpoint(
                self.conversation_id, digest
            )
            if self._indexed_base is None:
                wanted.extend(roots)
        if self._kind is TurnKind.RESUME and state.turns:
            wanted.append(state.turns[-1])
        self._fetch(wanted)

    def _fetch(self, wanted: list[bytes]) -> None:
        assert self._blob_sync is not None
        for number, blob_id in enumerate(dict.fromkeys(wanted), start=1):
            self._fetching[number] = blob_id
            self._blob_sync.tell(FetchBlob(number, blob_id, self._self))

    def on_blob_fetched(self, message: BlobFetched) -> None:
        if self._state is not State.HYDRATING or message.fetch_id not in self._fetching:
            return
        blob_id = self._fetching.pop(message.fetch_id)
        if message.data is None:
            self._finish(protocol_error(f"the client has no blob {b64(blob_id)}"))
            return
        self._fetched[blob_id] = message.data
        if not self._fetching:
            self._prepare_guarded()

    def _prepare_guarded(self) -> None:
        try:
            self._prepare()
        except ConnectError as error:
            self._finish(error)
        except StaleRun:
            self._finish(cancelled_error())
        except (CheckpointJsonError, CheckpointStateError) as exc:
            self._finish(protocol_error(f"conversation_state: {exc}"))
        except (peewee.DatabaseError, ConversationStoreError) as exc:
            self._finish(ConnectError(Code.INTERNAL, f"store error: {exc}"))

    def _base_revision(self) -> int | None:
        """The revision the client's state stands for (None: no state, use the head)."""
        state = self._client_state
        if state is None:
            return None
        store = self._conversations
        roots = tuple(state.root_prompt_messages_json)
        if not roots:
            # A state without history: the conversation from its beginning.
            return store.import_revision(self.conversation_id, ())
        if self._indexed_base is not None:
            return self._indexed_base
        messages = [
            decode_root(self._fetched[blob_id], hydrated_message_id(blob_id, ordinal))
            for ordinal, blob_id in enumerate(roots)
        ]
        if messages[0].role is not Role.SYSTEM:
            raise protocol_error("conversation_state: the first root is not the system prompt")
        if any(m.role is Role.SYSTEM for m in messages[1:]):
            raise protocol_error("conversation_state: more than one system root")
        revision = store.import_revision(self.conversation_id, [stored(m) for m in messages[1:]])
        store.record_checkpoint(self.conversation_id, roots_digest(self._stable_roots), revision)
        return revision

    def _prepare(self) -> None:
        mode = self._mode
        assert mode is not None
        if self._user_message is not None:
            self._runtime_content = self._runtime_parts(mode, self._user_message)
        base = self._base_revision()
        self._instructions = mode.system_prompt(self._route.model_id)
        if self._kind is TurnKind.NEW:
            self._start_user_turn(base)
        else:
            self._start_resume(base)

    def _start_user_turn(self, base: int | None) -> None:
        """A user turn: its first checkpoint is built, and its blobs SET, while the turn's
        start is being committed; it is published once both the ACKs and the commit are in.

        The committed history is known beforehand (the base's messages, then the runtime
        message unless a replay already holds it), so the checkpoint does not wait for the
        commit to be read back; the commit is checked against that prediction, and a
        mismatch (another writer moved the conversation meanwhile) ends the run unpublished.
        """
        store = self._conversations
        from_state = base  # None: no client state, the turn follows the conversation's head
        if base is None:
            # The head now (None: a new conversation); the commit must still find it there.
            base = store.head(self.conversation_id)
        history = self._messages_at(base) if base is not None else ()
        runtime = self._runtime_message()
        replayed = any(m.message_id == runtime.message_id for m in history)
        predicted = history if replayed else (*history, runtime)
        self._start_checkpoint_actor(len(history))
        assert self._checkpoint is not None
        job = self._next_job()
        self._checkpoint.tell(
            PublishSettled(job, predicted, (), self._last_call_tokens, awaits_commit=True)
        )
        # Claim, the runtime message and the first call index: one commit. Without client
        # state it must still find the head read above (another run may have moved it).
        try:
            started = store.start_turn(
                self.request_id,
                self.conversation_id,
                from_state,
                stored(runtime),
                expected_head=base if from_state is None else ANY_HEAD,
            )
        except HeadMoved as exc:
            raise ConnectError(
                Code.ABORTED, f"the conversation changed while this turn started ({exc})"
            ) from exc
        self._claimed = True
        if started.inserted == replayed or started.base_message_count != len(history):
            # Cannot happen once the head is checked: the checkpoint would not be the commit.
            raise ConnectError(
                Code.INTERNAL, "the committed turn differs from the checkpoint built for it"
            )
        self._head = started.head
        self._messages = predicted
        self._held = []
        self._call_provider(started.call_index)
        if self._checkpoint is None:
            return  # the call could not start: the run has ended
        self._checkpoint.tell(MessagesCommitted(job, started.head))
        self._supersede_previous()
        self._log_started(started.claimed, base)

    def _start_resume(self, base: int | None) -> None:
        """A resume: the run continues its unfinished turn from the client's state."""
        store = self._conversations
        if base is None:
            base = store.ensure_conversation(self.conversation_id)
        pending, existing = self._pending_round(base)
        # A round this server stored continues on the revision of its last committed pair.
        start = store.round_head(existing) if existing is not None else base
        claimed = store.claim_run(self.request_id, self.conversation_id, start)
        self._head = claimed.base_revision_id
        self._claimed = True
        self._supersede_previous()
        base_count = _message_count(store, base)
        state = self._client_state
        if state is not None and state.turns:
            self._resume_turn = self._fetched[state.turns[-1]]
        self._start_checkpoint_actor(base_count)
        self._log_started(claimed, base)
        if pending is None:
            self._resume_settled()
        else:
            self._resume_round(base_count, pending, existing)

    def _supersede_previous(self) -> None:
        """This run now owns the conversation in this process: the one before it is cancelled."""
        previous = self._deps.owners.claim(self.conversation_id, self.request_id, self._self)
        if previous is not None:
            with contextlib.suppress(pykka.ActorDeadError):  # it may have just ended
                previous.tell(CancelRun(f"superseded by {self.request_id}"))

    def _start_checkpoint_actor(self, base_count: int) -> None:
        """The run's CheckpointActor; ``base_count`` messages stand for the client's roots."""
        assert self._blob_sync is not None
        setup = CheckpointSetup(
            request_id=self.request_id,
            instructions=self._instructions,
            model_name=self._route.model_id,
            mode=self._mode_number,
            tools=self._mode.tools if self._mode is not None else (),
            context_window=self._route.context_window_tokens,
            user_message=self._user_message,
            base=self._client_state,
            base_roots=self._stable_roots,
            base_message_count=base_count if self._stable_roots else 0,
            resume_turn=self._resume_turn,
            conversation_id=self.conversation_id,
        )
        self._checkpoint = start_checkpoint_actor(
            setup,
            self._output,
            self._blob_sync,
            self._self,
            ConversationStore(self._deps.store.database),
        )

    def _log_started(self, claimed: ClaimedRun, base: int | None) -> None:
        log_event(
            logger,
            logging.INFO,
            "run started",
            request_id=self.request_id,
            conversation_id=self.conversation_id,
            model=self._route.public_id,
            superseded=claimed.superseded_run_id,
            resumed=self._kind is TurnKind.RESUME,
            base_revision=base,
        )

    def _history(self) -> tuple[CanonicalMessage, ...]:
        """The committed messages of the run's head, oldest first."""
        return self._messages_at(self._head)

    def _messages_at(self, revision_id: int) -> tuple[CanonicalMessage, ...]:
        """A committed revision's history: from the cache when a run left it there."""
        cached = self._deps.histories.get(revision_id)
        if cached is not None:
            return cached
        stored_messages = self._conversations.messages_at(revision_id)
        history = tuple(decode_message(m.payload) for m in stored_messages)
        self._deps.histories.put(revision_id, history)
        return history

    def _runtime_message(self) -> CanonicalMessage:
        """The turn's runtime user message (its ids are stable: a retry replays it)."""
        return CanonicalMessage(
            message_id=f"runtime:run-request:{self.request_id}",
            role=Role.USER,
            origin=Origin.RUNTIME,
            content=PartsContent(self._runtime_content),
            runtime_event_id=f"run-request:{self.request_id}",
        )

    def _pending_round(self, base: int) -> tuple[PendingRound | None, ToolRoundRecord | None]:
        """For a resume: the client's pending round, and this server's record of it if any."""
        state = self._client_state
        if self._kind is not TurnKind.RESUME or state is None:
            return None, None
        entries = list(state.pending_tool_calls)
        if len(entries) > 1:
            raise protocol_error(
                f"conversation_state has {len(entries)} pending_tool_calls entries (at most 1)"
            )
        if not entries:
            return None, None
        pending = decode_pending(entries[0])
        existing = self._conversations.find_pending_round(
            self.conversation_id, base, [c.call_id for c in pending.calls]
        )
        return pending, existing

    def _resume_settled(self) -> None:
        """Resume from a settled checkpoint: the model is called again on that history."""
        self._messages = self._history()
        last = self._messages[-1].content if self._messages else None
        if isinstance(last, AssistantContent) and not last.tool_calls:
            raise protocol_error("resume_action: the turn of this state has already ended")
        self._publish_settled_then_call()

    def _resume_round(
        self, base_count: int, pending: PendingRound, existing: ToolRoundRecord | None
    ) -> None:
        """Resume a tool round: its calls without a committed result run again at once (the
        client sees the staged checkpoint and the execs before any model call)."""
        store = self._conversations
        self._round_started_ms = pending.started_at_ms  # the client's pending entry stays as is
        if existing is not None:
            self._resume_adopted(store.adopt_tool_round(self.request_id, existing.round_id))
        else:
            self._resume_imported(pending)
        self._messages = self._history()
        # The stable roots stay those of the base: committed pairs join them when it settles.
        self._publish_staged(self._messages[:base_count])
        self._tools = start_tool_runtime(
            self.request_id, self._output, self._self, self._exec_context()
        )
        self._tools.tell(StartToolRound(self._round_id, self._round_calls_pending))

    def _resume_adopted(self, round_: ToolRoundRecord) -> None:
        """The round is ours (this server stored it): only calls without a result run again."""
        self._round_id = round_.round_id
        self._round_assistant = msgspec.json.decode(round_.assistant_json, type=AssistantContent)
        self._round_first_pair = not any(c.status is ToolCallStatus.COMPLETED for c in round_.calls)
        self._round_calls_pending = tuple(
            ToolCall(c.index, c.call_id, c.name, c.arguments, c.model_call_id)
            for c in round_.calls
            if c.status is ToolCallStatus.PENDING
        )

    def _resume_imported(self, round_: PendingRound) -> None:
        """A round this server never stored (e.g. after losing its database): every call runs."""
        calls = tuple(
            ToolCall(c.index, c.call_id, c.name, c.arguments, round_.model_call_id)
            for c in round_.calls
        )
        self._open_round(
            f"{self.request_id}:round:resume",
            calls,
            AssistantContent(
                text=round_.text, thinking=round_.thinking, replay_state=round_.replay_state
            ),
            round_.started_at_ms,
        )

    def _open_round(
        self,
        round_id: str,
        calls: tuple[ToolCall, ...],
        message: AssistantContent,
        started_at_ms: int,
    ) -> None:
        """Store a new round on the head, every call pending; ``message`` gives the text,
        thinking and replay state of the model's message that made the calls."""
        self._round_id = round_id
        self._round_started_ms = started_at_ms
        self._round_assistant = msgspec.structs.replace(
            message, tool_round_id=round_id, tool_calls=calls
        )
        self._round_first_pair = True
        self._round_calls_pending = calls
        self._conversations.create_tool_round(
            self.request_id,
            round_id,
            self._head,
            msgspec.json.encode(self._round_assistant),
            [ToolCallSpec(c.index, c.call_id, c.model_call_id, c.name, c.arguments) for c in calls],
            created_at_ms=started_at_ms,
        )

    def _exec_context(self) -> ExecContext:
        """What the run's exec requests carry besides the model's arguments."""
        action = self._request.action
        terminals = ""
        if action.WhichOneof("action") == "user_message_action":
            terminals = action.user_message_action.request_context.env.terminals_folder
        return ExecContext(conversation_id=self.conversation_id, terminals_folder=terminals)

    def _runtime_parts(
        self, mode: ModeAssets, user_message: agent.UserMessage
    ) -> tuple[TextPart | ImagePart, ...]:
        """The runtime message's content: the rendered text, then the request's images."""
        action = self._request.action.user_message_action
        context = runtime_context(
            user_message,
            action.request_context if action.HasField("request_context") else None,
            datetime.datetime.now(datetime.UTC),
        )
        try:
            images = runtime_images(user_message, self._fetched)
            return (TextPart(mode.runtime_message(context)), *images)
        except RuntimeContextError as exc:
            raise protocol_error(str(exc)) from exc

    # ---- messages from the run's other actors ----

    def _next_job(self, *, barrier: bool = True) -> int:
        """A new checkpoint job id; a barrier job is the one the loop waits for next."""
        self._job_id += 1
        if barrier:
            self._barrier_job = self._job_id
        return self._job_id

    def _publish_settled_then_call(
        self, call_index: int | None = None, lead_frame: bytes | None = None
    ) -> None:
        """Call the model and publish the settled state at once; the call's events are held
        until the checkpoint is out, so the client still sees the checkpoint first (the barrier
        gates what the client sees, and the request's round trip overlaps the blobs' ACKs).
        The request goes first: ``lead_frame`` and building the checkpoint are not on its
        path, and the client still sees them before any of the call's events."""
        steps, self._steps = tuple(self._steps), []
        self._held = []
        self._call_provider(call_index)
        if self._checkpoint is None:
            return  # the call could not start: the run has ended
        if lead_frame is not None:
            self._output.send(lead_frame)
        self._checkpoint.tell(
            PublishSettled(
                self._next_job(),
                self._messages,
                steps,
                self._last_call_tokens,
                revision_id=self._head,
            )
        )

    def on_checkpoint_published(self, message: CheckpointPublished) -> None:
        if message.job_id != self._barrier_job:
            return  # a job nothing waits for (the staged checkpoint of a tool round)
        if self._state is State.PUBLISHING_FINAL:
            self._complete()
            return
        held, self._held = self._held, None
        for provider_message, arrived in held or ():
            if self._state is not State.CALLING_PROVIDER:
                break
            if isinstance(provider_message, ProviderEventsReceived):
                self.on_provider_events(provider_message, arrived)
            else:
                self.on_provider_ended(provider_message)

    def on_checkpoint_failed(self, message: CheckpointFailed) -> None:
        self._finish(message.error)

    def on_blob_sync_failed(self, message: BlobSyncFailed) -> None:
        self._finish(message.error)

    def on_kv_message(self, message: agent.KvClientMessage) -> None:
        if self._blob_sync is not None:
            self._blob_sync.tell(KvClientMessageReceived(message))

    def on_provider_events(  # noqa: C901 (the turn's provider phase; it leaves with the split by phase)
        self, message: ProviderEventsReceived, arrived: float | None = None
    ) -> None:
        """Show the events; ``arrived`` is when held events really arrived (for durations)."""
        if (
            message.model_call_id != self._model_call_id
            or self._state is not State.CALLING_PROVIDER
        ):
            return
        now = time.monotonic() if arrived is None else arrived
        if self._held is not None:
            self._held.append((message, now))
            return
        for event in message.events:
            match event:
                case TextDelta(text=text):
                    self._text.append(text)
                    self._output.send(text_delta_frame(text))
                case ThinkingStarted():
                    self._thinking_started = now
                    self._thinking_text = []
                case ThinkingDelta(text=text):
                    self._thinking_text.append(text)
                    self._output.send(thinking_delta_frame(text))
                case ThinkingEnded():
                    duration = max(1, round((now - self._thinking_started) * 1000))
                    self._output.send(thinking_completed_frame(duration))
                    text = "".join(self._thinking_text)
                    if text:
                        self._steps.append(ThinkingStep(text, duration))
                case TextStarted():
                    self._text = []
                case TextEnded():
                    text = "".join(self._text)
                    if text:
                        self._steps.append(AssistantStep(text))
                case ToolCallStarted(index=index, call_id=call_id, name=name):
                    self._calls_by_index[index] = (call_id, name)
                    self._arg_decoders[index] = streamed_args_decoder(name)
                    self._partial_call(call_id, name, "")
                case ToolCallArgumentsDelta(index=index, delta=delta):
                    self._arguments_delta(index, delta)
                case UsageReported(usage=usage):
                    self._usage = add_usage(self._usage, usage)
                    if usage.input_tokens is not None and usage.output_tokens is not None:
                        self._last_call_tokens = usage.input_tokens + usage.output_tokens
                    if usage.output_tokens is not None:
                        self._output.send(token_delta_frame(usage.output_tokens))
                case _:
                    pass

    def _arguments_delta(self, index: int, delta: str) -> None:
        """Show a call's arguments as they stream: an edit's content as it is written, else
        the raw argument text."""
        call_id, name = self._calls_by_index[index]
        decoder = self._arg_decoders.get(index)
        if decoder is None:
            self._partial_call(call_id, name, delta)
            return
        events = decoder.feed(delta)
        for frame in streamed_args_frames(call_id, name, self._model_call_id, events):
            self._output.send(frame)

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
        if self._held is not None:
            self._held.append((message, time.monotonic()))
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
        # The next turn of this conversation starts from this revision.
        self._deps.histories.put(self._head, (*self._messages, final))
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
                started_at_ms=now_ms(),
                revision_id=self._head,
            )
        )
        self._steps = []

    # ---- the tool round ----

    def _start_round(self, result: CallResult) -> None:
        """Store the round, publish it staged, and have the editor run every call."""
        calls = tuple(
            ToolCall(c.index, c.call_id, c.name, c.arguments_json, self._model_call_id)
            for c in result.calls
        )
        try:
            self._open_round(
                f"{self.request_id}:round:{self._call_index}",
                calls,
                AssistantContent(
                    text=result.text, thinking=result.thinking, replay_state=result.replay
                ),
                now_ms(),
            )
        except StaleRun:
            self._finish(cancelled_error())
            return
        self._publish_staged(self._messages)
        if self._tools is None:
            self._tools = start_tool_runtime(
                self.request_id, self._output, self._self, self._exec_context()
            )
        self._tools.tell(StartToolRound(self._round_id, calls))

    def _publish_staged(self, stable: tuple[CanonicalMessage, ...]) -> None:
        """The round's checkpoint: ``stable`` as roots, its one assistant message pending."""
        assert self._checkpoint is not None and self._round_assistant is not None
        self._state = State.RUNNING_TOOLS
        self._checkpoint.tell(
            PublishStaged(
                job_id=self._next_job(barrier=False),
                messages=stable,
                pending=self._round_assistant,
                steps=tuple(self._steps),
                used_tokens=self._last_call_tokens,
                started_at_ms=self._round_started_ms,
            )
        )
        self._steps = []

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
                reserve_call_when_settled=True,
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
        self._steps.append(ToolCallStep(message.tool_call))
        completed = tool_call_completed_frame(call.call_id, call.model_call_id, message.tool_call)
        if not committed.settled:
            self._output.send(completed)
            return
        # The next request first; the card's completion, the settled state and the runtime's
        # release of the round follow it (the model's events are held until that state is
        # published).
        tools = self._tools
        assert tools is not None
        self._publish_settled_then_call(committed.call_index, lead_frame=completed)
        with contextlib.suppress(pykka.ActorDeadError):  # the run may have ended meanwhile
            tools.tell(RoundSettled(self._round_id))

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

    def _call_provider(self, call_index: int | None = None) -> None:
        """Ask the model; ``call_index`` when the index was already reserved (a turn's start)."""
        assert self._mode is not None
        if call_index is None:
            try:
                call_index = self._conversations.begin_provider_call(self.request_id)
            except StaleRun:
                self._finish(cancelled_error())
                return
        self._call_index = call_index
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
