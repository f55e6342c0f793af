"""Task and subagents end to end: the real server, the fake Cursor client running each
``subagent_args`` as the editor does (a child run of its own, with the parent headers on its
appends, whose final message answers the Task), and the fake provider in each format."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from store import Store
from tests.e2e.test_agent_modes_e2e import MODE_TOOLS
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    cancel_message,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from wire.proto import agent_v1_pb2 as agent

PARENT_HEADERS = {"x-parent-request-id": "turn-parent", "x-parent-agent-tool-call-id": "call_p"}


def call(call_id: str, name: str, **arguments: Any) -> FakeToolCall:
    text = json.dumps(arguments)
    return FakeToolCall(call_id, name, (text[:5], text[5:]))


def task(call_id: str = "call_task", **arguments: Any) -> FakeToolCall:
    return call(
        call_id,
        "Task",
        **{"description": "Find the values", "prompt": "Read a.txt and b.txt.", **arguments},
    )


def execs(log: TurnLog, variant: str) -> list[agent.ExecServerMessage]:
    return [
        m.exec_server_message
        for m in log.messages
        if m.exec_server_message.WhichOneof("message") == variant
    ]


def completed_cards(log: TurnLog) -> list[agent.ToolCall]:
    return [
        m.interaction_update.tool_call_completed.tool_call
        for m in log.messages
        if m.interaction_update.HasField("tool_call_completed")
    ]


def runtime_text(fmt: ProviderFormat, body: dict[str, Any]) -> str:
    """The request's first user message (the runtime message), as text."""
    return fmt.user_texts(body)[0]


def subagent_request(text: str, model: str, **fields: Any) -> agent.AgentClientMessage:
    message = user_turn_message(text, model, conversation_id="child-conv")
    for name, value in fields.items():
        setattr(message.run_request, name, value)
    return message


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_foreground_task_runs_an_explore_subagent_and_the_parent_reads_its_report(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("A=1\n")
    (workspace / "b.txt").write_text("B=2\n")
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([task(subagent_type="explore")], text=["Delegating."]))
    fake.enqueue(
        fmt.tool_round(
            [
                call("call_ra", "Read", path=str(workspace / "a.txt")),
                call("call_rb", "Read", path=str(workspace / "b.txt")),
            ]
        )
    )
    fake.enqueue(fmt.answer("a.txt sets A=1; b.txt sets B=2."))
    fake.enqueue(fmt.answer("A is 1 and B is 2."))
    session = CursorSession(cursor, "turn-task", workspace=workspace, run_subagents=True)
    log = await session.run(user_turn_message("what are A and B?", model))
    assert log.end == {}
    # The Task went out as one subagent_args request, with every field it carries.
    (exec_message,) = execs(log, "subagent_args")
    assert exec_message.exec_id == "call_task"
    assert exec_message.HasField("accept_hook_additional_contexts")
    assert not exec_message.accept_hook_additional_contexts
    args = exec_message.subagent_args
    assert (args.tool_call_id, args.subagent_type, args.model_id) == ("call_task", "explore", model)
    assert args.prompt == "Read a.txt and b.txt."
    assert (args.parent_conversation_id, args.root_parent_conversation_id) == ("conv-1", "conv-1")
    assert args.environment == agent.SUBAGENT_EXECUTION_ENVIRONMENT_LOCAL
    assert not args.run_in_background and not args.readonly
    # The child ran as its own run, in Subagent mode: its prompt, its tools, the Task's words.
    (child,) = session.subagents
    assert child.log.end == {}
    assert [e.read_args.path for e in execs(child.log, "read_args")] == [
        str(workspace / "a.txt"),
        str(workspace / "b.txt"),
    ]
    child_body = fake.requests[1].json
    assert fmt.tool_names(child_body) == MODE_TOOLS["subagent"]
    assert "Subagent mode" in fmt.system_prompt(child_body)
    assert "Read a.txt and b.txt." in runtime_text(fmt, child_body)
    assert fmt.tool_results(fake.requests[2].json) == {"call_ra": "A=1\n", "call_rb": "B=2\n"}
    # The parent's next request holds the report, under the subagent's name and id.
    assert fmt.tool_results(fake.requests[3].json) == {
        "call_task": "Subagent name: Find the values\nSubagent ID: subagent-1\n\n"
        "a.txt sets A=1; b.txt sets B=2."
    }
    (card,) = completed_cards(log)
    assert card.task_tool_call.args.subagent_type.HasField("explore")
    success = card.task_tool_call.result.success
    assert (success.agent_id, success.result_suffix) == (
        "subagent-1",
        "a.txt sets A=1; b.txt sets B=2.",
    )


def offered(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An openai-chat request's tools by name."""
    return {tool["function"]["name"]: tool["function"] for tool in body["tools"]}


async def test_a_subagent_run_is_in_subagent_mode_whatever_its_mode(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.answer("nothing to do"))
    fake.enqueue(fmt.answer("ok"))
    fake.enqueue(fmt.answer("ok"))
    message = subagent_request("look around", model, subagent_type_name="explore")
    message.run_request.action.user_message_action.user_message.mode = agent.AGENT_MODE_ASK
    log = await CursorSession(cursor, "turn-child", parent_headers=PARENT_HEADERS).run(message)
    assert log.end == {}
    tools = offered(fake.requests[0].json)
    assert list(tools) == MODE_TOOLS["subagent"]
    assert "Subagent mode" in fmt.system_prompt(fake.requests[0].json)
    # Its Task is the variant without the cloud fields; Agent mode's keeps them.
    assert not {"environment", "cloud_base_branch"} & set(tools["Task"]["parameters"]["properties"])
    await CursorSession(cursor, "turn-agent").run(user_turn_message("hi", model))
    agent_task = offered(fake.requests[1].json)["Task"]["parameters"]["properties"]
    assert {"environment", "cloud_base_branch"} <= set(agent_task)
    # An editor that asks for no progress reports gets no UpdateCurrentStep.
    quiet = subagent_request(
        "look", model, subagent_type_name="", suppress_subagent_progress_update_tool=True
    )
    log = await CursorSession(cursor, "turn-quiet", parent_headers=PARENT_HEADERS).run(quiet)
    assert log.end == {}
    expected = [name for name in MODE_TOOLS["subagent"] if name != "UpdateCurrentStep"]
    assert list(offered(fake.requests[2].json)) == expected


async def test_a_subagent_run_without_its_parent_headers_is_refused_naming_them(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = FORMATS[0].add_model(server_store, fake)
    log = await CursorSession(cursor, "turn-orphan").run(
        subagent_request("look around", model, subagent_type_name="explore")
    )
    assert isinstance(log.end, dict)
    error = log.end["error"]
    assert isinstance(error, dict) and error["code"] == "invalid_argument"
    assert "X-Parent-Request-Id" in error["message"]
    assert "X-Parent-Agent-Tool-Call-Id" in error["message"]
    assert fake.requests == []


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_disabled_subagent_type_or_an_unknown_model_is_an_error_the_model_reads(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(
        fmt.tool_round(
            [
                task("call_off", subagent_type="explore"),
                task("call_bad", model="gpt-nope"),
            ]
        )
    )
    fake.enqueue(fmt.answer("I will do it myself."))
    message = user_turn_message("find the values", model)
    message.run_request.subagent_model_overrides.add(subagent_type="explore", disabled=True)
    session = CursorSession(cursor, "turn-refused", run_subagents=True)
    log = await session.run(message)
    assert log.end == {}
    assert execs(log, "subagent_args") == [] and session.subagents == []
    results = fmt.tool_results(fake.requests[1].json)
    assert "the explore subagent is disabled" in results["call_off"]
    assert "'gpt-nope', is not configured on this server" in results["call_bad"]
    assert "fake" in results["call_bad"]  # the configured models are named
    errors = {c.task_tool_call.result.error.error for c in completed_cards(log)}
    assert errors == {results["call_off"], results["call_bad"]}


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_the_users_setting_for_the_type_picks_the_childs_model_over_the_tasks(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(
        fmt.tool_round(
            [
                task("call_set", subagent_type="shell", model="gpt-nope"),
                task("call_named", subagent_type="explore", model="Fake"),
                task("call_inherit", model="inherit"),
            ]
        )
    )
    message = user_turn_message("go", model)
    message.run_request.subagent_model_overrides.add(
        subagent_type="shell", model=agent.RequestedModel(model_id=model)
    )
    session = CursorSession(cursor, "turn-models")  # no subagent runs: the Tasks stay pending
    run = asyncio.create_task(session.run(message))
    for _ in range(300):
        if len(execs(session.log, "subagent_args")) == 3:
            break
        await asyncio.sleep(0.02)
    await session.send(cancel_message())
    log = await asyncio.wait_for(run, 10)
    requests = {e.exec_id: e.subagent_args for e in execs(log, "subagent_args")}
    assert {call_id: args.model_id for call_id, args in requests.items()} == {
        "call_set": model,
        "call_named": model,
        "call_inherit": model,
    }
    assert requests["call_inherit"].subagent_type == ""


async def test_update_current_step_shows_the_step_at_its_index_in_the_turn(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(
        fmt.tool_round(
            [call("call_step", "UpdateCurrentStep", current_step="reading the parser")],
            text=["Starting."],
        )
    )
    fake.enqueue(
        fmt.tool_round([call("call_done", "UpdateCurrentStep", final_summary="All read.")])
    )
    fake.enqueue(fmt.answer("Report: nothing wrong."))
    log = await CursorSession(cursor, "turn-steps", parent_headers=PARENT_HEADERS).run(
        subagent_request("check the parser", model, subagent_type_name="explore")
    )
    assert log.end == {}
    first, second = (c.communicate_update_tool_call for c in completed_cards(log))
    assert first.args.current_step == "reading the parser"
    # The text is step 1, the call step 2; then the second call follows both.
    assert (first.result.success.current_step, first.result.success.message_index) == (
        "reading the parser",
        2,
    )
    assert second.args.final_summary == "All read."
    assert second.result.success.message_index == 3
    results = fmt.tool_results(fake.requests[1].json)
    assert results == {"call_step": "The user now sees current step: reading the parser"}
    assert not any(m.HasField("exec_server_message") for m in log.messages)


async def test_cancel_of_the_parent_mid_task_aborts_its_exec_and_the_editor_cancels_the_child(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    fmt = FORMATS[2]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([task()]))
    fake.enqueue(fmt.tool_round([call("call_sleep", "Shell", command="sleep 30")]))
    session = CursorSession(cursor, "turn-cancel", workspace=tmp_path, run_subagents=True)
    run = asyncio.create_task(session.run(user_turn_message("go", model)))
    for _ in range(300):
        if session.subagents and execs(session.subagents[0].log, "shell_stream_args"):
            break
        await asyncio.sleep(0.02)
    (child,) = session.subagents
    assert execs(child.log, "shell_stream_args"), "the child never ran its command"
    await session.send(cancel_message())
    log = await asyncio.wait_for(run, 15)
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    (task_exec,) = execs(log, "subagent_args")
    aborts = [
        m.exec_server_control_message.abort.id
        for m in log.messages
        if m.exec_server_control_message.HasField("abort")
    ]
    assert aborts == [task_exec.id]
    # The editor, told by the abort, cancelled the child run; the child aborted its shell.
    assert child.log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    assert any(m.exec_server_control_message.HasField("abort") for m in child.log.messages)
    assert len(fake.requests) == 2
