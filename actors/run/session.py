"""The SessionActor: one per Cursor request id, the owner of that run's lifecycle.

It receives client messages in ``append_seqno`` order and decides what they mean. A RunRequest
first has its model resolved (``actors.run.model_selection``); a failure ends the run with that
error. With the agent's dependencies the turn then runs (``actors.run.agent``); without them
(a server with no store) a resolved run ends with ``unimplemented``. A command the user ran
from the chat (``shell_command_action``) runs as a ``ShellCommandRun`` instead of a turn, and
the user's "summarize" command (``summarize_action``) as a ``SummarizeRun``.
"""

from __future__ import annotations

import logging

import peewee

from actors.pool import PooledActor
from actors.protocols.call_actions import CALL_ACTIONS
from actors.protocols.run_output import RunOutput
from actors.protocols.session import (
    AppendGapDeadlinePassed,
    BlobFetched,
    BlobSyncFailed,
    CancelRun,
    CheckpointFailed,
    CheckpointPublished,
    ClientMessageReceived,
    ModelSilenceDue,
    ProviderCallEnded,
    ProviderEventsReceived,
    RunRequestDeadlinePassed,
    RunSseStalled,
    SessionMessage,
    ToolCompleted,
    ToolRuntimeFailed,
    ToolRuntimeStopped,
)
from actors.run.agent import AgentRun
from actors.run.children import AgentDeps
from actors.run.core import RunSetup
from actors.run.model_selection import ModelResolver, ModelSelectionError
from actors.run.shell_command import ShellCommandRun
from actors.run.subagent_links import read_call_action
from actors.run.summarize import SummarizeRun
from actors.turn.shell_command import runs_shell_command
from actors.turn.summarize import runs_summarize
from store.conversations.runs import run_user
from store.database import log_store_failure
from wire.bidi import PARENT_REQUEST_HEADER, PARENT_TOOL_CALL_HEADER, ParentLink
from wire.errors import Code, ConnectError, cancelled_error, protocol_error
from wire.log import log_event
from wire.proto import agent_v1_pb2 as agent

logger = logging.getLogger("cursor_server.session")

AGENT_LOOP_UNAVAILABLE = (
    "agent runs are not available yet: this server does not run the agent loop "
    "(RunRequest accepted and refused)"
)


MISSING_PARENT = (
    f"a subagent run (subagent_type_name set) needs its parent run and tool call: the "
    f"BidiAppend carrying it has no {PARENT_REQUEST_HEADER.title()} and "
    f"{PARENT_TOOL_CALL_HEADER.title()} headers"
)


class SessionActor(PooledActor):
    """Owns one request's run: accepts its RunRequest once and ends its stream once."""

    def __init__(
        self,
        request_id: str,
        output: RunOutput,
        resolve_model: ModelResolver | None = None,
        deps: AgentDeps | None = None,
    ) -> None:
        """``resolve_model`` and ``deps`` are None only where no store exists."""
        super().__init__()
        self.request_id = request_id
        self._output = output
        self._resolve_model = resolve_model
        self._deps = deps
        self._run: AgentRun | ShellCommandRun | SummarizeRun | None = None
        self._run_started = False
        self._ended = False
        self._cancelled = False
        self._parent: ParentLink | None = None
        self._link: tuple[str, str] | None = None  # this subagent run in ``deps.subagents``
        # The user this run counts as open for in ``deps.budgets``, until it ends.
        self._budget_user: str | None = None

    def on_receive(self, message: SessionMessage) -> None:
        if self._ended:
            return
        match message:
            case ClientMessageReceived(message=client_message, parent=parent, user_id=user_id):
                self._parent = parent or self._parent
                self._on_client_message(client_message, user_id)
            case CancelRun(reason=reason):
                # A run may hear several cancels (a reset stream, then its connection) before
                # it has ended: the first names why, the others change nothing.
                if not self._cancelled:
                    self._cancelled = True
                    log_event(
                        logger,
                        logging.INFO,
                        "run cancelled",
                        request_id=self.request_id,
                        reason=reason,
                    )
                    self._cancel()
            case ProviderEventsReceived() | ProviderCallEnded() if self._run is not None:
                self._run.on_provider_message(message)
            case ModelSilenceDue() if self._run is not None:
                self._run.on_model_silence(message)
            case CheckpointPublished() if self._run is not None:
                self._run.on_checkpoint_published(message)
            case CheckpointFailed() if self._run is not None:
                self._run.on_checkpoint_failed(message)
            case BlobSyncFailed() if self._run is not None:
                self._run.on_blob_sync_failed(message)
            case BlobFetched() if self._run is not None:
                self._run.on_blob_fetched(message)
            case ToolCompleted() if self._run is not None:
                self._run.on_tool_completed(message)
            case ToolRuntimeFailed() if self._run is not None:
                self._run.on_tool_runtime_failed(message)
            case ToolRuntimeStopped() if self._run is not None:
                self._run.on_tool_runtime_stopped(message)
            case RunRequestDeadlinePassed() | AppendGapDeadlinePassed() | RunSseStalled():
                self._on_edge_deadline(message)
            case _:
                raise TypeError(f"SessionActor cannot handle {type(message).__name__}")
        self._tell_recorded()

    def _on_edge_deadline(
        self, message: RunRequestDeadlinePassed | AppendGapDeadlinePassed | RunSseStalled
    ) -> None:
        """The edge waited too long for the client: for a RunRequest, a missing append, or
        for the client to read its stream."""
        match message:
            case RunRequestDeadlinePassed(waited_seconds=waited):
                if not self._run_started:
                    self._end(
                        ConnectError(
                            Code.DEADLINE_EXCEEDED,
                            f"no RunRequest arrived within {waited:g} s",
                        )
                    )
            case AppendGapDeadlinePassed(seqno=seqno, waited_seconds=waited):
                self._fail_run(
                    protocol_error(f"append_seqno {seqno} did not arrive within {waited:g} s")
                )
            case RunSseStalled(waited_seconds=waited):
                self._fail_run(
                    ConnectError(
                        Code.DEADLINE_EXCEEDED,
                        f"the client read nothing of its RunSSE stream for {waited:g} s",
                    )
                )

    def _tell_recorded(self) -> None:
        """What the run did for this message goes to the event recorder now, once the run's
        own writes for it are done (so the recorder's commit never races them)."""
        if self._run is not None:
            self._run.tell_recorded()

    def _on_client_message(self, message: agent.AgentClientMessage, user_id: str) -> None:
        variant = message.WhichOneof("message")
        match variant:
            case "run_request":
                self._on_run_request(message.run_request, user_id)
            case "conversation_action":
                self._on_conversation_action(message.conversation_action)
            case "exec_client_message" if self._run is not None:
                self._run.on_exec_message(message.exec_client_message)
            case "exec_client_control_message" if self._run is not None:
                self._run.on_exec_control(message.exec_client_control_message)
            case "interaction_response" if self._run is not None:
                self._run.on_interaction_response(message.interaction_response)
            case "exec_client_message":
                self._end(
                    protocol_error(
                        f"unknown ExecClientMessage id: {message.exec_client_message.id}"
                    )
                )
            case "exec_client_control_message":
                self._on_exec_control(message.exec_client_control_message)
            case "interaction_response":
                self._end(
                    protocol_error(
                        f"unknown InteractionResponse id: {message.interaction_response.id}"
                    )
                )
            case "kv_client_message" if self._run is not None:
                self._run.on_kv_message(message.kv_client_message)
            case "kv_client_message":
                log_event(
                    logger,
                    logging.WARNING,
                    "unknown KV id",
                    request_id=self.request_id,
                    kv_id=message.kv_client_message.id,
                )
            case "client_heartbeat" | "prewarm_request":
                log_event(
                    logger,
                    logging.DEBUG,
                    "client message ignored",
                    request_id=self.request_id,
                    variant=variant,
                )
            case _:
                log_event(
                    logger,
                    logging.WARNING,
                    "client message of unknown variant ignored",
                    request_id=self.request_id,
                )

    def _on_run_request(self, request: agent.AgentRunRequest, user_id: str) -> None:
        if self._run_started:
            log_event(
                logger, logging.WARNING, "repeated RunRequest ignored", request_id=self.request_id
            )
            return
        self._run_started = True
        self._output.run_started()
        log_event(
            logger,
            logging.DEBUG,
            "run request received",
            request_id=self.request_id,
            conversation_id=request.conversation_id or self.request_id,
            parent_request_id=self._parent.request_id if self._parent else None,
            parent_tool_call_id=self._parent.tool_call_id if self._parent else None,
        )
        if request.HasField("subagent_type_name") and self._parent is None:
            self._end(protocol_error(MISSING_PARENT))
            return
        if self._resolve_model is None:
            self._end(ConnectError(Code.UNIMPLEMENTED, AGENT_LOOP_UNAVAILABLE))
            return
        try:
            route = self._resolve_model(request)
        except ModelSelectionError as failure:
            self._end(failure.error)
            return
        log_event(
            logger,
            logging.DEBUG,
            "run model resolved",
            request_id=self.request_id,
            public_id=route.public_id,
            provider_type=route.provider_type.value,
        )
        if self._deps is None:
            self._end(ConnectError(Code.UNIMPLEMENTED, AGENT_LOOP_UNAVAILABLE))
            return
        route = route.for_user(self._run_user(user_id))
        if self._parent is None and not runs_shell_command(request):
            refused = self._admit(route.user_id or user_id, route.public_id)
            if refused is not None:
                self._end(refused)
                return
        if self._parent is not None:
            # The parent's cancel_subagent_action names this run by its conversation id.
            self._link = (self._parent.request_id, request.conversation_id or self.request_id)
            self._deps.subagents.link(*self._link, self._parent.tool_call_id)
        setup = RunSetup(
            self.request_id, request, route, self._deps, self._output, self.actor_ref, self._end
        )
        if runs_shell_command(request):
            self._run = ShellCommandRun(setup)
        elif runs_summarize(request):
            self._run = SummarizeRun(setup)
        else:
            self._run = AgentRun(setup, self._parent)
        self._run.start()

    def _admit(self, user_id: str, public_id: str) -> ConnectError | None:
        """The budget check, before any provider call: the refusal (``resource_exhausted``),
        or None, the run then counted as open for its user until it ends. A subagent run is part
        of its parent's turn and a shell command calls no model: neither is checked."""
        if self._deps is None or self._deps.budgets is None:
            return None
        refused = self._deps.budgets.admit(user_id, public_id)
        if refused is None:
            self._budget_user = user_id
        else:
            log_event(
                logger,
                logging.INFO,
                "run refused by a budget",
                request_id=self.request_id,
                user_id=user_id,
                public_id=public_id,
            )
        return refused

    def _release_budget(self) -> None:
        if self._budget_user is not None and self._deps is not None and self._deps.budgets:
            self._deps.budgets.release(self._budget_user)
        self._budget_user = None

    def _run_user(self, user_id: str) -> str:
        """The run's user: the RunRequest's sender, or a subagent run's parent's user (its
        run row), whatever token the subagent's own request carried."""
        if self._parent is None or self._deps is None:
            return user_id
        try:
            parent_user = run_user(self._deps.store.database, self._parent.request_id)
        except peewee.DatabaseError as exc:
            log_store_failure(logger, exc, "reading the parent run's user failed")
            return user_id
        return user_id if parent_user is None else parent_user

    def _on_conversation_action(self, action: agent.ConversationAction) -> None:
        kind = action.WhichOneof("action")
        if kind == "cancel_action":
            log_event(
                logger,
                logging.INFO,
                "run cancelled by client",
                request_id=self.request_id,
                reason=action.cancel_action.reason or None,
            )
            self._cancel()
            return
        if kind in CALL_ACTIONS and self._run is not None and self._deps is not None:
            self._run.on_call_action(
                read_call_action(action, self._deps.subagents, self.request_id)
            )
            return
        log_event(
            logger,
            logging.WARNING,
            "conversation action ignored",
            request_id=self.request_id,
            action=kind,
        )

    def _on_exec_control(self, control: agent.ExecClientControlMessage) -> None:
        kind = control.WhichOneof("message")
        if kind == "heartbeat" or kind is None:
            return
        name = {"throw": "ExecClientThrow", "stream_close": "ExecClientStreamClose"}[kind]
        self._end(protocol_error(f"unknown {name} id: {getattr(control, kind).id}"))

    def _cancel(self) -> None:
        self._fail_run(cancelled_error())

    def _fail_run(self, error: ConnectError) -> None:
        """End the run (its children stopped, pending execs aborted) with ``error``."""
        if self._run is not None:
            self._run.cancel(error)
        else:
            self._end(error)

    def on_failure(
        self, exception_type: object, exception_value: object, traceback: object
    ) -> None:
        """A bug must not leave the client waiting: end the stream with ``internal``."""
        error = ConnectError(Code.INTERNAL, f"internal error: {exception_value}")
        if self._run is not None and not self._ended:
            self._run.cancel(error)
            self._tell_recorded()
        if not self._ended:
            self._ended = True
            self._unlink()
            self._release_budget()
            self._output.finish(error)

    def on_stop(self) -> None:
        # Stopped from outside (shutdown) while the turn runs: stop its child actors too.
        if self._run is not None and not self._ended:
            self._run.cancel(cancelled_error())
            self._tell_recorded()
        self._release_budget()

    def _unlink(self) -> None:
        if self._link is not None and self._deps is not None:
            self._deps.subagents.unlink(*self._link)
            self._link = None

    def _end(self, error: ConnectError | None) -> None:
        if self._ended:
            return
        self._ended = True
        self._unlink()
        self._release_budget()
        log_event(
            logger,
            logging.INFO,
            "run ended",
            request_id=self.request_id,
            code=error.code.value if error else "ok",
            message=error.message if error else None,
        )
        self._output.finish(error)
        self.stop()
