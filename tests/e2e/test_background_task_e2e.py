"""A background Task end to end: the editor answers it at once, and the subagent's end comes
later as a run of the parent conversation (``background_task_completion_action``) whose
simulated user message starts a new turn, appended once however often the editor sends it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from store import Store
from tests.support.fake_cursor import CursorSession, FakeCursor, TurnLog, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from wire.proto import agent_v1_pb2 as agent


def completion_message(
    model: str, state: agent.ConversationStateStructure, **overrides: object
) -> agent.AgentClientMessage:
    fields: dict[str, Any] = {
        "task_id": "call_bg",
        "kind": agent.BACKGROUND_TASK_KIND_SUBAGENT,
        "status": agent.BACKGROUND_TASK_STATUS_SUCCESS,
        "title": "Find the values",
        "reason": agent.BACKGROUND_TASK_COMPLETION_REASON_TASK_FINISHED,
        "subagent_id": "background-1",
        "tool_call_id": "call_bg",
        "detail": "A is 1 and B is 2.",
        **overrides,
    }
    action = agent.BackgroundTaskCompletionAction(
        completions=[agent.BackgroundTaskCompletion(**fields)]
    )
    request = agent.AgentRunRequest(
        conversation_id="conv-1",
        conversation_state=state,
        action=agent.ConversationAction(background_task_completion_action=action),
        requested_model=agent.RequestedModel(model_id=model),
    )
    return agent.AgentClientMessage(run_request=request)


def user_texts(fmt: ProviderFormat, body: dict[str, object]) -> list[str]:
    """Every user message's text (tool results left out)."""
    return fmt.user_texts(body)


def turn_user_message(log: TurnLog) -> agent.UserMessage:
    state = log.checkpoints()[-1]
    wrapper = agent.ConversationTurnStructure.FromString(log.blobs[state.turns[-1]])
    return agent.UserMessage.FromString(log.blobs[wrapper.agent_conversation_turn.user_message])


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_background_completion_starts_one_parent_turn_even_when_repeated(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    arguments = {
        "description": "Find the values",
        "prompt": "Read a.txt and b.txt.",
        "run_in_background": True,
    }
    fake.enqueue(fmt.tool_round([FakeToolCall("call_bg", "Task", (json.dumps(arguments),))]))
    fake.enqueue(fmt.answer("Started a subagent."))
    parent = CursorSession(cursor, "turn-bg", run_subagents=True)
    log = await parent.run(user_turn_message("what are A and B?", model))
    assert log.end == {}
    assert parent.background_tasks[0].run_in_background
    result = fmt.tool_results(fake.requests[1].json)["call_bg"]
    assert result.startswith("Subagent name: Find the values\nSubagent ID: background-1\n\n")
    # The subagent's end: a run of the parent conversation, with a simulated message.
    fake.enqueue(fmt.answer("A is 1 and B is 2."))
    done = await CursorSession(cursor, "turn-bg-done", blobs=log.blobs).run(
        completion_message(model, log.checkpoints()[-1])
    )
    assert done.end == {}
    body = fake.requests[2].json
    text = user_texts(fmt, body)[-1]
    for line in (
        "<background_task_completion>",
        "Title: Find the values",
        "Subagent ID: background-1",
        "Status: SUCCESS",
        "Tool call ID: call_bg",
        "A is 1 and B is 2.",
        "Background subagents you started earlier have finished",
    ):
        assert line in text, line
    user = turn_user_message(done)
    assert user.is_simulated_msg
    assert user.simulated_msg_reason == agent.SIMULATED_MSG_REASON_BACKGROUND_TASK_COMPLETION
    assert (user.simulated_message_metadata.title, user.simulated_message_metadata.task_id) == (
        "Find the values",
        "call_bg",
    )
    assert user.message_id == "subagent-completed:background-1"
    # The editor sends the same completion again: its message is in the history already, so
    # the model reads it once.
    fake.enqueue(fmt.answer("Still A=1, B=2."))
    again = await CursorSession(cursor, "turn-bg-again", blobs=done.blobs).run(
        completion_message(model, done.checkpoints()[-1])
    )
    assert again.end == {}
    completions = [t for t in user_texts(fmt, fake.requests[3].json) if "background-1" in t]
    assert len(completions) == 1


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"kind": agent.BACKGROUND_TASK_KIND_UNSPECIFIED}, "only subagent and shell completions"),
        ({"reason": agent.BACKGROUND_TASK_COMPLETION_REASON_TASK_PROGRESS}, "finished task"),
        ({"subagent_id": ""}, "subagent_id is empty"),
        ({"status": agent.BACKGROUND_TASK_STATUS_UNSPECIFIED}, "status is unspecified"),
    ],
)
async def test_a_completion_that_is_not_a_finished_subagent_is_refused(
    overrides: dict[str, object],
    problem: str,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
) -> None:
    model = FORMATS[0].add_model(server_store, fake)
    fake.enqueue(FORMATS[0].answer("hi"))
    first = await CursorSession(cursor, "turn-first").run(user_turn_message("hi", model))
    log = await CursorSession(cursor, "turn-bad", blobs=first.blobs).run(
        completion_message(model, first.checkpoints()[-1], **overrides)
    )
    assert isinstance(log.end, dict)
    error = log.end["error"]
    assert isinstance(error, dict) and error["code"] == "invalid_argument"
    assert problem in error["message"]
    assert len(fake.requests) == 1
