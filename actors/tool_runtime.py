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

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from actors.call_waits import CallWaits, mailbox_teller
from actors.conversation.model import CanonicalToolCall
from actors.exec_ledger import ExecAnswer, ExecLedger
from actors.loop.timers import Timers
from actors.pool import PooledActor
from actors.protocols.call_actions import (
    CallAction,
    UserActedOnCall,
    expected_answer,
    force_background_request,
    shell_result_of,
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
from actors.services.server_work import ServerWorkers
from actors.tell import tell_if_alive
from store.base.clock import now_ms
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
    ToolExecution,
    ToolOutcome,
    Waiting,
    WakeAfter,
    WrongResult,
)
from wire.tools.dispatch import cut_tool_call, prepare_tool_call, stamp_tool_call
from wire.tools.exec_deadline import unanswered_outcome
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

# ---- internal state ----


@dataclass(slots=True)
class _Pending:
    round_id: str
    call: CanonicalToolCall
    execution: ToolExecution
    started_at_ms: int
    wire_ids: list[int] = field(default_factory=list)  # its requests' ids, the pending one last


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
        self.request_id = request_id
        self._output = output
        self._listener = listener
        self._context = context or ExecContext()
        self._clock = clock
        # Pauses, server work and answer deadlines: each ends as a message here.
        self._waits: CallWaits[_Pending] = CallWaits(
            mailbox_teller(self.actor_ref), timers, server_work, exec_answer_timeout_s
        )
        # The run's wire ids: pending execs and queries, background requests
        # (``actors.protocols.call_actions``), released execs, tombstones.
        self._ids: ExecLedger[_Pending] = ExecLedger()
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
            if self._ids.dispatched(call.call_id) or call.call_id in seen:
                self._fail(protocol_error(f"tool call {call.call_id} was dispatched twice"))
                return
            seen.add(call.call_id)
            if (refusal := refused_call(call.name, self._context)) is not None:
                refused[call.call_id] = refusal
        for call in calls:
            self._ids.dispatch(call.call_id)
            if (text := refused.get(call.call_id)) is not None:
                # The model's mistake (no such tool, or not in this mode), not the client's:
                # the model reads why, the turn goes on.
                self._tell(refused_completion(request.round_id, call, text, self._clock()))
                continue
            context = call_context(self._context, request, call.call_id)
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
        if self._ids.dispatched(request.exec_id):
            self._fail(protocol_error(f"exec id {request.exec_id} was dispatched twice"))
            return
        self._ids.dispatch(request.exec_id)
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
                    self._ids.exec_sent(wire_id, pending)
                    pending.wire_ids.append(wire_id)
                    self._output.send(exec_request_frame(wire_id, message))
                    self._waits.watch_answer(wire_id, message)
            case SendQuery(query=query):
                wire_id = self._new_wire_id()
                if wire_id is not None:
                    self._ids.query_sent(wire_id, pending)
                    pending.wire_ids.append(wire_id)
                    self._output.send(interaction_query_frame(wire_id, query))
            case WakeAfter(delay_ms=delay_ms):
                self._waits.pause(pending, delay_ms)
            case ServerWork(request=request):
                self._waits.start_work(pending, request)
            case ToolOutcome():
                self._complete(pending, step)
            case WrongResult():
                self._fail(
                    protocol_error(f"unexpected {channel} for tool {pending.execution.tool}")
                )

    def _new_wire_id(self) -> int | None:
        wire_id = self._ids.new_id()
        if wire_id is None:
            self._fail(protocol_error("exec id space exhausted for this run"))
        return wire_id

    def _on_answer_due(self, wire_id: int, waited_s: float) -> None:
        """No answer in time: the exec is aborted and released (a late answer is dropped),
        and its call ends with an error the model reads; the turn goes on."""
        self._waits.answer_due(wire_id)
        pending = self._ids.release_exec(wire_id)
        if pending is None:
            return  # answered (or ended) meanwhile
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

    def _on_work_done(self, work_id: int, answer: object) -> None:
        pending = self._waits.work_done(work_id)
        if pending is not None:  # None: closed by an abort before it answered
            self._advance(pending, pending.execution.answered(answer))

    def _on_wake(self, wake_id: int) -> None:
        pending = self._waits.woken(wake_id)
        if pending is not None:  # None: closed by an abort before its timer fired
            self._advance(pending, pending.execution.wake())

    # ---- client answers ----

    def _on_exec_message(self, message: agent.ExecClientMessage) -> None:
        wire_id = message.id
        answer = self._ids.exec_answer(wire_id)
        pending = self._ids.pending_exec(wire_id)
        if answer is ExecAnswer.FORCED:
            self._on_forced(wire_id, message)
        elif answer is ExecAnswer.RELEASED:
            _log_dropped(self.request_id, wire_id, "exec message")
        elif pending is None:  # a duplicate terminal answer, or an id never asked
            self._fail(protocol_error(f"{_NOT_PENDING[answer]} ExecClientMessage id: {wire_id}"))
        else:
            self._on_exec_answer(wire_id, pending, message)

    def _on_exec_answer(
        self, wire_id: int, pending: _Pending, message: agent.ExecClientMessage
    ) -> None:
        step = pending.execution.feed(message)
        if not isinstance(step, Waiting | ShellOutput):
            # Terminal for this request: the call ends, fails, or goes on under a new id.
            self._take(wire_id)
        self._advance(pending, step)

    def _on_response(self, response: agent.InteractionResponse) -> None:
        wire_id = response.id
        pending = self._ids.take_query(wire_id)
        if pending is None:
            if self._ids.query_answered_before(wire_id):
                self._fail(protocol_error(f"duplicate terminal InteractionResponse id: {wire_id}"))
            else:
                self._fail(protocol_error(f"unknown InteractionResponse id: {wire_id}"))
            return
        self._advance(pending, pending.execution.respond(response), "InteractionResponse")

    def _on_control(self, control: agent.ExecClientControlMessage) -> None:
        match control.WhichOneof("message"):
            case "stream_close":
                wire_id = control.stream_close.id
                if self._ids.pending_exec(wire_id) is not None:
                    self._take(wire_id)
                    self._fail(
                        protocol_error(f"Exec stream closed before result for id: {wire_id}")
                    )
                # A close after the result is the normal tail of every exec.
            case "throw":
                wire_id = control.throw.id
                if self._ids.drop_forced(wire_id) or self._ids.released(wire_id):
                    # The editor could not move the call (it goes on), or an exec already
                    # ended by the user's action failed late.
                    _log_dropped(self.request_id, wire_id, f"throw: {control.throw.error}")
                    return
                pending = self._ids.pending_exec(wire_id)
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
        found = self._ids.first_exec(
            lambda p: p.call.call_id in message.call_ids and p.execution.tool == message.tool
        )
        if found is None:
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
        wire_id, pending = found
        if message.action is CallAction.CANCEL_SUBAGENT:
            assert isinstance(pending.execution, TaskExecution)
            self._ids.release_exec(wire_id)
            self._waits.unwatch_answer(wire_id)
            self._output.send(exec_abort_frame(wire_id))
            self._complete(pending, pending.execution.cancelled_by_user(message.ident))
            return
        request = force_background_request(message.action, pending.call.call_id)
        force_id = self._new_wire_id()
        if force_id is not None:
            self._ids.force_sent(force_id, pending, expected_answer(request))
            self._output.send(exec_request_frame(force_id, request))

    def _on_forced(self, wire_id: int, message: agent.ExecClientMessage) -> None:
        """The editor's answer to a request to move a call to the background. Accepted, the
        call's own exec ends as a backgrounded one, unless the answer carries the shell's
        result, which then ends it; not found, the call goes on as it was."""
        forced = self._ids.take_forced(wire_id)
        assert forced is not None
        pending, expected = forced
        call_id = pending.call.call_id
        variant = message.WhichOneof("message")
        if variant != expected:
            self._fail(
                protocol_error(f"unexpected {variant} for the background request of {call_id}")
            )
            return
        current = pending.wire_ids[-1] if pending.wire_ids else None
        running = current is not None and self._ids.pending_exec(current) is pending
        log_event(
            logger,
            logging.INFO,
            "call moved to the background",
            request_id=self.request_id,
            call_id=call_id,
            status=getattr(message, variant).status,
            running=running,
        )
        result = shell_result_of(message, current) if running and current is not None else None
        if result is not None and current is not None:
            self._ids.release_exec(current)
            self._advance(pending, pending.execution.feed(result))

    def _take(self, wire_id: int) -> _Pending:
        """Remove a pending exec, leaving a tombstone until its round settles."""
        self._waits.unwatch_answer(wire_id)
        return self._ids.take_exec(wire_id)

    def _complete(self, pending: _Pending, outcome: ToolOutcome) -> None:
        call = pending.call
        if outcome.mcp_update is not None:
            # The run's MCP definitions (GetMcpTools' live answer), for the calls after it.
            mcp = self._context.mcp.updated(outcome.mcp_update)
            self._context = msgspec.structs.replace(self._context, mcp=mcp)
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
        self._tell(completion(pending, outcome, max(self._clock(), pending.started_at_ms)))

    def _tell(self, message: ToolRuntimeReply) -> None:
        tell_if_alive(self._listener, message, logger, request_id=self.request_id)

    # ---- round end, failure, abort ----

    def _on_settled(self, round_id: str) -> None:
        self._ids.settle(round_id)

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
            pending=self._ids.pending_count,
        )
        self._tell(ToolRuntimeFailed(error))

    def _abort_all(self, reason: str) -> None:
        aborted = tuple(_ended(pending) for _, pending in self._ids.execs())
        for exec_ in aborted:
            self._output.send(exec_abort_frame(exec_.wire_ids[-1]))
        for force_id in self._ids.forced_ids():
            self._output.send(exec_abort_frame(force_id))
        closed = [_ended(pending) for _, pending in self._ids.queries()]
        closed += [_ended(pending) for pending in self._waits.close_all()]
        self._ids.clear()
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


def call_context(context: ExecContext, request: StartToolRound, call_id: str) -> ExecContext:
    """The exec context of one call of a round: the run's, with the todo list and the message
    index the round gives that call."""
    if call_id in request.todos:
        context = msgspec.structs.replace(context, todos=request.todos[call_id])
    if call_id in request.message_indexes:
        index = request.message_indexes[call_id]
        context = msgspec.structs.replace(context, message_index=index)
    return context


def refused_completion(
    round_id: str, call: CanonicalToolCall, text: str, now_ms: int
) -> ToolCompleted:
    """A call that may not run (no such tool, or not in this mode) ends at once as an error
    result the model reads, with no card."""
    return ToolCompleted(
        round_id, call.call_id, call.name, call.model_call_id, text, True, b"", now_ms, now_ms
    )


def completion(pending: _Pending, outcome: ToolOutcome, completed_at_ms: int) -> ToolCompleted:
    """What the listener hears of a call that ended with ``outcome``."""
    call = pending.call
    tool_call = stamp_tool_call(
        outcome.tool_call, call.call_id, pending.started_at_ms, completed_at_ms
    )
    return ToolCompleted(
        round_id=pending.round_id,
        call_id=call.call_id,
        name=call.name,
        model_call_id=call.model_call_id,
        content=outcome.content,
        is_error=outcome.is_error,
        tool_call=tool_call.SerializeToString(deterministic=True),
        started_at_ms=pending.started_at_ms,
        completed_at_ms=completed_at_ms,
        wire_ids=tuple(pending.wire_ids),
        images=outcome.images,
    )


# How an answer whose id is not a pending exec's is named in the run's error.
_NOT_PENDING = {ExecAnswer.DUPLICATE: "duplicate terminal", ExecAnswer.UNKNOWN: "unknown"}


def _log_dropped(request_id: str, wire_id: int, what: str) -> None:
    log_event(
        logger,
        logging.DEBUG,
        "late message for an exec the user's action ended dropped",
        request_id=request_id,
        wire_id=wire_id,
        what=what,
    )


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
