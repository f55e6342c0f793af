"""AskQuestion end to end over the Interaction channel: the real server, the fake Cursor client
answering as the user would (``answer_questions``) or not at all, and the fake provider in each
of the three formats. The model reads the user's answers in its next request."""

from __future__ import annotations

import asyncio
import json

import pytest

from store import Store
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    answer_questions,
    cancel_message,
    queries,
    updates,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat

QUESTIONS = {
    "title": "Before I start",
    "questions": [
        {
            "id": "db",
            "prompt": "Which database?",
            "options": [{"id": "pg", "label": "PostgreSQL"}, {"id": "sq", "label": "SQLite"}],
        },
        {
            "id": "extras",
            "prompt": "Anything else?",
            "options": [{"id": "docs", "label": "Docs"}, {"id": "tests", "label": "Tests"}],
            "allow_multiple": True,
        },
    ],
}


def ask(call_id: str = "call_ask") -> FakeToolCall:
    text = json.dumps(QUESTIONS)
    return FakeToolCall(call_id, "AskQuestion", (text[:7], text[7:]))


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_the_users_answers_reach_the_model_and_the_card_shows_them(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([ask()], text=["Let me ask first."]))
    fake.enqueue(fmt.answer("PostgreSQL with tests, then."))
    session = CursorSession(
        cursor,
        "turn-ask",
        answer_query=answer_questions({"db": ["pg"], "extras": ["docs", "tests"]}),
    )
    log = await session.run(user_turn_message("set up the project", model))
    assert log.end == {}
    # One query, wire id 1 (the run's first id), naming the model's call.
    (query,) = queries(log)
    assert query.id == 1
    args = query.ask_question_interaction_query.args
    assert query.ask_question_interaction_query.tool_call_id == "call_ask"
    assert args.title == "Before I start"
    assert [(q.id, q.allow_multiple, [o.id for o in q.options]) for q in args.questions] == [
        ("db", False, ["pg", "sq"]),
        ("extras", True, ["docs", "tests"]),
    ]
    # The started card comes before the query; the completed card holds the answers.
    kinds = log.kinds()
    assert kinds.index("tool_call_started") < kinds.index("interaction_query")
    (started,) = updates(log, "tool_call_started")
    assert started.tool_call.ask_question_tool_call.args == args
    (completed,) = updates(log, "tool_call_completed")
    card = completed.tool_call.ask_question_tool_call
    assert [a.question_id for a in card.result.success.answers] == ["db", "extras"]
    assert completed.tool_call.completed_at_ms >= completed.tool_call.started_at_ms > 0
    # No exec was ever sent: AskQuestion has one channel.
    assert not any(m.HasField("exec_server_message") for m in log.messages)
    assert fmt.tool_results(fake.requests[1].json) == {"call_ask": "db: pg\nextras: docs, tests"}
    assert "turn_ended" in kinds


async def test_typed_words_and_a_refusal_reach_the_model(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([ask()]))
    fake.enqueue(fmt.answer("ok"))
    typed = answer_questions({"db": "whatever is already installed", "extras": []})
    log = await CursorSession(cursor, "turn-typed", answer_query=typed).run(
        user_turn_message("set up", model)
    )
    assert log.end == {}
    assert fmt.tool_results(fake.requests[1].json) == {
        "call_ask": "db: whatever is already installed\nextras: "
    }
    fake.enqueue(fmt.tool_round([ask("call_ask_2")]))
    fake.enqueue(fmt.answer("fine, I will decide"))
    declined = answer_questions({}, reject="just pick one")
    message = user_turn_message("set up again", model)
    message.run_request.conversation_state.CopyFrom(log.checkpoints()[-1])
    log = await CursorSession(cursor, "turn-declined", answer_query=declined, blobs=log.blobs).run(
        message
    )
    assert log.end == {}
    results = fmt.tool_results(fake.requests[3].json)
    assert results["call_ask_2"] == "the user declined to answer: just pick one"
    (completed,) = updates(log, "tool_call_completed")
    assert completed.tool_call.ask_question_tool_call.result.rejected.reason == "just pick one"


async def test_cancel_while_the_question_is_pending_closes_it_and_ends_canceled(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[2]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([ask()]))
    session = CursorSession(cursor, "turn-ask-cancel")  # the user never answers
    task = asyncio.create_task(session.run(user_turn_message("set up", model)))
    for _ in range(200):
        if queries(session.log):
            break
        await asyncio.sleep(0.02)
    assert queries(session.log), "the question was never asked"
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    # A query has no abort on Cursor's wire: none is sent, and no card completes.
    assert not any(m.HasField("exec_server_control_message") for m in log.messages)
    assert updates(log, "tool_call_completed") == []
    assert len(fake.requests) == 1


async def test_a_new_message_while_the_question_is_pending_ends_the_first_run_canceled(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    """An interrupt (a new run on the conversation) closes the pending question as a cancel
    does: the first stream ends ``canceled`` with no abort frame, the new run answers."""
    fmt = FORMATS[1]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([ask()]))
    first = CursorSession(cursor, "turn-ask-first")  # the user never answers
    old = asyncio.create_task(first.run(user_turn_message("set up", model)))
    for _ in range(200):
        if queries(first.log):
            break
        await asyncio.sleep(0.02)
    assert queries(first.log), "the question was never asked"
    fake.enqueue(fmt.answer("Never mind the question."))
    new = await CursorSession(cursor, "turn-ask-second").run(
        user_turn_message("forget it", model, message_id="msg-2")
    )
    old_log = await asyncio.wait_for(old, 10)
    assert old_log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    assert not any(m.HasField("exec_server_control_message") for m in old_log.messages)
    assert updates(old_log, "tool_call_completed") == []
    assert new.end == {}
