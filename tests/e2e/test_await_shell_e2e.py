"""AwaitShell end to end: the real server, the fake Cursor client running real shells in a
workspace (a backgrounded one writes its terminal file as the editor does), and the fake
provider in each of the three formats. The model reads what the wait found in its next request.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from store import Store
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

CANCELED = {"error": {"code": "canceled", "message": "run was cancelled"}}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def terminals(workspace: Path) -> Path:
    """The editor's terminals folder (inside the workspace, where the fake client reads)."""
    folder = workspace / ".terminals"
    folder.mkdir()
    return folder


def tool(call_id: str, name: str, **values: Any) -> FakeToolCall:
    text = json.dumps(values)
    return FakeToolCall(call_id, name, (text[:6], text[6:]))


def with_terminals(text: str, model: str, terminals: Path) -> agent.AgentClientMessage:
    context = agent.RequestContext(env=agent.RequestContextEnv(terminals_folder=str(terminals)))
    return user_turn_message(text, model, request_context=context)


def exec_requests(log: TurnLog) -> list[agent.ExecServerMessage]:
    return [m.exec_server_message for m in log.messages if m.HasField("exec_server_message")]


def completed(log: TurnLog, call_id: str) -> agent.ToolCall:
    (card,) = [
        m.interaction_update.tool_call_completed.tool_call
        for m in log.messages
        if m.interaction_update.HasField("tool_call_completed")
        and m.interaction_update.tool_call_completed.call_id == call_id
    ]
    return card


async def wait_for(condition: Any, what: str) -> None:
    for _ in range(250):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_the_model_reads_the_line_its_pattern_waited_for(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    workspace: Path,
    terminals: Path,
) -> None:
    model = fmt.add_model(server_store, fake)
    command = "echo booting; sleep 1.2; echo 'ready on port 4000'; sleep 30"
    fake.enqueue(fmt.tool_round([tool("call_sh", "Shell", command=command, block_until_ms=0)]))
    wait = tool("call_wait", "AwaitShell", shell_id="1", pattern=r"ready on port \d+")
    fake.enqueue(fmt.tool_round([wait]))
    fake.enqueue(fmt.answer("The server is up."))
    session = CursorSession(cursor, "turn-await", workspace=workspace, terminals_folder=terminals)
    log = await session.run(with_terminals("start the server", model, terminals))
    assert log.end == {}
    path = f"{terminals}/1.txt"
    found = json.loads(fmt.tool_results(fake.requests[2].json)["call_wait"])
    assert found == {
        "task_id": "1",
        "output_file_path": path,
        "output_length": found["output_length"],
        "exit_code": None,
        "pattern_matched": True,
        "match": "ready on port 4000",
    }
    assert found["output_length"] >= len("booting\nready on port 4000\n")
    # The Shell request, then one read of the terminal file per poll, each under its own id.
    shell, *polls = exec_requests(log)
    assert shell.WhichOneof("message") == "shell_stream_args"
    assert len(polls) >= 2, "the line was there at the first look: nothing was waited for"
    assert [p.id for p in polls] == list(range(shell.id + 1, shell.id + 1 + len(polls)))
    for poll in polls:
        assert (poll.exec_id, poll.read_args.path) == ("call_wait", path)
        assert poll.accept_hook_additional_contexts is False
    card = completed(log, "call_wait").await_tool_call
    assert card.args.task_id == "1" and card.args.regex == r"ready on port \d+"
    assert card.result.success.still_running.regex_match == "ready on port 4000"
    assert (terminals / "1.txt").read_text().startswith("---\npid: ")
    assert log.kinds().count("turn_ended") == 1


async def test_a_shell_that_exits_ends_the_wait_with_its_exit_code(
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    workspace: Path,
    terminals: Path,
) -> None:
    fmt = FORMATS[1]
    model = fmt.add_model(server_store, fake)
    command = "echo building; sleep 0.3; echo failed; exit 4"
    fake.enqueue(fmt.tool_round([tool("call_sh", "Shell", command=command, block_until_ms=0)]))
    fake.enqueue(fmt.tool_round([tool("call_wait", "AwaitShell", shell_id="1")]))
    fake.enqueue(fmt.answer("The build failed."))
    session = CursorSession(cursor, "turn-exit", workspace=workspace, terminals_folder=terminals)
    log = await session.run(with_terminals("build it", model, terminals))
    assert log.end == {}
    found = json.loads(fmt.tool_results(fake.requests[2].json)["call_wait"])
    assert (found["exit_code"], found["output_length"]) == (4, len("building\nfailed\n"))
    complete = completed(log, "call_wait").await_tool_call.result.success.complete
    assert (complete.task_id, complete.exit_code, complete.wake_reason) == ("1", 4, "task_complete")


async def test_a_wait_without_a_shell_is_a_timer_and_sends_no_exec(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[2]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([tool("call_wait", "AwaitShell", block_until_ms=300)]))
    fake.enqueue(fmt.answer("Waited."))
    log = await CursorSession(cursor, "turn-sleep").run(user_turn_message("wait a bit", model))
    assert log.end == {}
    assert fmt.tool_results(fake.requests[1].json) == {"call_wait": "Waited 300 ms"}
    assert exec_requests(log) == []
    card = completed(log, "call_wait")
    assert card.await_tool_call.result.success.still_running.wake_reason == "sleep_complete"
    assert card.completed_at_ms - card.started_at_ms >= 300


async def test_cancel_while_a_poll_is_pending_aborts_that_read(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, terminals: Path
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([tool("call_wait", "AwaitShell", shell_id="3", pattern="x")]))
    session = CursorSession(cursor, "turn-await-cancel")  # no workspace: the read stays pending
    task = asyncio.create_task(session.run(with_terminals("wait", model, terminals)))
    await wait_for(lambda: exec_requests(session.log), "the first poll")
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end == CANCELED
    (poll,) = exec_requests(log)
    aborts = [
        m.exec_server_control_message.abort.id
        for m in log.messages
        if m.exec_server_control_message.HasField("abort")
    ]
    assert aborts == [poll.id]
    assert not any(m.interaction_update.HasField("tool_call_completed") for m in log.messages)
    assert len(fake.requests) == 1


async def test_cancel_during_the_pause_between_polls_ends_with_no_abort(
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    workspace: Path,
    terminals: Path,
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    (terminals / "5.txt").write_text("---\npid: 1\n---\nbooting\n")
    wait = tool("call_wait", "AwaitShell", shell_id="5", pattern="ready", block_until_ms=30000)
    fake.enqueue(fmt.tool_round([wait]))
    session = CursorSession(cursor, "turn-pause-cancel", workspace=workspace)
    task = asyncio.create_task(session.run(with_terminals("wait", model, terminals)))
    await wait_for(lambda: exec_requests(session.log), "the first poll")
    await asyncio.sleep(0.3)  # its answer arrives; the next poll is a second away
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end == CANCELED
    assert len(exec_requests(log)) == 1
    assert not any(m.exec_server_control_message.HasField("abort") for m in log.messages)
    assert not any(m.interaction_update.HasField("tool_call_completed") for m in log.messages)
