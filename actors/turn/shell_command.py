"""A command the user ran from the chat (``ConversationAction.shell_command_action``), as a
phase without IO.

The action carries only the command and the ``exec_id`` the editor gave it, so the server runs
it on the editor: one Shell exec (``shell_stream_args``, built as the Shell tool builds it) with
that ``exec_id``, its output streamed as Shell's is. No model is called in this run. When the
exec ends (an exit, a move to the background with the output so far, a refusal), the command
and its output become context for the conversation's next model call: one runtime-origin user
message, appended once (its ``runtime_event_id`` names the request), holding the
``<user_ran_command>`` action context and when it ended; and the checkpoint's turn for this run
is a ``ShellConversationTurnStructure`` of the command and its ``ShellOutput``.
"""

from __future__ import annotations

import datetime

import msgspec

from actors.codecs.request_context import shell_command_context
from actors.conversation.model import (
    CanonicalMessage,
    Origin,
    PartsContent,
    Role,
    TextPart,
)
from actors.protocols.checkpoint import ShellTurn
from actors.protocols.tool_runtime import RunUserCommand, ToolCompleted
from prompt.runtime_message import RuntimeContext, render_runtime_message
from wire.errors import protocol_error
from wire.proto import agent_v1_pb2 as agent

SHELL_COMMAND_ACTION = "shell_command_action"

# The runtime message's sections a command's context uses: the action context and the time.
CONTEXT_TEMPLATE = "{{ACTION_CONTEXT}}{{TIMESTAMP}}"


def runs_shell_command(request: agent.AgentRunRequest) -> bool:
    """Whether the request is a command the user ran (its run is ``ShellCommandRun``'s)."""
    kind: str | None = request.action.WhichOneof("action")
    return kind == SHELL_COMMAND_ACTION


def read_shell_command(action: agent.ShellCommandAction) -> agent.ShellCommandAction:
    """The action, checked: a command to run and the editor's id for it."""
    if not action.shell_command.command.strip():
        raise protocol_error("shell_command_action: the command is empty")
    if not action.exec_id:
        raise protocol_error("shell_command_action: exec_id is empty")
    return action


class CommandRecorded(msgspec.Struct, frozen=True):
    """The command ended: the message the next model call reads, and the checkpoint's turn."""

    message: CanonicalMessage
    turn: ShellTurn


_ABORTED = {
    agent.SHELL_ABORT_REASON_USER_ABORT: "stopped by the user before it exited",
    agent.SHELL_ABORT_REASON_TIMEOUT: "stopped at its time limit before it exited",
}


def shell_output(result: agent.ShellResult) -> tuple[agent.ShellOutput, str | None]:
    """What the command printed and its exit code, and for a command that did not exit on
    its own, how it ended instead (None: it exited)."""
    match result.WhichOneof("result"):
        case "success":
            success = result.success
            output = agent.ShellOutput(stdout=success.stdout, stderr=success.stderr)
            if result.is_background:
                return output, (
                    f"still running in the background (shell_id {success.shell_id}); "
                    "the output is what it printed until then"
                )
            return output, None
        case "failure":
            failure = result.failure
            output = agent.ShellOutput(
                stdout=failure.stdout, stderr=failure.stderr, exit_code=failure.exit_code
            )
            if failure.aborted:
                return output, _ABORTED.get(failure.abort_reason, "aborted before it exited")
            return output, None
        case "rejected":
            reason = result.rejected.reason
            return agent.ShellOutput(), "not run: it was rejected" + (
                f" ({reason})" if reason else ""
            )
        case "permission_denied":
            error = result.permission_denied.error
            return agent.ShellOutput(), "not run: permission denied" + (
                f" ({error})" if error else ""
            )
        case "spawn_error":
            error = result.spawn_error.error
            return agent.ShellOutput(), "not started" + (f": {error}" if error else "")
        case "timeout":
            return agent.ShellOutput(), f"timed out after {result.timeout.timeout_ms} ms"
        case _:
            return agent.ShellOutput(), "the editor returned no result for it"


def context_message(request_id: str, text: str) -> CanonicalMessage:
    """The runtime message holding a command's context (its ids are stable: a retry of the
    same request replays it instead of appending it again)."""
    return CanonicalMessage(
        message_id=f"runtime:shell-command:{request_id}",
        role=Role.USER,
        origin=Origin.RUNTIME,
        content=PartsContent((TextPart(text),)),
        runtime_event_id=f"shell-command:{request_id}",
    )


class ShellCommandPhase:
    """The run of one command: the exec to start, then what its completion leaves."""

    def __init__(self, request_id: str, action: agent.ShellCommandAction) -> None:
        self._request_id = request_id
        self._action = action
        self.round_id = f"{request_id}:shell"
        self.recorded: CommandRecorded | None = None

    def start(self) -> RunUserCommand:
        """What the tool runtime runs: the command under the editor's ``exec_id``."""
        return RunUserCommand(
            self.round_id, self._action.exec_id, self._action.shell_command.command
        )

    def completed(self, message: ToolCompleted, now: datetime.datetime) -> CommandRecorded | None:
        """The command ended (``now``: when); None for a completion that is not its own, or
        once it was recorded."""
        if message.round_id != self.round_id or self.recorded is not None:
            return None
        tool_call = agent.ToolCall.FromString(message.tool_call)
        output, status = shell_output(tool_call.shell_tool_call.result)
        context = shell_command_context(self._action, output, status)
        text = render_runtime_message(
            CONTEXT_TEMPLATE, RuntimeContext(action_context=context, now=now)
        )
        turn = ShellTurn(
            self._action.shell_command.SerializeToString(deterministic=True),
            output.SerializeToString(deterministic=True),
        )
        self.recorded = CommandRecorded(context_message(self._request_id, text), turn)
        return self.recorded
