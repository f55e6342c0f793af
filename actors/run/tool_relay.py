"""What every run with a ToolRuntimeActor does with the editor's tool messages: pass its exec
results, exec controls and interaction answers to the runtime (a message for a run whose
runtime never started is the client's protocol violation), and hear the runtime's failure or
stop. ``AgentRun``, ``ShellCommandRun`` and ``SummarizeRun`` share it, so all read the editor the
same way.
"""

from __future__ import annotations

import logging

from actors.protocols.call_actions import UserActedOnCall
from actors.protocols.tool_runtime import (
    ExecControlReceived,
    ExecMessageReceived,
    InteractionResponseReceived,
    ToolRuntimeFailed,
    ToolRuntimeMessage,
    ToolRuntimeStopped,
)
from actors.run.children import RunChildren
from actors.run.end import RunEnd
from actors.turn import timeline
from store.base.clock import now_ms
from wire.errors import ConnectError, protocol_error
from wire.log import log_event
from wire.proto import agent_v1_pb2 as agent

logger = logging.getLogger("cursor_server.run")


class ToolRelay:
    """The run's side of the editor ↔ ToolRuntimeActor exchange; the run supplies its
    children, its ending and ``_finish``."""

    _children: RunChildren
    _ending: RunEnd

    def _finish(self, error: ConnectError | None) -> None:
        """How the run ends (``None``: as it would anyway); each run class that mixes the relay
        in defines it, so reaching this one is a bug in that class, said as such."""
        raise NotImplementedError(f"{type(self).__name__} defines no _finish for its tool relay")

    def on_tool_runtime_failed(self, message: ToolRuntimeFailed) -> None:
        self._finish(message.error)

    def on_tool_runtime_stopped(self, message: ToolRuntimeStopped) -> None:
        self._children.record(*timeline.tools_aborted(message, now_ms()))
        self._ending.tools_stopped()

    def on_exec_message(self, message: agent.ExecClientMessage) -> None:
        self._to_tools(ExecMessageReceived(message), f"unknown ExecClientMessage id: {message.id}")

    def on_exec_control(self, message: agent.ExecClientControlMessage) -> None:
        if message.WhichOneof("message") != "heartbeat":
            self._to_tools(ExecControlReceived(message), "exec control message before any exec")

    def on_interaction_response(self, message: agent.InteractionResponse) -> None:
        error = f"unknown InteractionResponse id: {message.id}"
        self._to_tools(InteractionResponseReceived(message), error)

    def on_call_action(self, message: UserActedOnCall) -> None:
        """The user acted on a running call (``actors.protocols.call_actions``); with no tool
        running there is none to act on, which is a race, not the client's mistake."""
        if not self._children.to_running_tools(message):
            log_event(
                logger,
                logging.INFO,
                "user action while no tool runs ignored",
                action=message.action.value,
                id=message.ident,
            )

    def _to_tools(self, message: ToolRuntimeMessage, error_without_tools: str) -> None:
        if not self._children.to_running_tools(message):
            self._finish(protocol_error(error_without_tools))
