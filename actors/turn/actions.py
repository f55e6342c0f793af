"""The conversation actions that start a turn with no typed message: carrying out the plan
(``start_plan_action``, ``execute_plan_action``), the late answers of an AskQuestion that
ran with ``run_async`` (``async_ask_question_completion_action``) and the end of background
subagents and shells (``background_task_completion_action``).

Each becomes a new turn whose runtime message carries what the action brings in its
ACTION_CONTEXT (the plan, the answers) and a short instruction as its USER_QUERY. What the
action names is checked against the conversation's committed messages (the plan of its last
successful CreatePlan, the AskQuestion call the answers belong to, the Task or Shell call that
started the background work), so that history is the one source of both; a request that does
not fit ends ``invalid_argument`` naming the problem.
No IO here.
"""

from __future__ import annotations

import datetime
import html
import re
from collections.abc import Sequence
from typing import Any

import msgspec

from actors.codecs.checkpoint_state import CheckpointStateError, latest_plan
from actors.codecs.request_context import runtime_context
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    ImagePart,
    Origin,
    PartsContent,
    TextPart,
    ToolResultContent,
)
from prompt.assets import ModeAssets
from prompt.runtime_message import RuntimeContextError
from wire.errors import protocol_error
from wire.json_input import decode_json
from wire.proto import agent_v1_pb2 as agent
from wire.tools.ask_question import ASK_QUESTION
from wire.tools.registry import normalize_tool_name

BACKGROUND_COMPLETION = "background_task_completion_action"

ACTION_KINDS = frozenset(
    {
        "start_plan_action",
        "execute_plan_action",
        "async_ask_question_completion_action",
        BACKGROUND_COMPLETION,
    }
)

BACKGROUND_DONE_QUERY = (
    "Background subagents you started earlier have finished (above). Read what each "
    "reported, follow up on it where the task needs it, and tell the user what came of it; "
    "when you mention a subagent, name it by its title."
)

SHELLS_DONE_QUERY = (
    "Commands you left running in the background have finished (above). Check how each "
    "ended (read its output file where you need the output), follow up where the task needs "
    "it, and tell the user what came of it."
)

WORK_DONE_QUERY = (
    "Background work you started earlier has finished (above): subagents and commands. Read "
    "what each reported or printed, follow up where the task needs it, and tell the user what "
    "came of it; when you mention a subagent, name it by its title."
)

EXECUTE_PLAN_QUERY = (
    "The user approved the plan above: carry it out now, step by step, and keep the todo "
    "list up to date as you go. If something you find in the code makes a step wrong, say so "
    "and adapt the step instead of following it blindly."
)

ASYNC_ANSWERS_QUERY = (
    "The user has answered the questions you asked earlier (above). Take the answers into "
    "account: go on with the task, and revisit anything you already did that they change."
)


class PlanRun(msgspec.Struct, frozen=True):
    """Carry out the plan: the action's own plan text when it sends one, else the
    conversation's (its last successful CreatePlan)."""

    action: str
    query: str
    plan_text: str | None
    plan_uri: str
    request_context: agent.RequestContext | None


class AsyncAnswers(msgspec.Struct, frozen=True):
    """The answers to the AskQuestion call ``call_id``, which completed with ``async``."""

    call_id: str
    result: agent.AskQuestionResult


class BackgroundDone(msgspec.Struct, frozen=True):
    """Background subagents or shells of the conversation have finished; ``query`` is the
    instruction for what they are."""

    completions: tuple[agent.BackgroundTaskCompletion, ...]
    query: str


ActionTurn = PlanRun | AsyncAnswers | BackgroundDone


class ReadAction(msgspec.Struct, frozen=True):
    """An action read from the request: the turn it starts, its mode and its UserMessage (the
    turn's user message blob)."""

    turn: ActionTurn
    mode: agent.AgentMode
    user_message: agent.UserMessage
    event_id: str | None = None
    """The turn's runtime event when it is the action's own, not the request's: a repeated
    completion then names the turn already in the history instead of adding one."""


def read_action(
    kind: str,
    request_id: str,
    action: agent.ConversationAction,
    state: agent.ConversationStateStructure | None,
) -> ReadAction:
    """Read one of ``ACTION_KINDS``. The plan actions run in Agent mode (an execute action's
    ``execution_mode`` when it names one); the answers run in the state's mode, as any
    turn that continues the conversation without a new message does."""
    if kind == "start_plan_action":
        return _start_plan(request_id, action.start_plan_action)
    if kind == "execute_plan_action":
        return _execute_plan(request_id, action.execute_plan_action)
    if kind == BACKGROUND_COMPLETION:
        return _background_done(action.background_task_completion_action, state)
    return _async_answers(action.async_ask_question_completion_action, state)


def _start_plan(request_id: str, start: agent.StartPlanAction) -> ReadAction:
    user = agent.UserMessage()
    user.CopyFrom(start.user_message)
    user.message_id = user.message_id or f"plan-execution:{request_id}"
    context = start.request_context if start.HasField("request_context") else None
    turn = PlanRun("start_plan_action", user.text.strip() or EXECUTE_PLAN_QUERY, None, "", context)
    return ReadAction(turn, agent.AGENT_MODE_AGENT, user)


def _execute_plan(request_id: str, execute: agent.ExecutePlanAction) -> ReadAction:
    own = execute.plan.plan if execute.HasField("plan") else ""
    own = own or execute.plan_file_content
    context = execute.request_context if execute.HasField("request_context") else None
    turn = PlanRun(
        "execute_plan_action", EXECUTE_PLAN_QUERY, own or None, execute.plan_file_uri, context
    )
    mode = execute.execution_mode or agent.AGENT_MODE_AGENT
    user = _simulated(EXECUTE_PLAN_QUERY, f"plan-execution:{request_id}")
    user.simulated_msg_reason = agent.SIMULATED_MSG_REASON_PLAN_EXECUTION
    return ReadAction(turn, mode, user)


def _async_answers(
    completion: agent.AsyncAskQuestionCompletionAction,
    state: agent.ConversationStateStructure | None,
) -> ReadAction:
    call_id = completion.original_tool_call_id
    where = "async_ask_question_completion_action"
    if not call_id:
        raise protocol_error(f"{where}: original_tool_call_id is empty")
    if completion.result.WhichOneof("result") not in ("success", "rejected", "error"):
        raise protocol_error(f"{where}: the result for {call_id} carries no answers")
    mode = state.mode if state is not None and state.mode else agent.AGENT_MODE_AGENT
    user = _simulated(ASYNC_ANSWERS_QUERY, f"async-answers:{call_id}")
    return ReadAction(AsyncAnswers(call_id, completion.result), mode, user)


def _background_done(
    action: agent.BackgroundTaskCompletionAction, state: agent.ConversationStateStructure | None
) -> ReadAction:
    completions = tuple(action.completions)
    if not completions:
        raise protocol_error(f"{BACKGROUND_COMPLETION}: no completion")
    for completion in completions:
        _check_completion(completion)
    keys = [_completion_key(completion) for completion in completions]
    if len(set(keys)) != len(keys):
        raise protocol_error(
            f"{BACKGROUND_COMPLETION}: a completion repeats (same subagent_id or shell task_id)"
        )
    mode = state.mode if state is not None and state.mode else agent.AGENT_MODE_AGENT
    shells = sum(c.kind == agent.BACKGROUND_TASK_KIND_SHELL for c in completions)
    if not shells:
        # Only subagents: the id the editor's own server gives such a turn.
        event = "subagent-completed:" + ":".join(sorted(c.subagent_id for c in completions))
        query = BACKGROUND_DONE_QUERY
    else:
        event = "background-completed:" + ":".join(sorted(keys))
        query = SHELLS_DONE_QUERY if shells == len(completions) else WORK_DONE_QUERY
    user = _simulated(query, event)
    user.simulated_msg_reason = agent.SIMULATED_MSG_REASON_BACKGROUND_TASK_COMPLETION
    first = completions[0]
    user.simulated_message_metadata.title = first.title
    user.simulated_message_metadata.task_id = first.task_id
    return ReadAction(BackgroundDone(completions, query), mode, user, event_id=event)


def _completion_key(completion: agent.BackgroundTaskCompletion) -> str:
    """What names one completion: a subagent by its id, a shell by its task (shell) id."""
    if completion.kind == agent.BACKGROUND_TASK_KIND_SHELL:
        return f"shell-{completion.task_id}"
    return f"subagent-{completion.subagent_id}"


def _check_completion(completion: agent.BackgroundTaskCompletion) -> None:
    """A finished subagent or shell with its ids, title and status; anything else is
    refused."""
    where = f"{BACKGROUND_COMPLETION}: completion {completion.task_id or '(no task_id)'}"
    if completion.kind not in (
        agent.BACKGROUND_TASK_KIND_SUBAGENT,
        agent.BACKGROUND_TASK_KIND_SHELL,
    ):
        raise protocol_error(f"{where}: only subagent and shell completions are taken")
    if completion.reason != agent.BACKGROUND_TASK_COMPLETION_REASON_TASK_FINISHED:
        raise protocol_error(f"{where}: only a finished task is taken")
    fields = ["task_id", "title"]
    if completion.kind == agent.BACKGROUND_TASK_KIND_SUBAGENT:
        fields.insert(0, "subagent_id")
    for field in fields:
        if not getattr(completion, field):
            raise protocol_error(f"{where}: {field} is empty")
    if completion.status == agent.BACKGROUND_TASK_STATUS_UNSPECIFIED:
        raise protocol_error(f"{where}: the status is unspecified")


def _completion_context(turn: BackgroundDone, history: Sequence[CanonicalMessage]) -> str:
    blocks = []
    for completion in turn.completions:
        _check_started(completion, history)
        status = agent.BackgroundTaskStatus.Name(completion.status)
        shell = completion.kind == agent.BACKGROUND_TASK_KIND_SHELL
        lines = [
            "<background_task_completion>",
            f"Title: {completion.title}",
            f"Shell ID: {completion.task_id}"
            if shell
            else f"Subagent ID: {completion.subagent_id}",
            f"Status: {status.removeprefix('BACKGROUND_TASK_STATUS_')}",
        ]
        if completion.tool_call_id:
            lines.append(f"Tool call ID: {completion.tool_call_id}")
        if completion.output_path:
            lines.append(f"Output path: {completion.output_path}")
        if completion.detail.strip():
            lines.append(completion.detail.strip())
        lines.append("</background_task_completion>")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _check_started(
    completion: agent.BackgroundTaskCompletion, history: Sequence[CanonicalMessage]
) -> None:
    """The completion's work was started by this conversation: its Task or Shell call (by
    ``tool_call_id``) is in the history, or, without one, a Task result names the subagent /
    a Shell result names the shell id; a shell may also be a command the user ran from the
    chat that went on in the background. Anything else is refused, naming the id."""
    shell = completion.kind == agent.BACKGROUND_TASK_KIND_SHELL
    tool = "shell" if shell else "task"
    call_id = completion.tool_call_id
    if shell and _user_backgrounded(completion.task_id, history):
        return
    if call_id:
        if any(
            call.call_id == call_id and normalize_tool_name(call.name) == tool
            for call in _calls(history)
        ):
            return
        named = f"no {tool.capitalize()} call {call_id!r}"
    else:
        ident = completion.task_id if shell else completion.subagent_id
        pattern = (
            rf"shell_id={re.escape(ident)}\b" if shell else rf"^Subagent ID: {re.escape(ident)}$"
        )
        if any(
            normalize_tool_name(content.name) == tool
            and not content.is_error
            and re.search(pattern, content.content, re.MULTILINE)
            for content in _results(history)
        ):
            return
        named = f"no {tool.capitalize()} result naming {'shell' if shell else 'subagent'} {ident!r}"
    what = "shell" if shell else "subagent"
    raise protocol_error(
        f"{BACKGROUND_COMPLETION}: completion {completion.task_id}: this conversation never "
        f"started that background {what} ({named} in its history)"
    )


def _user_backgrounded(shell_id: str, history: Sequence[CanonicalMessage]) -> bool:
    """Whether a command the user ran from the chat (``<user_ran_command>``, see
    ``actors.codecs.request_context.shell_command_context``) went on as shell ``shell_id``."""
    status = re.compile(rf"<status>[^<]*\(shell_id {re.escape(shell_id)}\)")
    return any(
        isinstance(message.content, PartsContent)
        and message.origin is Origin.RUNTIME
        and any(
            isinstance(part, TextPart)
            and "<user_ran_command>" in part.text
            and status.search(part.text)
            for part in message.content.parts
        )
        for message in history
    )


def _calls(history: Sequence[CanonicalMessage]) -> list[CanonicalToolCall]:
    return [
        call
        for message in history
        if isinstance(message.content, AssistantContent)
        for call in message.content.tool_calls
    ]


def _results(history: Sequence[CanonicalMessage]) -> list[ToolResultContent]:
    return [m.content for m in history if isinstance(m.content, ToolResultContent)]


def _simulated(text: str, message_id: str) -> agent.UserMessage:
    """The turn's user message for an action the user did not type."""
    return agent.UserMessage(text=text, message_id=message_id, is_simulated_msg=True)


def action_parts(
    mode: ModeAssets,
    read: ReadAction,
    history: Sequence[CanonicalMessage],
    now: datetime.datetime,
    merged: agent.RequestContext | None = None,
) -> tuple[TextPart | ImagePart, ...]:
    """The runtime message's content for an action turn on ``history``; a plan action's
    context is ``merged`` when given (its parts given by blob id laid over it)."""
    turn = read.turn
    match turn:
        case PlanRun():
            action_text = _plan_context(turn, history)
            request_context = turn.request_context if merged is None else merged
            query = turn.query
        case AsyncAnswers():
            action_text = _answers_context(turn, history)
            request_context, query = None, ASYNC_ANSWERS_QUERY
        case BackgroundDone():
            action_text = _completion_context(turn, history)
            request_context, query = None, turn.query
    context = runtime_context(read.user_message, request_context, now)
    context = msgspec.structs.replace(context, action_context=action_text, user_query=query)
    try:
        return (TextPart(mode.runtime_message(context)),)
    except RuntimeContextError as exc:
        raise protocol_error(str(exc)) from exc


def _plan_context(turn: PlanRun, history: Sequence[CanonicalMessage]) -> str:
    text, name = turn.plan_text, ""
    if text is None:
        try:
            latest = latest_plan(history)
        except CheckpointStateError as exc:
            raise protocol_error(f"{turn.action}: {exc}") from exc
        if latest is None:
            raise protocol_error(
                f"{turn.action}: the conversation has no plan (no successful CreatePlan) "
                "and the action carries none"
            )
        text, name = latest["plan"], latest.get("name") or ""
    attributes = "".join(
        f' {key}="{html.escape(value, quote=True)}"'
        for key, value in (("name", name), ("uri", turn.plan_uri))
        if value
    )
    return f"<approved_plan{attributes}>\n{text.strip()}\n</approved_plan>"


def _answers_context(turn: AsyncAnswers, history: Sequence[CanonicalMessage]) -> str:
    arguments = _async_call_arguments(turn.call_id, history)
    prompts = {
        question.get("id"): question.get("prompt")
        for question in arguments.get("questions", [])
        if isinstance(question, dict)
    }
    result = turn.result
    match result.WhichOneof("result"):
        case "success":
            lines = [
                f"- {answer.question_id} ({prompts.get(answer.question_id) or 'no prompt'}): "
                + (answer.freeform_text or ", ".join(answer.selected_option_ids) or "no answer")
                for answer in result.success.answers
            ]
            body = "The user has answered them:\n" + ("\n".join(lines) or "- no question")
        case "rejected":
            reason = result.rejected.reason
            body = "The user declined to answer them" + (f": {reason}" if reason else ".")
        case _:
            body = "They could not be shown: " + (result.error.error_message or "no reason given")
    call = html.escape(turn.call_id, quote=True)
    return (
        f'<async_question_answers tool_call_id="{call}">\n'
        f"Earlier you asked the user questions with AskQuestion (call {turn.call_id}) and "
        f"went on without waiting. {body}\n</async_question_answers>"
    )


def _async_call_arguments(call_id: str, history: Sequence[CanonicalMessage]) -> dict[str, Any]:
    """The arguments of the AskQuestion call ``call_id`` of the history, which must have run
    with ``run_async`` and completed without an error."""
    where = "async_ask_question_completion_action"
    call = None
    completed = False
    for message in history:
        content = message.content
        if isinstance(content, AssistantContent):
            call = call or next((c for c in content.tool_calls if c.call_id == call_id), None)
        elif isinstance(content, ToolResultContent) and content.call_id == call_id:
            completed = not content.is_error
    if call is None or normalize_tool_name(call.name) != normalize_tool_name(ASK_QUESTION.name):
        raise protocol_error(f"{where}: no AskQuestion call {call_id!r} in this conversation")
    try:
        arguments = decode_json(call.arguments)
    except msgspec.DecodeError:
        arguments = None
    if not isinstance(arguments, dict) or arguments.get("run_async") is not True or not completed:
        raise protocol_error(f"{where}: AskQuestion call {call_id!r} did not run asynchronously")
    return arguments
