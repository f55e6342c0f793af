"""Which execs the editor answers on its own, and what the model reads when one is not
answered in time.

An editor answers a Read, a Grep or Glob, a diagnostics request, an MCP resource read or an
MCP state listing without asking anyone; one that has not answered within the run's limit
(``EdgeLimits.exec_answer_timeout_s``) is hung or cannot serve that kind, and waiting longer
only holds the turn. Such an exec is aborted on the wire and its call ends with an error the
model reads, so the turn goes on. Every other exec can wait on the user: a Write, StrReplace
or Delete for approval of the edit, a Shell for approval of the command (and then for as long
as the command runs), an MCP call for approval, a subagent for as long as its own run, a web
fetch for approval of the URL. Those wait as long as the client keeps the stream. (A Run's
``request_context_args`` and the KV blob requests have deadlines of their own:
``EdgeLimits.request_context_wait_s``, ``actors.blob_sync.KvLimits``.)
"""

from __future__ import annotations

from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import ToolExecution, ToolOutcome

UNATTENDED_EXECS = frozenset(
    {
        "read_args",
        "grep_args",  # Grep, and Glob (a grep without a pattern)
        "diagnostics_args",  # ReadLints
        "read_mcp_resource_exec_args",  # FetchMcpResource
        "mcp_state_exec_args",  # GetMcpTools
    }
)


def answer_deadline_s(message: agent.ExecServerMessage, limit_s: float | None) -> float | None:
    """How long the editor has to answer ``message``; None: as long as it takes."""
    if limit_s is None or message.WhichOneof("message") not in UNATTENDED_EXECS:
        return None
    return limit_s


def unanswered_outcome(execution: ToolExecution, waited_s: float) -> ToolOutcome:
    """The call's end when the editor did not answer its exec within ``waited_s``."""
    text = (
        f"Error: the editor did not answer {execution.tool} within {waited_s:g} s, so the "
        "call was stopped. Try it once more, or go on without it."
    )
    card = execution.definition.error_card(execution.started(), text)
    return ToolOutcome(text, True, card)
