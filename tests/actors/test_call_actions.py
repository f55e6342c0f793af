"""The user's actions on a running call, at the ToolRuntimeActor: a move to the background is a
request of its own whose answer may end a Shell call with the result it carries (later messages
of the call's own exec are dropped); a NOT_FOUND answer changes nothing; a cancelled subagent's
late answers are dropped too; and a wrong answer to the request fails the run."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

import pykka
import pytest

from actors.protocols.call_actions import CallAction, UserActedOnCall
from actors.protocols.tool_runtime import AbortPendingExecs, ToolRuntimeStopped
from actors.run.subagent_links import SubagentLinks, read_call_action
from actors.tool_runtime import start_tool_runtime
from tests.actors.test_tool_runtime_actor import Listener, Run, call, shell
from tests.support.actor_doubles import WAIT_S, RecordingOutput
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import ExecContext


@pytest.fixture
def run() -> Iterator[Run]:
    output, listener = RecordingOutput[agent.AgentServerMessage](), Listener()
    clock = itertools.count(1_700_000_000_000, 7)
    context = ExecContext(conversation_id="conv-1", terminals_folder="/t")
    ref = start_tool_runtime("req-actions", output, listener, context, clock=lambda: next(clock))
    yield Run(ref, output, listener)
    with contextlib.suppress(pykka.ActorDeadError):
        ref.stop(timeout=WAIT_S)


def move_shell(run: Run, call_id: str) -> None:
    run.ref.tell(UserActedOnCall(CallAction.BACKGROUND_SHELL, call_id, (call_id,)))


def test_a_force_answer_with_the_shells_result_ends_the_call_and_drops_its_exec(
    run: Run,
) -> None:
    run.round("r1", call("srv", "Shell", 0, command="serve", block_until_ms=60000))
    _, request = run.dispatched()
    move_shell(run, "srv")
    force = run.exec_request()
    assert force.id == request.id + 1
    assert force.exec_id == "srv" and force.force_background_shell_args.tool_call_id == "srv"
    success = agent.ShellSuccess(command="serve", shell_id=4)
    answer = agent.ForceBackgroundShellResult(
        status=agent.FORCE_BACKGROUND_SHELL_STATUS_ACCEPTED,
        shell_result=agent.ShellResult(success=success, is_background=True),
    )
    run.client(agent.ExecClientMessage(id=force.id, force_background_shell_result=answer))
    done = run.listener.completed()
    assert done.content.startswith("the command keeps running in the background: shell_id=4")
    assert done.wire_ids == (request.id,)
    # The call's own exec then ends too, as the editor may still say: dropped, not a failure.
    backgrounded = agent.ShellStreamBackgrounded(shell_id=4)
    run.client(shell(request.id, backgrounded=backgrounded))
    run.control(stream_close=agent.ExecClientStreamClose(id=request.id))
    run.ref.tell(AbortPendingExecs("ended"))
    assert run.listener.next() == ToolRuntimeStopped(())
    run.output.assert_silent()


def test_not_found_changes_nothing_and_the_call_ends_as_it_would(run: Run) -> None:
    run.round("srv", call("srv", "Shell", 0, command="serve", block_until_ms=60000))
    _, request = run.dispatched()
    move_shell(run, "srv")
    force = run.exec_request()
    answer = agent.ForceBackgroundShellResult(status=agent.FORCE_BACKGROUND_SHELL_STATUS_NOT_FOUND)
    run.client(agent.ExecClientMessage(id=force.id, force_background_shell_result=answer))
    run.listener.assert_silent()
    exit_event = agent.ShellStreamExit(code=0, cwd="/w")
    run.client(shell(request.id, exit=exit_event))
    assert not run.listener.completed().is_error


def test_a_wrong_answer_to_the_force_request_fails_the_run(run: Run) -> None:
    run.round("r1", call("srv", "Shell", 0, command="serve", block_until_ms=60000))
    run.dispatched()
    move_shell(run, "srv")
    force = run.exec_request()
    answer = agent.ForceBackgroundSubagentResult(
        status=agent.FORCE_BACKGROUND_SUBAGENT_STATUS_ACCEPTED
    )
    run.client(agent.ExecClientMessage(id=force.id, force_background_subagent_result=answer))
    run.failed(
        "protocol error: unexpected force_background_subagent_result for the background "
        "request of srv"
    )


def test_a_cancelled_subagent_is_aborted_and_its_late_answer_dropped(run: Run) -> None:
    run.round("r1", call("t1", "Task", 0, description="Look", prompt="Look around."))
    _, request = run.dispatched()
    run.ref.tell(UserActedOnCall(CallAction.CANCEL_SUBAGENT, "agent-1", ("agent-1", "t1")))
    abort = run.output.next()
    assert abort.exec_server_control_message.abort.id == request.id
    done = run.listener.completed()
    assert done.is_error
    assert done.content.startswith("the user cancelled this subagent (agent-1)")
    late = agent.SubagentResult(error=agent.SubagentError(error="cancelled"))
    run.client(agent.ExecClientMessage(id=request.id, subagent_result=late))
    run.listener.assert_silent()


def test_a_cancel_names_the_task_its_child_run_was_started_for() -> None:
    links = SubagentLinks()
    links.link("parent-req", "agent-1", "call_task")
    cancel = agent.ConversationAction(
        cancel_subagent_action=agent.CancelSubagentAction(subagent_id="agent-1")
    )
    assert read_call_action(cancel, links, "parent-req").call_ids == ("agent-1", "call_task")
    assert read_call_action(cancel, links, "other-req").call_ids == ("agent-1",)
    links.unlink("parent-req", "agent-1")
    assert links.tool_call("parent-req", "agent-1") is None
