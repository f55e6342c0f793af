"""SwitchMode, CreatePlan and the plan actions end to end: the real server, the fake Cursor
client approving, declining or saving as the user and editor would, and the fake provider in
each of the three formats.

A run keeps its mode; an approved switch is the mode of the checkpoints published after it,
so the next run that takes the state's mode runs in the new one. The conversation's plan is
the last successful CreatePlan's (Plan mode's tool), and a plan action runs it as a new
Agent-mode turn."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from actors.turn.actions import EXECUTE_PLAN_QUERY
from actors.turn.capabilities import ServerCapabilities, offered_tools
from prompt import load_prompt_assets
from store import Store
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    answer_by_kind,
    answer_create_plan,
    answer_questions,
    answer_switch_mode,
    cancel_message,
    queries,
    resume_message,
    updates,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from tests.support.plans import action_message, user_texts
from wire.proto import agent_v1_pb2 as agent

PLAN = agent.AGENT_MODE_PLAN
PLAN_URI = "file:///work/.cursor/plans/cache.plan.md"
FIRST_PLAN = "1. Add a cache module\n2. Use it in the reader"
SECOND_PLAN = "1. Add a cache module with a size bound\n2. Use it in the reader\n3. Test it"


def mode_tools(name: str) -> list[str]:
    # These servers have no search backend or image model: the tools needing one are not
    # offered (``actors/turn/capabilities.py``).
    return list(offered_tools(load_prompt_assets().mode(name), ServerCapabilities()).tool_names)


def call(call_id: str, name: str, arguments: dict[str, Any]) -> FakeToolCall:
    text = json.dumps(arguments)
    return FakeToolCall(call_id, name, (text[:5], text[5:]))


def switch(target: str = "plan", call_id: str = "call_switch") -> FakeToolCall:
    return call(call_id, "SwitchMode", {"target_mode_id": target, "explanation": "Big change."})


def plan_of(log: TurnLog, state: agent.ConversationStateStructure) -> str:
    """The text of the ConversationPlan blob a checkpoint names (the client holds the blob)."""
    assert state.HasField("plan")
    return agent.ConversationPlan.FromString(log.blobs[state.plan]).plan


async def until_queries(session: CursorSession, count: int) -> None:
    for _ in range(300):
        if len(queries(session.log)) >= count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"fewer than {count} queries were sent")


# ---- SwitchMode ----


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_an_approved_switch_reaches_the_model_and_becomes_the_checkpoints_mode(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([switch()], text=["This deserves a plan."]))
    fake.enqueue(fmt.answer("Switched; I will plan next turn."))
    session = CursorSession(cursor, "turn-switch", answer_query=answer_switch_mode())
    log = await session.run(user_turn_message("rework the storage layer", model))
    assert log.end == {}
    (query,) = queries(log)
    args = query.switch_mode_request_query.args
    assert (args.target_mode_id, args.explanation, args.tool_call_id) == (
        "plan",
        "Big change.",
        "call_switch",
    )
    kinds = log.kinds()
    assert kinds.index("tool_call_started") < kinds.index("interaction_query")
    (completed,) = updates(log, "tool_call_completed")
    card = completed.tool_call.switch_mode_tool_call
    assert card.args == args
    assert card.result.WhichOneof("result") == "success"
    assert card.result.success.to_mode_id == "plan"
    assert fmt.tool_results(fake.requests[1].json) == {
        "call_switch": "The user approved: the conversation is now in Plan mode. This run "
        "keeps the tools it started with until it ends; the next runs with Plan mode's."
    }
    # The run keeps its mode: the request after the switch offers the same tools.
    names = fmt.tool_names(fake.requests[0].json)
    assert "SwitchMode" in names
    assert fmt.tool_names(fake.requests[1].json) == names
    # Checkpoints before the answer carry the run's mode, those after it the new one.
    modes = [state.mode for state in log.checkpoints()]
    assert modes[0] == agent.AGENT_MODE_AGENT
    assert modes[-1] == agent.AGENT_MODE_PLAN
    assert modes == sorted(modes)  # once switched, it stays


async def test_a_declined_switch_is_an_error_the_model_reads_and_the_mode_stays(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[2]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([switch()]))
    fake.enqueue(fmt.answer("Fine, staying."))
    declined = answer_switch_mode(reject="just do it here")
    log = await CursorSession(cursor, "turn-decline", answer_query=declined).run(
        user_turn_message("rework the storage layer", model)
    )
    assert log.end == {}
    (completed,) = updates(log, "tool_call_completed")
    assert completed.tool_call.switch_mode_tool_call.result.rejected.reason == "just do it here"
    body = fake.requests[1].json
    assert fmt.tool_results(body) == {
        "call_switch": "The user declined to switch to Plan mode: just do it here"
    }
    # The committed result is an error (the checkpoint's tool message says so).
    roots = [json.loads(log.blobs[r]) for r in log.checkpoints()[-1].root_prompt_messages_json]
    (tool,) = [root for root in roots if root["role"] == "tool"]
    assert tool["content"][0]["isError"] is True
    assert {state.mode for state in log.checkpoints()} == {agent.AGENT_MODE_AGENT}


async def test_an_unknown_mode_is_an_argument_error_and_no_query_is_sent(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([switch("turbo")]))
    fake.enqueue(fmt.answer("Oops."))
    log = await CursorSession(cursor, "turn-unknown-mode").run(user_turn_message("go", model))
    assert log.end == {}
    assert queries(log) == []
    assert fmt.tool_results(fake.requests[1].json) == {
        "call_switch": "invalid arguments for SwitchMode: 'target_mode_id' 'turbo' is not a "
        "mode; use one of agent, ask, plan, debug, multitask"
    }


async def mid_turn_state(
    fmt: ProviderFormat,
    fake: FakeProvider,
    cursor: FakeCursor,
    model: str,
    switch_answer: Any,
) -> tuple[CursorSession, asyncio.Task[TurnLog], agent.ConversationStateStructure]:
    """A turn that switched (or not) and then waits on an unanswered AskQuestion: its run, and
    the staged checkpoint a reconnecting client would resume from."""
    options = [{"id": "y", "label": "Yes"}, {"id": "n", "label": "No"}]
    question = {"questions": [{"id": "q", "prompt": "Go?", "options": options}]}
    fake.enqueue(fmt.tool_round([switch()]))
    fake.enqueue(fmt.tool_round([call("call_ask", "AskQuestion", question)]))
    session = CursorSession(
        cursor, "turn-first", answer_query=answer_by_kind(switch_mode_request_query=switch_answer)
    )
    task = asyncio.create_task(session.run(user_turn_message("rework it", model)))
    await until_queries(session, 2)
    for _ in range(300):
        states = session.log.checkpoints()
        if states and states[-1].pending_tool_calls:
            return session, task, states[-1]
        await asyncio.sleep(0.02)
    raise AssertionError("no staged checkpoint for the question")


async def test_a_resume_after_an_approved_switch_runs_in_the_new_mode(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    first, task, state = await mid_turn_state(fmt, fake, cursor, model, answer_switch_mode())
    assert state.mode == PLAN
    # The reconnecting client resumes: the pending question is asked again, and the model's
    # next call is a Plan-mode call (Plan's prompt and tools), while the first run's calls
    # all offered Agent's.
    assert fmt.tool_names(fake.requests[1].json) == mode_tools("agent")
    fake.enqueue(fmt.answer("Planning it, then."))
    resumed = CursorSession(
        cursor, "turn-resumed", blobs=first.log.blobs, answer_query=answer_questions({"q": ["y"]})
    )
    log = await resumed.run(
        resume_message(model, conversation_id="conv-1", conversation_state=state)
    )
    assert log.end == {}
    body = fake.requests[-1].json
    assert fmt.tool_names(body) == mode_tools("plan")
    assert "Plan mode" in json.dumps(body["messages"][0])
    assert fmt.tool_results(body)["call_ask"] == "q: y"
    assert {s.mode for s in log.checkpoints()} == {PLAN}
    superseded = await asyncio.wait_for(task, 10)
    assert superseded.end == {"error": {"code": "canceled", "message": "run was cancelled"}}


async def test_a_resume_after_a_declined_switch_stays_in_agent_mode(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[1]
    model = fmt.add_model(server_store, fake)
    declined = answer_switch_mode(reject="no")
    first, task, state = await mid_turn_state(fmt, fake, cursor, model, declined)
    assert state.mode == agent.AGENT_MODE_AGENT
    fake.enqueue(fmt.answer("Going on."))
    resumed = CursorSession(
        cursor, "turn-resumed", blobs=first.log.blobs, answer_query=answer_questions({"q": ["y"]})
    )
    log = await resumed.run(
        resume_message(model, conversation_id="conv-1", conversation_state=state)
    )
    assert log.end == {}
    assert {s.mode for s in log.checkpoints()} == {agent.AGENT_MODE_AGENT}
    assert fmt.tool_results(fake.requests[-1].json)["call_ask"] == "q: y"
    superseded = await asyncio.wait_for(task, 10)  # the resume took the conversation over
    assert superseded.end == {"error": {"code": "canceled", "message": "run was cancelled"}}


async def test_a_new_message_after_an_approved_switch_carries_its_own_mode(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([switch()]))
    fake.enqueue(fmt.answer("Switched."))
    log = await CursorSession(cursor, "turn-1", answer_query=answer_switch_mode()).run(
        user_turn_message("rework it", model)
    )
    assert log.checkpoints()[-1].mode == agent.AGENT_MODE_PLAN
    fake.enqueue(fmt.answer("Doing it here."))
    message = user_turn_message(
        "no, just do it", model, message_id="msg-2", conversation_state=log.checkpoints()[-1]
    )
    log = await CursorSession(cursor, "turn-2", blobs=log.blobs).run(message)
    assert log.end == {}
    assert {s.mode for s in log.checkpoints()} == {agent.AGENT_MODE_AGENT}


# ---- CreatePlan and the plan actions ----


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_two_plans_the_second_without_name_and_executing_runs_the_latest(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
) -> None:
    model = fmt.add_model(server_store, fake)
    first_args = {
        "name": "Reader cache",
        "overview": "Cache file reads.",
        "plan": FIRST_PLAN,
        "todos": [{"id": "cache", "content": "Add the cache"}, {"id": "use", "content": "Use it"}],
    }
    fake.enqueue(fmt.tool_round([call("call_plan_1", "CreatePlan", first_args)]))
    fake.enqueue(fmt.answer("Here is the plan."))
    save = answer_create_plan(PLAN_URI)
    log = await CursorSession(cursor, "turn-plan-1", answer_query=save).run(
        user_turn_message("plan a reader cache", model, mode=PLAN)
    )
    assert log.end == {}
    (query,) = queries(log)
    sent = query.create_plan_request_query
    assert sent.tool_call_id == "call_plan_1"
    assert (sent.args.name, sent.args.overview, sent.args.plan) == (
        "Reader cache",
        "Cache file reads.",
        FIRST_PLAN,
    )
    assert [(t.id, t.content, t.status) for t in sent.args.todos] == [
        ("cache", "Add the cache", agent.TODO_STATUS_PENDING),
        ("use", "Use it", agent.TODO_STATUS_PENDING),
    ]
    (completed,) = updates(log, "tool_call_completed")
    card = completed.tool_call.create_plan_tool_call
    assert card.args == sent.args
    assert card.result.plan_uri == PLAN_URI and card.result.HasField("success")
    saved = f"The plan was saved at {PLAN_URI} and is shown to the user."
    assert fmt.tool_results(fake.requests[1].json) == {"call_plan_1": saved}
    assert plan_of(log, log.checkpoints()[-1]) == FIRST_PLAN

    # A revision later in the conversation leaves the name out, and replaces the plan.
    second_args = {"plan": SECOND_PLAN}
    fake.enqueue(fmt.tool_round([call("call_plan_2", "CreatePlan", second_args)]))
    fake.enqueue(fmt.answer("Revised."))
    message = user_turn_message(
        "bound its size",
        model,
        message_id="msg-2",
        mode=PLAN,
        conversation_state=log.checkpoints()[-1],
    )
    log = await CursorSession(cursor, "turn-plan-2", answer_query=save, blobs=log.blobs).run(
        message
    )
    assert log.end == {}
    (query,) = queries(log)
    assert query.create_plan_request_query.args.name == ""
    assert fmt.tool_results(fake.requests[3].json) == {"call_plan_1": saved, "call_plan_2": saved}
    assert plan_of(log, log.checkpoints()[-1]) == SECOND_PLAN

    # Executing the plan: a new Agent-mode turn whose runtime message holds the latest plan.
    fake.enqueue(fmt.answer("Starting on step 1."))
    execute = agent.ExecutePlanAction(plan_file_uri=PLAN_URI)
    log = await CursorSession(cursor, "turn-execute", blobs=log.blobs).run(
        action_message(model, log.checkpoints()[-1], execute_plan_action=execute)
    )
    assert log.end == {}
    body = fake.requests[4].json
    runtime = user_texts(body)[-1]
    assert f'<approved_plan uri="{PLAN_URI}">\n{SECOND_PLAN}\n</approved_plan>' in runtime
    assert FIRST_PLAN not in runtime
    assert runtime.endswith(f"<user_query>\n{EXECUTE_PLAN_QUERY}\n</user_query>")
    assert "CreatePlan" in fmt.tool_names(fake.requests[0].json)
    assert fmt.tool_names(body) == mode_tools("agent")
    final = log.checkpoints()[-1]
    assert final.mode == agent.AGENT_MODE_AGENT
    assert plan_of(log, final) == SECOND_PLAN
    sets = [m.kv_server_message.set_blob_args.blob_id for m in log.messages]
    assert final.plan not in sets  # the client's state named it: it has the blob
    turn = agent.ConversationTurnStructure.FromString(log.blobs[final.turns[-1]])
    user = agent.UserMessage.FromString(log.blobs[turn.agent_conversation_turn.user_message])
    assert user.is_simulated_msg
    assert user.simulated_msg_reason == agent.SIMULATED_MSG_REASON_PLAN_EXECUTION


async def test_plan_actions_take_their_own_plan_or_the_users_words_and_need_a_plan(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[1]
    model = fmt.add_model(server_store, fake)
    # No plan anywhere: the run names the problem.
    log = await CursorSession(cursor, "turn-no-plan").run(
        action_message(model, None, execute_plan_action=agent.ExecutePlanAction())
    )
    assert log.end == {
        "error": {
            "code": "invalid_argument",
            "message": "protocol error: execute_plan_action: the conversation has no plan (no "
            "successful CreatePlan) and the action carries none",
        }
    }
    assert fake.requests == []
    # The action's own plan text.
    fake.enqueue(fmt.answer("On it."))
    own = agent.ExecutePlanAction(plan=agent.ConversationPlan(plan="Rename foo to bar."))
    log = await CursorSession(cursor, "turn-own-plan").run(
        action_message(model, None, execute_plan_action=own)
    )
    assert log.end == {}
    assert (
        "<approved_plan>\nRename foo to bar.\n</approved_plan>"
        in user_texts(fake.requests[-1].json)[-1]
    )
    # start_plan_action: the conversation's plan, with what the user typed as the query.
    fake.enqueue(fmt.tool_round([call("call_plan", "CreatePlan", {"plan": FIRST_PLAN})]))
    fake.enqueue(fmt.answer("Planned."))
    log = await CursorSession(cursor, "turn-plan", answer_query=answer_create_plan()).run(
        user_turn_message("plan it", model, conversation_id="conv-2", mode=PLAN)
    )
    fake.enqueue(fmt.answer("Building."))
    start = agent.StartPlanAction(
        user_message=agent.UserMessage(text="build it, but skip the tests", message_id="m-b")
    )
    log = await CursorSession(cursor, "turn-start", blobs=log.blobs).run(
        action_message(
            model, log.checkpoints()[-1], conversation_id="conv-2", start_plan_action=start
        )
    )
    assert log.end == {}
    runtime = user_texts(fake.requests[-1].json)[-1]
    assert f"<approved_plan>\n{FIRST_PLAN}\n</approved_plan>" in runtime
    assert runtime.endswith("<user_query>\nbuild it, but skip the tests\n</user_query>")


async def test_a_plan_without_text_or_not_saved_is_an_error_the_model_reads(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[2]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([call("call_empty", "CreatePlan", {"name": "Nothing"})]))
    fake.enqueue(fmt.tool_round([call("call_full", "CreatePlan", {"plan": FIRST_PLAN})]))
    fake.enqueue(fmt.answer("I could not save it."))
    failing = answer_create_plan(error="the plans folder is read-only")
    log = await CursorSession(cursor, "turn-bad-plan", answer_query=failing).run(
        user_turn_message("plan it", model, mode=PLAN)
    )
    assert log.end == {}
    assert len(queries(log)) == 1  # the call without a plan never reached the editor
    assert fmt.tool_results(fake.requests[1].json) == {
        "call_empty": "invalid arguments for CreatePlan: 'plan' is required: the plan's text "
        "(markdown)"
    }
    assert fmt.tool_results(fake.requests[2].json)["call_full"] == (
        "The plan could not be saved: the plans folder is read-only"
    )
    cards = [u.tool_call.create_plan_tool_call for u in updates(log, "tool_call_completed")]
    assert [card.result.WhichOneof("result") for card in cards] == ["error", "error"]
    assert not log.checkpoints()[-1].HasField("plan")  # no plan was ever created


@pytest.mark.parametrize(
    ("tool_call", "mode"),
    [
        (switch(), agent.AGENT_MODE_AGENT),
        (call("call_plan", "CreatePlan", {"plan": FIRST_PLAN}), PLAN),
    ],
    ids=["SwitchMode", "CreatePlan"],
)
async def test_cancel_while_the_query_is_pending_ends_canceled(
    tool_call: FakeToolCall,
    mode: agent.AgentMode,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([tool_call]))
    session = CursorSession(cursor, "turn-cancel")  # nobody answers
    task = asyncio.create_task(session.run(user_turn_message("go", model, mode=mode)))
    await until_queries(session, 1)
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    assert not any(m.HasField("exec_server_control_message") for m in log.messages)
    assert updates(log, "tool_call_completed") == []
    assert len(fake.requests) == 1
