"""The phase of a command the user ran from the chat (``actors.turn.shell_command``), without IO:
the request read, the exec asked for, and what each way the exec ends leaves for the next model
call and for the checkpoint's turn."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from actors.codecs.checkpoint_state import shell_turn_blob
from actors.conversation.model import Origin, PartsContent, Role, TextPart
from actors.protocols.tool_runtime import RunUserCommand, ToolCompleted
from actors.turn.plan import TurnKind, plan_turn
from actors.turn.shell_command import ShellCommandPhase, runs_shell_command, shell_output
from store.blobs import blob_id_of
from wire.errors import Code, ConnectError
from wire.proto import agent_v1_pb2 as agent

NOW = datetime(2026, 2, 3, 8, 5, tzinfo=UTC)


def action(command: str = "ls -la", exec_id: str = "ex-1") -> agent.ShellCommandAction:
    return agent.ShellCommandAction(
        shell_command=agent.ShellCommand(command=command), exec_id=exec_id
    )


def request(
    shell: agent.ShellCommandAction, state: agent.ConversationStateStructure | None = None
) -> agent.AgentRunRequest:
    return agent.AgentRunRequest(
        conversation_id="conv-1",
        conversation_state=state,
        action=agent.ConversationAction(shell_command_action=shell),
    )


def completion(result: agent.ShellResult, round_id: str = "req-1:shell") -> ToolCompleted:
    tool_call = agent.ToolCall(shell_tool_call=agent.ShellToolCall(result=result))
    return ToolCompleted(
        round_id, "ex-1", "Shell", "", "", False, tool_call.SerializeToString(), 1, 2, (1,)
    )


def test_the_request_is_a_shell_command_run_in_the_states_mode() -> None:
    plain = request(action())
    assert runs_shell_command(plain)
    plan = plan_turn("req-1", plain)
    assert (plan.kind, plan.mode_name, plan.user_message) == (TurnKind.SHELL_COMMAND, "agent", None)
    assert plan.shell_command == action()
    in_plan = plan_turn(
        "req-1", request(action(), agent.ConversationStateStructure(mode=agent.AGENT_MODE_PLAN))
    )
    assert (in_plan.kind, in_plan.mode_name) == (TurnKind.SHELL_COMMAND, "plan")
    user_turn = agent.AgentRunRequest(
        action=agent.ConversationAction(user_message_action=agent.UserMessageAction())
    )
    assert not runs_shell_command(user_turn)


@pytest.mark.parametrize(
    ("command", "exec_id", "message"),
    [
        ("  ", "ex-1", "protocol error: shell_command_action: the command is empty"),
        ("ls", "", "protocol error: shell_command_action: exec_id is empty"),
    ],
)
def test_a_command_without_text_or_id_is_refused(command: str, exec_id: str, message: str) -> None:
    with pytest.raises(ConnectError) as raised:
        plan_turn("req-1", request(action(command, exec_id)))
    assert (raised.value.code, raised.value.message) == (Code.INVALID_ARGUMENT, message)


def test_the_exec_asked_for_is_the_command_under_the_editors_exec_id() -> None:
    phase = ShellCommandPhase("req-1", action("make", "ex-7"))
    assert phase.start() == RunUserCommand("req-1:shell", "ex-7", "make")


def test_an_exit_leaves_the_context_message_and_the_shell_turn() -> None:
    phase = ShellCommandPhase("req-1", action("ls <dir> && false"))
    failure = agent.ShellFailure(exit_code=1, stdout="a.txt\n", stderr="oops\n")
    recorded = phase.completed(completion(agent.ShellResult(failure=failure)), NOW)
    assert recorded is not None
    message = recorded.message
    assert (message.message_id, message.runtime_event_id) == (
        "runtime:shell-command:req-1",
        "shell-command:req-1",
    )
    assert (message.role, message.origin) == (Role.USER, Origin.RUNTIME)
    assert message.content == PartsContent(
        (
            TextPart(
                "<user_ran_command>\n"
                "The user ran this command from the chat; it and its output are context for "
                "their next message, not a task.\n"
                "<command>ls <dir> && false</command>\n"
                "<exit_code>1</exit_code>\n"
                "<stdout>\na.txt\n</stdout>\n"
                "<stderr>\noops\n</stderr>\n"
                "</user_ran_command>\n\n"
                "<timestamp>Tuesday, Feb 3, 2026, 8:05 AM (UTC+0)</timestamp>"
            ),
        )
    )
    command = agent.ShellCommand.FromString(recorded.turn.command)
    output = agent.ShellOutput.FromString(recorded.turn.output)
    assert command.command == "ls <dir> && false"
    assert output == agent.ShellOutput(stdout="a.txt\n", stderr="oops\n", exit_code=1)
    # Once recorded, and only for its own round.
    assert phase.completed(completion(agent.ShellResult(failure=failure)), NOW) is None
    other = ShellCommandPhase("req-1", action())
    assert other.completed(completion(agent.ShellResult(), round_id="r9"), NOW) is None


@pytest.mark.parametrize(
    ("result", "output", "status"),
    [
        (
            agent.ShellResult(success=agent.ShellSuccess(stdout="done\n")),
            agent.ShellOutput(stdout="done\n"),
            None,
        ),
        (
            agent.ShellResult(
                success=agent.ShellSuccess(stdout="booting\n", shell_id=4), is_background=True
            ),
            agent.ShellOutput(stdout="booting\n"),
            "still running in the background (shell_id 4); the output is what it printed "
            "until then",
        ),
        (
            agent.ShellResult(rejected=agent.ShellRejected(reason="not now")),
            agent.ShellOutput(),
            "not run: it was rejected (not now)",
        ),
        (
            agent.ShellResult(
                failure=agent.ShellFailure(
                    exit_code=130,
                    stdout="partial",
                    aborted=True,
                    abort_reason=agent.SHELL_ABORT_REASON_USER_ABORT,
                )
            ),
            agent.ShellOutput(stdout="partial", exit_code=130),
            "stopped by the user before it exited",
        ),
        (
            agent.ShellResult(spawn_error=agent.ShellSpawnError(error="no such shell")),
            agent.ShellOutput(),
            "not started: no such shell",
        ),
        (
            agent.ShellResult(permission_denied=agent.ShellPermissionDenied(error="sandbox")),
            agent.ShellOutput(),
            "not run: permission denied (sandbox)",
        ),
    ],
    ids=["exit-0", "backgrounded", "rejected", "aborted", "spawn-error", "permission-denied"],
)
def test_each_end_of_the_exec_is_recorded_as_what_there_is(
    result: agent.ShellResult, output: agent.ShellOutput, status: str | None
) -> None:
    assert shell_output(result) == (output, status)
    recorded = ShellCommandPhase("req-1", action()).completed(completion(result), NOW)
    assert recorded is not None
    content = recorded.message.content
    assert isinstance(content, PartsContent) and isinstance(content.parts[0], TextPart)
    text = content.parts[0].text
    if status is None:
        assert f"<exit_code>{output.exit_code}</exit_code>" in text and "<status>" not in text
    else:
        assert f"<status>{status}</status>" in text and "<exit_code>" not in text


def test_the_shell_turn_blob_names_the_command_and_output_blobs() -> None:
    command = agent.ShellCommand(command="ls").SerializeToString()
    output = agent.ShellOutput(stdout="x").SerializeToString()
    turn = agent.ConversationTurnStructure.FromString(
        shell_turn_blob(blob_id_of(command), blob_id_of(output))
    )
    assert turn.WhichOneof("turn") == "shell_conversation_turn"
    assert turn.shell_conversation_turn.shell_command == blob_id_of(command)
    assert turn.shell_conversation_turn.shell_output == blob_id_of(output)
