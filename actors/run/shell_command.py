"""The run of a command the user ran from the chat (``shell_command_action``), driven by its
SessionActor in place of an ``AgentRun``: the decisions are ``actors.turn.shell_command``'s,
this driver does their IO.

It finds the base as a turn does (the checkpoint index, else the state's roots fetched and
imported; no state: the conversation's head) and claims the conversation there
(``actors.run.base_claim``); then the
ToolRuntimeActor runs the command as one Shell exec under the action's ``exec_id`` (wire ids
from 1, as in any run). No model is called. Once the exec ends, the command's context message
is appended once, and one settled checkpoint, whose last turn is the shell turn, is published
(indexed before the run hears it is out); the run ends with EndStream ``{}`` and no
``turn_ended`` (no model turn ended). A cancel, a superseding run or a failure ends it as any
run ends (``actors.run.end``): the pending exec is aborted before the EndStream.
"""

from __future__ import annotations

import datetime

from actors.conversation.model import CanonicalMessage, CanonicalToolCall
from actors.protocols.checkpoint import CheckpointPublished, PublishSettled
from actors.protocols.provider import ProviderReply
from actors.protocols.tool_runtime import ToolCompleted
from actors.run.base_claim import ClaimingRun
from actors.run.core import RunSetup
from actors.run.start import plan_mode
from actors.turn import timeline
from actors.turn.plan import TurnPlan, checkpoint_setup, exec_context, stored
from actors.turn.shell_command import ShellCommandPhase
from prompt.assets import ModeAssets
from store.base.clock import now_ms
from wire.errors import Code, ConnectError
from wire.tools.shell import SHELL


class ShellCommandRun(ClaimingRun):
    """The run of one ``shell_command_action``; its ``RunSetup.end`` is called exactly once."""

    def __init__(self, setup: RunSetup) -> None:
        super().__init__(setup)
        self._mode: ModeAssets | None = None  # the plan's mode, read before the base is found
        self._phase: ShellCommandPhase | None = None
        self._head = 0
        self._messages: tuple[CanonicalMessage, ...] = ()

    # ---- the start ----

    def _planned(self, plan: TurnPlan) -> None:
        if plan.shell_command is None:
            raise ConnectError(Code.INTERNAL, "not a shell command action")
        self._mode = plan_mode(self._deps, plan)

    def _open(self) -> None:
        """Claim the conversation on the base, then have the editor run the command."""
        mode = self._mode
        assert mode is not None
        claimed = self._base.claim()
        plan = claimed.plan
        assert plan.shell_command is not None
        self._head, self._messages = claimed.head, claimed.messages
        instructions = mode.system_prompt(self._route.model_id)
        self._children.start_checkpoint(
            checkpoint_setup(
                self.request_id, plan, mode, instructions, self._route, len(self._messages), None
            )
        )
        phase = ShellCommandPhase(self.request_id, plan.shell_command)
        self._phase = phase
        command = phase.start()
        call = CanonicalToolCall(0, command.exec_id, SHELL.name, "", "")
        self._children.record(*timeline.tools_dispatched((call,), now_ms()))
        self._children.tools(command, exec_context(plan, mode, self._request))

    # ---- the command ----

    def on_tool_completed(self, message: ToolCompleted) -> None:
        self._children.record(timeline.tool_completed(message))
        if self._phase is not None and not self._ending.started:
            phase = self._phase
            self._guarded(lambda: self._record(phase, message))

    def _record(self, phase: ShellCommandPhase, message: ToolCompleted) -> None:
        """Append the command's context once, then publish the checkpoint with its turn."""
        recorded = phase.completed(message, datetime.datetime.now(datetime.UTC))
        if recorded is None:
            return
        head, inserted = self._store.append_once(
            self.request_id, self._head, stored(recorded.message)
        )
        if inserted:
            self._messages = (*self._messages, recorded.message)
        self._head = head
        # The next turn of this conversation starts from this revision.
        self._deps.histories.put(head, self._messages)
        job = PublishSettled(
            self._jobs.next(), self._messages, (), None, head, shell_turn=recorded.turn
        )
        self._children.checkpoint(job)

    def on_provider_message(self, message: ProviderReply) -> None:
        raise TypeError(f"a shell command run calls no model, yet got {type(message).__name__}")

    # ---- the checkpoint and the other actors ----

    def on_checkpoint_published(self, message: CheckpointPublished) -> None:
        self._children.record(timeline.checkpoint_ended(message, now_ms()))
        if message.job_id == self._jobs.barrier and not self._ending.started:
            self._finish(None)  # the only checkpoint: the command's turn is out
