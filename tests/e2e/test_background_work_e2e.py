"""Background work that reports back, end to end: a shell the model left running in the
background ends later as a ``background_task_completion_action`` of kind SHELL, which starts one
simulated parent turn (appended once however often the editor repeats it), in each provider
format; and a completion for work the conversation never started is refused, naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from store import Store
from tests.e2e.test_background_task_e2e import completion_message, turn_user_message, user_texts
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from wire.proto import agent_v1_pb2 as agent


def shell_completion(
    model: str, state: agent.ConversationStateStructure, **overrides: object
) -> agent.AgentClientMessage:
    """A finished background shell, as the editor reports it (shell 1, started by call_sh)."""
    fields: dict[str, object] = {
        "task_id": "1",
        "kind": agent.BACKGROUND_TASK_KIND_SHELL,
        "subagent_id": "",
        "title": "echo built && false",
        "status": agent.BACKGROUND_TASK_STATUS_ERROR,
        "tool_call_id": "call_sh",
        "output_path": "/ws/.terminals/1.txt",
        "detail": "Exited with code 1.",
        **overrides,
    }
    return completion_message(model, state, **fields)


async def background_shell_turn(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp: Path
) -> tuple[str, CursorSession]:
    """A turn whose model starts ``echo built && false`` in the background (shell id 1)."""
    model = fmt.add_model(server_store, fake)
    arguments = {"command": "echo built && false", "block_until_ms": 0}
    fake.enqueue(fmt.tool_round([FakeToolCall("call_sh", "Shell", (json.dumps(arguments),))]))
    fake.enqueue(fmt.answer("Started the build in the background."))
    workspace = tmp / "ws"
    workspace.mkdir()
    session = CursorSession(cursor, "turn-sh", workspace=workspace)
    log = await session.run(user_turn_message("build it in the background", model))
    assert log.end == {}
    assert "shell_id=1" in fmt.tool_results(fake.requests[1].json)["call_sh"]
    return model, session


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_background_shell_completion_starts_one_parent_turn_even_when_repeated(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    tmp_path: Path,
) -> None:
    model, session = await background_shell_turn(fmt, fake, server_store, cursor, tmp_path)
    log = session.log
    fake.enqueue(fmt.answer("The build failed: exit code 1."))
    done = await CursorSession(cursor, "turn-sh-done", blobs=log.blobs).run(
        shell_completion(model, log.checkpoints()[-1])
    )
    assert done.end == {}
    text = user_texts(fmt, fake.requests[2].json)[-1]
    for line in (
        "<background_task_completion>",
        "Title: echo built && false",
        "Shell ID: 1",
        "Status: ERROR",
        "Tool call ID: call_sh",
        "Output path: /ws/.terminals/1.txt",
        "Exited with code 1.",
        "Commands you left running in the background have finished",
    ):
        assert line in text, line
    assert "Subagent ID" not in text
    user = turn_user_message(done)
    assert user.is_simulated_msg
    assert user.simulated_msg_reason == agent.SIMULATED_MSG_REASON_BACKGROUND_TASK_COMPLETION
    assert user.message_id == "background-completed:shell-1"
    assert user.simulated_message_metadata.task_id == "1"
    # The editor sends the same completion again: the model reads it once.
    fake.enqueue(fmt.answer("Still exit code 1."))
    again = await CursorSession(cursor, "turn-sh-again", blobs=done.blobs).run(
        shell_completion(model, done.checkpoints()[-1])
    )
    assert again.end == {}
    reports = [t for t in user_texts(fmt, fake.requests[3].json) if "Shell ID: 1" in t]
    assert len(reports) == 1


async def test_a_shell_and_a_subagent_finishing_together_start_one_turn(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    """One action with both kinds: one turn, both reports, keyed by both ids."""
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    shell = {"command": "true", "block_until_ms": 0}
    task = {"description": "Find it", "prompt": "Find it.", "run_in_background": True}
    fake.enqueue(
        fmt.tool_round(
            [
                FakeToolCall("call_sh", "Shell", (json.dumps(shell),)),
                FakeToolCall("call_bg", "Task", (json.dumps(task),)),
            ]
        )
    )
    fake.enqueue(fmt.answer("Both started."))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = await CursorSession(cursor, "turn-both", workspace=workspace, run_subagents=True).run(
        user_turn_message("do both", model)
    )
    assert first.end == {}
    subagent = agent.BackgroundTaskCompletion(
        task_id="call_bg",
        kind=agent.BACKGROUND_TASK_KIND_SUBAGENT,
        status=agent.BACKGROUND_TASK_STATUS_SUCCESS,
        title="Find it",
        reason=agent.BACKGROUND_TASK_COMPLETION_REASON_TASK_FINISHED,
        subagent_id="background-1",
        tool_call_id="call_bg",
        detail="Found it.",
    )
    message = shell_completion(model, first.checkpoints()[-1], title="true")
    message.run_request.action.background_task_completion_action.completions.append(subagent)
    fake.enqueue(fmt.answer("Both done."))
    done = await CursorSession(cursor, "turn-both-done", blobs=first.blobs).run(message)
    assert done.end == {}
    text = user_texts(fmt, fake.requests[2].json)[-1]
    assert "Shell ID: 1" in text and "Subagent ID: background-1" in text
    assert "Background work you started earlier has finished" in text
    assert turn_user_message(done).message_id == (
        "background-completed:shell-1:subagent-background-1"
    )


@pytest.mark.parametrize(
    ("kind", "overrides", "problem"),
    [
        ("subagent", {"tool_call_id": "call_other"}, "no Task call 'call_other'"),
        (
            "subagent",
            {"tool_call_id": "", "subagent_id": "background-9"},
            "no Task result naming subagent 'background-9'",
        ),
        ("shell", {"tool_call_id": "call_bg"}, "no Shell call 'call_bg'"),
        ("shell", {"tool_call_id": "", "task_id": "7"}, "no Shell result naming shell '7'"),
    ],
)
async def test_a_completion_for_work_the_conversation_never_started_is_refused(
    kind: str,
    overrides: dict[str, object],
    problem: str,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
) -> None:
    """The conversation started one background Task (call_bg, background-1) and no shell."""
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    task = {"description": "Find it", "prompt": "Find it.", "run_in_background": True}
    fake.enqueue(fmt.tool_round([FakeToolCall("call_bg", "Task", (json.dumps(task),))]))
    fake.enqueue(fmt.answer("Started."))
    first = await CursorSession(cursor, "turn-bg", run_subagents=True).run(
        user_turn_message("find it", model)
    )
    assert first.end == {}
    build = shell_completion if kind == "shell" else completion_message
    log = await CursorSession(cursor, "turn-unknown", blobs=first.blobs).run(
        build(model, first.checkpoints()[-1], **overrides)
    )
    assert isinstance(log.end, dict)
    error = log.end["error"]
    assert isinstance(error, dict) and error["code"] == "invalid_argument"
    assert "this conversation never started that background" in error["message"]
    assert problem in error["message"]
    assert len(fake.requests) == 2  # no model call for it
    assert not log.checkpoints()


async def test_a_subagent_completion_without_its_call_id_is_matched_by_the_subagent_id(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    task = {"description": "Find it", "prompt": "Find it.", "run_in_background": True}
    fake.enqueue(fmt.tool_round([FakeToolCall("call_bg", "Task", (json.dumps(task),))]))
    fake.enqueue(fmt.answer("Started."))
    first = await CursorSession(cursor, "turn-bg", run_subagents=True).run(
        user_turn_message("find it", model)
    )
    fake.enqueue(fmt.answer("It found it."))
    done = await CursorSession(cursor, "turn-bg-done", blobs=first.blobs).run(
        completion_message(model, first.checkpoints()[-1], tool_call_id="", task_id="t-1")
    )
    assert done.end == {}
    assert "Subagent ID: background-1" in user_texts(fmt, fake.requests[2].json)[-1]
