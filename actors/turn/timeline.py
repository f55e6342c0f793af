"""What a run tells its event recorder, built from the facts the run hears; no IO.

Each function maps one fact (the run's start and end, a checkpoint job submitted and then
published or failed, tool calls dispatched, completed or aborted) to the spans the recorder
writes (``actors.run_events``); the caller passes the time it heard the fact. Provider calls
are not here: each is an ``llm_calls`` row already, written by the CallRecorderActor.
"""

from __future__ import annotations

from actors.conversation.model import CanonicalToolCall
from actors.protocols.checkpoint import (
    CheckpointFailed,
    CheckpointJob,
    CheckpointPublished,
    PublishFinal,
    PublishSettled,
    PublishStaged,
)
from actors.protocols.run_events import SpanClosed, SpanOpened
from actors.protocols.tool_runtime import ToolCompleted, ToolRuntimeStopped
from actors.turn.plan import MODE_NAMES
from prompt.assets import SUBAGENT_MODE
from store.run_events import EventKind
from wire.errors import ConnectError
from wire.proto import agent_v1_pb2 as agent

# How much of the user's typed text a run's start keeps (the console's conversation title).
USER_TEXT_MAX_CHARS = 500
# The EndStream code of a run that succeeded.
OK = "ok"


def run_started(
    request: agent.AgentRunRequest, public_id: str, at_ms: int, asked: str = ""
) -> SpanOpened:
    """The run began: its model, the model id Cursor asked for (``asked``: Auto, one of
    Cursor's ids the routing settings map, or the public id), its mode, whether it resumes a
    turn, the user's text (if typed)."""
    action = request.action.WhichOneof("action")
    text = None
    if action == "user_message_action":
        text = request.action.user_message_action.user_message.text[:USER_TEXT_MAX_CHARS] or None
    detail = {
        "model": public_id,
        "asked": asked,
        "mode": run_mode(request),
        "resumed": action == "resume_action",
        "text": text,
    }
    return SpanOpened(EventKind.RUN, "", at_ms, detail)


def run_mode(request: agent.AgentRunRequest) -> str:
    """The mode the run asks for, by its asset name, read without planning the turn (the run's
    start is recorded before that; ``plan_turn`` has the full rules): a subagent's, a new
    message's own, a plan action's Agent (or an execution's mode), else the state's mode.
    ``unknown`` for a mode this server has no asset for (such a run ends invalid_argument)."""
    if request.HasField("subagent_type_name"):
        return SUBAGENT_MODE
    action = request.action
    kind = action.WhichOneof("action")
    state = request.conversation_state if request.HasField("conversation_state") else None
    if kind == "user_message_action":
        number = action.user_message_action.user_message.mode
    elif kind == "start_plan_action":
        number = agent.AGENT_MODE_AGENT
    elif kind == "execute_plan_action":
        number = action.execute_plan_action.execution_mode or agent.AGENT_MODE_AGENT
    else:
        number = state.mode if state is not None and state.mode else agent.AGENT_MODE_AGENT
    return MODE_NAMES.get(number, "unknown")


def run_ended(error: ConnectError | None, at_ms: int) -> SpanClosed:
    """The run's EndStream: its code (``ok`` on success) and message."""
    if error is None:
        return SpanClosed(EventKind.RUN, "", at_ms, {"code": OK, "message": None})
    return SpanClosed(
        EventKind.RUN, "", at_ms, {"code": error.code.value, "message": error.message}
    )


def checkpoint_kind(job: CheckpointJob) -> str:
    match job:
        case PublishSettled():
            return "settled"
        case PublishStaged():
            return "staged"
        case PublishFinal():
            return "final"
        case _:
            raise TypeError(f"not a checkpoint job: {type(job).__name__}")


def checkpoint_submitted(job: CheckpointJob, at_ms: int) -> SpanOpened:
    """A job was handed to the CheckpointActor: from here it waits for its blobs' KV ACKs."""
    detail: dict[str, int | str] = {"job_id": job.job_id, "kind": checkpoint_kind(job)}
    return SpanOpened(EventKind.CHECKPOINT, str(job.job_id), at_ms, detail)


def checkpoint_ended(message: CheckpointPublished | CheckpointFailed, at_ms: int) -> SpanClosed:
    """The job's checkpoint was published, or the job failed."""
    match message:
        case CheckpointPublished(job_id=job_id):
            detail: dict[str, str | None] = {"outcome": "published"}
        case CheckpointFailed(job_id=job_id, error=error):
            detail = {"outcome": "failed", "error": error.message}
        case _:
            raise TypeError(f"not a checkpoint's end: {type(message).__name__}")
    return SpanClosed(EventKind.CHECKPOINT, str(job_id), at_ms, detail)


def tools_dispatched(calls: tuple[CanonicalToolCall, ...], at_ms: int) -> tuple[SpanOpened, ...]:
    """A round's calls were handed to the tool runtime (its own start times come with the end)."""
    return tuple(
        SpanOpened(
            EventKind.TOOL, call.call_id, at_ms, {"call_id": call.call_id, "tool": call.name}
        )
        for call in calls
    )


def tool_completed(message: ToolCompleted) -> SpanClosed:
    """A call finished, timed by the tool runtime; its execs' wire ids (none if it ran locally)."""
    return SpanClosed(
        EventKind.TOOL,
        message.call_id,
        message.completed_at_ms,
        {
            "call_id": message.call_id,
            "tool": message.name,
            "wire_ids": message.wire_ids,
            "outcome": "error" if message.is_error else "success",
        },
        started_at_ms=message.started_at_ms,
    )


def tools_aborted(message: ToolRuntimeStopped, at_ms: int) -> tuple[SpanClosed, ...]:
    """The run ended with these calls unfinished: each pending exec was aborted, each pending
    query or pause closed."""
    ended = [(call, "aborted") for call in message.aborted]
    ended += [(call, "closed") for call in message.closed]
    return tuple(
        SpanClosed(
            EventKind.TOOL,
            call.call_id,
            at_ms,
            {
                "call_id": call.call_id,
                "tool": call.name,
                "wire_ids": call.wire_ids,
                "outcome": outcome,
            },
        )
        for call, outcome in ended
    )
