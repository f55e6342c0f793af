"""What a RunRequest asks for, read once before the turn starts: its kind, its mode, the blobs
it needs fetched (those it sent along in ``pre_fetched_blobs`` are not), the RequestContext its
parts given by blob id make up, its runtime message, and the messages of a client state being
imported."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from enum import Enum, auto

import msgspec

from actors.codecs.checkpoint_json import decode_root, hydrated_message_id
from actors.codecs.request_context import (
    context_parts,
    image_blob_ids,
    merged_context,
    runtime_context,
    runtime_images,
)
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
from actors.protocols.blob_sync import BlobFetched, b64
from actors.protocols.call_actions import CALL_ACTIONS
from actors.protocols.checkpoint import CheckpointSetup
from actors.turn.actions import ACTION_KINDS, ReadAction, read_action
from actors.turn.capabilities import offered_dynamic_tools
from actors.turn.shell_command import SHELL_COMMAND_ACTION, read_shell_command
from actors.turn.summarize import SUMMARIZE_ACTION
from prompt.assets import SUBAGENT_MODE, ModeAssets
from prompt.runtime_message import RuntimeContextError
from store.blobs import blob_id_of
from store.catalog import ModelRecord
from store.conversations import StoredMessage
from wire.errors import Code, ConnectError, protocol_error
from wire.model_routing import OurModel, Relay, Routing, auto_model
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import ExecContext, ModeTools, SubagentModels
from wire.tools.mcp_catalog import request_catalog
from wire.tools.mcp_names import NO_DYNAMIC_TOOLS, DynamicMcpTools
from wire.tools.switch_mode import MODE_IDS
from wire.tools.update_current_step import UPDATE_CURRENT_STEP

# Cursor's AgentMode number -> our mode asset name (Cursor's mode id, as SwitchMode names it).
# TRIAGE, PROJECT, CUSTOM and UNSPECIFIED have no assets: a run asking for one ends
# ``invalid_argument`` naming it.
MODE_NAMES = {number: name for name, number in MODE_IDS.items()}
_SERVED = ", ".join(agent.AgentMode.Name(number) for number in MODE_NAMES)


class TurnKind(Enum):
    NEW = auto()  # a user message starts a turn
    RESUME = auto()  # the client reconnected: continue the turn of its last checkpoint
    SHELL_COMMAND = auto()  # the user ran a command from the chat (``actors.turn.shell_command``)
    SUMMARIZE = auto()  # the user asked for a summary now (``actors.turn.summarize``)


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
    # ``ConversationAction.request_context_parts``: RequestContext parts given by blob id.
    context_parts: agent.RequestContextPartReferences | None = None
    # The RequestContext with its parts merged in, once their blobs are in (``with_context``).
    context: agent.RequestContext | None = None
    subagent_type: str | None = None  # set: the editor runs this for a Task, in Subagent mode

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
    turn in the mode each reads; a command the user ran and a summary asked for keep the
    state's mode."""
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
    elif kind == SUMMARIZE_ACTION:
        mode = state.mode if state is not None and state.mode else agent.AGENT_MODE_AGENT
        turn, number = TurnKind.SUMMARIZE, mode
    elif kind in ACTION_KINDS:
        read = read_action(kind, request_id, action, state)
        turn, number, user_message = TurnKind.NEW, read.mode, read.user_message
    elif kind in CALL_ACTIONS:
        raise ConnectError(
            Code.FAILED_PRECONDITION,
            f"{kind} acts on a call of the running turn: send it on that turn's stream (this "
            "request starts no turn, and a finished turn has no running call)",
        )
    else:
        raise ConnectError(
            Code.UNIMPLEMENTED, f"conversation action {kind or 'none'} is not available"
        )
    parts = action.request_context_parts if action.HasField("request_context_parts") else None
    try:
        context_parts(parts)
    except RuntimeContextError as exc:
        raise protocol_error(str(exc)) from exc
    subagent = request.subagent_type_name if request.HasField("subagent_type_name") else None
    if subagent is not None and number not in MODE_NAMES:
        number = agent.AGENT_MODE_AGENT  # the checkpoint's mode; the run's is Subagent
    mode_name = MODE_NAMES.get(number)
    if mode_name is None:
        label = agent.AgentMode.Name(number) if number in agent.AgentMode.values() else number
        raise protocol_error(f"unsupported agent mode: {label} (this server runs {_SERVED})")
    return TurnPlan(
        kind=turn,
        mode_number=number,
        mode_name=mode_name if subagent is None else SUBAGENT_MODE,
        conversation_id=request.conversation_id or request_id,
        user_message=user_message,
        state=state,
        action=read,
        shell_command=shell,
        context_parts=parts,
        subagent_type=subagent,
    )


def pre_fetched_blobs(request: agent.AgentRunRequest) -> dict[bytes, bytes]:
    """The blobs the client sent with the request, by id; one whose value does not hash to
    its id is the client's error."""
    blobs: dict[bytes, bytes] = {}
    for blob in request.pre_fetched_blobs:
        if blob_id_of(blob.value) != blob.id:
            raise protocol_error(
                f"pre_fetched_blobs: blob {b64(blob.id)} does not match the SHA-256 of its value"
            )
        blobs[blob.id] = blob.value
    return blobs


def wanted_blobs(plan: TurnPlan, *, roots_indexed: bool) -> tuple[bytes, ...]:
    """The blobs the run needs and the server may lack, each once: the images sent by blob
    id, the request context's parts, the state's roots unless the checkpoint index knows
    them, a resume's last turn."""
    wanted: list[bytes] = []
    if plan.user_message is not None and plan.action is None:
        wanted.extend(image_blob_ids(plan.user_message))
    if plan.kind not in (TurnKind.SHELL_COMMAND, TurnKind.SUMMARIZE):
        wanted.extend(blob_id for _, blob_id in context_parts(plan.context_parts))
    if plan.roots and not roots_indexed:
        wanted.extend(plan.roots)
    if plan.resume_turn_id is not None:
        wanted.append(plan.resume_turn_id)
    return tuple(dict.fromkeys(wanted))


class BaseFetch:
    """The blobs being fetched before the turn can start, by fetch id (1, 2, ...); those in
    ``have`` (the request's pre-fetched blobs) are in from the start and never fetched."""

    def __init__(self, wanted: tuple[bytes, ...], have: dict[bytes, bytes] | None = None) -> None:
        have = have or {}
        self.fetched: dict[bytes, bytes] = {b: have[b] for b in wanted if b in have}
        missing = (blob_id for blob_id in wanted if blob_id not in have)
        self._fetching = dict(enumerate(missing, start=1))

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


def runtime_message(
    request_id: str, content: tuple[TextPart | ImagePart, ...], event: str | None = None
) -> CanonicalMessage:
    """The turn's runtime user message (its ids are stable: a retry replays it). ``event``
    names an event of the conversation's own (a background completion) instead of the
    request, so that a repeat of it replays the turn it started."""
    event = event or f"run-request:{request_id}"
    return CanonicalMessage(
        message_id=f"runtime:{event}",
        role=Role.USER,
        origin=Origin.RUNTIME,
        content=PartsContent(content),
        runtime_event_id=event,
    )


def with_context(
    plan: TurnPlan, request: agent.AgentRunRequest, fetched: dict[bytes, bytes]
) -> TurnPlan:
    """The plan with the run's RequestContext: the request's, its fetched parts laid over it."""
    try:
        context = merged_context(request_context(request), plan.context_parts, fetched)
    except RuntimeContextError as exc:
        raise protocol_error(str(exc)) from exc
    return msgspec.structs.replace(plan, context=context)


def runtime_parts(
    mode: ModeAssets,
    plan: TurnPlan,
    request: agent.AgentRunRequest,
    fetched: dict[bytes, bytes],
    now: datetime.datetime,
) -> tuple[TextPart | ImagePart, ...]:
    """The runtime message's content: the rendered text, then the request's images."""
    user_message = request.action.user_message_action.user_message
    context = runtime_context(user_message, _context(plan, request), now)
    try:
        images = runtime_images(user_message, fetched)
        return (TextPart(mode.runtime_message(context)), *images)
    except RuntimeContextError as exc:
        raise protocol_error(str(exc)) from exc


def request_context(request: agent.AgentRunRequest) -> agent.RequestContext | None:
    """The editor's context of this run: ``request_context_parts.dynamic_context`` when sent,
    else a user turn's, a plan action's, or a resume's (which carries it too, so a resumed run
    has the same terminals folder and denylist); None when it sent none. Without the parts
    given by blob id (see ``with_context``)."""
    action = request.action
    parts = action.request_context_parts
    if action.HasField("request_context_parts") and parts.HasField("dynamic_context"):
        return parts.dynamic_context
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


def _context(plan: TurnPlan, request: agent.AgentRunRequest) -> agent.RequestContext | None:
    return plan.context if plan.context is not None else request_context(request)


def exec_context(
    plan: TurnPlan,
    mode: ModeAssets,
    request: agent.AgentRunRequest,
    models: SubagentModels | None = None,
) -> ExecContext:
    """What the run's exec requests carry besides the model's arguments, the tools the run's
    mode lets the model call, and what a Task's child model is chosen from. ``plan`` must hold
    its merged context (``with_context``) when the request sent context parts."""
    context = _context(plan, request) or agent.RequestContext()
    catalog = request_catalog(request, context)
    return ExecContext(
        conversation_id=plan.conversation_id,
        root_conversation_id=request.conversation_group_id or plan.conversation_id,
        subagent_models=models or SubagentModels(),
        terminals_folder=context.env.terminals_folder,
        admin_command_denylist=tuple(context.admin_command_denylist),
        mode=ModeTools(mode.label, mode.tool_names),
        workspace_root=next((path for path in context.env.workspace_paths if path), ""),
        mcp=catalog,
        dynamic=offered_dynamic_tools(mode.tool_names, catalog),
    )


def subagent_models(
    request: agent.AgentRunRequest,
    parent: str,
    configured: Iterable[ModelRecord],
    routing: Routing | None = None,
) -> SubagentModels:
    """The run's model (``parent``, a public id), the user's per-type choices from
    ``subagent_model_overrides`` (a selection that is false or empty is no choice), every
    name a Task may give one of the ``configured`` (enabled) models, and the ``routing``
    settings a name of Cursor's goes through (Auto resolved here, over those models)."""
    configured = list(configured)
    routing = routing or Routing()
    overrides: dict[str, str | None] = {}
    for override in request.subagent_model_overrides:
        match override.WhichOneof("selection"):
            case "model" if override.model.model_id:
                overrides[override.subagent_type] = override.model.model_id
            case "inherit" if override.inherit:
                overrides[override.subagent_type] = parent
            case "disabled" if override.disabled:
                overrides[override.subagent_type] = None
    names: dict[str, str] = {}
    for record in configured:
        for name in (record.display_name, record.model_id, record.public_id):
            if name:
                names[name.lower()] = record.public_id
    auto = auto_model(routing.auto, [OurModel(record.public_id, True) for record in configured])
    return SubagentModels(
        parent,
        tuple(overrides.items()),
        tuple(names.items()),
        routing.routes,
        "" if isinstance(auto, Relay) else auto,
    )


def progress_tool_kept(mode: ModeAssets, request: agent.AgentRunRequest) -> ModeAssets:
    """``mode`` without UpdateCurrentStep when the editor asks a subagent not to report its
    progress (``suppress_subagent_progress_update_tool``)."""
    if not request.suppress_subagent_progress_update_tool:
        return mode
    tools = tuple(tool for tool in mode.tools if tool.name != UPDATE_CURRENT_STEP.name)
    return msgspec.structs.replace(mode, tools=tools)


def checkpoint_setup(
    request_id: str,
    plan: TurnPlan,
    mode: ModeAssets,
    instructions: str,
    route: ModelRoute,
    base_count: int,
    resume_turn: bytes | None,
    parent_tool_call_id: str = "",
    dynamic: DynamicMcpTools = NO_DYNAMIC_TOOLS,
) -> CheckpointSetup:
    """What every checkpoint of the run shares; ``base_count`` messages of every job stand
    for the client's stable roots; ``parent_tool_call_id`` is a subagent run's parent Task.
    ``mode`` holds the run's dynamic MCP tools (``dynamic``)."""
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
        parent_tool_call_id=parent_tool_call_id,
        dynamic_tools=tuple((entry.name, entry.tool.name) for entry in dynamic.tools),
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
