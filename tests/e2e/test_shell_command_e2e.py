"""A command the user ran from the chat (``shell_command_action``) end to end: the real server,
the fake Cursor client running the command as a real subprocess in a workspace, and the fake
provider in each of the three formats for the next user turn, whose model request holds the
command and its output as context."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from store import Store
from store.conversations import ConversationStore
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
COMMAND = "echo hi; echo oops >&2; exit 3"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def shell_command_message(
    command: str,
    exec_id: str,
    model_id: str,
    *,
    conversation_id: str = "conv-1",
    conversation_state: agent.ConversationStateStructure | None = None,
) -> agent.AgentClientMessage:
    """A RunRequest as the editor sends it when the user runs a command from the chat."""
    action = agent.ShellCommandAction(
        shell_command=agent.ShellCommand(command=command), exec_id=exec_id
    )
    request = agent.AgentRunRequest(
        conversation_id=conversation_id,
        conversation_state=conversation_state,
        action=agent.ConversationAction(shell_command_action=action),
        requested_model=agent.RequestedModel(model_id=model_id),
    )
    return agent.AgentClientMessage(run_request=request)


def exec_requests(log: TurnLog) -> list[agent.ExecServerMessage]:
    return [m.exec_server_message for m in log.messages if m.HasField("exec_server_message")]


def shell_deltas(log: TurnLog, call_id: str) -> tuple[str, str]:
    """The stdout and stderr the client was shown for ``call_id``, joined."""
    stdout, stderr = [], []
    for m in log.messages:
        update = m.interaction_update.tool_call_delta
        if not m.interaction_update.HasField("tool_call_delta") or update.call_id != call_id:
            continue
        delta = update.tool_call_delta.shell_tool_call_delta
        if delta.HasField("stdout"):
            stdout.append(delta.stdout.content)
        if delta.HasField("stderr"):
            stderr.append(delta.stderr.content)
    return "".join(stdout), "".join(stderr)


def shell_turn(log: TurnLog, turn_id: bytes) -> tuple[agent.ShellCommand, agent.ShellOutput]:
    """The command and output a checkpoint's shell turn names, read from the client's blobs."""
    turn = agent.ConversationTurnStructure.FromString(log.blobs[turn_id])
    assert turn.WhichOneof("turn") == "shell_conversation_turn"
    shell = turn.shell_conversation_turn
    return (
        agent.ShellCommand.FromString(log.blobs[shell.shell_command]),
        agent.ShellOutput.FromString(log.blobs[shell.shell_output]),
    )


def user_texts(fmt: ProviderFormat, body: dict[str, Any]) -> list[str]:
    """Every text part of the request's user messages, in order."""
    if fmt.type == "gemini":
        contents = [c for c in body["contents"] if c["role"] == "user"]
        return [part["text"] for c in contents for part in c["parts"] if "text" in part]
    if fmt.type == "openai-responses":
        messages = [item for item in body["input"] if item.get("role") == "user"]
    else:
        messages = [m for m in body["messages"] if m["role"] == "user"]
    texts: list[str] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
            continue
        texts.extend(part["text"] for part in content if "text" in part)
    return texts


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_command_the_user_ran_is_context_for_the_next_model_call(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    workspace: Path,
) -> None:
    model = fmt.add_model(server_store, fake)
    session = CursorSession(cursor, "shell-run", workspace=workspace)
    log = await session.run(shell_command_message(COMMAND, "user-exec-1", model))
    assert log.end == {}
    # One Shell exec under the editor's exec id, with the first wire id of the run.
    (request,) = exec_requests(log)
    assert (request.id, request.exec_id) == (1, "user-exec-1")
    args = request.shell_stream_args
    assert (args.command, args.tool_call_id) == (COMMAND, "user-exec-1")
    assert args.timeout_behavior == agent.TIMEOUT_BEHAVIOR_BACKGROUND
    assert shell_deltas(log, "user-exec-1") == ("hi\n", "oops\n")
    # No model call: no card, no turn_ended; one checkpoint, the run's last frame.
    assert fake.requests == []
    kinds = log.kinds()
    assert "tool_call_started" not in kinds and "turn_ended" not in kinds
    assert kinds.count("conversation_checkpoint_update") == 1
    assert kinds[-1] == "conversation_checkpoint_update"
    (checkpoint,) = log.checkpoints()
    assert len(checkpoint.turns) == 1 and len(checkpoint.root_prompt_messages_json) == 2
    command, output = shell_turn(log, checkpoint.turns[0])
    assert command == agent.ShellCommand(command=COMMAND)
    assert output == agent.ShellOutput(stdout="hi\n", stderr="oops\n", exit_code=3)

    # The next message in the conversation: the model reads the command right before it.
    fake.enqueue(fmt.answer("The command failed with 3."))
    follow = CursorSession(cursor, "shell-next", workspace=workspace, blobs=log.blobs)
    next_log = await follow.run(
        user_turn_message("why did it fail?", model, conversation_state=checkpoint)
    )
    assert next_log.end == {}
    # The state maps back to the command's revision through the index: no blob is fetched.
    assert "kv_get_blob_args" not in next_log.kinds()
    (body,) = [r.json for r in fake.requests]
    *_, context, query = user_texts(fmt, body)
    assert context.startswith(
        "<user_ran_command>\n"
        "The user ran this command from the chat; it and its output are context for their "
        f"next message, not a task.\n<command>{COMMAND}</command>\n"
        "<exit_code>3</exit_code>\n<stdout>\nhi\n</stdout>\n<stderr>\noops\n</stderr>\n"
        "</user_ran_command>\n\n<timestamp>"
    )
    assert "why did it fail?" in query and "<user_ran_command>" not in query
    # The shell turn stays in the next checkpoints, before the new agent turn; the history
    # holds the command's message once.
    final = next_log.checkpoints()[-1]
    assert final.turns[0] == checkpoint.turns[0] and len(final.turns) == 2
    conversations = ConversationStore(server_store.database)
    messages = conversations.messages_at(conversations.ensure_conversation("conv-1"))
    assert [(m.origin, m.runtime_event_id) for m in messages] == [
        ("runtime", "shell-command:shell-run"),
        ("runtime", "run-request:shell-next"),
        ("assistant", None),
    ]
    run = conversations.run("shell-run")
    assert run is not None and run.status == "completed"


async def test_a_command_the_editor_rejects_is_recorded_with_the_refusal(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    """No workspace: the test answers the exec itself with a rejection."""
    session = CursorSession(cursor, "shell-rejected")
    task = asyncio.create_task(session.run(shell_command_message("rm -rf /", "ex-9", public_id)))
    for _ in range(100):
        if exec_requests(session.log):
            break
        await asyncio.sleep(0.05)
    (request,) = exec_requests(session.log)
    rejected = agent.ShellStream(rejected=agent.ShellRejected(reason="not on my machine"))
    reply = agent.ExecClientMessage(id=request.id, exec_id=request.exec_id, shell_stream=rejected)
    await session.send(agent.AgentClientMessage(exec_client_message=reply))
    log = await asyncio.wait_for(task, 10)
    assert log.end == {}
    (checkpoint,) = log.checkpoints()
    assert shell_turn(log, checkpoint.turns[0])[1] == agent.ShellOutput()
    fake.enqueue(FORMATS[0].answer("ok"))
    follow = CursorSession(cursor, "shell-rejected-next", blobs=log.blobs)
    await follow.run(user_turn_message("and now?", public_id, conversation_state=checkpoint))
    *_, context, _query = user_texts(FORMATS[0], fake.requests[0].json)
    assert "<status>not run: it was rejected (not on my machine)</status>" in context
    assert "<exit_code>" not in context


async def test_a_cancel_while_the_command_runs_aborts_its_exec(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, workspace: Path, server_store: Store
) -> None:
    session = CursorSession(cursor, "shell-cancel", workspace=workspace)
    message = shell_command_message("echo started; sleep 30", "ex-2", public_id)
    task = asyncio.create_task(session.run(message))
    for _ in range(200):
        if shell_deltas(session.log, "ex-2")[0]:
            break
        await asyncio.sleep(0.05)
    assert shell_deltas(session.log, "ex-2")[0] == "started\n"
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end == CANCELED
    aborts = [
        m.exec_server_control_message.abort.id
        for m in log.messages
        if m.HasField("exec_server_control_message")
    ]
    assert aborts == [1]
    assert log.checkpoints() == [] and fake.requests == []
    conversations = ConversationStore(server_store.database)
    assert conversations.messages_at(conversations.ensure_conversation("conv-1")) == []
    run = conversations.run("shell-cancel")
    assert run is not None and run.status == "cancelled"
