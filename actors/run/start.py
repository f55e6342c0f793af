"""The start of a run, up to the moment its loop takes over: read the request, store the blobs
it sent along (``pre_fetched_blobs``), fetch what its base and its context need (those, else
local CAS, else KV GET), find the base revision, start the CheckpointActor and
commit the turn's start.

A user turn's first checkpoint is built, and its blobs SET, while the turn's start is being
committed: it is published once both the ACKs and the commit are in (``MessagesCommitted``,
told by the loop once the model call is on its way). The commit is checked against the history
that checkpoint was built from, so a mismatch ends the run unpublished. A resume claims the
conversation where its interrupted round stands and continues that round, or calls the model
again on a settled state.
"""

from __future__ import annotations

import contextlib
import datetime
import logging

import msgspec
import peewee
import pykka

from actors.conversation.model import AssistantContent, CanonicalMessage, ImagePart, TextPart
from actors.conversation.request import ModelRoute
from actors.protocols.blob_sync import BlobFetched
from actors.protocols.checkpoint import PublishSettled, Step
from actors.protocols.edge import CancelRun
from actors.protocols.mailbox import ActorHandle
from actors.protocols.session import SessionMessage
from actors.run.base import RunBase, check_started
from actors.run.children import AgentDeps, RunChildren
from actors.run.model_selection import stored_routing
from actors.turn.actions import action_parts
from actors.turn.capabilities import ServerCapabilities, offered_tools, with_dynamic_tools
from actors.turn.plan import (
    BaseFetch,
    CheckpointJobs,
    TurnKind,
    TurnPlan,
    checkpoint_setup,
    exec_context,
    plan_turn,
    pre_fetched_blobs,
    progress_tool_kept,
    runtime_message,
    runtime_parts,
    subagent_models,
    wanted_blobs,
    with_context,
)
from actors.turn.timeline import run_started
from actors.turn.tool_round import ToolRound
from prompt.assets import ModeAssets, UnknownModeError
from store.base.clock import now_ms
from store.catalog import enabled_models, get_web_search, has_image_model
from store.conversations import ClaimedRun, ConversationStore
from wire.errors import Code, ConnectError, protocol_error
from wire.log import log_event
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import ExecContext, SubagentModels
from wire.tools.task import TASK

logger = logging.getLogger("cursor_server.run")


def server_capabilities(database: peewee.Database) -> ServerCapabilities:
    """What the server can do for this run's tools (read once, at the run's start)."""
    return ServerCapabilities(
        web_search=get_web_search(database).backend is not None,
        image_generation=has_image_model(database),
    )


def stored_pre_fetched(deps: AgentDeps, request: agent.AgentRunRequest) -> dict[bytes, bytes]:
    """The blobs the request sent along, checked against their ids and put in the CAS, so no
    fetch of the run (the base's, the checkpoints' later ones) sends a KV GET for them."""
    have = pre_fetched_blobs(request)
    if have:
        deps.store.blobs.put_many(have)
    return have


def plan_mode(deps: AgentDeps, plan: TurnPlan) -> ModeAssets:
    """The assets of the plan's mode; a mode this server has none for is the client's error."""
    try:
        return deps.prompts.mode(plan.mode_name)
    except UnknownModeError as exc:
        raise protocol_error(str(exc)) from exc


def took_over(
    deps: AgentDeps,
    self_ref: ActorHandle[SessionMessage],
    plan: TurnPlan,
    claimed: ClaimedRun,
    model: str,
    base: int | None,
) -> None:
    """The store made the run the conversation's active run: the run before it is cancelled
    at once, in this process or on the instance holding it (the store already refuses its
    writes)."""
    previous = deps.owners.claim(plan.conversation_id, claimed.run_id, self_ref)
    reason = f"superseded by {claimed.run_id}"
    if previous is not None:
        with contextlib.suppress(pykka.ActorDeadError):  # it may have just ended
            previous.tell(CancelRun(reason))
    elif claimed.superseded_run_id is not None and deps.remote_runs is not None:
        deps.remote_runs.cancel(claimed.superseded_run_id, reason)
    log_event(
        logger,
        logging.INFO,
        "run started",
        request_id=claimed.run_id,
        conversation_id=plan.conversation_id,
        model=model,
        superseded=claimed.superseded_run_id,
        resumed=plan.kind is TurnKind.RESUME,
        shell_command=True if plan.kind is TurnKind.SHELL_COMMAND else None,
        base_revision=base,
    )


class TurnOpened(msgspec.Struct, frozen=True):
    """The run owns its conversation at ``head`` (whose history is ``messages``) and the loop
    takes over: call the model (at ``call_index`` when reserved), or run ``round`` with
    ``stable`` as the staged checkpoint's roots. ``commit_job`` is the first checkpoint, still
    waiting for ``MessagesCommitted``."""

    plan: TurnPlan
    mode: ModeAssets
    instructions: str
    head: int
    messages: tuple[CanonicalMessage, ...]
    call_index: int | None = None
    commit_job: int | None = None
    round: ToolRound | None = None
    stable: tuple[CanonicalMessage, ...] = ()
    # A resumed round the store had settled already: its steps, for the first settled state.
    steps: tuple[Step, ...] = ()
    context: ExecContext = ExecContext()  # what the run's tool calls carry


class _Base(msgspec.Struct, frozen=True):
    """What the start knows before its blobs are in."""

    plan: TurnPlan
    mode: ModeAssets
    base: RunBase
    indexed: int | None  # the checkpoint index's revision for the client's roots
    models: SubagentModels | None  # what a Task's child model is chosen from (None: no Task)
    # What the run's tool calls carry; built once the context parts are in (``_open``).
    context: ExecContext = ExecContext()


class RunStart:
    """The run's first phase; ``start`` and ``on_blob_fetched`` return ``TurnOpened`` once the
    turn has started. Every failure raises (the run ends with it)."""

    def __init__(
        self,
        request_id: str,
        request: agent.AgentRunRequest,
        route: ModelRoute,
        deps: AgentDeps,
        store: ConversationStore,
        children: RunChildren,
        jobs: CheckpointJobs,
        self_ref: ActorHandle[SessionMessage],
        parent_tool_call_id: str = "",
    ) -> None:
        self._request_id = request_id
        self._parent_tool_call_id = parent_tool_call_id  # a subagent run's parent Task
        self._request = request
        self._route = route
        self._deps = deps
        self._store = store
        self._children = children
        self._jobs = jobs
        self._self = self_ref
        self._fetching: tuple[_Base, BaseFetch] | None = None
        self.claimed = False  # the store made this run the conversation's active run

    def start(self) -> TurnOpened | None:
        self._children.record(
            run_started(self._request, self._route.public_id, now_ms(), self._route.asked_model_id)
        )
        plan = plan_turn(self._request_id, self._request)
        if plan.kind in (TurnKind.SHELL_COMMAND, TurnKind.SUMMARIZE):
            raise ConnectError(Code.INTERNAL, f"a {plan.kind.name} run is not an agent turn")
        mode = plan_mode(self._deps, plan)
        database = self._deps.store.database
        mode = offered_tools(mode, server_capabilities(database))
        if plan.subagent_type is not None:
            mode = progress_tool_kept(mode, self._request)
        models = None
        if TASK.name in mode.tool_names:
            models = subagent_models(
                self._request,
                self._route.public_id,
                enabled_models(database),
                stored_routing(database),
            )
        have = stored_pre_fetched(self._deps, self._request)
        self._children.start_blob_sync()
        base = RunBase(
            self._store, self._deps.histories, self._request_id, plan, self._route.user_id
        )
        known = _Base(plan, mode, base, base.indexed_base(), models)
        fetch = BaseFetch(wanted_blobs(plan, roots_indexed=known.indexed is not None), have)
        self._children.fetch(fetch.requests())
        self._fetching = (known, fetch)
        return self._open() if fetch.done else None

    def on_blob_fetched(self, message: BlobFetched) -> TurnOpened | None:
        """A blob of the base; None while others are still being fetched (or not ours)."""
        if self._fetching is None or not self._fetching[1].receive(message):
            return None
        return self._open()

    def _open(self) -> TurnOpened:
        assert self._fetching is not None
        (known, fetch), self._fetching = self._fetching, None
        plan = with_context(known.plan, self._request, fetch.fetched)
        context = exec_context(plan, known.mode, self._request, known.models)
        mode = with_dynamic_tools(known.mode, context.dynamic)
        known = msgspec.structs.replace(known, plan=plan, context=context, mode=mode)
        mode, base = known.mode, known.base
        content: tuple[TextPart | ImagePart, ...] = ()
        now = datetime.datetime.now(datetime.UTC)
        if plan.user_message is not None and plan.action is None:
            content = runtime_parts(mode, plan, self._request, fetch.fetched, now)
        revision = base.base_revision(known.indexed, fetch.fetched)
        instructions = mode.system_prompt(self._route.model_id)
        if plan.kind is TurnKind.NEW:
            action = self._request.action.user_message_action
            resolved = action.interrupted_pending_tool_call_resolutions
            revision = base.close_interrupted(revision, resolved, now_ms())
            if plan.action is not None:
                # What an action brings is checked against the history it starts from.
                history = base.turn_base(revision)[1]
                content = action_parts(mode, plan.action, history, now, plan.context)
            event = plan.action.event_id if plan.action is not None else None
            runtime = runtime_message(self._request_id, content, event)
            return self._user_turn(known, instructions, revision, runtime)
        turn_id = plan.resume_turn_id
        turn = fetch.fetched[turn_id] if turn_id is not None else None
        return self._resume(known, instructions, revision, turn)

    def _user_turn(
        self, known: _Base, instructions: str, revision: int | None, runtime: CanonicalMessage
    ) -> TurnOpened:
        turn = known.base.user_turn(revision, runtime)
        self._start_checkpoint_actor(known, instructions, len(turn.history), None)
        job = self._jobs.next()
        self._children.checkpoint(PublishSettled(job, turn.predicted, (), None, awaits_commit=True))
        started = known.base.commit_user_turn(turn)
        self._claimed(known.plan, started.claimed, turn.base)
        check_started(turn, started)
        return TurnOpened(
            known.plan,
            known.mode,
            instructions,
            started.head,
            turn.predicted,
            call_index=started.call_index,
            commit_job=job,
            context=known.context,
        )

    def _resume(
        self, known: _Base, instructions: str, revision: int | None, turn: bytes | None
    ) -> TurnOpened:
        """``turn``: the client's last turn blob, which this run's steps extend."""
        base = known.base
        resume = base.start_resume(revision)
        self._claimed(known.plan, resume.claimed, revision)
        head = resume.claimed.base_revision_id
        self._start_checkpoint_actor(known, instructions, resume.base_count, turn)
        messages = base.history(head)
        opened = TurnOpened(
            known.plan, known.mode, instructions, head, messages, context=known.context
        )
        steps = base.settled_steps(resume)
        if steps is not None:
            # Every call of the client's pending round has its result: none runs again.
            return msgspec.structs.replace(opened, steps=steps)
        resumed = base.resumed_round(resume, resume.pending, head)
        if resumed is not None:
            # Its calls without a committed result run again at once (the client sees the
            # staged checkpoint and the execs before any model call). The stable roots stay
            # those of the base: committed pairs join them when the round settles.
            round_, head = resumed
            stable = messages[: resume.base_count]
            messages = base.history(head) if head != opened.head else messages
            return msgspec.structs.replace(
                opened, round=round_, stable=stable, head=head, messages=messages
            )
        last = messages[-1].content if messages else None
        if isinstance(last, AssistantContent) and not last.tool_calls:
            raise protocol_error("resume_action: the turn of this state has already ended")
        return opened

    def _claimed(self, plan: TurnPlan, claimed: ClaimedRun, base: int | None) -> None:
        self.claimed = True
        took_over(self._deps, self._self, plan, claimed, self._route.public_id, base)

    def _start_checkpoint_actor(
        self, known: _Base, instructions: str, base_count: int, resume_turn: bytes | None
    ) -> None:
        setup = checkpoint_setup(
            self._request_id,
            known.plan,
            known.mode,
            instructions,
            self._route,
            base_count,
            resume_turn,
            parent_tool_call_id=self._parent_tool_call_id,
            dynamic=known.context.dynamic,
        )
        self._children.start_checkpoint(setup)
