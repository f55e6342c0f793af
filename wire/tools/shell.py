"""Shell: a streamed command; output chunks become deltas, exit or backgrounding ends the call."""

from __future__ import annotations

from typing import Any

import msgspec

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    INT32_MAX,
    ExecContext,
    ExecStep,
    SendExec,
    ShellOutput,
    ToolChannel,
    ToolDefinition,
    ToolExecution,
    ToolOutcome,
    Waiting,
    WrongResult,
    new_exec,
)
from wire.tools.text import join_note, plural

# ShellArgs defaults (tools.md §2.1): the model's block_until_ms becomes ``timeout``; past it the
# command moves to the background instead of being killed; the hard limit is one day.
SHELL_DEFAULT_TIMEOUT_MS = 30_000
SHELL_FILE_OUTPUT_THRESHOLD_BYTES = 40_000
SHELL_HARD_TIMEOUT_MS = 86_400_000


def shell_output_text(stdout: str, stderr: str) -> str:
    """stdout as is, then stderr inside ``<stderr>`` tags; a placeholder when both are empty."""
    if not stderr:
        return stdout or "(no output)"
    tagged = "<stderr>\n" + stderr + ("" if stderr.endswith("\n") else "\n") + "</stderr>"
    return join_note(stdout, tagged)


def _output_location_note(location: agent.OutputLocation) -> str:
    return (
        f"[the full output ({plural(location.size_bytes, 'byte')}, "
        f"{plural(location.line_count, 'line')}) is in {location.file_path}]"
    )


_ABORT_REASONS = {
    agent.SHELL_ABORT_REASON_USER_ABORT: "the user stopped the command",
    agent.SHELL_ABORT_REASON_TIMEOUT: "the command was stopped at its time limit",
}


def _output_notification(args: ToolArgs) -> agent.ShellOutputNotificationConfig | None:
    """``notify_on_output`` {pattern, reason, debounce_ms}: the editor tells the agent when the
    output matches ``pattern``; None when the model asked for no notification."""
    notify = args.nested("notify_on_output")
    if notify is None:
        return None
    return agent.ShellOutputNotificationConfig(
        pattern=notify.required_string("pattern"),
        reason=notify.required_string("reason"),
        debounce=notify.number("debounce_ms", minimum=0),
    )


def _smart_mode_approval(call_id: str, args: ToolArgs) -> agent.SmartModeApproval | None:
    """The user's approval asked for this call (``request_smart_mode_approval``), with the
    model's reason, which is then required; None when not asked."""
    reason = args.string("smart_mode_block_reason")
    if not args.boolean("request_smart_mode_approval"):
        return None
    if not reason:
        raise ToolArgumentError(
            "'smart_mode_block_reason' is required (a non-empty string) when "
            "request_smart_mode_approval is true"
        )
    return agent.SmartModeApproval(request_id=call_id, reason=reason)


class ShellExecution(ToolExecution):
    """A streamed command: output chunks become deltas; exit or backgrounding ends the call."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(SHELL, call_id)
        self.command = args.required_string("command")
        self.working_directory = args.string("working_directory") or ""
        self.description = args.string("description")
        timeout = args.integer("block_until_ms", minimum=0, maximum=INT32_MAX)
        self.timeout = SHELL_DEFAULT_TIMEOUT_MS if timeout is None else timeout
        self.output_notification = _output_notification(args)
        self.smart_mode_approval = _smart_mode_approval(call_id, args)
        self.context = context
        self.stdout: list[str] = []
        self.stderr: list[str] = []

    def _ui_args(self) -> agent.ShellArgs:
        return agent.ShellArgs(
            command=self.command,
            working_directory=self.working_directory,
            tool_call_id=self.call_id,
            timeout=self.timeout,
        )

    def _tool_call(self, result: agent.ShellResult | None = None) -> agent.ToolCall:
        shell = agent.ShellToolCall(
            args=self._ui_args(), result=result, description=self.description
        )
        return agent.ToolCall(shell_tool_call=shell)

    def started(self) -> agent.ToolCall:
        return self._tool_call()

    def begin(self) -> SendExec:
        shell = agent.ShellArgs(
            command=self.command,
            working_directory=self.working_directory,
            timeout=self.timeout,
            tool_call_id=self.call_id,
            file_output_threshold_bytes=SHELL_FILE_OUTPUT_THRESHOLD_BYTES,
            timeout_behavior=agent.TIMEOUT_BEHAVIOR_BACKGROUND,
            hard_timeout=SHELL_HARD_TIMEOUT_MS,
            description=self.description,
            close_stdin=True,
            output_notification=self.output_notification,
            smart_mode_approval=self.smart_mode_approval,
            conversation_id=self.context.conversation_id or None,
            admin_command_denylist=self.context.admin_command_denylist,
        )
        return SendExec(
            new_exec(self.call_id, accept_hook_additional_contexts=True, shell_stream_args=shell)
        )

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant == "shell_result":
            return self._finish(message.shell_result)
        if variant != "shell_stream":
            return WrongResult(variant)
        stream = message.shell_stream
        match stream.WhichOneof("event"):
            case "stdout":
                self.stdout.append(stream.stdout.data)
                return ShellOutput("stdout", stream.stdout.data)
            case "stderr":
                self.stderr.append(stream.stderr.data)
                return ShellOutput("stderr", stream.stderr.data)
            case "exit":
                return self._finish(self._exit_result(stream.exit, message))
            case "backgrounded":
                return self._finish(self._background_result(stream.backgrounded))
            case "rejected":
                return self._finish(agent.ShellResult(rejected=stream.rejected))
            case "permission_denied":
                return self._finish(agent.ShellResult(permission_denied=stream.permission_denied))
            case "sandbox_unsupported":
                unsupported = stream.sandbox_unsupported
                spawn = agent.ShellSpawnError(
                    command=unsupported.command or self.command,
                    working_directory=unsupported.working_directory or self.working_directory,
                    error=unsupported.reason or "the sandbox is not supported on this machine",
                )
                return self._finish(agent.ShellResult(spawn_error=spawn))
            case _:
                return Waiting()  # start, or an event this subset does not declare

    def _exit_result(
        self, exit_event: agent.ShellStreamExit, message: agent.ExecClientMessage
    ) -> agent.ShellResult:
        stdout, stderr = "".join(self.stdout), "".join(self.stderr)
        common: dict[str, Any] = {
            "command": self.command,
            "working_directory": exit_event.cwd or self.working_directory,
            "exit_code": min(exit_event.code, INT32_MAX),
            "stdout": stdout,
            "stderr": stderr,
            "interleaved_output": stdout + stderr,
        }
        if exit_event.HasField("local_execution_time_ms"):
            common["local_execution_time_ms"] = exit_event.local_execution_time_ms
        elif message.HasField("local_execution_time_ms"):
            common["local_execution_time_ms"] = message.local_execution_time_ms
        if exit_event.HasField("output_location"):
            common["output_location"] = exit_event.output_location
        if exit_event.code == 0 and not exit_event.aborted:
            return agent.ShellResult(success=agent.ShellSuccess(**common))
        failure = agent.ShellFailure(aborted=exit_event.aborted, **common)
        if exit_event.HasField("abort_reason"):
            failure.abort_reason = exit_event.abort_reason
        return agent.ShellResult(failure=failure)

    def _background_result(self, event: agent.ShellStreamBackgrounded) -> agent.ShellResult:
        stdout, stderr = "".join(self.stdout), "".join(self.stderr)
        success = agent.ShellSuccess(
            command=event.command or self.command,
            working_directory=event.working_directory or self.working_directory,
            stdout=stdout,
            stderr=stderr,
            interleaved_output=stdout + stderr,
            shell_id=event.shell_id,
        )
        if event.HasField("ms_to_wait"):
            success.ms_to_wait = event.ms_to_wait
        if event.HasField("reason"):
            success.background_reason = event.reason
        if event.HasField("pid"):
            success.pid = event.pid
        # Built last: the constructor copies ``success``, later changes would not reach it.
        result = agent.ShellResult(success=success, is_background=True)
        if event.HasField("pid"):
            result.pid = event.pid
        if self.context.terminals_folder:
            result.terminals_folder = self.context.terminals_folder
        return result

    def _finish(self, result: agent.ShellResult) -> ToolOutcome:
        text, is_error = self._render(result)
        return ToolOutcome(text, is_error, self._tool_call(result))

    def _render(self, result: agent.ShellResult) -> tuple[str, bool]:
        match result.WhichOneof("result"):
            case "success" if result.is_background:
                success = result.success
                text = f"the command keeps running in the background: shell_id={success.shell_id}"
                if result.HasField("pid"):
                    text += f" pid={result.pid}"
                if result.terminals_folder:
                    folder = result.terminals_folder.rstrip("/")
                    text += f"; its output keeps going to {folder}/{success.shell_id}.txt"
                if success.stdout or success.stderr:
                    text += "\noutput so far:\n" + shell_output_text(success.stdout, success.stderr)
                return text, False
            case "success":
                success = result.success
                text = shell_output_text(success.stdout, success.stderr)
                if success.HasField("output_location"):
                    text = join_note(text, _output_location_note(success.output_location))
                return text, False
            case "failure":
                failure = result.failure
                if failure.aborted:
                    head = _ABORT_REASONS.get(failure.abort_reason, "the command was aborted")
                else:
                    head = f"the command failed with exit code {failure.exit_code}"
                text = head + "\n" + shell_output_text(failure.stdout, failure.stderr)
                if failure.HasField("output_location"):
                    text = join_note(text, _output_location_note(failure.output_location))
                return text, True
            case "timeout":
                timeout = result.timeout
                where = timeout.working_directory or self.working_directory
                text = f"the command timed out after {timeout.timeout_ms} ms"
                return text + (f" in {where}" if where else ""), True
            case "rejected":
                reason = result.rejected.reason
                return "the command was rejected" + (f": {reason}" if reason else ""), True
            case "spawn_error":
                return result.spawn_error.error or "the command could not be started", True
            case "permission_denied":
                return result.permission_denied.error or "permission denied", True
            case _:
                return "the editor returned no shell result", True


def user_command_execution(exec_id: str, command: str, context: ExecContext) -> ShellExecution:
    """The command the user ran from the chat (``ShellCommandAction``), run as a Shell call
    with the model's defaults and no options: its exec and tool call ids are ``exec_id``, the
    id the editor gave the command. Raises ``ToolArgumentError`` for an empty command."""
    arguments = msgspec.json.encode({"command": command}).decode()
    return ShellExecution(exec_id, ToolArgs(arguments), context)


# The registry row (``wire.tools.registry.REGISTRY``).
SHELL = ToolDefinition(
    name="Shell",
    channel=ToolChannel.EXEC,
    tool_call_field="shell_tool_call",
    execution=ShellExecution,
    error_path="result.spawn_error",
    error_fields=("error",),
)
