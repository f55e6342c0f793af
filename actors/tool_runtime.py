"""The ToolRuntimeActor: one per run, the owner of the run's tool executions on the editor.

The model's tool calls run on the user's machine through the Exec and Interaction
sub-protocols carried in the run's stream. This actor is the only owner of the run's wire-id
space, shared by both (one counter from 1, never reused, across every round of the run: an
exec request, an interaction query, an edit's Write, a poll each take a new id), and of the
terminal tombstones that tell a duplicate answer from an unknown one; tombstones live until
the SessionActor says the round settled. What each tool sends and how its answers read is
``wire.tools``.

Per round, each call in index order gets its ``tool_call_started`` frame and then its request
or query; local tools and calls with bad arguments complete at once. A call may also ask for a
pause (``WakeAfter``: a poll's interval, a local timer); its deadline arrives as a
``ToolWakeDue`` message from a timer, never by sleeping in the mailbox. Work only the server
can do (``ServerWork``: a search, an image) runs on ``actors.services.server_work``'s workers and
answers as ``ServerWorkDone``. Every completion is
told to the listener as ``ToolCompleted`` in the order results arrive: the LLM string and the
typed ToolCall with real timestamps. ``tool_call_completed`` itself is the SessionActor's to
send, after it commits the result (``wire.tools.frames.tool_call_completed_frame``). An
approval is never a result: a query's answer either completes the call or leads to its next
request.

A protocol violation (unknown id, duplicate terminal, an answer of the wrong kind or on the
wrong channel, a stream closed early, a throw) is told once as ``ToolRuntimeFailed`` and ends
the run; later client messages are ignored. Pending executions stay pending so
``AbortPendingExecs`` can end them: one abort per pending exec in ascending id order;
pending queries, pauses and server work are closed with no wire message (Cursor's protocol
has no abort for a query; the EndStream closes its card); then ``ToolRuntimeStopped`` and
the actor stops. The mailbox never waits on anything.

The user may act on a running call from the editor (``UserActedOnCall``, see
``actors.protocols.call_actions``): a move to the background is a ``force_background_*``
request of its own, whose answer is matched here and never fed to the call; a cancelled
subagent's Task exec is aborted and its call completed at once. An exec whose call such an
action ended is released: whatever the editor still sends for it is dropped instead of failing
the run.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
import pykka

from actors.conversation.model import CanonicalToolCall
from actors.loop.timers import Timer, Timers
from actors.pool import PooledActor
from actors.protocols.call_actions import (
    FORCE_RESULTS,
    CallAction,
    UserActedOnCall,
    force_background_request,
)
from actors.protocols.mailbox import ActorHandle
from actors.protocols.run_output import RunOutput
from actors.protocols.tool_runtime import (
    AbortPendingExecs,
    EndedCall,
    ExecAnswerDue,
    ExecControlReceived,
    ExecMessageReceived,
    InteractionResponseReceived,
    RoundSettled,
    RunUserCommand,
    ServerWorkDone,
    StartToolRound,
    ToolCompleted,
    ToolRuntimeFailed,
    ToolRuntimeListener,
    ToolRuntimeMessage,
    ToolRuntimeReply,
    ToolRuntimeStopped,
    ToolWakeDue,
)
from actors.services.server_work import ServerWorkers, WorkHandle
from store.clock import now_ms
from wire.errors import Code, ConnectError, protocol_error
from wire.log import format_event, log_event
from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    SendExec,
    SendQuery,
    ServerWork,
    ShellOutput,
    ToolChannel,
    ToolExecution,
    ToolOutcome,
    Waiting,
    WakeAfter,
    WrongResult,
)
from wire.tools.dispatch import cut_tool_call, prepare_tool_call, stamp_tool_call
from wire.tools.exec_deadline import answer_deadline_s, unanswered_outcome
from wire.tools.frames import (
    exec_abort_frame,
    exec_request_frame,
    interaction_query_frame,
    shell_delta_frame,
    tool_call_started_frame,
)
from wire.tools.registry import refused_call
from wire.tools.shell import user_command_execution
from wire.tools.task import TaskExecution

# What the actor handles even after a failure: the run's own orders.
_ALWAYS_HANDLED = (StartToolRound, RunUserCommand, RoundSettled, AbortPendingExecs)

logger = logging.getLogger("cursor_server.tool_runtime")

# Wire ids are uint32 and never reused, so a run cannot go past this one.
MAX_WIRE_ID = 0xFFFF_FFFF


# ---- internal state ----


@dataclass(slots=True)
class _Pending:
    round_id: str
    call: CanonicalToolCall
    execution: ToolExecution
    started_at_ms: int
    wire_ids: list[int] = field(default_factory=list)  # its requests' ids, the pending one last


@dataclass(slots=True, frozen=True)
class _Tombstone:
    round_id: str
    call_id: str
    channel: ToolChannel  # EXEC or INTERACTION: which kind of answer the id took


@dataclass(slots=True)
class _Pause:
    pending: _Pending
    timer: Timer


@dataclass(slots=True)
class _Work:
    pending: _Pending
    handle: WorkHandle


class ToolRuntimeActor(PooledActor):
    """Dispatches a run's tool calls and matches the editor's answers to them."""

    def __init__(
        self,
        request_id: str,
        output: RunOutput,
        listener: ToolRuntimeListener,
        context: ExecContext | None = None,
        clock: Callable[[], int] = now_ms,
        timers: Timers | None = None,
        server_work: ServerWorkers | None = None,
        exec_answer_timeout_s: float | None = None,
    ) -> None:
        """``exec_answer_timeout_s``: how long an exec the editor answers on its own may go
        unanswered (None: no limit; it needs ``timers``)."""
        super().__init__()
        self._exec_answer_timeout_s = exec_answer_timeout_s
        self._answer_due: dict[int, Timer] = {}  # deadlines of pending execs, by wire id
        self.request_id = request_id
        self._output = output
        self._listener = listener
        self._context = context or ExecContext()
        self._clock = clock
        self._timers = timers
        self._server_work = server_work
        self._works: dict[int, _Work] = {}  # calls waiting for server work, by work id
        self._next_work_id = 1
        self._next_id = 1
        self._pending: dict[int, _Pending] = {}  # pending execs by wire id
        self._queries: dict[int, _Pending] = {}  # pending interaction queries by wire id
        self._pauses: dict[int, _Pause] = {}  # calls waiting for a ToolWakeDue, by wake id
        self._next_wake_id = 1
        self._tombstones: dict[int, _Tombstone] = {}
        # Requests to move a call to the background, by their wire id
        # (``actors.protocols.call_actions``). Each holds the call and the answer field it takes.
        self._forced: dict[int, tuple[_Pending, str]] = {}
        # Execs whose call ended without their answer (a cancelled subagent, a shell the
        # editor's force answer ended): whatever the editor still sends for them is dropped.
        self._released: set[int] = set()
        self._dispatched: set[str] = set()  # call ids ever dispatched in this run
        self._failure: ConnectError | None = None

    # ---- lifecycle ----

    def on_receive(self, message: ToolRuntimeMessage) -> None:
        try:
            self._handle(message)
        except Exception as exc:
            # A bug must end the run, not leave the session waiting for a result.
            logger.exception(
                format_event("tool runtime internal error", {"request_id": self.request_id})
            )
            self._fail(ConnectError(Code.INTERNAL, f"tool runtime failed: {exc}"))

    def on_failure(
        self, exception_type: object, exception_value: object, traceback: object
    ) -> None:
        self._fail(ConnectError(Code.INTERNAL, f"tool runtime failed: {exception_value}"))

    def _handle(self, message: ToolRuntimeMessage) -> None:
        if self._failure is not None and not isinstance(message, _ALWAYS_HANDLED):
            return  # failed: the editor's later answers and the timers are ignored
        match message:
            case StartToolRound():
                self._on_round(message)
            case RunUserCommand():
                self._on_user_command(message)
            case ExecMessageReceived(message=exec_message):
                self._on_exec_message(exec_message)
            case ExecControlReceived(message=control):
                self._on_control(control)
            case InteractionResponseReceived(message=response):
                self._on_response(response)
            case ToolWakeDue(wake_id=wake_id):
                self._on_wake(wake_id)
            case ExecAnswerDue(wire_id=wire_id, waited_s=waited_s):
                self._on_answer_due(wire_id, waited_s)
            case ServerWorkDone(work_id=work_id, answer=answer):
                self._on_work_done(work_id, answer)
            case RoundSettled(round_id=round_id):
                self._on_settled(round_id)
            case AbortPendingExecs(reason=reason):
                self._abort_all(reason)
            case UserActedOnCall():
                self._on_user_action(message)
            case _:
                raise TypeError(f"ToolRuntimeActor cannot handle {type(message).__name__}")

    # ---- dispatch ----

    def _on_round(self, request: StartToolRound) -> None:
        if self._failure is not None:
            self._tell(ToolRuntimeFailed(self._failure))
            return
        calls = sorted(request.calls, key=lambda call: call.index)
        # Every call is checked before anything is sent, so a bad round sends nothing.
        seen: set[str] = set()
        refused: dict[str, str] = {}  # call id -> the error result of a call that may not run
        for call in calls:
            if call.call_id in self._dispatched or call.call_id in seen:
                self._fail(protocol_error(f"tool call {call.call_id} was dispatched twice"))
                return
            seen.add(call.call_id)
            if (refusal := refused_call(call.name, self._context)) is not None:
                refused[call.call_id] = refusal
        for call in calls:
            self._dispatched.add(call.call_id)
            if (text := refused.get(call.call_id)) is not None:
                # The model's mistake (no such tool, or not in this mode), not the client's:
                # the model reads why, the turn goes on.
                now = self._clock()
                self._tell(
                    ToolCompleted(
                        request.round_id,
                        call.call_id,
                        call.name,
                        call.model_call_id,
                        text,
                        True,
                        b"",
                        now,
                        now,
                    )
                )
                continue
            context = self._context
            if call.call_id in request.todos:
                context = msgspec.structs.replace(context, todos=request.todos[call.call_id])
            if call.call_id in request.message_indexes:
                index = request.message_indexes[call.call_id]
                context = msgspec.structs.replace(context, message_index=index)
            if call.call_id in request.cut:
                execution = cut_tool_call(call.name, call.call_id, context)
            else:
                execution = prepare_tool_call(call.name, call.call_id, call.arguments, context)
            started_at = self._clock()
            started = stamp_tool_call(execution.started(), call.call_id, started_at)
            self._output.send(tool_call_started_frame(call.call_id, call.model_call_id, started))
            pending = _Pending(request.round_id, call, execution, started_at)
            self._advance(pending, execution.begin())
            if self._failure is not None:
                return
            log_event(
                logger,
                logging.DEBUG,
                "tool call dispatched",
                request_id=self.request_id,
                round_id=request.round_id,
                call_id=call.call_id,
                tool=execution.tool,
                channel=execution.channel.value,
            )

    def _on_user_command(self, request: RunUserCommand) -> None:
        if self._failure is not None:
            self._tell(ToolRuntimeFailed(self._failure))
            return
        if request.exec_id in self._dispatched:
            self._fail(protocol_error(f"exec id {request.exec_id} was dispatched twice"))
            return
        self._dispatched.add(request.exec_id)
        try:
            execution = user_command_execution(request.exec_id, request.command, self._context)
        except ToolArgumentError as exc:
            self._fail(protocol_error(f"shell_command_action: {exc}"))
            return
        arguments = msgspec.json.encode({"command": request.command}).decode()
        call = CanonicalToolCall(0, request.exec_id, execution.tool, arguments, "")
        pending = _Pending(request.round_id, call, execution, self._clock())
        self._advance(pending, execution.begin())

    def _advance(self, pending: _Pending, step: ExecStep, channel: str = "Exec result") -> None:
        """Carry out what a call's state machine said; ``channel`` names the kind of answer
        that led here, for the error of an answer of the wrong kind."""
        match step:
            case Waiting():
                pass
            case ShellOutput(stream=stream, text=text):
                call = pending.call
                self._output.send(shell_delta_frame(call.call_id, call.model_call_id, stream, text))
            case SendExec(message=message):
                wire_id = self._new_wire_id()
                if wire_id is not None:
                    self._pending[wire_id] = pending
                    pending.wire_ids.append(wire_id)
                    self._output.send(exec_request_frame(wire_id, message))
                    self._watch_answer(wire_id, message)
            case SendQuery(query=query):
                wire_id = self._new_wire_id()
                if wire_id is not None:
                    self._queries[wire_id] = pending
                    pending.wire_ids.append(wire_id)
                    self._output.send(interaction_query_frame(wire_id, query))
            case WakeAfter(delay_ms=delay_ms):
                self._pause(pending, delay_ms)
            case ServerWork(request=request):
                self._start_work(pending, request)
            case ToolOutcome():
                self._complete(pending, step)
            case WrongResult():
                self._fail(
                    protocol_error(f"unexpected {channel} for tool {pending.execution.tool}")
                )

    def _new_wire_id(self) -> int | None:
        wire_id = self._next_id
        if wire_id > MAX_WIRE_ID:
            self._fail(protocol_error("exec id space exhausted for this run"))
            return None
        self._next_id += 1
        return wire_id

    def _pause(self, pending: _Pending, delay_ms: int) -> None:
        if self._timers is None:
            raise RuntimeError("this tool runtime has no timers, so no call can pause")
        wake_id = self._next_wake_id
        self._next_wake_id += 1
        ref = self.actor_ref
        due = ToolWakeDue(wake_id)

        def tell() -> None:
            with contextlib.suppress(pykka.ActorDeadError):
                ref.tell(due)

        timer = self._timers.call_later(max(delay_ms, 0) / 1000, tell)
        self._pauses[wake_id] = _Pause(pending, timer)

    def _watch_answer(self, wire_id: int, message: agent.ExecServerMessage) -> None:
        """Give an exec the editor answers on its own its deadline."""
        deadline_s = answer_deadline_s(message, self._exec_answer_timeout_s)
        if deadline_s is None or self._timers is None:
            return
        ref = self.actor_ref
        due = ExecAnswerDue(wire_id, deadline_s)

        def tell() -> None:
            with contextlib.suppress(pykka.ActorDeadError):
                ref.tell(due)

        self._answer_due[wire_id] = self._timers.call_later(deadline_s, tell)

    def _unwatch_answer(self, wire_id: int) -> None:
        timer = self._answer_due.pop(wire_id, None)
        if timer is not None:
            timer.cancel()

    def _on_answer_due(self, wire_id: int, waited_s: float) -> None:
        """No answer in time: the exec is aborted and released (a late answer is dropped),
        and its call ends with an error the model reads; the turn goes on."""
        self._answer_due.pop(wire_id, None)
        pending = self._pending.pop(wire_id, None)
        if pending is None:
            return  # answered (or ended) meanwhile
        self._released.add(wire_id)
        self._output.send(exec_abort_frame(wire_id))
        log_event(
            logger,
            logging.WARNING,
            "exec not answered in time; aborted",
            request_id=self.request_id,
            wire_id=wire_id,
            tool=pending.execution.tool,
            waited_s=f"{waited_s:g}",
        )
        self._complete(pending, unanswered_outcome(pending.execution, waited_s))

    def _start_work(self, pending: _Pending, request: object) -> None:
        if self._server_work is None:
            raise RuntimeError("this tool runtime has no server workers")
        work_id = self._next_work_id
        self._next_work_id += 1
        ref = self.actor_ref

        def done(answer: object) -> None:
            with contextlib.suppress(pykka.ActorDeadError):
                ref.tell(ServerWorkDone(work_id, answer))

        self._works[work_id] = _Work(pending, self._server_work.start(request, done))

    def _on_work_done(self, work_id: int, answer: object) -> None:
        work = self._works.pop(work_id, None)
        if work is not None:  # None: closed by an abort before it answered
            self._advance(work.pending, work.pending.execution.answered(answer))

    def _on_wake(self, wake_id: int) -> None:
        pause = self._pauses.pop(wake_id, None)
        if pause is not None:  # None: closed by an abort before its timer fired
            self._advance(pause.pending, pause.pending.execution.wake())

    # ---- client answers ----

    def _on_exec_message(self, message: agent.ExecClientMessage) -> None:
        wire_id = message.id
        if wire_id in self._forced:
            self._on_forced(wire_id, message)
            return
        if wire_id in self._released:
            self._dropped(wire_id, "exec message")
            return
        pending = self._pending.get(wire_id)
        if pending is None:
            if self._tombstoned(wire_id, ToolChannel.EXEC):
                self._fail(protocol_error(f"duplicate terminal ExecClientMessage id: {wire_id}"))
            else:
                self._fail(protocol_error(f"unknown ExecClientMessage id: {wire_id}"))
            return
        step = pending.execution.feed(message)
        if not isinstance(step, Waiting | ShellOutput):
            # Terminal for this request: the call ends, fails, or goes on under a new id.
            self._take(wire_id)
        self._advance(pending, step)

    def _on_response(self, response: agent.InteractionResponse) -> None:
        wire_id = response.id
        pending = self._queries.pop(wire_id, None)
        if pending is None:
            if self._tombstoned(wire_id, ToolChannel.INTERACTION):
                self._fail(protocol_error(f"duplicate terminal InteractionResponse id: {wire_id}"))
            else:
                self._fail(protocol_error(f"unknown InteractionResponse id: {wire_id}"))
            return
        self._tombstones[wire_id] = _Tombstone(
            pending.round_id, pending.call.call_id, ToolChannel.INTERACTION
        )
        self._advance(pending, pending.execution.respond(response), "InteractionResponse")

    def _on_control(self, control: agent.ExecClientControlMessage) -> None:
        match control.WhichOneof("message"):
            case "stream_close":
                wire_id = control.stream_close.id
                if wire_id in self._pending:
                    self._take(wire_id)
                    self._fail(
                        protocol_error(f"Exec stream closed before result for id: {wire_id}")
                    )
                # A close after the result is the normal tail of every exec.
            case "throw":
                wire_id = control.throw.id
                if self._forced.pop(wire_id, None) is not None or wire_id in self._released:
                    # The editor could not move the call (it goes on), or an exec already
                    # ended by the user's action failed late.
                    self._dropped(wire_id, f"throw: {control.throw.error}")
                    return
                pending = self._pending.get(wire_id)
                if pending is None:
                    self._fail(protocol_error(f"unknown ExecClientThrow id: {wire_id}"))
                    return
                self._take(wire_id)
                error = control.throw.error
                self._fail(protocol_error(f"Exec {pending.call.call_id} failed: {error}"))
            case _:
                pass  # heartbeat, or nothing

    # ---- the user's actions on a running call (``actors.protocols.call_actions``) ----

    def _on_user_action(self, message: UserActedOnCall) -> None:
        found = [
            (wire_id, pending)
            for wire_id, pending in sorted(self._pending.items())
            if pending.call.call_id in message.call_ids and pending.execution.tool == message.tool
        ]
        if not found:
            # The call ended meanwhile, or is not this run's (a background subagent's cancel):
            # nothing of this run to change.
            log_event(
                logger,
                logging.INFO,
                "user action names no running call",
                request_id=self.request_id,
                action=message.action.value,
                id=message.ident,
            )
            return
        wire_id, pending = found[0]
        if message.action is CallAction.CANCEL_SUBAGENT:
            assert isinstance(pending.execution, TaskExecution)
            self._pending.pop(wire_id)
            self._unwatch_answer(wire_id)
            self._released.add(wire_id)
            self._output.send(exec_abort_frame(wire_id))
            self._complete(pending, pending.execution.cancelled_by_user(message.ident))
            return
        request = force_background_request(message.action, pending.call.call_id)
        force_id = self._new_wire_id()
        if force_id is not None:
            field = request.WhichOneof("message")
            assert field is not None
            self._forced[force_id] = (pending, FORCE_RESULTS[field])
            self._output.send(exec_request_frame(force_id, request))

    def _on_forced(self, wire_id: int, message: agent.ExecClientMessage) -> None:
        """The editor's answer to a request to move a call to the background. Accepted, the
        call's own exec ends as a backgrounded one, unless the answer carries the shell's
        result, which then ends it; not found, the call goes on as it was."""
        pending, expected = self._forced.pop(wire_id)
        call_id = pending.call.call_id
        self._tombstones[wire_id] = _Tombstone(pending.round_id, call_id, ToolChannel.EXEC)
        variant = message.WhichOneof("message")
        if variant != expected:
            self._fail(
                protocol_error(f"unexpected {variant} for the background request of {call_id}")
            )
            return
        current = pending.wire_ids[-1] if pending.wire_ids else None
        running = current is not None and self._pending.get(current) is pending
        log_event(
            logger,
            logging.INFO,
            "call moved to the background",
            request_id=self.request_id,
            call_id=call_id,
            status=getattr(message, variant).status,
            running=running,
        )
        if not running or current is None or variant != "force_background_shell_result":
            return
        answer = message.force_background_shell_result
        accepted = answer.status == agent.FORCE_BACKGROUND_SHELL_STATUS_ACCEPTED
        if accepted and answer.HasField("shell_result"):
            self._pending.pop(current)
            self._released.add(current)
            result = agent.ExecClientMessage(id=current, shell_result=answer.shell_result)
            self._advance(pending, pending.execution.feed(result))

    def _dropped(self, wire_id: int, what: str) -> None:
        log_event(
            logger,
            logging.DEBUG,
            "late message for an exec the user's action ended dropped",
            request_id=self.request_id,
            wire_id=wire_id,
            what=what,
        )

    def _tombstoned(self, wire_id: int, channel: ToolChannel) -> bool:
        """Whether ``wire_id`` already took its terminal answer on ``channel`` (an answer on
        the other channel is for an id that was never asked there: unknown)."""
        stone = self._tombstones.get(wire_id)
        return stone is not None and stone.channel is channel

    def _take(self, wire_id: int) -> _Pending:
        """Remove a pending exec, leaving a tombstone until its round settles."""
        self._unwatch_answer(wire_id)
        pending = self._pending.pop(wire_id)
        self._tombstones[wire_id] = _Tombstone(
            pending.round_id, pending.call.call_id, ToolChannel.EXEC
        )
        return pending

    def _complete(self, pending: _Pending, outcome: ToolOutcome) -> None:
        call = pending.call
        if outcome.mcp_update is not None:
            # The run's MCP definitions (GetMcpTools' live answer), for the calls after it.
            mcp = self._context.mcp.updated(outcome.mcp_update)
            self._context = msgspec.structs.replace(self._context, mcp=mcp)
        completed_at = max(self._clock(), pending.started_at_ms)
        tool_call = stamp_tool_call(
            outcome.tool_call, call.call_id, pending.started_at_ms, completed_at
        )
        log_event(
            logger,
            logging.DEBUG,
            "tool call completed",
            request_id=self.request_id,
            round_id=pending.round_id,
            call_id=call.call_id,
            tool=pending.execution.tool,
            is_error=outcome.is_error,
        )
        self._tell(
            ToolCompleted(
                round_id=pending.round_id,
                call_id=call.call_id,
                name=call.name,
                model_call_id=call.model_call_id,
                content=outcome.content,
                is_error=outcome.is_error,
                tool_call=tool_call.SerializeToString(deterministic=True),
                started_at_ms=pending.started_at_ms,
                completed_at_ms=completed_at,
                wire_ids=tuple(pending.wire_ids),
                images=outcome.images,
            )
        )

    def _tell(self, message: ToolRuntimeReply) -> None:
        try:
            self._listener.tell(message)
        except pykka.ActorDeadError:
            log_event(
                logger,
                logging.DEBUG,
                "tool runtime reply to a stopped actor dropped",
                request_id=self.request_id,
                reply=type(message).__name__,
            )

    # ---- round end, failure, abort ----

    def _on_settled(self, round_id: str) -> None:
        for wire_id in [i for i, stone in self._tombstones.items() if stone.round_id == round_id]:
            del self._tombstones[wire_id]

    def _fail(self, error: ConnectError) -> None:
        if self._failure is not None:
            return
        self._failure = error
        log_event(
            logger,
            logging.WARNING,
            "tool runtime failed",
            request_id=self.request_id,
            code=error.code.value,
            message=error.message,
            pending=len(self._pending),
        )
        self._tell(ToolRuntimeFailed(error))

    def _abort_all(self, reason: str) -> None:
        for wire_id in list(self._answer_due):
            self._unwatch_answer(wire_id)
        aborted = tuple(_ended(pending) for _, pending in sorted(self._pending.items()))
        for exec_ in aborted:
            self._output.send(exec_abort_frame(exec_.wire_ids[-1]))
        for force_id in sorted(self._forced):
            self._output.send(exec_abort_frame(force_id))
        self._forced.clear()
        closed = [_ended(pending) for _, pending in sorted(self._queries.items())]
        for pause in self._pauses.values():
            pause.timer.cancel()
            closed.append(_ended(pause.pending))
        for work in self._works.values():
            work.handle.cancel()
            closed.append(_ended(work.pending))
        self._pending.clear()
        self._queries.clear()
        self._pauses.clear()
        self._works.clear()
        self._tombstones.clear()
        log_event(
            logger,
            logging.INFO,
            "tool runtime stopped",
            request_id=self.request_id,
            reason=reason,
            aborted=len(aborted),
            closed=len(closed),
        )
        self._tell(ToolRuntimeStopped(aborted, tuple(closed)))
        self.stop()


def _ended(pending: _Pending) -> EndedCall:
    return EndedCall(pending.call.call_id, pending.call.name, tuple(pending.wire_ids))


def start_tool_runtime(
    request_id: str,
    output: RunOutput,
    listener: ToolRuntimeListener,
    context: ExecContext | None = None,
    clock: Callable[[], int] = now_ms,
    timers: Timers | None = None,
    server_work: ServerWorkers | None = None,
    exec_answer_timeout_s: float | None = None,
) -> ActorHandle[ToolRuntimeMessage]:
    """Start the run's ToolRuntimeActor; end it with ``AbortPendingExecs``."""
    return ToolRuntimeActor.start(
        request_id, output, listener, context, clock, timers, server_work, exec_answer_timeout_s
    )
