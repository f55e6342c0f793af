"""The actions that start a turn without a typed message, read without IO: the mode each runs
in, the turn's user message, and what each needs from the request."""

from __future__ import annotations

from typing import Any

import pytest

from actors.turn.actions import (
    ASYNC_ANSWERS_QUERY,
    EXECUTE_PLAN_QUERY,
    AsyncAnswers,
    PlanRun,
    read_action,
)
from actors.turn.plan import TurnKind, exec_context, plan_turn
from prompt import load_prompt_assets
from wire.errors import ConnectError
from wire.proto import agent_v1_pb2 as agent

# ``async`` is a Python keyword: the field goes in by name, through the message's **kwargs.
ASYNC_RESULT: dict[str, Any] = {"async": agent.AskQuestionAsync()}


def request(
    state: agent.ConversationStateStructure | None = None, **action: Any
) -> agent.AgentRunRequest:
    return agent.AgentRunRequest(
        conversation_id="conv",
        conversation_state=state,
        action=agent.ConversationAction(**action),
    )


def test_execute_plan_runs_a_new_agent_turn_with_a_simulated_message() -> None:
    context = agent.RequestContext(env=agent.RequestContextEnv(terminals_folder="/t"))
    execute = agent.ExecutePlanAction(request_context=context, plan_file_uri="file:///p.md")
    run = request(execute_plan_action=execute)
    plan = plan_turn("req-1", run)
    assert plan.kind is TurnKind.NEW
    assert plan.mode_number == agent.AGENT_MODE_AGENT and plan.mode_name == "agent"
    assert plan.user_message is not None
    assert plan.user_message.text == EXECUTE_PLAN_QUERY
    assert plan.user_message.message_id == "plan-execution:req-1"
    assert plan.user_message.is_simulated_msg
    assert plan.user_message.simulated_msg_reason == agent.SIMULATED_MSG_REASON_PLAN_EXECUTION
    assert plan.action is not None
    assert plan.action.turn == PlanRun(
        "execute_plan_action", EXECUTE_PLAN_QUERY, None, "file:///p.md", context
    )
    # The plan run's execs see the terminals folder of the action's own request context.
    assert exec_context(plan, load_prompt_assets().mode("agent"), run).terminals_folder == "/t"


def test_the_mode_each_action_runs_in() -> None:
    execute = agent.ExecutePlanAction(execution_mode=agent.AGENT_MODE_DEBUG)
    assert (
        read_action(
            "execute_plan_action", "r", agent.ConversationAction(execute_plan_action=execute), None
        ).mode
        == agent.AGENT_MODE_DEBUG
    )
    # start_plan_action runs in Agent mode whatever mode the message it carries was typed in.
    start = agent.StartPlanAction(
        user_message=agent.UserMessage(text="", mode=agent.AGENT_MODE_PLAN)
    )
    read = read_action(
        "start_plan_action", "r", agent.ConversationAction(start_plan_action=start), None
    )
    assert read.mode == agent.AGENT_MODE_AGENT
    assert isinstance(read.turn, PlanRun) and read.turn.query == EXECUTE_PLAN_QUERY
    assert read.user_message.message_id == "plan-execution:r"
    # The answers continue the conversation in the mode its state records.
    result = agent.AskQuestionResult(rejected=agent.AskQuestionRejected())
    completion = agent.AsyncAskQuestionCompletionAction(original_tool_call_id="c", result=result)
    action = agent.ConversationAction(async_ask_question_completion_action=completion)
    state = agent.ConversationStateStructure(mode=agent.AGENT_MODE_PLAN)
    read = read_action("async_ask_question_completion_action", "r", action, state)
    assert read.mode == agent.AGENT_MODE_PLAN
    assert read.turn == AsyncAnswers("c", result)
    assert read.user_message.text == ASYNC_ANSWERS_QUERY
    assert (
        read_action("async_ask_question_completion_action", "r", action, None).mode
        == agent.AGENT_MODE_AGENT
    )


@pytest.mark.parametrize(
    ("completion", "message"),
    [
        (agent.AsyncAskQuestionCompletionAction(), "original_tool_call_id is empty"),
        (
            agent.AsyncAskQuestionCompletionAction(
                original_tool_call_id="c",
                result=agent.AskQuestionResult(**ASYNC_RESULT),
            ),
            "the result for c carries no answers",
        ),
    ],
)
def test_a_completion_without_a_call_or_answers_is_refused(
    completion: agent.AsyncAskQuestionCompletionAction, message: str
) -> None:
    with pytest.raises(ConnectError, match=message):
        plan_turn("r", request(async_ask_question_completion_action=completion))
