"""What a run's tool calls wait on besides the editor: a pause (a poll's interval, a local
timer), server work (a search, an image), and the deadline of an exec the editor answers on its
own. Each ends as a message to the ToolRuntimeActor (``ToolWakeDue``, ``ServerWorkDone``,
``ExecAnswerDue``), never by waiting in its mailbox; this object keeps the timers and work
handles so the actor can match those messages to their calls and close them all on an abort.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import pykka

from actors.loop.timers import Timer, Timers
from actors.protocols.mailbox import Mailbox
from actors.protocols.tool_runtime import ExecAnswerDue, ServerWorkDone, ToolWakeDue
from actors.services.server_work import ServerWorkers, WorkHandle
from wire.proto import agent_v1_pb2 as agent
from wire.tools.exec_deadline import answer_deadline_s

P = TypeVar("P")
WaitMessage = ToolWakeDue | ServerWorkDone | ExecAnswerDue


@dataclass(slots=True)
class _Pause(Generic[P]):
    call: P
    timer: Timer


@dataclass(slots=True)
class _Work(Generic[P]):
    call: P
    handle: WorkHandle


class CallWaits(Generic[P]):
    """The pauses, server work and answer deadlines of one run's calls."""

    def __init__(
        self,
        tell: Callable[[WaitMessage], None],
        timers: Timers | None,
        server_work: ServerWorkers | None,
        exec_answer_timeout_s: float | None,
    ) -> None:
        """``tell``: puts a message in the actor's mailbox (a stopped actor is no error);
        ``exec_answer_timeout_s``: how long an exec the editor answers on its own may go
        unanswered (None: no limit; it needs ``timers``)."""
        self._tell = tell
        self._timers = timers
        self._server_work = server_work
        self._exec_answer_timeout_s = exec_answer_timeout_s
        self._pauses: dict[int, _Pause[P]] = {}  # by wake id
        self._works: dict[int, _Work[P]] = {}  # by work id
        self._answer_due: dict[int, Timer] = {}  # by the exec's wire id
        self._next_wake_id = 1
        self._next_work_id = 1

    def pause(self, call: P, delay_ms: int) -> None:
        if self._timers is None:
            raise RuntimeError("this tool runtime has no timers, so no call can pause")
        wake_id, self._next_wake_id = self._next_wake_id, self._next_wake_id + 1
        timer = self._timers.call_later(max(delay_ms, 0) / 1000, self._teller(ToolWakeDue(wake_id)))
        self._pauses[wake_id] = _Pause(call, timer)

    def woken(self, wake_id: int) -> P | None:
        """The call a pause's timer was for; None if an abort closed it first."""
        pause = self._pauses.pop(wake_id, None)
        return None if pause is None else pause.call

    def start_work(self, call: P, request: object) -> None:
        if self._server_work is None:
            raise RuntimeError("this tool runtime has no server workers")
        work_id, self._next_work_id = self._next_work_id, self._next_work_id + 1
        tell = self._tell

        def done(answer: object) -> None:
            tell(ServerWorkDone(work_id, answer))

        self._works[work_id] = _Work(call, self._server_work.start(request, done))

    def work_done(self, work_id: int) -> P | None:
        """The call server work answered for; None if an abort closed it first."""
        work = self._works.pop(work_id, None)
        return None if work is None else work.call

    def watch_answer(self, wire_id: int, message: agent.ExecServerMessage) -> None:
        """Give an exec the editor answers on its own its deadline."""
        deadline_s = answer_deadline_s(message, self._exec_answer_timeout_s)
        if deadline_s is None or self._timers is None:
            return
        due = ExecAnswerDue(wire_id, deadline_s)
        self._answer_due[wire_id] = self._timers.call_later(deadline_s, self._teller(due))

    def unwatch_answer(self, wire_id: int) -> None:
        timer = self._answer_due.pop(wire_id, None)
        if timer is not None:
            timer.cancel()

    def answer_due(self, wire_id: int) -> None:
        """The deadline fired: it is no longer watched."""
        self._answer_due.pop(wire_id, None)

    def close_all(self) -> list[P]:
        """An abort: every timer cancelled, every work cancelled; the calls that were paused
        or waiting for work, in that order."""
        for wire_id in list(self._answer_due):
            self.unwatch_answer(wire_id)
        closed = []
        for pause in self._pauses.values():
            pause.timer.cancel()
            closed.append(pause.call)
        for work in self._works.values():
            work.handle.cancel()
            closed.append(work.call)
        self._pauses.clear()
        self._works.clear()
        return closed

    def _teller(self, message: WaitMessage) -> Callable[[], None]:
        tell = self._tell

        def fire() -> None:
            tell(message)

        return fire


def mailbox_teller(ref: Mailbox[WaitMessage]) -> Callable[[WaitMessage], None]:
    """A ``tell`` for ``CallWaits`` that drops a message to an actor that has stopped."""

    def tell(message: WaitMessage) -> None:
        with contextlib.suppress(pykka.ActorDeadError):
            ref.tell(message)

    return tell
