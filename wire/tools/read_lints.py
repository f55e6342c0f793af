"""ReadLints: one ``diagnostics_args`` request per path; the model reads each file's list."""

from __future__ import annotations

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
from wire.tools.text import plural

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

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(READ_LINTS, call_id)
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
        return SendExec(
            new_exec(
                self.call_id, accept_hook_additional_contexts=True, diagnostics_args=diagnostics
            )
        )

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
                heading = f"{path or label}: {plural(len(items), 'diagnostic')}"
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


# The registry row (``wire.tools.registry.REGISTRY``).
READ_LINTS = ToolDefinition(
    name="ReadLints",
    channel=ToolChannel.EXEC,
    tool_call_field="read_lints_tool_call",
    execution=ReadLintsExecution,
    error_path="result.error",
    error_fields=("error_message",),
)
