"""The tools the editor runs for the model, as a sans-IO codec of the Exec sub-protocol.

Each tool name maps to exactly one channel (``ToolChannel``): Exec tools become one or more
``ExecServerMessage`` requests the editor answers with ``ExecClientMessage`` results; Local tools
finish on the server. A ``ToolExecution`` is one call's state machine: ``begin`` gives its first
request (or, for a local tool or bad arguments, its outcome at once) and ``feed`` takes each
client message for it and says what happens next. Nothing here allocates wire ids, keeps time
or sends bytes: ``actors.tool_runtime`` does, so every rule below can be tested as a function.

An outcome holds both views of a finished call: the string the LLM reads (the real output:
file text, matches, diagnostics, command output) with its ``is_error`` flag, and the typed
``agent.ToolCall`` (args and result) the editor shows in the tool card. Bad arguments from the
model are an error result the model can correct, never a failed run; an unknown tool name is a
protocol error (``UnsupportedTool``).

Write and StrReplace are one call and two execs: a hidden Read of the file, the edit applied
here, then a Write of the whole new text (the editor only knows plain reads and writes). The
edit works on LF text; a file whose lines all end in CRLF is written back with CRLF.
"""

from __future__ import annotations

import abc
import difflib
from collections.abc import Iterator
from enum import StrEnum
from typing import Any, Literal

import msgspec
from google.protobuf import unknown_fields

from wire.connect import data_frame
from wire.proto import agent_v1_pb2 as agent
from wire.streamed_args import ArgsEvent, ContentDelta, FieldCompleted, StreamedArgsDecoder

INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1

# ShellArgs defaults (tools.md §2.1): the model's block_until_ms becomes ``timeout``; past it the
# command moves to the background instead of being killed; the hard limit is one day.
SHELL_DEFAULT_TIMEOUT_MS = 30_000
SHELL_FILE_OUTPUT_THRESHOLD_BYTES = 40_000
SHELL_HARD_TIMEOUT_MS = 86_400_000

GREP_OUTPUT_MODES = ("content", "files_with_matches", "count")
TODO_STATUSES = {
    "pending": agent.TODO_STATUS_PENDING,
    "in_progress": agent.TODO_STATUS_IN_PROGRESS,
    "completed": agent.TODO_STATUS_COMPLETED,
    "cancelled": agent.TODO_STATUS_CANCELLED,
}

# ExecClientMessage fields outside its oneof; any other unknown field is a result variant this
# subset does not declare, so it is a result, just not one any of our tools expects.
_EXEC_CLIENT_NON_RESULT_FIELDS = frozenset({1, 15, 39, 45})


class ToolChannel(StrEnum):
    """How a tool runs: an Exec request, an Interaction query, or on the server."""

    EXEC = "exec"
    INTERACTION = "interaction"
    LOCAL = "local"


# Every tool this server runs, its channel and its ToolCall oneof; nothing else is accepted.
TOOLS: dict[str, tuple[ToolChannel, str]] = {
    "Read": (ToolChannel.EXEC, "read_tool_call"),
    "Write": (ToolChannel.EXEC, "edit_tool_call"),
    "StrReplace": (ToolChannel.EXEC, "edit_tool_call"),
    "Delete": (ToolChannel.EXEC, "delete_tool_call"),
    "Grep": (ToolChannel.EXEC, "grep_tool_call"),
    "Glob": (ToolChannel.EXEC, "glob_tool_call"),
    "Shell": (ToolChannel.EXEC, "shell_tool_call"),
    "ReadLints": (ToolChannel.EXEC, "read_lints_tool_call"),
    "TodoWrite": (ToolChannel.LOCAL, "update_todos_tool_call"),
}


def normalize_tool_name(name: str) -> str:
    """ASCII letters and digits only, lowercased (``str_replace`` and ``StrReplace`` agree)."""
    return "".join(ch for ch in name if ch.isascii() and ch.isalnum()).lower()


_BY_NORMALIZED = {normalize_tool_name(name): name for name in TOOLS}


class UnsupportedTool(Exception):
    """The model called a tool this server does not run; the run fails with ``message``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.message = f"unsupported tool: {name}"
        super().__init__(self.message)


def resolve_tool(name: str) -> str:
    """The canonical name of the tool ``name`` designates, or ``UnsupportedTool``."""
    canonical = _BY_NORMALIZED.get(normalize_tool_name(name))
    if canonical is None:
        raise UnsupportedTool(name)
    return canonical


def tool_channel(name: str) -> ToolChannel:
    return TOOLS[resolve_tool(name)][0]


class ExecContext(msgspec.Struct, frozen=True):
    """What a run's requests carry besides the model's arguments (from the RunRequest)."""

    conversation_id: str = ""
    terminals_folder: str = ""
    admin_command_denylist: tuple[str, ...] = ()


# ---- what feeding a client message yields ----


class Waiting(msgspec.Struct, frozen=True):
    """Nothing terminal yet (an empty message, a shell start event)."""


class ShellOutput(msgspec.Struct, frozen=True):
    """A chunk of a running command's output, for a ``tool_call_delta``."""

    stream: Literal["stdout", "stderr"]
    text: str


class SendExec(msgspec.Struct, frozen=True):
    """Send this request (its ``id`` is unset: the caller allocates one)."""

    message: agent.ExecServerMessage


class ToolOutcome(msgspec.Struct, frozen=True):
    """The finished call: what the LLM reads and the typed ToolCall (args + result) for the UI.

    ``tool_call`` has no id or timestamps; ``stamp_tool_call`` adds them.
    """

    content: str
    is_error: bool
    tool_call: agent.ToolCall


class WrongResult(msgspec.Struct, frozen=True):
    """A terminal result of a kind this call never asked for."""

    variant: str


ExecStep = Waiting | ShellOutput | SendExec | ToolOutcome | WrongResult


def exec_result_variant(message: agent.ExecClientMessage) -> str | None:
    """The result variant a client message carries, None when it carries none.

    A variant this subset does not declare arrives as an unknown field; it is still a result
    (``field N``), so it cannot be mistaken for an empty, non-terminal message.
    """
    variant: str | None = message.WhichOneof("message")
    if variant is not None:
        return variant
    unknowns = unknown_fields.UnknownFieldSet(message)
    for i in range(len(unknowns)):
        if unknowns[i].field_number not in _EXEC_CLIENT_NON_RESULT_FIELDS:
            return f"field {unknowns[i].field_number}"
    return None


# ---- arguments ----


class ToolArgumentError(Exception):
    """The model's arguments do not fit the tool; the model reads the message and can retry."""


class _Args:
    """Typed reads of the model's argument object, each failing with a message for the model."""

    def __init__(self, text: str) -> None:
        try:
            value = msgspec.json.decode(text.encode() if text.strip() else b"{}")
        except msgspec.DecodeError as exc:
            raise ToolArgumentError(f"the arguments are not valid JSON ({exc})") from exc
        if not isinstance(value, dict):
            raise ToolArgumentError("the arguments must be a JSON object")
        self.raw: dict[str, Any] = value

    def string(self, key: str, *, required: bool = False) -> str | None:
        value = self.raw.get(key)
        if value is None:
            if required:
                raise ToolArgumentError(f"'{key}' is required (a string)")
            return None
        if not isinstance(value, str):
            raise ToolArgumentError(f"'{key}' must be a string")
        return value

    def required_string(self, key: str) -> str:
        value = self.string(key, required=True)
        assert value is not None
        return value

    def integer(self, key: str, *, minimum: int, maximum: int) -> int | None:
        """An integer; a float with no fractional part (``3.0``) counts as one."""
        value = self.raw.get(key)
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolArgumentError(f"'{key}' must be a whole number")
        if not minimum <= value <= maximum:
            raise ToolArgumentError(f"'{key}' must be between {minimum} and {maximum}")
        return value

    def boolean(self, key: str, *, required: bool = False) -> bool | None:
        value = self.raw.get(key)
        if value is None:
            if required:
                raise ToolArgumentError(f"'{key}' is required (true or false)")
            return None
        if not isinstance(value, bool):
            raise ToolArgumentError(f"'{key}' must be true or false")
        return value

    def string_list(self, key: str) -> list[str] | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ToolArgumentError(f"'{key}' must be an array of strings")
        return value


# ---- helpers shared by the tools ----


def lf(text: str) -> str:
    """CRLF and lone CR become LF: the edit tools work on one line-ending form."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def line_count(text: str) -> int:
    """Lines of a text; a last line without its newline counts, an empty text has none."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _join_note(text: str, note: str) -> str:
    if not text:
        return note
    return text + ("" if text.endswith("\n") else "\n") + note


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _new_exec(call_id: str, **request: Any) -> agent.ExecServerMessage:
    return agent.ExecServerMessage(exec_id=call_id, accept_hook_additional_contexts=True, **request)


def empty_tool_call(tool: str) -> agent.ToolCall:
    """The tool's ToolCall with its oneof set and nothing in it (the placeholder card)."""
    tool_call = agent.ToolCall()
    getattr(tool_call, TOOLS[tool][1]).SetInParent()
    return tool_call


def error_tool_call(tool: str, error: str) -> agent.ToolCall:
    """The tool's ToolCall carrying only an error result (bad arguments)."""
    tool_call = empty_tool_call(tool)
    match tool:
        case "Read":
            tool_call.read_tool_call.result.error.error_message = error
        case "Write" | "StrReplace":
            tool_call.edit_tool_call.result.error.error = error
            tool_call.edit_tool_call.result.error.model_visible_error = error
        case "Delete":
            tool_call.delete_tool_call.result.error.error = error
        case "Grep":
            tool_call.grep_tool_call.result.error.error = error
        case "Glob":
            tool_call.glob_tool_call.result.error.error = error
        case "Shell":
            tool_call.shell_tool_call.result.spawn_error.error = error
        case "ReadLints":
            tool_call.read_lints_tool_call.result.error.error_message = error
        case "TodoWrite":
            tool_call.update_todos_tool_call.result.error.error = error
    return tool_call


# ---- one call ----


class ToolExecution(abc.ABC):
    """One tool call from dispatch to outcome: pure state, no IO."""

    def __init__(self, tool: str, call_id: str) -> None:
        self.tool = tool
        self.call_id = call_id
        self.channel = TOOLS[tool][0]

    @abc.abstractmethod
    def started(self) -> agent.ToolCall:
        """The typed args the ``tool_call_started`` card shows (no result yet)."""

    @abc.abstractmethod
    def begin(self) -> SendExec | ToolOutcome:
        """The first request, or the outcome when nothing needs the editor."""

    def feed(self, message: agent.ExecClientMessage) -> ExecStep:
        """One client message for this call's current request."""
        variant = exec_result_variant(message)
        if variant is None:
            return Waiting()
        return self._on_result(variant, message)

    @abc.abstractmethod
    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        """Each tool's reading of a terminal result variant."""


class InvalidCall(ToolExecution):
    """A call whose arguments do not fit: it ends at once with an error the model reads."""

    def __init__(self, tool: str, call_id: str, error: str) -> None:
        super().__init__(tool, call_id)
        self.error = f"invalid arguments for {tool}: {error}"

    def started(self) -> agent.ToolCall:
        return empty_tool_call(self.tool)

    def begin(self) -> ToolOutcome:
        return ToolOutcome(self.error, True, error_tool_call(self.tool, self.error))

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        return WrongResult(variant)


# ---- Read ----


class ReadExecution(ToolExecution):
    def __init__(self, call_id: str, args: _Args) -> None:
        super().__init__("Read", call_id)
        self.path = args.required_string("path")
        self.offset = args.integer("offset", minimum=-INT32_MAX, maximum=INT32_MAX)
        self.limit = args.integer("limit", minimum=0, maximum=INT32_MAX)

    def _ui_args(self) -> agent.ReadToolArgs:
        return agent.ReadToolArgs(path=self.path, offset=self.offset, limit=self.limit)

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(read_tool_call=agent.ReadToolCall(args=self._ui_args()))

    def begin(self) -> SendExec:
        read = agent.ReadArgs(
            path=self.path, tool_call_id=self.call_id, offset=self.offset, limit=self.limit
        )
        return SendExec(_new_exec(self.call_id, read_args=read))

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant not in ("read_result", "redacted_read_result"):
            return WrongResult(variant)
        content, is_error, result = self._render(getattr(message, variant))
        tool_call = agent.ToolCall(
            read_tool_call=agent.ReadToolCall(args=self._ui_args(), result=result)
        )
        return ToolOutcome(content, is_error, tool_call)

    def _render(self, read: agent.ReadResult) -> tuple[str, bool, agent.ReadToolResult]:
        kind = read.WhichOneof("result")
        if kind != "success":
            text = _read_error_text(self.path, read)
            return text, True, agent.ReadToolResult(error=agent.ReadToolError(error_message=text))
        success = read.success
        path = success.path or self.path
        ui = agent.ReadToolSuccess(
            path=path,
            exceeded_limit=success.truncated,
            total_lines=max(success.total_lines, 0),
            file_size=min(max(success.file_size, 0), UINT32_MAX),
        )
        if self.limit is not None and (self.offset or 0) >= 0:
            start = self.offset or 0
            ui.read_range.CopyFrom(
                agent.ReadRange(start_line=start, end_line=min(start + self.limit, UINT32_MAX))
            )
        output = success.WhichOneof("output")
        if output == "data":
            ui.data = success.data
            ui.is_empty = not success.data
            size = success.file_size or len(success.data)
            text = f"{path} is a binary file ({_plural(size, 'byte')}); it cannot be shown as text"
            return text, False, agent.ReadToolResult(success=ui)
        content = success.content
        ui.content = content
        ui.is_empty = not content
        if not content:
            if success.range_applied or self.offset is not None or self.limit is not None:
                text = f"no lines of {path} in the requested range"
                if success.total_lines > 0:
                    text += f" (the file has {_plural(success.total_lines, 'line')})"
            else:
                text = f"{path} is empty"
        elif success.truncated:
            note = f"[output truncated: read the rest of {path} with offset and limit]"
            if success.total_lines > 0:
                note = (
                    f"[output truncated: {path} has {_plural(success.total_lines, 'line')}; "
                    "read the rest with offset and limit]"
                )
            text = _join_note(content, note)
        else:
            text = content
        return text, False, agent.ReadToolResult(success=ui)


def _read_error_text(path: str, read: agent.ReadResult) -> str:
    """The message of a failed ReadResult (any variant but success)."""
    match read.WhichOneof("result"):
        case "error":
            return read.error.error or f"could not read {path}"
        case "rejected":
            reason = read.rejected.reason
            return f"reading {path} was rejected" + (f": {reason}" if reason else "")
        case "file_not_found":
            return f"file not found: {path}"
        case "permission_denied":
            return f"permission denied: {path}"
        case "invalid_file":
            return read.invalid_file.reason or f"not a readable file: {path}"
        case _:
            return f"the editor returned no read result for {path}"


# ---- Write and StrReplace ----


class EditExecution(ToolExecution):
    """A hidden Read, the edit applied here, then a Write of the whole new text."""

    def __init__(self, tool: Literal["Write", "StrReplace"], call_id: str, args: _Args) -> None:
        super().__init__(tool, call_id)
        self.path = args.required_string("path")
        if tool == "Write":
            self.contents = args.required_string("contents")
            self.old_string = self.new_string = ""
            self.replace_all = False
        else:
            self.contents = ""
            self.old_string = args.required_string("old_string")
            self.new_string = args.required_string("new_string")
            self.replace_all = bool(args.boolean("replace_all"))
        self._writing = False
        self._created = False
        self._replaced = 0
        self._before = ""  # as the file was (raw)
        self._before_lf = ""
        self._after_lf = ""
        self._file_text = ""  # as written

    def _ui_args(self) -> agent.EditArgs:
        streamed = self.contents if self.tool == "Write" else self.new_string
        return agent.EditArgs(path=self.path, stream_content=lf(streamed))

    def _tool_call(self, result: agent.EditResult | None = None) -> agent.ToolCall:
        return agent.ToolCall(
            edit_tool_call=agent.EditToolCall(args=self._ui_args(), result=result)
        )

    def started(self) -> agent.ToolCall:
        return self._tool_call()

    def begin(self) -> SendExec:
        read = agent.ReadArgs(path=self.path, tool_call_id=self.call_id)
        return SendExec(_new_exec(self.call_id, read_args=read))

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if not self._writing:
            if variant not in ("read_result", "redacted_read_result"):
                return WrongResult(variant)
            return self._on_read(getattr(message, variant))
        if variant != "write_result":
            return WrongResult(variant)
        return self._on_write(message.write_result)

    def _fail(self, error: str, result: agent.EditResult | None = None) -> ToolOutcome:
        if result is None:
            result = agent.EditResult(
                error=agent.EditError(path=self.path, error=error, model_visible_error=error)
            )
        return ToolOutcome(error, True, self._tool_call(result))

    def _on_read(self, read: agent.ReadResult) -> ToolOutcome | SendExec:
        kind = read.WhichOneof("result")
        if kind == "success":
            success = read.success
            output = success.WhichOneof("output")
            if output == "data":
                return self._fail(f"cannot edit {self.path}: it is a binary file")
            if output != "content":
                return self._fail(f"cannot edit {self.path}: the editor returned no file content")
            if success.truncated:
                return self._fail(
                    f"cannot edit {self.path}: the file is too large to be read whole"
                )
            self._before = success.content
        elif kind == "file_not_found" and self.tool == "Write":
            self._created = True
        elif kind == "file_not_found":
            text = f"file not found: {self.path} (use Write to create a file)"
            return self._fail(
                text, agent.EditResult(file_not_found=agent.EditFileNotFound(path=self.path))
            )
        elif kind == "permission_denied":
            denied = agent.EditReadPermissionDenied(path=self.path)
            return self._fail(
                f"permission denied: {self.path}", agent.EditResult(read_permission_denied=denied)
            )
        elif kind == "rejected":
            text = _read_error_text(self.path, read)
            rejected = agent.EditRejected(path=self.path, reason=read.rejected.reason)
            return self._fail(text, agent.EditResult(rejected=rejected))
        else:
            return self._fail(_read_error_text(self.path, read))
        self._before_lf = lf(self._before)
        if self.tool == "Write":
            self._after_lf = lf(self.contents)
        else:
            patched = apply_str_replace(
                self._before_lf, self.old_string, self.new_string, self.replace_all, self.path
            )
            if isinstance(patched, str):
                return self._fail(patched)
            self._after_lf, self._replaced = patched
        crlf = "\r\n" in self._before and "\n" not in self._before.replace("\r\n", "")
        self._file_text = self._after_lf.replace("\n", "\r\n") if crlf else self._after_lf
        self._writing = True
        write = agent.WriteArgs(
            path=self.path,
            file_text=self._file_text,
            tool_call_id=self.call_id,
            return_file_content_after_write=False,
        )
        return SendExec(_new_exec(self.call_id, write_args=write))

    def _on_write(self, write: agent.WriteResult) -> ToolOutcome:
        match write.WhichOneof("result"):
            case "success":
                pass
            case "permission_denied":
                denied = write.permission_denied
                text = denied.error or f"permission denied: {self.path}"
                ui = agent.EditWritePermissionDenied(
                    path=self.path, error=text, is_readonly=denied.is_readonly
                )
                return self._fail(text, agent.EditResult(write_permission_denied=ui))
            case "no_space":
                return self._fail(f"no space left on the device to write {self.path}")
            case "error":
                return self._fail(write.error.error or f"could not write {self.path}")
            case "rejected":
                reason = write.rejected.reason
                text = f"the edit of {self.path} was rejected" + (f": {reason}" if reason else "")
                rejected = agent.EditRejected(path=self.path, reason=reason)
                return self._fail(text, agent.EditResult(rejected=rejected))
            case _:
                return self._fail(f"the editor returned no write result for {self.path}")
        added, removed = diff_line_counts(self._before_lf, self._after_lf)
        success = agent.EditSuccess(
            path=self.path,
            lines_added=added,
            lines_removed=removed,
            diff_string=unified_diff(self.path, self._before_lf, self._after_lf),
            before_full_file_content=self._before,
            after_full_file_content=self._file_text,
        )
        lines = _plural(line_count(self._after_lf), "line")
        if self.tool == "StrReplace":
            replaced = _plural(self._replaced, "occurrence")
            text = f"edited {self.path}: replaced {replaced}; the file now has {lines}"
        elif self._created:
            text = f"created {self.path} ({lines})"
        else:
            text = f"wrote {self.path} ({lines})"
        return ToolOutcome(text, False, self._tool_call(agent.EditResult(success=success)))


def apply_str_replace(
    before: str, old_string: str, new_string: str, replace_all: bool, path: str
) -> tuple[str, int] | str:
    """``(after, replacements)`` on LF text, or the error the model reads.

    The match must be unique unless ``replace_all``; occurrences are counted without overlap.
    """
    old, new = lf(old_string), lf(new_string)
    if not old:
        return "old_string must not be empty"
    count = before.count(old)
    if count == 0:
        return (
            f"old_string was not found in {path}; Read the file again and copy the text "
            "exactly, including whitespace and indentation"
        )
    if count > 1 and not replace_all:
        return (
            f"old_string is not unique in {path}: found {count} occurrences; include more "
            "surrounding lines to make it unique, or set replace_all"
        )
    return before.replace(old, new), count


def diff_line_counts(before: str, after: str) -> tuple[int, int]:
    """Lines added and removed going from ``before`` to ``after``."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    added = removed = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


def unified_diff(path: str, before: str, after: str) -> str:
    def lines(text: str) -> list[str]:
        return [line if line.endswith("\n") else line + "\n" for line in text.splitlines(True)]

    return "".join(difflib.unified_diff(lines(before), lines(after), f"a/{path}", f"b/{path}"))


# ---- Delete ----


class DeleteExecution(ToolExecution):
    def __init__(self, call_id: str, args: _Args) -> None:
        super().__init__("Delete", call_id)
        self.path = args.required_string("path")

    def _args(self) -> agent.DeleteArgs:
        return agent.DeleteArgs(path=self.path, tool_call_id=self.call_id)

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(delete_tool_call=agent.DeleteToolCall(args=self._args()))

    def begin(self) -> SendExec:
        return SendExec(_new_exec(self.call_id, delete_args=self._args()))

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant != "delete_result":
            return WrongResult(variant)
        result = message.delete_result
        path = self.path
        match result.WhichOneof("result"):
            case "success":
                text, is_error = f"deleted {path}", False
            case "file_not_found":
                text, is_error = f"file not found: {path}", True
            case "not_file":
                kind = result.not_file.actual_type
                text = f"not a file: {path}" + (f" (it is a {kind})" if kind else "")
                is_error = True
            case "permission_denied":
                text = result.permission_denied.client_visible_error
                text, is_error = text or f"permission denied: {path}", True
            case "file_busy":
                text, is_error = f"file busy: {path}", True
            case "rejected":
                reason = result.rejected.reason
                text = f"deleting {path} was rejected" + (f": {reason}" if reason else "")
                is_error = True
            case "error":
                text, is_error = result.error.error or f"could not delete {path}", True
            case _:
                text, is_error = f"the editor returned no delete result for {path}", True
        tool_call = agent.ToolCall(
            delete_tool_call=agent.DeleteToolCall(args=self._args(), result=result)
        )
        return ToolOutcome(text, is_error, tool_call)


# ---- Grep and Glob ----


def _union_results(success: agent.GrepSuccess) -> Iterator[tuple[str, agent.GrepUnionResult]]:
    """Workspace results by root (sorted, so the text is stable), then the active editor's."""
    for root in sorted(success.workspace_results):
        yield root, success.workspace_results[root]
    if success.HasField("active_editor_result"):
        yield "", success.active_editor_result


def _truncation_note(union: agent.GrepUnionResult) -> str | None:
    kind = union.WhichOneof("result")
    if kind is None:
        return None
    inner = getattr(union, kind)
    if inner.client_truncated or inner.ripgrep_truncated:
        return (
            "[results truncated: narrow the search with path, glob or type, "
            "or page with head_limit and offset]"
        )
    return None


def render_grep(success: agent.GrepSuccess, pattern: str) -> str:
    """The matches as the model reads them, ripgrep style, one block per file."""
    blocks: list[str] = []
    notes: list[str] = []
    seen_files: set[str] = set()
    for _root, union in _union_results(success):
        kind = union.WhichOneof("result")
        if kind == "content":
            for file_match in union.content.matches:
                if file_match.file in seen_files:
                    continue
                seen_files.add(file_match.file)
                lines = [file_match.file]
                for match in file_match.matches:
                    sep = "-" if match.is_context_line else ":"
                    cut = " [line truncated]" if match.content_truncated else ""
                    lines.append(f"{match.line_number}{sep}{match.content}{cut}")
                blocks.append("\n".join(lines))
        elif kind == "files":
            files = [f for f in union.files.files if f not in seen_files]
            seen_files.update(files)
            if files:
                blocks.append("\n".join(files))
        elif kind == "count":
            counts = [c for c in union.count.counts if c.file not in seen_files]
            seen_files.update(c.file for c in counts)
            if counts:
                blocks.append("\n".join(f"{c.file}:{c.count}" for c in counts))
        note = _truncation_note(union)
        if note is not None and note not in notes:
            notes.append(note)
    if not blocks:
        where = f" in {success.path}" if success.path else ""
        text = f"no matches for pattern {pattern!r}{where}"
    else:
        separator = "\n\n" if (success.output_mode or "content") == "content" else "\n"
        text = separator.join(blocks)
    for note in notes:
        text = _join_note(text, note)
    return text


class GrepExecution(ToolExecution):
    def __init__(self, call_id: str, args: _Args) -> None:
        super().__init__("Grep", call_id)
        mode = args.string("output_mode")
        if mode is not None and mode not in GREP_OUTPUT_MODES:
            raise ToolArgumentError(f"'output_mode' must be one of {', '.join(GREP_OUTPUT_MODES)}")

        def count(key: str) -> int | None:
            return args.integer(key, minimum=0, maximum=INT32_MAX)

        self.args = agent.GrepArgs(
            pattern=args.required_string("pattern"),
            path=args.string("path"),
            glob=args.string("glob"),
            output_mode=mode,
            context_before=count("-B"),
            context_after=count("-A"),
            context=count("-C"),
            case_insensitive=args.boolean("-i"),
            type=args.string("type"),
            head_limit=count("head_limit"),
            multiline=args.boolean("multiline"),
            tool_call_id=call_id,
            offset=count("offset"),
        )

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(grep_tool_call=agent.GrepToolCall(args=self.args))

    def begin(self) -> SendExec:
        return SendExec(_new_exec(self.call_id, grep_args=self.args))

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant != "grep_result":
            return WrongResult(variant)
        result = message.grep_result
        if result.WhichOneof("result") == "success":
            text, is_error = render_grep(result.success, self.args.pattern), False
        else:
            text, is_error = result.error.error or "grep failed", True
        tool_call = agent.ToolCall(grep_tool_call=agent.GrepToolCall(args=self.args, result=result))
        return ToolOutcome(text, is_error, tool_call)


class GlobExecution(ToolExecution):
    """Glob runs as a Grep with an empty pattern that lists matching files."""

    def __init__(self, call_id: str, args: _Args) -> None:
        super().__init__("Glob", call_id)
        self.glob_pattern = args.required_string("glob_pattern")
        self.target_directory = args.string("target_directory")

    def _ui_args(self) -> agent.GlobToolArgs:
        return agent.GlobToolArgs(
            target_directory=self.target_directory, glob_pattern=self.glob_pattern
        )

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(glob_tool_call=agent.GlobToolCall(args=self._ui_args()))

    def begin(self) -> SendExec:
        grep = agent.GrepArgs(
            pattern="",
            path=self.target_directory,
            glob=self.glob_pattern,
            output_mode="files_with_matches",
            tool_call_id=self.call_id,
        )
        return SendExec(_new_exec(self.call_id, grep_args=grep))

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant != "grep_result":
            return WrongResult(variant)
        result = message.grep_result
        if result.WhichOneof("result") != "success":
            text = result.error.error or "glob failed"
            ui = agent.GlobToolResult(error=agent.GlobToolError(error=text))
            return ToolOutcome(text, True, self._tool_call(ui))
        success = result.success
        ui_success = agent.GlobToolSuccess(
            pattern=self.glob_pattern, path=self.target_directory or success.path
        )
        files: list[str] = []
        seen: set[str] = set()
        notes: list[str] = []
        for _root, union in _union_results(success):
            kind = union.WhichOneof("result")
            if kind == "files":
                found = list(union.files.files)
                ui_success.total_files += union.files.total_files or len(found)
                ui_success.client_truncated |= union.files.client_truncated
                ui_success.ripgrep_truncated |= union.files.ripgrep_truncated
            elif kind == "content":
                found = [m.file for m in union.content.matches]
            elif kind == "count":
                found = [c.file for c in union.count.counts]
            else:
                found = []
            for file in found:
                if file not in seen:
                    seen.add(file)
                    files.append(file)
            note = _truncation_note(union)
            if note is not None and note not in notes:
                notes.append(note)
        ui_success.files.extend(files)
        ui_success.total_files = max(ui_success.total_files, len(files))
        if files:
            text = "\n".join(files)
        else:
            where = f" under {self.target_directory}" if self.target_directory else ""
            text = f"no files match {self.glob_pattern}{where}"
        for note in notes:
            text = _join_note(text, note)
        return ToolOutcome(text, False, self._tool_call(agent.GlobToolResult(success=ui_success)))

    def _tool_call(self, result: agent.GlobToolResult) -> agent.ToolCall:
        return agent.ToolCall(
            glob_tool_call=agent.GlobToolCall(args=self._ui_args(), result=result)
        )


# ---- Shell ----


def shell_output_text(stdout: str, stderr: str) -> str:
    """stdout as is, then stderr inside ``<stderr>`` tags; a placeholder when both are empty."""
    if not stderr:
        return stdout or "(no output)"
    tagged = "<stderr>\n" + stderr + ("" if stderr.endswith("\n") else "\n") + "</stderr>"
    return _join_note(stdout, tagged)


def _output_location_note(location: agent.OutputLocation) -> str:
    return (
        f"[the full output ({_plural(location.size_bytes, 'byte')}, "
        f"{_plural(location.line_count, 'line')}) is in {location.file_path}]"
    )


_ABORT_REASONS = {
    agent.SHELL_ABORT_REASON_USER_ABORT: "the user stopped the command",
    agent.SHELL_ABORT_REASON_TIMEOUT: "the command was stopped at its time limit",
}


class ShellExecution(ToolExecution):
    """A streamed command: output chunks become deltas; exit or backgrounding ends the call."""

    def __init__(self, call_id: str, args: _Args, context: ExecContext) -> None:
        super().__init__("Shell", call_id)
        self.command = args.required_string("command")
        self.working_directory = args.string("working_directory") or ""
        self.description = args.string("description")
        timeout = args.integer("block_until_ms", minimum=0, maximum=INT32_MAX)
        self.timeout = SHELL_DEFAULT_TIMEOUT_MS if timeout is None else timeout
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
            conversation_id=self.context.conversation_id or None,
            admin_command_denylist=self.context.admin_command_denylist,
        )
        return SendExec(_new_exec(self.call_id, shell_stream_args=shell))

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
        result = agent.ShellResult(success=success, is_background=True)
        if event.HasField("pid"):
            success.pid = event.pid
            result.pid = event.pid
        if event.HasField("ms_to_wait"):
            success.ms_to_wait = event.ms_to_wait
        if event.HasField("reason"):
            success.background_reason = event.reason
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
                    text = _join_note(text, _output_location_note(success.output_location))
                return text, False
            case "failure":
                failure = result.failure
                if failure.aborted:
                    head = _ABORT_REASONS.get(failure.abort_reason, "the command was aborted")
                else:
                    head = f"the command failed with exit code {failure.exit_code}"
                text = head + "\n" + shell_output_text(failure.stdout, failure.stderr)
                if failure.HasField("output_location"):
                    text = _join_note(text, _output_location_note(failure.output_location))
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


# ---- ReadLints ----

_SEVERITY = {
    agent.DIAGNOSTIC_SEVERITY_ERROR: "error",
    agent.DIAGNOSTIC_SEVERITY_WARNING: "warning",
    agent.DIAGNOSTIC_SEVERITY_INFORMATION: "info",
    agent.DIAGNOSTIC_SEVERITY_HINT: "hint",
}


def format_diagnostic(diagnostic: agent.Diagnostic) -> str:
    """``line:column severity: message [source code]`` as the editor reported it."""
    start = diagnostic.range.start
    severity = _SEVERITY.get(diagnostic.severity, "diagnostic")
    origin = " ".join(part for part in (diagnostic.source, diagnostic.code) if part)
    text = f"{start.line}:{start.column} {severity}: {diagnostic.message}"
    if origin:
        text += f" [{origin}]"
    if diagnostic.is_stale:
        text += " (may be stale)"
    return text


class ReadLintsExecution(ToolExecution):
    """One diagnostics request per path, in order (the request takes a single path)."""

    def __init__(self, call_id: str, args: _Args) -> None:
        super().__init__("ReadLints", call_id)
        paths = args.string_list("paths") or []
        self.paths = paths
        # Each distinct path once; no path means the whole workspace ("").
        self._targets = list(dict.fromkeys(paths)) or [""]
        self._results: list[agent.DiagnosticsResult] = []

    def _ui_args(self) -> agent.ReadLintsToolArgs:
        return agent.ReadLintsToolArgs(paths=self.paths)

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(read_lints_tool_call=agent.ReadLintsToolCall(args=self._ui_args()))

    def _request(self, path: str) -> SendExec:
        diagnostics = agent.DiagnosticsArgs(path=path, tool_call_id=self.call_id)
        return SendExec(_new_exec(self.call_id, diagnostics_args=diagnostics))

    def begin(self) -> SendExec:
        return self._request(self._targets[0])

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant != "diagnostics_result":
            return WrongResult(variant)
        self._results.append(message.diagnostics_result)
        if len(self._results) < len(self._targets):
            return self._request(self._targets[len(self._results)])
        return self._finish()

    def _finish(self) -> ToolOutcome:
        sections: list[str] = []
        errors: list[str] = []
        files: list[agent.FileDiagnostics] = []
        total = 0
        for target, result in zip(self._targets, self._results, strict=True):
            label = target or "the workspace"
            kind = result.WhichOneof("result")
            if kind != "success":
                error = _diagnostics_error_text(label, result)
                errors.append(error)
                sections.append(error)
                continue
            success = result.success
            path = success.path or target
            items = [
                agent.DiagnosticItem(
                    severity=d.severity,
                    range=agent.DiagnosticRange(start=d.range.start, end=d.range.end),
                    message=d.message,
                    source=d.source,
                    code=d.code,
                    is_stale=d.is_stale,
                )
                for d in success.diagnostics
            ]
            files.append(
                agent.FileDiagnostics(path=path, diagnostics=items, diagnostics_count=len(items))
            )
            total += len(items)
            if items:
                heading = f"{path or label}: {_plural(len(items), 'diagnostic')}"
                lines = [heading, *("  " + format_diagnostic(d) for d in success.diagnostics)]
                sections.append("\n".join(lines))
            else:
                sections.append(f"{path or label}: no diagnostics")
        if len(errors) == len(self._targets):
            text = "\n".join(errors)
            ui = agent.ReadLintsToolResult(error=agent.ReadLintsToolError(error_message=text))
            return ToolOutcome(text, True, self._tool_call(ui))
        success_ui = agent.ReadLintsToolSuccess(
            file_diagnostics=files, total_files=len(files), total_diagnostics=total
        )
        text = "\n\n".join(sections)
        return ToolOutcome(
            text, False, self._tool_call(agent.ReadLintsToolResult(success=success_ui))
        )

    def _tool_call(self, result: agent.ReadLintsToolResult) -> agent.ToolCall:
        lints = agent.ReadLintsToolCall(args=self._ui_args(), result=result)
        return agent.ToolCall(read_lints_tool_call=lints)


def _diagnostics_error_text(label: str, result: agent.DiagnosticsResult) -> str:
    match result.WhichOneof("result"):
        case "error":
            return result.error.error or f"could not get diagnostics for {label}"
        case "rejected":
            reason = result.rejected.reason
            return f"diagnostics for {label} were rejected" + (f": {reason}" if reason else "")
        case "file_not_found":
            return f"file not found: {label}"
        case "permission_denied":
            return f"permission denied: {label}"
        case _:
            return f"the editor returned no diagnostics result for {label}"


# ---- TodoWrite (local) ----


class TodoWriteExecution(ToolExecution):
    """Finishes on the server: the list is the call's own arguments, echoed back."""

    def __init__(self, call_id: str, args: _Args) -> None:
        super().__init__("TodoWrite", call_id)
        raw = args.raw.get("todos")
        if not isinstance(raw, list):
            raise ToolArgumentError("'todos' is required (an array of items)")
        merge = args.boolean("merge", required=True)
        self.merge = bool(merge)
        self.todos: list[dict[str, str]] = []
        for position, item in enumerate(raw):
            if not isinstance(item, dict):
                raise ToolArgumentError(f"todos[{position}] must be an object")
            fields: dict[str, str] = {}
            for key in ("id", "content", "status"):
                value = item.get(key)
                if not isinstance(value, str):
                    raise ToolArgumentError(f"todos[{position}].{key} is required (a string)")
                fields[key] = value
            if fields["status"] not in TODO_STATUSES:
                allowed = ", ".join(TODO_STATUSES)
                raise ToolArgumentError(f"todos[{position}].status must be one of {allowed}")
            self.todos.append(fields)

    def _items(self) -> list[agent.TodoItem]:
        return [
            agent.TodoItem(id=t["id"], content=t["content"], status=TODO_STATUSES[t["status"]])
            for t in self.todos
        ]

    def _ui_args(self) -> agent.UpdateTodosArgs:
        return agent.UpdateTodosArgs(todos=self._items(), merge=self.merge)

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(
            update_todos_tool_call=agent.UpdateTodosToolCall(args=self._ui_args())
        )

    def begin(self) -> ToolOutcome:
        success = agent.UpdateTodosSuccess(
            todos=self._items(), total_count=len(self.todos), was_merge=self.merge
        )
        update = agent.UpdateTodosToolCall(
            args=self._ui_args(), result=agent.UpdateTodosResult(success=success)
        )
        # Key order fixed by construction, so the same list is the same text (prefix caches).
        content = msgspec.json.encode({"todos": self.todos, "merge": self.merge}).decode()
        return ToolOutcome(content, False, agent.ToolCall(update_todos_tool_call=update))

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        return WrongResult(variant)


# ---- entry points ----


def prepare_tool_call(
    name: str, call_id: str, arguments: str, context: ExecContext | None = None
) -> ToolExecution:
    """The execution of one model tool call; ``UnsupportedTool`` for a name we do not run.

    Arguments that do not fit give an ``InvalidCall`` (an error result), never an exception.
    """
    tool = resolve_tool(name)
    context = context or ExecContext()
    try:
        args = _Args(arguments)
        match tool:
            case "Read":
                return ReadExecution(call_id, args)
            case "Write" | "StrReplace":
                return EditExecution(tool, call_id, args)
            case "Delete":
                return DeleteExecution(call_id, args)
            case "Grep":
                return GrepExecution(call_id, args)
            case "Glob":
                return GlobExecution(call_id, args)
            case "Shell":
                return ShellExecution(call_id, args, context)
            case "ReadLints":
                return ReadLintsExecution(call_id, args)
            case "TodoWrite":
                return TodoWriteExecution(call_id, args)
            case _:  # pragma: no cover - TOOLS and this match list the same names
                raise UnsupportedTool(name)
    except ToolArgumentError as exc:
        return InvalidCall(tool, call_id, str(exc))


def stamp_tool_call(
    tool_call: agent.ToolCall,
    call_id: str,
    started_at_ms: int,
    completed_at_ms: int | None = None,
) -> agent.ToolCall:
    """A copy with the call id and the real start (and end) times the UI needs."""
    stamped = agent.ToolCall()
    stamped.CopyFrom(tool_call)
    stamped.tool_call_id = call_id
    stamped.started_at_ms = started_at_ms
    if completed_at_ms is not None:
        stamped.completed_at_ms = completed_at_ms
    return stamped


# ---- frames ----


def _update_frame(update: agent.InteractionUpdate) -> bytes:
    return data_frame(agent.AgentServerMessage(interaction_update=update))


def exec_request_frame(wire_id: int, request: agent.ExecServerMessage) -> bytes:
    """``exec_server_message`` with ``request`` under ``wire_id``."""
    message = agent.ExecServerMessage()
    message.CopyFrom(request)
    message.id = wire_id
    return data_frame(agent.AgentServerMessage(exec_server_message=message))


def exec_abort_frame(wire_id: int) -> bytes:
    """``exec_server_control_message.abort{id}``: the editor stops that execution."""
    control = agent.ExecServerControlMessage(abort=agent.ExecServerAbort(id=wire_id))
    return data_frame(agent.AgentServerMessage(exec_server_control_message=control))


def tool_call_started_frame(call_id: str, model_call_id: str, tool_call: agent.ToolCall) -> bytes:
    started = agent.ToolCallStartedUpdate(
        call_id=call_id, tool_call=tool_call, model_call_id=model_call_id
    )
    return _update_frame(agent.InteractionUpdate(tool_call_started=started))


def tool_call_completed_frame(
    call_id: str, model_call_id: str, tool_call: bytes | agent.ToolCall
) -> bytes:
    """The card's final state; sent once the call's result is committed, not when it arrives.

    ``tool_call`` is the completion's serialized ToolCall (args, result, both timestamps).
    """
    if isinstance(tool_call, bytes):
        tool_call = agent.ToolCall.FromString(tool_call)
    completed = agent.ToolCallCompletedUpdate(
        call_id=call_id, tool_call=tool_call, model_call_id=model_call_id
    )
    return _update_frame(agent.InteractionUpdate(tool_call_completed=completed))


def shell_delta_frame(
    call_id: str, model_call_id: str, stream: Literal["stdout", "stderr"], text: str
) -> bytes:
    """A running command's output chunk; the model call id ties it to the card."""
    if stream == "stdout":
        shell = agent.ShellToolCallDelta(stdout=agent.ShellToolCallStdoutDelta(content=text))
    else:
        shell = agent.ShellToolCallDelta(stderr=agent.ShellToolCallStderrDelta(content=text))
    delta = agent.ToolCallDeltaUpdate(
        call_id=call_id,
        tool_call_delta=agent.ToolCallDelta(shell_tool_call_delta=shell),
        model_call_id=model_call_id,
    )
    return _update_frame(agent.InteractionUpdate(tool_call_delta=delta))


def partial_tool_call_frame(
    call_id: str, tool_name: str, model_call_id: str, args_text_delta: str = ""
) -> bytes:
    """The placeholder card while the model streams a call; ``UnsupportedTool`` if unknown."""
    tool_call = empty_tool_call(resolve_tool(tool_name))
    tool_call.tool_call_id = call_id
    partial = agent.PartialToolCallUpdate(
        call_id=call_id,
        tool_call=tool_call,
        args_text_delta=args_text_delta,
        model_call_id=model_call_id,
    )
    return _update_frame(agent.InteractionUpdate(partial_tool_call=partial))


# ---- edit content streamed while the model writes the arguments ----
#
# Added after the rest of the module; this import belongs with the others at the top.

# The argument each edit tool's card shows as it streams (the field ``EditArgs.stream_content``
# is built from at dispatch, see ``EditExecution._ui_args``).
STREAMED_CONTENT_FIELDS = {"Write": "contents", "StrReplace": "new_string"}


def streamed_args_decoder(tool_name: str) -> StreamedArgsDecoder | None:
    """The decoder for a call's argument stream when its card shows the content as it streams.

    Write streams ``contents`` and StrReplace ``new_string``, LF-normalized like the content
    the call is dispatched with, and both report ``path`` once its string is complete. Any other
    tool, an unknown name included, gets None: its argument deltas go out as raw
    ``args_text_delta`` partials (``partial_tool_call_frame``).
    """
    tool = _BY_NORMALIZED.get(normalize_tool_name(tool_name))
    field = STREAMED_CONTENT_FIELDS.get(tool or "")
    if field is None:
        return None
    return StreamedArgsDecoder(field, report_fields=("path",), normalize_newlines=True)


def edit_content_delta_frame(call_id: str, model_call_id: str, text: str) -> bytes:
    """``tool_call_delta`` with ``edit_tool_call_delta.stream_content_delta``: more content."""
    delta = agent.ToolCallDelta(
        edit_tool_call_delta=agent.EditToolCallDelta(stream_content_delta=text)
    )
    update = agent.ToolCallDeltaUpdate(
        call_id=call_id, tool_call_delta=delta, model_call_id=model_call_id
    )
    return _update_frame(agent.InteractionUpdate(tool_call_delta=update))


def edit_path_partial_frame(call_id: str, model_call_id: str, path: str) -> bytes:
    """The placeholder card again, now naming the file (``EditArgs.path``, no content)."""
    tool_call = agent.ToolCall(
        tool_call_id=call_id, edit_tool_call=agent.EditToolCall(args=agent.EditArgs(path=path))
    )
    partial = agent.PartialToolCallUpdate(
        call_id=call_id, tool_call=tool_call, args_text_delta="", model_call_id=model_call_id
    )
    return _update_frame(agent.InteractionUpdate(partial_tool_call=partial))


def streamed_args_frames(
    call_id: str, tool_name: str, model_call_id: str, events: list[ArgsEvent]
) -> list[bytes]:
    """The interaction updates for what a call's ``streamed_args_decoder`` yielded, in order.

    For Write and StrReplace: each ``ContentDelta`` becomes a ``tool_call_delta`` carrying
    ``edit_tool_call_delta.stream_content_delta`` (the client appends it to the card's content),
    and the completed ``path`` a ``partial_tool_call`` whose placeholder holds
    ``edit_tool_call.args.path``, with an empty ``args_text_delta``; content may come before the
    path when the model writes that field first. The end of the content sends nothing. These
    tools send no raw ``args_text_delta`` partials: the streamed content replaces them. Any
    other tool gets no frames.
    """
    tool = _BY_NORMALIZED.get(normalize_tool_name(tool_name))
    if tool not in STREAMED_CONTENT_FIELDS:
        return []
    frames: list[bytes] = []
    for event in events:
        match event:
            case ContentDelta(text=text):
                frames.append(edit_content_delta_frame(call_id, model_call_id, text))
            case FieldCompleted(name="path", value=path):
                frames.append(edit_path_partial_frame(call_id, model_call_id, path))
            case _:
                pass
    return frames
