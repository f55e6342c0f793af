"""AwaitShell: wait for a background shell (polling its terminal file), or just wait.

With ``shell_id`` the call reads ``<terminals folder>/<shell_id>.txt`` (``terminal_file``) with
``read_args``, one fresh wire id per poll, and pauses ``POLL_INTERVAL_MS`` (or what is left)
between polls through the runtime's timer (``WakeAfter``): it ends when ``pattern`` matches the
output, when the file records the shell's exit, or when ``block_until_ms`` of pausing have
passed (0: one look, no pause). A file not written yet reads as empty output. The model reads
a compact JSON summary; the card is ``AwaitResult.success`` with ``complete`` once the exit is
known, ``still_running`` otherwise.

Without ``shell_id`` it is a plain timer: one pause, no wire message, then "Waited N ms".

The wait counts the pauses it asked for, not wall time, so the state machine stays pure; the
polls' own round trips come on top of ``block_until_ms``. The pattern is compiled with the
``regex`` package and ``MULTILINE`` (the schema promises a JavaScript regex with the ``m``
flag; the common syntax agrees, and what it refuses is an argument error the model reads).
The model writes the pattern and this runs in the tool runtime's mailbox, so a match is bounded
twice: it sees only the last ``MATCH_WINDOW_CHARS`` of the output, and gives up after
``MATCH_TIMEOUT_S`` (``regex``'s own timeout; Python's ``re`` has none, and a pattern such as
``(x+x+)+y`` backtracks for ever), which ends the call with an error the model reads.
"""

from __future__ import annotations

from typing import Any

import msgspec
import regex

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    FirstStep,
    SendExec,
    ToolChannel,
    ToolDefinition,
    ToolExecution,
    ToolOutcome,
    WakeAfter,
    WrongResult,
    new_exec,
)
from wire.tools.read import read_error_text
from wire.tools.terminal_file import parse_terminal_file, terminal_file_path

AWAIT_DEFAULT_MS = 30_000
AWAIT_MAX_MS = 7_140_000
POLL_INTERVAL_MS = 1_000
# The matched text the model and the card get, at most (a pattern like [\s\S]* matches it all).
MATCH_TEXT_LIMIT = 2_000
# The end of the output a pattern is matched against, and the longest one match may take.
MATCH_WINDOW_CHARS = 200_000
MATCH_TIMEOUT_S = 0.05

# AwaitTaskComplete/StillRunning.wake_reason values (tools.md §2.4).
WAKE_TASK_COMPLETE = "task_complete"
WAKE_TIMEOUT_OR_PATTERN = "timeout_or_pattern"
WAKE_SLEEP_COMPLETE = "sleep_complete"


class AwaitSummary(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the model reads after a wait on a shell (``pattern_matched``/``match`` only when
    it gave a pattern)."""

    task_id: str
    output_file_path: str
    output_length: int
    exit_code: int | None
    pattern_matched: bool | None = None
    match: str | None = None


def _shell_id(args: ToolArgs) -> str | None:
    """The shell id as a string; a whole number is taken too (the Shell result prints one)."""
    value = args.raw.get("shell_id")
    if value is None or isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ToolArgumentError("'shell_id' must be a string (the shell id a Shell result named)")


def _pattern(args: ToolArgs) -> regex.Pattern[str] | None:
    text = args.string("pattern")
    if not text:
        return None
    try:
        return regex.compile(text, regex.MULTILINE)
    except regex.error as exc:
        raise ToolArgumentError(f"'pattern' is not a valid regular expression ({exc})") from exc


class AwaitShellExecution(ToolExecution):
    """Polls a background shell's terminal file until a match, its exit or the deadline; or,
    without a shell, one pause."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(AWAIT_SHELL, call_id)
        self.shell_id = _shell_id(args)
        self.pattern = _pattern(args)
        minimum = 0 if self.shell_id is not None else 1
        block = args.integer("block_until_ms", minimum=minimum, maximum=AWAIT_MAX_MS)
        self.block_ms = AWAIT_DEFAULT_MS if block is None else block
        if self.shell_id is None and self.pattern is not None:
            raise ToolArgumentError("'pattern' needs 'shell_id': it is matched against its output")
        folder = context.terminals_folder
        self.path = terminal_file_path(folder, self.shell_id) if folder and self.shell_id else ""
        self.waited_ms = 0
        self._pause_ms = 0  # the pause in progress

    def _args(self) -> agent.AwaitArgs:
        return agent.AwaitArgs(
            task_id=self.shell_id or "",
            block_until_ms=self.block_ms,
            regex=self.pattern.pattern if self.pattern is not None else None,
        )

    def _card(self, result: agent.AwaitResult) -> agent.ToolCall:
        return agent.ToolCall(await_tool_call=agent.AwaitToolCall(args=self._args(), result=result))

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(await_tool_call=agent.AwaitToolCall(args=self._args()))

    def begin(self) -> FirstStep:
        if self.shell_id is None:
            return self._pause(self.block_ms)
        if not self.path:
            return self._error(
                "the editor named no terminals folder, so there is no output file to wait on"
            )
        return self._poll()

    def _poll(self) -> SendExec:
        read = agent.ReadArgs(path=self.path, tool_call_id=self.call_id)
        # The terminal file is not the tool's answer: no hook context belongs on it.
        return SendExec(
            new_exec(self.call_id, accept_hook_additional_contexts=False, read_args=read)
        )

    def _pause(self, delay_ms: int) -> WakeAfter:
        self._pause_ms = delay_ms
        return WakeAfter(delay_ms)

    def wake(self) -> ExecStep:
        self.waited_ms += self._pause_ms
        self._pause_ms = 0
        if self.shell_id is None:
            still = agent.AwaitTaskStillRunning(
                runtime_ms=self.waited_ms, wake_reason=WAKE_SLEEP_COMPLETE
            )
            result = agent.AwaitResult(success=agent.AwaitSuccess(still_running=still))
            return ToolOutcome(f"Waited {self.waited_ms} ms", False, self._card(result))
        return self._poll()

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant not in ("read_result", "redacted_read_result"):
            return WrongResult(variant)
        read: agent.ReadResult = getattr(message, variant)
        match read.WhichOneof("result"):
            case "success":
                success = read.success
                if success.WhichOneof("output") == "data":
                    text = success.data.decode("utf-8", "replace")
                else:
                    text = success.content
            case "file_not_found":
                text = ""  # the editor has not written it yet
            case _:
                return self._error(read_error_text(self.path, read))
        return self._check(text)

    def _check(self, text: str) -> ExecStep:
        terminal = parse_terminal_file(text)
        found = None
        if self.pattern is not None:
            window = terminal.output[-MATCH_WINDOW_CHARS:]
            try:
                found = self.pattern.search(window, timeout=MATCH_TIMEOUT_S)
            except TimeoutError:
                return self._error(
                    f"the pattern took over {int(MATCH_TIMEOUT_S * 1000)} ms to match the "
                    "output, so the wait stopped; use a simpler pattern (a plain word or a "
                    "short literal phrase works best)"
                )
        remaining = self.block_ms - self.waited_ms
        if found is None and terminal.exit_code is None and remaining > 0:
            return self._pause(min(remaining, POLL_INTERVAL_MS))
        return self._finish(terminal.output, terminal.exit_code, found)

    def _finish(
        self, output: str, exit_code: int | None, found: regex.Match[str] | None
    ) -> ToolOutcome:
        assert self.shell_id is not None
        matched = found.group(0)[:MATCH_TEXT_LIMIT] if found is not None else None
        length = len(output.encode())
        common: dict[str, Any] = {
            "task_id": self.shell_id,
            "runtime_ms": self.waited_ms,
            "output_file_path": self.path,
            "output_length": length,
            "regex_requested": self.pattern is not None,
            "regex_match": matched,
        }
        if exit_code is not None:
            done = agent.AwaitTaskComplete(
                exit_code=exit_code, wake_reason=WAKE_TASK_COMPLETE, **common
            )
            success = agent.AwaitSuccess(complete=done)
        else:
            still = agent.AwaitTaskStillRunning(wake_reason=WAKE_TIMEOUT_OR_PATTERN, **common)
            success = agent.AwaitSuccess(still_running=still)
        summary = AwaitSummary(
            task_id=self.shell_id,
            output_file_path=self.path,
            output_length=length,
            exit_code=exit_code,
            pattern_matched=None if self.pattern is None else found is not None,
            match=matched,
        )
        text = msgspec.json.encode(summary).decode()
        return ToolOutcome(text, False, self._card(agent.AwaitResult(success=success)))

    def _error(self, text: str) -> ToolOutcome:
        result = agent.AwaitResult(error=agent.AwaitError(error=text))
        return ToolOutcome(text, True, self._card(result))


# The registry row (``wire.tools.registry.REGISTRY``).
AWAIT_SHELL = ToolDefinition(
    name="AwaitShell",
    channel=ToolChannel.EXEC,
    tool_call_field="await_tool_call",
    execution=AwaitShellExecution,
    error_path="result.error",
    error_fields=("error",),
)
