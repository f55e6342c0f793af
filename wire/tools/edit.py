"""Write and StrReplace: one call, two execs (a hidden Read, then a Write of the whole text).

The editor only knows plain reads and writes, so the edit is applied here. It works on LF text;
a file whose lines all end in CRLF is written back with CRLF. Both tools' cards show the
streamed argument (``contents``, ``new_string``) as ``EditArgs.stream_content``. EditNotebook
(``wire.tools.edit_notebook``) is the same lifecycle with a notebook patch.
"""

from __future__ import annotations

import abc
import difflib

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs
from wire.tools.base import (
    ExecContext,
    ExecStep,
    SendExec,
    ToolChannel,
    ToolDefinition,
    ToolExecution,
    ToolOutcome,
    WrongResult,
    new_exec,
)
from wire.tools.read import read_error_text
from wire.tools.text import lf, line_count, plural


class EditExecution(ToolExecution):
    """A hidden Read, the edit applied here, then a Write of the whole new text.

    What differs per tool is in four hooks: the card's streamed content, what a missing file
    means, the patch of the LF text, and the success line the model reads. Write, StrReplace
    and EditNotebook (``wire.tools.edit_notebook``) are its subclasses.
    """

    def __init__(self, definition: ToolDefinition, call_id: str, path: str) -> None:
        super().__init__(definition, call_id)
        self.path = path
        self._writing = False
        self._created = False
        self._before = ""  # as the file was (raw)
        self._before_lf = ""
        self._after_lf = ""
        self._file_text = ""  # as written

    @abc.abstractmethod
    def _streamed(self) -> str:
        """The argument the card shows as ``stream_content`` (LF-normalized by the caller)."""

    @abc.abstractmethod
    def _missing(self) -> str | None:
        """For a file that does not exist: None creates it, a text is the model's error."""

    @abc.abstractmethod
    def _patch(self, before: str) -> str:
        """The new LF text from the old one; ``EditRefused`` for an edit that does not apply."""

    @abc.abstractmethod
    def _success_text(self) -> str:
        """What the model reads once the Write succeeded."""

    def _ui_args(self) -> agent.EditArgs:
        return agent.EditArgs(path=self.path, stream_content=lf(self._streamed()))

    def _tool_call(self, result: agent.EditResult | None = None) -> agent.ToolCall:
        return agent.ToolCall(
            edit_tool_call=agent.EditToolCall(args=self._ui_args(), result=result)
        )

    def started(self) -> agent.ToolCall:
        return self._tool_call()

    def begin(self) -> SendExec:
        read = agent.ReadArgs(path=self.path, tool_call_id=self.call_id)
        return SendExec(
            new_exec(self.call_id, accept_hook_additional_contexts=True, read_args=read)
        )

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
        elif kind == "file_not_found":
            text = self._missing()
            if text is not None:
                missing = agent.EditFileNotFound(path=self.path)
                return self._fail(text, agent.EditResult(file_not_found=missing))
            self._created = True
        elif kind == "permission_denied":
            denied = agent.EditReadPermissionDenied(path=self.path)
            return self._fail(
                f"permission denied: {self.path}", agent.EditResult(read_permission_denied=denied)
            )
        elif kind == "rejected":
            text = read_error_text(self.path, read)
            rejected = agent.EditRejected(path=self.path, reason=read.rejected.reason)
            return self._fail(text, agent.EditResult(rejected=rejected))
        else:
            return self._fail(read_error_text(self.path, read))
        self._before_lf = lf(self._before)
        try:
            self._after_lf = self._patch(self._before_lf)
        except EditRefused as refused:
            return self._fail(str(refused))
        crlf = "\r\n" in self._before and "\n" not in self._before.replace("\r\n", "")
        self._file_text = self._after_lf.replace("\n", "\r\n") if crlf else self._after_lf
        self._writing = True
        write = agent.WriteArgs(
            path=self.path,
            file_text=self._file_text,
            tool_call_id=self.call_id,
            return_file_content_after_write=False,
        )
        return SendExec(
            new_exec(self.call_id, accept_hook_additional_contexts=True, write_args=write)
        )

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
        result = agent.EditResult(success=success)
        return ToolOutcome(self._success_text(), False, self._tool_call(result))


class EditRefused(Exception):
    """The edit does not apply to the file as it is; the message is the model's error."""


class WriteExecution(EditExecution):
    """The whole new text; a missing file is created."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(WRITE, call_id, args.required_string("path"))
        self.contents = args.required_string("contents")

    def _streamed(self) -> str:
        return self.contents

    def _missing(self) -> None:
        return None

    def _patch(self, before: str) -> str:
        return lf(self.contents)

    def _success_text(self) -> str:
        lines = plural(line_count(self._after_lf), "line")
        verb = "created" if self._created else "wrote"
        return f"{verb} {self.path} ({lines})"


class StrReplaceExecution(EditExecution):
    """One exact match (or every one, with ``replace_all``) replaced in an existing file."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(STR_REPLACE, call_id, args.required_string("path"))
        self.old_string = args.required_string("old_string")
        self.new_string = args.required_string("new_string")
        self.replace_all = bool(args.boolean("replace_all"))
        self._replaced = 0

    def _streamed(self) -> str:
        return self.new_string

    def _missing(self) -> str:
        return f"file not found: {self.path} (use Write to create a file)"

    def _patch(self, before: str) -> str:
        patched = apply_str_replace(
            before, self.old_string, self.new_string, self.replace_all, self.path
        )
        if isinstance(patched, str):
            raise EditRefused(patched)
        after, self._replaced = patched
        return after

    def _success_text(self) -> str:
        lines = plural(line_count(self._after_lf), "line")
        replaced = plural(self._replaced, "occurrence")
        return f"edited {self.path}: replaced {replaced}; the file now has {lines}"


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


# The registry rows (``wire.tools.registry.REGISTRY``).
WRITE = ToolDefinition(
    name="Write",
    channel=ToolChannel.EXEC,
    tool_call_field="edit_tool_call",
    execution=WriteExecution,
    error_path="result.error",
    error_fields=("error", "model_visible_error"),
    streamed_content_field="contents",
)

STR_REPLACE = ToolDefinition(
    name="StrReplace",
    channel=ToolChannel.EXEC,
    tool_call_field="edit_tool_call",
    execution=StrReplaceExecution,
    error_path="result.error",
    error_fields=("error", "model_visible_error"),
    streamed_content_field="new_string",
)
