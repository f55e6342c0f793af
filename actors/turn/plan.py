"""What a RunRequest asks for, read once before the turn starts: its kind, its mode, the blobs
it needs fetched, its runtime message, and the messages of a client state being imported."""

from __future__ import annotations

import datetime
from enum import Enum, auto

import msgspec

from actors.blob_sync import BlobFetched, b64
from actors.checkpoint import CheckpointSetup
from actors.checkpoint_json import decode_root, hydrated_message_id
from actors.conversation.model import (
    CanonicalMessage,
    ImagePart,
    Origin,
    PartsContent,
    Role,
    TextPart,
    encode_message,
)
from actors.conversation.request import ModelRoute
from actors.request_context import image_blob_ids, runtime_context, runtime_images
from actors.turn.actions import ACTION_KINDS, ReadAction, read_action
from actors.turn.shell_command import SHELL_COMMAND_ACTION, read_shell_command
from prompt.assets import ModeAssets
from prompt.runtime_message import RuntimeContextError
from store.conversations import StoredMessage
from wire.errors import Code, ConnectError, protocol_error
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import ExecContext, ModeTools
from wire.tools.mcp_catalog import request_catalog
from wire.tools.switch_mode import MODE_IDS

# Cursor's AgentMode number -> our mode asset name (Cursor's mode id, as SwitchMode names it).
# TRIAGE, PROJECT, CUSTOM and UNSPECIFIED have no assets: a run asking for one ends
# ``invalid_argument`` naming it.
MODE_NAMES = {number: name for name, number in MODE_IDS.items()}
_SERVED = ", ".join(agent.AgentMode.Name(number) for number in MODE_NAMES)


class TurnKind(Enum):
    NEW = auto()  # a user message starts a turn
    RESUME = auto()  # the client reconnected: continue the turn of its last checkpoint
    SHELL_COMMAND = auto()  # the user ran a command from the chat (``actors.turn.shell_command``)


class TurnPlan(msgspec.Struct, frozen=True):
    """The request, read: ``state`` is the client's conversation state (None: none sent)."""

    kind: TurnKind
    mode_number: int
    mode_name: str
    conversation_id: str
    user_message: agent.UserMessage | None
    state: agent.ConversationStateStructure | None
    action: ReadAction | None = None  # a turn started by an action, not a typed message
    shell_command: agent.ShellCommandAction | None = None  # a SHELL_COMMAND run's command

    @property
    def roots(self) -> tuple[bytes, ...]:
        """The client state's root blob ids, the system root first."""
        return tuple(self.state.root_prompt_messages_json) if self.state is not None else ()

    @property
    def stable_roots(self) -> tuple[bytes, ...]:
        """The roots that stand for history (the system root is rebuilt every turn)."""
        return self.roots[1:]

    @property
    def resume_turn_id(self) -> bytes | None:
        """For a resume: the blob of the client's last turn, which the run extends."""
        if self.kind is TurnKind.RESUME and self.state is not None and self.state.turns:
            return bytes(self.state.turns[-1])
        return None


def plan_turn(request_id: str, request: agent.AgentRunRequest) -> TurnPlan:
    """Read the action and the mode; a request this server cannot run raises ConnectError.

    A new message runs in its ``UserMessage.mode``; a resume in the mode its state records,
    which is the mode of the run that published it (the turn being resumed) or the one an
    approved SwitchMode of that turn chose; the actions of ``actors.turn.actions`` start a new
    turn in the mode each reads; a command the user ran keeps the state's mode."""
    action = request.action
    kind = action.WhichOneof("action")
    state = request.conversation_state if request.HasField("conversation_state") else None
    user_message: agent.UserMessage | None = None
    read: ReadAction | None = None
    shell: agent.ShellCommandAction | None = None
    if kind == "user_message_action":
        user_message = action.user_message_action.user_message
        turn, number = TurnKind.NEW, user_message.mode
    elif kind == "resume_action":
        if state is None or not state.root_prompt_messages_json:
            raise protocol_error("resume_action needs the conversation_state to resume from")
        turn, number = TurnKind.RESUME, state.mode or agent.AGENT_MODE_AGENT
    elif kind == SHELL_COMMAND_ACTION:
        shell = read_shell_command(action.shell_command_action)
        mode = state.mode if state is not None and state.mode else agent.AGENT_MODE_AGENT
        turn, number = TurnKind.SHELL_COMMAND, mode
    elif kind in ACTION_KINDS:
        read = read_action(kind, request_id, action, state)
        turn, number, user_message = TurnKind.NEW, read.mode, read.user_message
    else:
        raise ConnectError(
            Code.UNIMPLEMENTED, f"conversation action {kind or 'none'} is not available"
        )
    mode_name = MODE_NAMES.get(number)
    if mode_name is None:
        label = agent.AgentMode.Name(number) if number in agent.AgentMode.values() else number
        raise protocol_error(f"unsupported agent mode: {label} (this server runs {_SERVED})")
    return TurnPlan(
        kind=turn,
        mode_number=number,
        mode_name=mode_name,
        conversation_id=request.conversation_id or request_id,
        user_message=user_message,
        state=state,
        action=read,
        shell_command=shell,
    )


def wanted_blobs(plan: TurnPlan, *, roots_indexed: bool) -> tuple[bytes, ...]:
    """The blobs the run needs and the server may lack, each once: the images sent by blob
    id, the state's roots unless the checkpoint index knows them, a resume's last turn."""
    wanted: list[bytes] = []
    if plan.user_message is not None and plan.action is None:
        wanted.extend(image_blob_ids(plan.user_message))
    if plan.roots and not roots_indexed:
        wanted.extend(plan.roots)
    if plan.resume_turn_id is not None:
        wanted.append(plan.resume_turn_id)
    return tuple(dict.fromkeys(wanted))


class BaseFetch:
    """The blobs being fetched before the turn can start, by fetch id (1, 2, ...)."""

    def __init__(self, wanted: tuple[bytes, ...]) -> None:
        self._fetching = dict(enumerate(wanted, start=1))
        self.fetched: dict[bytes, bytes] = {}

    def requests(self) -> tuple[tuple[int, bytes], ...]:
        """(fetch id, blob id) for every blob to fetch."""
        return tuple(self._fetching.items())

    @property
    def done(self) -> bool:
        return not self._fetching

    def receive(self, message: BlobFetched) -> bool:
        """Take a fetched blob; True when every blob is in. A blob the client lacks raises."""
        blob_id = self._fetching.pop(message.fetch_id, None)
        if blob_id is None:
            return False  # not a fetch of this phase
        if message.data is None:
            raise protocol_error(f"the client has no blob {b64(blob_id)}")
        self.fetched[blob_id] = message.data
        return self.done


def imported_history(
    roots: tuple[bytes, ...], fetched: dict[bytes, bytes]
) -> list[CanonicalMessage]:
    """The history a client state's roots stand for (system root dropped), for a state this
    server never indexed; a state that is not one system root then history is refused."""
    messages = [
        decode_root(fetched[blob_id], hydrated_message_id(blob_id, ordinal))
        for ordinal, blob_id in enumerate(roots)
    ]
    if messages[0].role is not Role.SYSTEM:
        raise protocol_error("conversation_state: the first root is not the system prompt")
    if any(m.role is Role.SYSTEM for m in messages[1:]):
        raise protocol_error("conversation_state: more than one system root")
    return messages[1:]


def runtime_message(request_id: str, content: tuple[TextPart | ImagePart, ...]) -> CanonicalMessage:
    """The turn's runtime user message (its ids are stable: a retry replays it)."""
    return CanonicalMessage(
        message_id=f"runtime:run-request:{request_id}",
        role=Role.USER,
        origin=Origin.RUNTIME,
        content=PartsContent(content),
        runtime_event_id=f"run-request:{request_id}",
    )


def runtime_parts(
    mode: ModeAssets,
    request: agent.AgentRunRequest,
    fetched: dict[bytes, bytes],
    now: datetime.datetime,
) -> tuple[TextPart | ImagePart, ...]:
    """The runtime message's content: the rendered text, then the request's images."""
    user_message = request.action.user_message_action.user_message
    context = runtime_context(user_message, request_context(request), now)
    try:
        images = runtime_images(user_message, fetched)
        return (TextPart(mode.runtime_message(context)), *images)
    except RuntimeContextError as exc:
        raise protocol_error(str(exc)) from exc


def request_context(request: agent.AgentRunRequest) -> agent.RequestContext | None:
    """The editor's context of this run: a user turn's, a plan action's, or a resume's (which
    carries it too, so a resumed run has the same terminals folder and denylist); None when it
    sent none."""
    action = request.action
    kind = action.WhichOneof("action")
    if kind == "user_message_action" and action.user_message_action.HasField("request_context"):
        return action.user_message_action.request_context
    if kind == "resume_action" and action.resume_action.HasField("request_context"):
        return action.resume_action.request_context
    if kind == "start_plan_action" and action.start_plan_action.HasField("request_context"):
        return action.start_plan_action.request_context
    if kind == "execute_plan_action" and action.execute_plan_action.HasField("request_context"):
        return action.execute_plan_action.request_context
    return None


def exec_context(plan: TurnPlan, mode: ModeAssets, request: agent.AgentRunRequest) -> ExecContext:
    """What the run's exec requests carry besides the model's arguments, and the tools the
    run's mode lets the model call."""
    context = request_context(request) or agent.RequestContext()
    return ExecContext(
        conversation_id=plan.conversation_id,
        terminals_folder=context.env.terminals_folder,
        admin_command_denylist=tuple(context.admin_command_denylist),
        mode=ModeTools(mode.label, mode.tool_names),
        workspace_root=next((path for path in context.env.workspace_paths if path), ""),
        mcp=request_catalog(request, context),
    )


def checkpoint_setup(
    request_id: str,
    plan: TurnPlan,
    mode: ModeAssets,
    instructions: str,
    route: ModelRoute,
    base_count: int,
    resume_turn: bytes | None,
) -> CheckpointSetup:
    """What every checkpoint of the run shares; ``base_count`` messages of every job stand
    for the client's stable roots."""
    return CheckpointSetup(
        request_id=request_id,
        instructions=instructions,
        model_name=route.model_id,
        mode=plan.mode_number,
        tools=mode.tools,
        context_window=route.context_window_tokens,
        user_message=plan.user_message,
        base=plan.state,
        base_roots=plan.stable_roots,
        base_message_count=base_count if plan.stable_roots else 0,
        resume_turn=resume_turn,
        conversation_id=plan.conversation_id,
    )


def stored(message: CanonicalMessage) -> StoredMessage:
    """A canonical message as the store keeps it."""
    return StoredMessage(
        message.message_id,
        message.role.value,
        message.origin.value,
        encode_message(message),
        message.runtime_event_id,
    )


class CheckpointJobs:
    """The run's checkpoint job ids (2, 3, ...); the barrier is the job the loop waits for."""

    def __init__(self) -> None:
        self._last = 1
        self.barrier = 0

    def next(self, *, barrier: bool = True) -> int:
        self._last += 1
        if barrier:
            self.barrier = self._last
        return self._last
