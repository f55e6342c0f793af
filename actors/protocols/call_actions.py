"""What the user does to a running call from the editor, while its turn runs: a
``ConversationAction`` on the run's stream that moves a foreground Task or Shell to the
background (``background_subagent_action``, ``background_shell_action``) or cancels one
subagent (``cancel_subagent_action``).

The editor owns the subagent and the shell; the server owns the call. Moving a call to the
background is asked of the editor with a ``force_background_*_args`` exec under a new wire id;
the editor then ends the call's own exec as a backgrounded one (a subagent's ``SubagentSuccess``
with a background reason, a shell's ``backgrounded`` event), or gives the shell's result in its
answer. Cancelling a subagent aborts its Task exec (the editor cancels the child run) and the
model reads that the user cancelled it; the turn goes on. This module holds the messages and the
pure pieces; ``actors.tool_runtime`` carries them out. The links from a subagent's id (its child
run's conversation id) to the parent's Task call are kept by ``actors.run.subagent_links``.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import new_exec
from wire.tools.shell import SHELL
from wire.tools.task import TASK


class CallAction(StrEnum):
    """The three actions, by their ``ConversationAction`` field."""

    BACKGROUND_SUBAGENT = "background_subagent_action"
    BACKGROUND_SHELL = "background_shell_action"
    CANCEL_SUBAGENT = "cancel_subagent_action"


CALL_ACTIONS = frozenset(CallAction)

# The answer each force request takes, by the request's field.
FORCE_RESULTS = {
    "force_background_subagent_args": "force_background_subagent_result",
    "force_background_shell_args": "force_background_shell_result",
}


class UserActedOnCall(msgspec.Struct, frozen=True):
    """The user acted on a running call: ``ident`` is what the action names (a tool call id,
    or a subagent id), ``call_ids`` the calls it may mean (``ident`` itself and, for a
    subagent, the Task call its child run was started for)."""

    action: CallAction
    ident: str
    call_ids: tuple[str, ...]

    @property
    def tool(self) -> str:
        """The tool of the calls it acts on."""
        return SHELL.name if self.action is CallAction.BACKGROUND_SHELL else TASK.name


def force_background_request(action: CallAction, call_id: str) -> agent.ExecServerMessage:
    """The exec that asks the editor to move ``call_id`` to the background."""
    if action is CallAction.BACKGROUND_SHELL:
        shell = agent.ForceBackgroundShellArgs(tool_call_id=call_id)
        return new_exec(
            call_id, accept_hook_additional_contexts=False, force_background_shell_args=shell
        )
    subagent = agent.ForceBackgroundSubagentArgs(tool_call_id=call_id)
    return new_exec(
        call_id, accept_hook_additional_contexts=False, force_background_subagent_args=subagent
    )


def expected_answer(request: agent.ExecServerMessage) -> str:
    """The field of the editor's answer a force request takes (``FORCE_RESULTS``)."""
    field = request.WhichOneof("message")
    assert field is not None
    return FORCE_RESULTS[field]


def shell_result_of(
    answer: agent.ExecClientMessage, shell_exec_id: int
) -> agent.ExecClientMessage | None:
    """An accepted ``force_background_shell_result`` that carries the shell's result, as the
    answer to the shell's own exec ``shell_exec_id``; None for any other answer."""
    if answer.WhichOneof("message") != "force_background_shell_result":
        return None
    forced = answer.force_background_shell_result
    accepted = forced.status == agent.FORCE_BACKGROUND_SHELL_STATUS_ACCEPTED
    if not accepted or not forced.HasField("shell_result"):
        return None
    return agent.ExecClientMessage(id=shell_exec_id, shell_result=forced.shell_result)
