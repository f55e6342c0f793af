"""A RunRequest without its request context, as Cursor's CLI sends it: ask, then fill it in.

Sans-IO. The editor puts the ``RequestContext`` (rules, MCP tools, environment…) in the
action; a CLI-style client sends none and answers the Exec ``request_context_args`` instead.
The Run edge asks once, under a wire id of its own far above the tool runtime's (which counts
from 1), takes the answer (and the exec's trailing close) off the stream, and hands the run
the RunRequest as the editor would have sent it: one run machinery either way.
"""

from __future__ import annotations

from typing import Final

from wire.errors import Code, ConnectError
from wire.proto import agent_v1_pb2 as agent

REQUEST_CONTEXT_WIRE_ID: Final = 0x7FFF_FFFF
REQUEST_CONTEXT_EXEC_ID: Final = "request-context"

# The actions that carry a ``request_context`` of their own.
_WITH_CONTEXT: Final = (
    "user_message_action",
    "resume_action",
    "start_plan_action",
    "execute_plan_action",
)


def _holder(action: agent.ConversationAction) -> str | None:
    kind = action.WhichOneof("action")
    return kind if kind in _WITH_CONTEXT else None


def lacks_request_context(message: agent.AgentClientMessage) -> bool:
    """A RunRequest whose action could carry a context but carries none at all."""
    if not message.HasField("run_request"):
        return False
    action = message.run_request.action
    kind = _holder(action)
    if kind is None:
        return False
    parts = action.request_context_parts
    if action.HasField("request_context_parts") and parts.HasField("dynamic_context"):
        return False
    return not getattr(action, kind).HasField("request_context")


def request_context_exec() -> agent.AgentServerMessage:
    """The Exec that asks the client for its context."""
    return agent.AgentServerMessage(
        exec_server_message=agent.ExecServerMessage(
            id=REQUEST_CONTEXT_WIRE_ID,
            exec_id=REQUEST_CONTEXT_EXEC_ID,
            request_context_args=agent.RequestContextArgs(),
        )
    )


def is_request_context_answer(message: agent.AgentClientMessage) -> bool:
    """The exec's result, close or throw: the edge's own, never the run's."""
    if message.HasField("exec_client_message"):
        return message.exec_client_message.id == REQUEST_CONTEXT_WIRE_ID
    if message.HasField("exec_client_control_message"):
        control = message.exec_client_control_message
        kind = control.WhichOneof("message")
        if kind in ("stream_close", "throw"):
            return bool(getattr(control, kind).id == REQUEST_CONTEXT_WIRE_ID)
    return False


def with_request_context(
    message: agent.AgentClientMessage, answer: agent.AgentClientMessage
) -> agent.AgentClientMessage:
    """The RunRequest with the answered context in its action. Anything but a success (an
    error, a refusal, a close or throw before the result) fails the run, naming it."""
    if answer.HasField("exec_client_control_message"):
        control = answer.exec_client_control_message
        if control.HasField("throw"):
            raise _refused(f"threw: {control.throw.error}")
        raise _refused("closed the exec without a result")
    exec_message = answer.exec_client_message
    if exec_message.WhichOneof("message") != "request_context_result":
        raise _refused(f"answered with {exec_message.WhichOneof('message') or 'nothing'}")
    result = exec_message.request_context_result
    match result.WhichOneof("result"):
        case "success":
            filled = agent.AgentClientMessage()
            filled.CopyFrom(message)
            kind = _holder(filled.run_request.action)
            assert kind is not None
            target = getattr(filled.run_request.action, kind).request_context
            target.CopyFrom(result.success.request_context)
            return filled
        case "error":
            raise _refused(f"failed: {result.error.error}")
        case "rejected":
            raise _refused(f"rejected it: {result.rejected.reason}")
        case _:
            raise _refused("answered with an empty result")


def _refused(what: str) -> ConnectError:
    return ConnectError(
        Code.FAILED_PRECONDITION,
        f"the run needs the client's request context (request_context_args); the client {what}",
    )
