"""The ToolRuntimeActor: one per run, the owner of the run's tool executions on the editor.

The model's tool calls run on the user's machine through the Exec sub-protocol carried in the
run's stream. This actor is the only owner of the run's Exec/Interaction wire-id space (one
counter from 1, never reused, across every round of the run) and of the terminal tombstones
that tell a duplicate answer from an unknown one; tombstones live until the SessionActor says
the round settled. What each tool sends and how its answers read is ``wire.tools``.

Per round, each call in index order gets its ``tool_call_started`` frame and then its request;
local tools and calls with bad arguments complete at once. Every completion is told to the
listener as ``ToolCompleted`` in the order results arrive: the LLM string and the typed
ToolCall with real timestamps. ``tool_call_completed`` itself is the SessionActor's to send,
after it commits the result (``wire.tools.frames.tool_call_completed_frame``).

A protocol violation (unknown id, duplicate terminal, a result of the wrong kind, a stream
closed early, a throw) is told once as ``ToolRuntimeFailed`` and ends the run; later client
messages are ignored. Pending executions stay pending so ``AbortPendingExecs`` can abort them:
that sends one abort per pending exec in ascending id order, reports ``ToolRuntimeStopped``
and stops the actor. The mailbox never waits on anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import msgspec
import pykka

from actors.conversation.model import CanonicalToolCall
from actors.run_output import RunOutput
from store.clock import now_ms
from wire.errors import Code, ConnectError, protocol_error
from wire.log import format_event, log_event
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import (
    ExecContext,
    SendExec,
    ShellOutput,
    Todo,
    ToolExecution,
    ToolImage,
    ToolOutcome,
    Waiting,
    WrongResult,
)
from wire.tools.dispatch import prepare_tool_call, stamp_tool_call
from wire.tools.frames import (
    exec_abort_frame,
    exec_request_frame,
    shell_delta_frame,
    tool_call_started_frame,
)
from wire.tools.registry import UnsupportedTool, resolve_tool, unknown_tool_result

logger = logging.getLogger("cursor_server.tool_runtime")

# Wire ids are uint32 and never reused, so a run cannot go past this one.
MAX_WIRE_ID = 0xFFFF_FFFF


# ---- replies ----


class ToolCompleted(msgspec.Struct, frozen=True):
    """One call finished: what the LLM reads, and the typed ToolCall for ``tool_call_completed``.

    ``tool_call`` is a serialized ``agent.ToolCall`` with args, result, id and both times, or
    empty for a call of a tool that does not exist (it has no card).
    """

    round_id: str
    call_id: str
    name: str
    model_call_id: str
    content: str
    is_error: bool
    tool_call: bytes
    started_at_ms: int
    completed_at_ms: int
    # The wire ids of the call's execs, in order (an edit reads, then writes); none for a call
    # completed without the editor (bad arguments, a local tool).
    wire_ids: tuple[int, ...] = ()
    images: tuple[ToolImage, ...] = ()  # what the result shows the model besides its text


class ToolRuntimeFailed(msgspec.Struct, frozen=True):
    """The run must end with ``error`` (told once; pending execs wait for the abort)."""

    error: ConnectError


class AbortedExec(msgspec.Struct, frozen=True):
    """A call whose pending exec was aborted: its execs' wire ids, the aborted one last."""

    call_id: str
    name: str
    wire_ids: tuple[int, ...]


class ToolRuntimeStopped(msgspec.Struct, frozen=True):
    """Aborts were sent for these calls' pending execs (ascending ids); the actor has stopped."""

    aborted: tuple[AbortedExec, ...]

    @property
    def aborted_ids(self) -> tuple[int, ...]:
        """The wire ids the aborts were sent for, ascending."""
        return tuple(exec_.wire_ids[-1] for exec_ in self.aborted)


ToolRuntimeReply = ToolCompleted | ToolRuntimeFailed | ToolRuntimeStopped


class ToolRuntimeListener(Protocol):
    """Who hears about the run's tools: the SessionActor, or anything with a thread-safe tell."""

    def tell(self, message: ToolRuntimeReply) -> None: ...


# ---- messages told to the actor ----


class StartToolRound(msgspec.Struct, frozen=True):
    """Run these calls of the committed round ``round_id`` (dispatched in index order);
    ``todos`` holds, for each TodoWrite call, the list it merges onto."""

    round_id: str
    calls: tuple[CanonicalToolCall, ...]
    todos: dict[str, tuple[Todo, ...]] = msgspec.field(default_factory=dict)


class ExecMessageReceived(msgspec.Struct, frozen=True):
    """The editor answered an exec (forwarded by the SessionActor in seqno order)."""

    message: agent.ExecClientMessage


class ExecControlReceived(msgspec.Struct, frozen=True):
    """An exec stream control message: stream_close, throw or heartbeat."""

    message: agent.ExecClientControlMessage


class InteractionResponseReceived(msgspec.Struct, frozen=True):
    """The editor answered an interaction query."""

    message: agent.InteractionResponse


class RoundSettled(msgspec.Struct, frozen=True):
    """Every result of the round is committed: its tombstones can go."""

    round_id: str


class AbortPendingExecs(msgspec.Struct, frozen=True):
    """The run ends: abort every pending exec, report ``ToolRuntimeStopped`` and stop."""

    reason: str


ToolRuntimeMessage = (
    StartToolRound
    | ExecMessageReceived
    | ExecControlReceived
    | InteractionResponseReceived
    | RoundSettled
    | AbortPendingExecs
)


# ---- internal state ----


@dataclass(slots=True)
class _Pending:
    round_id: str
    call: CanonicalToolCall
    execution: ToolExecution
    started_at_ms: int
    wire_ids: list[int] = field(default_factory=list)  # its execs' ids, the pending one last


@dataclass(slots=True, frozen=True)
class _Tombstone:
    round_id: str
    call_id: str


class ToolRuntimeActor(pykka.ThreadingActor):
    """Dispatches a run's tool calls and matches the editor's answers to them."""

    use_daemon_thread = True

    def __init__(
        self,
        request_id: str,
        output: RunOutput,
        listener: ToolRuntimeListener,
        context: ExecContext | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        super().__init__()
        self.request_id = request_id
        self._output = output
        self._listener = listener
        self._context = context or ExecContext()
        self._clock = clock
        self._next_id = 1
        self._pending: dict[int, _Pending] = {}
        self._tombstones: dict[int, _Tombstone] = {}
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
        match message:
            case StartToolRound():
                self._on_round(message)
            case ExecMessageReceived(message=exec_message):
                if self._failure is None:
                    self._on_exec_message(exec_message)
            case ExecControlReceived(message=control):
                if self._failure is None:
                    self._on_control(control)
            case InteractionResponseReceived(message=response):
                # No tool runs over the Interaction channel yet, so no id can be waiting.
                if self._failure is None:
                    self._fail(protocol_error(f"unknown InteractionResponse id: {response.id}"))
            case RoundSettled(round_id=round_id):
                self._on_settled(round_id)
            case AbortPendingExecs(reason=reason):
                self._abort_all(reason)
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
        unknown: set[str] = set()
        for call in calls:
            if call.call_id in self._dispatched or call.call_id in seen:
                self._fail(protocol_error(f"tool call {call.call_id} was dispatched twice"))
                return
            seen.add(call.call_id)
            try:
                resolve_tool(call.name)
            except UnsupportedTool:
                unknown.add(call.call_id)
        for call in calls:
            self._dispatched.add(call.call_id)
            if call.call_id in unknown:
                # The model's mistake, not the client's: the model reads why, the turn goes on.
                now = self._clock()
                text = unknown_tool_result(call.name)
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
            execution = prepare_tool_call(call.name, call.call_id, call.arguments, context)
            started_at = self._clock()
            started = stamp_tool_call(execution.started(), call.call_id, started_at)
            self._output.send(tool_call_started_frame(call.call_id, call.model_call_id, started))
            pending = _Pending(request.round_id, call, execution, started_at)
            step = execution.begin()
            if isinstance(step, SendExec):
                if not self._send_exec(pending, step):
                    return
            else:
                self._complete(pending, step)
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

    def _send_exec(self, pending: _Pending, step: SendExec) -> bool:
        wire_id = self._next_id
        if wire_id > MAX_WIRE_ID:
            self._fail(protocol_error("exec id space exhausted for this run"))
            return False
        self._next_id += 1
        self._pending[wire_id] = pending
        pending.wire_ids.append(wire_id)
        self._output.send(exec_request_frame(wire_id, step.message))
        return True

    # ---- client answers ----

    def _on_exec_message(self, message: agent.ExecClientMessage) -> None:
        wire_id = message.id
        pending = self._pending.get(wire_id)
        if pending is None:
            if wire_id in self._tombstones:
                self._fail(protocol_error(f"duplicate terminal ExecClientMessage id: {wire_id}"))
            else:
                self._fail(protocol_error(f"unknown ExecClientMessage id: {wire_id}"))
            return
        step = pending.execution.feed(message)
        match step:
            case Waiting():
                pass
            case ShellOutput(stream=stream, text=text):
                call = pending.call
                self._output.send(shell_delta_frame(call.call_id, call.model_call_id, stream, text))
            case SendExec():
                # The next phase of the same call (an edit's Write) under a new id.
                self._take(wire_id)
                self._send_exec(pending, step)
            case ToolOutcome():
                self._take(wire_id)
                self._complete(pending, step)
            case WrongResult():
                self._take(wire_id)
                self._fail(
                    protocol_error(f"unexpected Exec result for tool {pending.execution.tool}")
                )

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
                pending = self._pending.get(wire_id)
                if pending is None:
                    self._fail(protocol_error(f"unknown ExecClientThrow id: {wire_id}"))
                    return
                self._take(wire_id)
                error = control.throw.error
                self._fail(protocol_error(f"Exec {pending.call.call_id} failed: {error}"))
            case _:
                pass  # heartbeat, or nothing

    def _take(self, wire_id: int) -> _Pending:
        """Remove a pending exec, leaving a tombstone until its round settles."""
        pending = self._pending.pop(wire_id)
        self._tombstones[wire_id] = _Tombstone(pending.round_id, pending.call.call_id)
        return pending

    def _complete(self, pending: _Pending, outcome: ToolOutcome) -> None:
        call = pending.call
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
        aborted = tuple(
            AbortedExec(pending.call.call_id, pending.call.name, tuple(pending.wire_ids))
            for _, pending in sorted(self._pending.items())
        )
        for exec_ in aborted:
            self._output.send(exec_abort_frame(exec_.wire_ids[-1]))
        self._pending.clear()
        self._tombstones.clear()
        log_event(
            logger,
            logging.INFO,
            "tool runtime stopped",
            request_id=self.request_id,
            reason=reason,
            aborted=len(aborted),
        )
        self._tell(ToolRuntimeStopped(aborted))
        self.stop()


def start_tool_runtime(
    request_id: str,
    output: RunOutput,
    listener: ToolRuntimeListener,
    context: ExecContext | None = None,
    clock: Callable[[], int] = now_ms,
) -> pykka.ActorRef:
    """Start the run's ToolRuntimeActor; end it with ``AbortPendingExecs``."""
    return ToolRuntimeActor.start(request_id, output, listener, context, clock)
