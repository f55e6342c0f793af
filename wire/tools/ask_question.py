"""AskQuestion: an interaction query the user answers in the editor; the answers go to the model.

The card keeps the editor's ``AskQuestionResult`` as it came; the model reads one line per
answer, ``<question id>: <answer>``, where the answer is the user's own words when they typed
some, else the ids of the options they picked.

With ``run_async`` the editor shows the questions and answers at once with ``async``: the call
completes, the model keeps working, and the answers arrive later as a run of their own
(``async_ask_question_completion_action``, see ``actors.turn.actions``).
"""

from __future__ import annotations

from typing import Any

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    InteractionExecution,
    ToolChannel,
    ToolDefinition,
    ToolOutcome,
    WrongResult,
)


def _text(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise ToolArgumentError(f"{where}.{key} is required (a non-empty string)")
    return value


def _question(raw: Any, where: str) -> agent.AskQuestionArgs.Question:
    if not isinstance(raw, dict):
        raise ToolArgumentError(f"{where} must be an object")
    options = raw.get("options")
    if not isinstance(options, list) or len(options) < 2:
        raise ToolArgumentError(f"{where}.options must be an array of at least two options")
    parsed: list[agent.AskQuestionArgs.Option] = []
    for position, option in enumerate(options):
        at = f"{where}.options[{position}]"
        if not isinstance(option, dict):
            raise ToolArgumentError(f"{at} must be an object")
        parsed.append(
            agent.AskQuestionArgs.Option(
                id=_text(option, "id", at), label=_text(option, "label", at)
            )
        )
    allow_multiple = raw.get("allow_multiple", False)
    if not isinstance(allow_multiple, bool):
        raise ToolArgumentError(f"{where}.allow_multiple must be true or false")
    return agent.AskQuestionArgs.Question(
        id=_text(raw, "id", where),
        prompt=_text(raw, "prompt", where),
        options=parsed,
        allow_multiple=allow_multiple,
    )


def answers_text(success: agent.AskQuestionSuccess) -> str:
    """One ``<question id>: <answer>`` line per answer (typed words win over picked options)."""
    lines = []
    for answer in success.answers:
        value = answer.freeform_text or ", ".join(answer.selected_option_ids)
        lines.append(f"{answer.question_id}: {value}")
    return "\n".join(lines) if lines else "the user answered no question"


ASYNC_PENDING_TEXT = (
    "The questions are shown to the user, who will answer when ready. Go on with the work "
    "without the answers; they will reach you in a later message."
)


class AskQuestionExecution(InteractionExecution):
    """One query; the editor shows the questions and answers with the user's choices."""

    query_field = "ask_question_interaction_query"

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(ASK_QUESTION, call_id)
        raw = args.raw.get("questions")
        if not isinstance(raw, list) or not raw:
            raise ToolArgumentError("'questions' is required (an array of at least one question)")
        questions = [_question(item, f"questions[{i}]") for i, item in enumerate(raw)]
        ids = [question.id for question in questions]
        if len(set(ids)) != len(ids):
            raise ToolArgumentError("each question needs its own id")
        self.args = agent.AskQuestionArgs(
            title=args.string("title") or "",
            questions=questions,
            run_async=bool(args.boolean("run_async")),
        )

    def started(self) -> agent.ToolCall:
        return agent.ToolCall(ask_question_tool_call=agent.AskQuestionToolCall(args=self.args))

    def _query(self) -> Any:
        return agent.AskQuestionInteractionQuery(args=self.args, tool_call_id=self.call_id)

    def _on_answer(self, answer: Any) -> ExecStep:
        result = answer.result
        match result.WhichOneof("result"):
            case "success":
                text, is_error = answers_text(result.success), False
            case "error":
                text = result.error.error_message or "the question could not be shown"
                is_error = True
            case "rejected":
                reason = result.rejected.reason
                text = "the user declined to answer" + (f": {reason}" if reason else "")
                is_error = True
            case "async":
                text, is_error = ASYNC_PENDING_TEXT, False
            case _:
                return WrongResult("AskQuestionResult with no result")
        card = agent.AskQuestionToolCall(args=self.args, result=result)
        return ToolOutcome(text, is_error, agent.ToolCall(ask_question_tool_call=card))


# The registry row (``wire.tools.registry.REGISTRY``).
ASK_QUESTION = ToolDefinition(
    name="AskQuestion",
    channel=ToolChannel.INTERACTION,
    tool_call_field="ask_question_tool_call",
    execution=AskQuestionExecution,
    error_path="result.error",
    error_fields=("error_message",),
)
