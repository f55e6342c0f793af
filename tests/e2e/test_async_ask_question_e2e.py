"""AskQuestion with ``run_async`` end to end: the editor answers ``async`` at once, the call
completes and the turn goes on; the answers arrive later as a RunRequest of their own
(``async_ask_question_completion_action``), whose turn gives them to the model."""

from __future__ import annotations

import json

import pytest

from actors.turn.actions import ASYNC_ANSWERS_QUERY
from store import Store
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    answer_questions,
    answer_questions_later,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from tests.support.plans import action_message, user_texts
from wire.proto import agent_v1_pb2 as agent
from wire.tools.ask_question import ASYNC_PENDING_TEXT

QUESTIONS = {
    "questions": [
        {
            "id": "db",
            "prompt": "Which database?",
            "options": [{"id": "pg", "label": "PostgreSQL"}, {"id": "sq", "label": "SQLite"}],
        },
        {
            "id": "style",
            "prompt": "Naming style?",
            "options": [{"id": "snake", "label": "snake_case"}, {"id": "camel", "label": "camel"}],
        },
    ],
}


def ask(call_id: str, *, run_async: bool = True) -> FakeToolCall:
    text = json.dumps({**QUESTIONS, "run_async": run_async})
    return FakeToolCall(call_id, "AskQuestion", (text[:9], text[9:]))


def answers(call_id: str, *pairs: tuple[str, str]) -> agent.AsyncAskQuestionCompletionAction:
    success = agent.AskQuestionSuccess()
    for question_id, value in pairs:
        success.answers.add(question_id=question_id, selected_option_ids=[value])
    return agent.AsyncAskQuestionCompletionAction(
        original_tool_call_id=call_id, result=agent.AskQuestionResult(success=success)
    )


async def asked_later(
    fmt: ProviderFormat, fake: FakeProvider, cursor: FakeCursor, model: str
) -> TurnLog:
    """A turn that asks asynchronously and finishes without the answers."""
    fake.enqueue(fmt.tool_round([ask("call_async")], text=["Asking, and starting meanwhile."]))
    fake.enqueue(fmt.answer("Scaffolded; waiting for your answers on the details."))
    log = await CursorSession(cursor, "turn-ask", answer_query=answer_questions_later).run(
        user_turn_message("set up the project", model)
    )
    assert log.end == {}
    return log


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_async_answers_complete_the_call_at_once_and_reach_the_model_later(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    log = await asked_later(fmt, fake, cursor, model)
    (query,) = [m.interaction_query for m in log.messages if m.HasField("interaction_query")]
    assert query.ask_question_interaction_query.args.run_async is True
    (completed,) = [
        m.interaction_update.tool_call_completed
        for m in log.messages
        if m.interaction_update.HasField("tool_call_completed")
    ]
    card = completed.tool_call.ask_question_tool_call
    assert card.result.WhichOneof("result") == "async"
    assert fmt.tool_results(fake.requests[1].json) == {"call_async": ASYNC_PENDING_TEXT}
    assert "turn_ended" in log.kinds()

    # Later: the answers, as a run of their own on the conversation's state.
    fake.enqueue(fmt.answer("PostgreSQL and snake_case it is."))
    completion = answers("call_async", ("db", "pg"), ("style", "snake"))
    later = await CursorSession(cursor, "turn-answers", blobs=log.blobs).run(
        action_message(
            model, log.checkpoints()[-1], async_ask_question_completion_action=completion
        )
    )
    assert later.end == {}
    assert len(fake.requests) == 3
    runtime = user_texts(fake.requests[2].json)[-1]
    assert (
        '<async_question_answers tool_call_id="call_async">\n'
        "Earlier you asked the user questions with AskQuestion (call call_async) and went on "
        "without waiting. The user has answered them:\n"
        "- db (Which database?): pg\n"
        "- style (Naming style?): snake\n"
        "</async_question_answers>"
    ) in runtime
    assert runtime.endswith(f"<user_query>\n{ASYNC_ANSWERS_QUERY}\n</user_query>")
    # The earlier history is there too: the model sees its call and the async result.
    assert fmt.tool_results(fake.requests[2].json) == {"call_async": ASYNC_PENDING_TEXT}
    assert later.checkpoints()[-1].mode == agent.AGENT_MODE_AGENT


async def test_a_completion_naming_no_async_question_of_the_conversation_is_refused(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    log = await asked_later(fmt, fake, cursor, model)
    state = log.checkpoints()[-1]
    unknown = await CursorSession(cursor, "turn-unknown", blobs=log.blobs).run(
        action_message(
            model, state, async_ask_question_completion_action=answers("call_nope", ("db", "pg"))
        )
    )
    assert unknown.end == {
        "error": {
            "code": "invalid_argument",
            "message": "protocol error: async_ask_question_completion_action: no AskQuestion "
            "call 'call_nope' in this conversation",
        }
    }
    # A question that was answered there and then did not run asynchronously.
    fake.enqueue(fmt.tool_round([ask("call_sync", run_async=False)]))
    fake.enqueue(fmt.answer("ok"))
    message = user_turn_message("again", model, message_id="msg-2", conversation_state=state)
    sync = answer_questions({"db": ["sq"], "style": ["camel"]})
    log = await CursorSession(cursor, "turn-sync", answer_query=sync, blobs=log.blobs).run(message)
    assert log.end == {}
    refused = await CursorSession(cursor, "turn-refused", blobs=log.blobs).run(
        action_message(
            model,
            log.checkpoints()[-1],
            async_ask_question_completion_action=answers("call_sync", ("db", "pg")),
        )
    )
    assert refused.end == {
        "error": {
            "code": "invalid_argument",
            "message": "protocol error: async_ask_question_completion_action: AskQuestion call "
            "'call_sync' did not run asynchronously",
        }
    }
    # A completion without answers is refused before anything else.
    empty = agent.AsyncAskQuestionCompletionAction(original_tool_call_id="call_async")
    nothing = await CursorSession(cursor, "turn-empty", blobs=log.blobs).run(
        action_message(model, log.checkpoints()[-1], async_ask_question_completion_action=empty)
    )
    assert nothing.end == {
        "error": {
            "code": "invalid_argument",
            "message": "protocol error: async_ask_question_completion_action: the result for "
            "call_async carries no answers",
        }
    }
    assert len(fake.requests) == 4  # none of the refused runs called the model
