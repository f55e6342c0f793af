"""Grep and Glob: both one ``grep_args`` request (Glob's lists the files a glob matches)."""

from __future__ import annotations

from collections.abc import Iterator

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    INT32_MAX,
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
from wire.tools.text import join_note

GREP_OUTPUT_MODES = ("content", "files_with_matches", "count")


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
        text = join_note(text, note)
    return text


class GrepExecution(ToolExecution):
    """The model's Grep arguments map one to one onto ``GrepArgs``, which the card shows too."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(GREP, call_id)
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
        return SendExec(
            new_exec(self.call_id, accept_hook_additional_contexts=True, grep_args=self.args)
        )

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

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(GLOB, call_id)
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
        return SendExec(
            new_exec(self.call_id, accept_hook_additional_contexts=True, grep_args=grep)
        )

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
            text = join_note(text, note)
        return ToolOutcome(text, False, self._tool_call(agent.GlobToolResult(success=ui_success)))

    def _tool_call(self, result: agent.GlobToolResult) -> agent.ToolCall:
        return agent.ToolCall(
            glob_tool_call=agent.GlobToolCall(args=self._ui_args(), result=result)
        )


# The registry rows (``wire.tools.registry.REGISTRY``).
GREP = ToolDefinition(
    name="Grep",
    channel=ToolChannel.EXEC,
    tool_call_field="grep_tool_call",
    execution=GrepExecution,
    error_path="result.error",
    error_fields=("error",),
)

GLOB = ToolDefinition(
    name="Glob",
    channel=ToolChannel.EXEC,
    tool_call_field="glob_tool_call",
    execution=GlobExecution,
    error_path="result.error",
    error_fields=("error",),
)
