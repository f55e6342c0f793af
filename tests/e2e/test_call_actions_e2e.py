"""The user acts on a running call from the editor while the turn runs, end to end with the
fake editor: a foreground Shell or Task moved to the background (the server asks the editor
with ``force_background_*_args``; the call ends as a backgrounded one and the turn goes on), and
one subagent cancelled (``cancel_subagent_action``: its Task exec is aborted, the editor
cancels the child run, the model reads that the user cancelled it, and the turn goes on)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from store import Store
from tests.e2e.test_background_task_e2e import completion_message, user_texts
from tests.e2e.test_shell_command_e2e import shell_command_message
from tests.e2e.test_task_e2e import call, completed_cards, execs, task
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    cancel_message,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from wire.proto import agent_v1_pb2 as agent

CANCELED = {"error": {"code": "canceled", "message": "run was cancelled"}}


def action_message(**action: Any) -> agent.AgentClientMessage:
    return agent.AgentClientMessage(conversation_action=agent.ConversationAction(**action))


async def wait_for(condition: Any, what: str) -> None:
    for _ in range(400):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


def aborts(log: TurnLog) -> list[int]:
    return [
        m.exec_server_control_message.abort.id
        for m in log.messages
        if m.exec_server_control_message.HasField("abort")
    ]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_shell_the_user_moves_to_the_background_ends_its_call_and_the_turn_goes_on(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    tmp_path: Path,
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(
        fmt.tool_round([call("call_srv", "Shell", command="sleep 30", block_until_ms=60000)])
    )
    fake.enqueue(fmt.answer("The server runs in the background."))
    session = CursorSession(cursor, "turn-move-shell", workspace=tmp_path)
    started = time.monotonic()
    run = asyncio.create_task(session.run(user_turn_message("start the server", model)))
    await wait_for(lambda: session.movable("call_srv"), "the Shell running in the editor")
    await session.send(action_message(background_shell_action={"tool_call_id": "call_srv"}))
    log = await asyncio.wait_for(run, 15)
    assert log.end == {}
    assert time.monotonic() - started < 20  # not the command's 30 s, nor its 60 s block
    (force,) = execs(log, "force_background_shell_args")
    assert force.force_background_shell_args.tool_call_id == "call_srv"
    assert force.exec_id == "call_srv"
    (shell_exec,) = execs(log, "shell_stream_args")
    assert force.id > shell_exec.id  # a request of its own
    text = fmt.tool_results(fake.requests[1].json)["call_srv"]
    assert "keeps running in the background: shell_id=1" in text
    (card,) = completed_cards(log)
    assert card.shell_tool_call.result.is_background
    assert (
        card.shell_tool_call.result.success.background_reason
        == agent.SHELL_BACKGROUND_REASON_USER_REQUEST
    )
    assert not aborts(log)


async def test_a_task_the_user_moves_to_the_background_reports_back_later(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    """The Task ends at once as a background one while its child runs on; the child's end then
    comes as a completion of the parent conversation, which the history check accepts."""
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([task()]))
    fake.enqueue(fmt.tool_round([call("call_sleep", "Shell", command="sleep 30")]))
    fake.enqueue(fmt.answer("It goes on in the background."))
    session = CursorSession(cursor, "turn-move-task", workspace=tmp_path, run_subagents=True)
    run = asyncio.create_task(session.run(user_turn_message("find the values", model)))
    await wait_for(
        lambda: session.subagents and execs(session.subagents[0].log, "shell_stream_args"),
        "the child's command",
    )
    await session.send(action_message(background_subagent_action={"tool_call_id": "call_task"}))
    log = await asyncio.wait_for(run, 15)
    assert log.end == {}
    (force,) = execs(log, "force_background_subagent_args")
    assert force.force_background_subagent_args.tool_call_id == "call_task"
    assert not aborts(log)  # the child was not stopped
    result = fmt.tool_results(fake.requests[2].json)["call_task"]
    assert result.startswith("Subagent name: Find the values\nSubagent ID: subagent-1\n\n")
    assert "runs in the background" in result
    (card,) = completed_cards(log)
    success = card.task_tool_call.result.success
    assert success.is_background
    assert success.background_reason == agent.SUBAGENT_BACKGROUND_REASON_USER_REQUEST
    # The child is still running; the user stops it, and its end reports back.
    (child_run,) = session.moved_children
    assert not child_run.done()
    (child,) = session.subagents
    await child.send(cancel_message("done waiting"))
    assert (await asyncio.wait_for(child_run, 10)).end == CANCELED
    fake.enqueue(fmt.answer("The subagent was stopped."))
    done = await CursorSession(cursor, "turn-move-task-done", blobs=log.blobs).run(
        completion_message(
            model,
            log.checkpoints()[-1],
            task_id="call_task",
            tool_call_id="call_task",
            subagent_id="subagent-1",
            title="Find the values",
            status=agent.BACKGROUND_TASK_STATUS_ABORTED,
        )
    )
    assert done.end == {}
    assert "Status: ABORTED" in user_texts(fmt, fake.requests[-1].json)[-1]
    assert len(fake.requests) == 4  # parent, child, parent, the completion turn


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_cancel_subagent_ends_its_task_with_a_cancelled_result_and_the_turn_goes_on(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    tmp_path: Path,
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([task()]))
    fake.enqueue(fmt.tool_round([call("call_sleep", "Shell", command="sleep 30")]))
    fake.enqueue(fmt.answer("Skipped the subagent, as you asked."))
    session = CursorSession(cursor, "turn-cancel-sub", workspace=tmp_path, run_subagents=True)
    run = asyncio.create_task(session.run(user_turn_message("find the values", model)))
    await wait_for(
        lambda: session.subagents and execs(session.subagents[0].log, "shell_stream_args"),
        "the child's command",
    )
    # The editor names the subagent by its id: its child run's conversation id.
    await session.send(action_message(cancel_subagent_action={"subagent_id": "subagent-1"}))
    log = await asyncio.wait_for(run, 15)
    assert log.end == {}
    (task_exec,) = execs(log, "subagent_args")
    assert aborts(log) == [task_exec.id]
    # The editor, told by the abort, cancelled the child run.
    (child,) = session.subagents
    assert child.log.end == CANCELED
    result = fmt.tool_results(fake.requests[2].json)["call_task"]
    assert result.startswith("the user cancelled this subagent (subagent-1) before it finished")
    (card,) = completed_cards(log)
    assert card.task_tool_call.result.error.error == result
    assert len(fake.requests) == 3  # parent, child, parent again: the turn went on


async def test_an_action_naming_no_running_call_changes_nothing(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    """A cancel for a subagent this run is not waiting on (a background one, or one that
    ended), and a move of a call that is not running: the run goes on untouched."""
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(
        fmt.tool_round(
            [call("call_srv", "Shell", command="sleep 1; echo up", block_until_ms=60000)]
        )
    )
    fake.enqueue(fmt.answer("Up."))
    session = CursorSession(cursor, "turn-nothing", workspace=tmp_path)
    run = asyncio.create_task(session.run(user_turn_message("start it", model)))
    await wait_for(lambda: execs(session.log, "shell_stream_args"), "the Shell exec")
    await session.send(action_message(cancel_subagent_action={"subagent_id": "background-7"}))
    await session.send(action_message(background_subagent_action={"tool_call_id": "call_srv"}))
    await session.send(action_message(background_shell_action={"tool_call_id": "call_other"}))
    log = await asyncio.wait_for(run, 15)
    assert log.end == {}
    assert fmt.tool_results(fake.requests[1].json)["call_srv"] == "up\n"
    assert not execs(log, "force_background_shell_args")
    assert not execs(log, "force_background_subagent_args")
    assert not aborts(log)


@pytest.mark.parametrize(
    "action",
    [
        {"cancel_subagent_action": {"subagent_id": "subagent-1"}},
        {"background_shell_action": {"tool_call_id": "call_srv"}},
        {"background_subagent_action": {"tool_call_id": "call_task"}},
    ],
)
async def test_as_a_run_request_an_action_on_a_running_call_is_a_failed_precondition(
    action: dict[str, Any], fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = FORMATS[0].add_model(server_store, fake)
    message = user_turn_message("ignored", model)
    message.run_request.action.CopyFrom(agent.ConversationAction(**action))
    log = await CursorSession(cursor, "turn-action-run").run(message)
    assert isinstance(log.end, dict)
    error = log.end["error"]
    assert isinstance(error, dict) and error["code"] == "failed_precondition"
    (kind,) = action
    assert error["message"].startswith(f"{kind} acts on a call of the running turn")
    assert not fake.requests


async def test_a_command_the_user_moves_to_the_background_reports_back_as_a_shell(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    """A command run from the chat blocks up to 30 s; the user moves it to the background,
    and its end later starts a turn: the history check finds it by its shell id."""
    fmt = FORMATS[2]
    model = fmt.add_model(server_store, fake)
    session = CursorSession(cursor, "turn-user-cmd", workspace=tmp_path)
    message = shell_command_message("sleep 30", "exec-user-1", model)
    run = asyncio.create_task(session.run(message))
    await wait_for(lambda: session.movable("exec-user-1"), "the command running in the editor")
    await session.send(action_message(background_shell_action={"tool_call_id": "exec-user-1"}))
    log = await asyncio.wait_for(run, 15)
    assert log.end == {}
    (force,) = execs(log, "force_background_shell_args")
    assert force.force_background_shell_args.tool_call_id == "exec-user-1"
    assert not fake.requests  # running a command calls no model
    fake.enqueue(fmt.answer("Your sleep finished."))
    done = await CursorSession(cursor, "turn-user-cmd-done", blobs=log.blobs).run(
        completion_message(
            model,
            log.checkpoints()[-1],
            task_id="1",
            kind=agent.BACKGROUND_TASK_KIND_SHELL,
            subagent_id="",
            title="sleep 30",
            tool_call_id="exec-user-1",
        )
    )
    assert done.end == {}
    texts = user_texts(fmt, fake.requests[0].json)
    assert "still running in the background (shell_id 1)" in texts[0]
    assert "Shell ID: 1" in texts[-1]
