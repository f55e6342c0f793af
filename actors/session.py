"""The SessionActor: one per Cursor request id, the owner of that run's lifecycle.

It receives client messages in ``append_seqno`` order and decides what they mean. A RunRequest
first has its model resolved (``actors.model_selection``); a failure ends the run with that
error. The agent loop itself is not available yet, so a resolved run ends with
``unimplemented``.
"""

from __future__ import annotations

import logging

import pykka

from actors.messages import (
    CancelRun,
    ClientMessageReceived,
    RunRequestDeadlinePassed,
    SessionMessage,
    SubagentParentLinked,
)
from actors.model_selection import ModelResolver, ModelSelectionError
from actors.run_output import RunOutput
from wire.bidi import ParentLink
from wire.errors import Code, ConnectError, cancelled_error, protocol_error
from wire.log import log_event
from wire.proto import agent_v1_pb2 as agent

logger = logging.getLogger("cursor_server.session")

AGENT_LOOP_UNAVAILABLE = (
    "agent runs are not available yet: this server does not run the agent loop "
    "(RunRequest accepted and refused)"
)


class SessionActor(pykka.ThreadingActor):
    """Owns one request's run: accepts its RunRequest once and ends its stream once."""

    use_daemon_thread = True

    def __init__(
        self, request_id: str, output: RunOutput, resolve_model: ModelResolver | None = None
    ) -> None:
        """``resolve_model`` is None only where no store exists; then no model is resolved."""
        super().__init__()
        self.request_id = request_id
        self._output = output
        self._resolve_model = resolve_model
        self._run_started = False
        self._ended = False
        self._parent: ParentLink | None = None

    def on_receive(self, message: SessionMessage) -> None:
        if self._ended:
            return
        match message:
            case ClientMessageReceived(message=client_message):
                self._on_client_message(client_message)
            case CancelRun(reason=reason):
                log_event(
                    logger, logging.INFO, "run cancelled", request_id=self.request_id, reason=reason
                )
                self._end(cancelled_error())
            case RunRequestDeadlinePassed(waited_seconds=waited):
                if not self._run_started:
                    self._end(
                        ConnectError(
                            Code.DEADLINE_EXCEEDED,
                            f"no RunRequest arrived within {waited:g} s",
                        )
                    )
            case SubagentParentLinked(parent=parent):
                self._parent = parent
            case _:
                raise TypeError(f"SessionActor cannot handle {type(message).__name__}")

    def _on_client_message(self, message: agent.AgentClientMessage) -> None:
        variant = message.WhichOneof("message")
        match variant:
            case "run_request":
                self._on_run_request(message.run_request)
            case "conversation_action":
                self._on_conversation_action(message.conversation_action)
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

    def _on_run_request(self, request: agent.AgentRunRequest) -> None:
        if self._run_started:
            log_event(
                logger, logging.WARNING, "repeated RunRequest ignored", request_id=self.request_id
            )
            return
        self._run_started = True
        self._output.run_started()
        log_event(
            logger,
            logging.INFO,
            "run request received",
            request_id=self.request_id,
            conversation_id=request.conversation_id or self.request_id,
        )
        if self._resolve_model is not None:
            try:
                route = self._resolve_model(request)
            except ModelSelectionError as failure:
                self._end(failure.error)
                return
            log_event(
                logger,
                logging.INFO,
                "run model resolved",
                request_id=self.request_id,
                public_id=route.public_id,
                provider_type=route.provider_type.value,
            )
        self._end(ConnectError(Code.UNIMPLEMENTED, AGENT_LOOP_UNAVAILABLE))

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
            self._end(cancelled_error())
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

    def _end(self, error: ConnectError | None) -> None:
        self._ended = True
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
