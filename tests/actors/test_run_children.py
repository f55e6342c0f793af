"""The run's child actors (``actors.run.children``) with a real ToolRuntimeActor: the end of a
run never waits for a tool runtime that has already stopped."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pykka

from actors.conversation.model import CanonicalToolCall
from actors.protocols.tool_runtime import EndedCall, StartToolRound, ToolRuntimeStopped
from actors.run.children import AgentDeps, RunChildren
from tests.support.actor_doubles import QueueListener, RecordingOutput
from wire.tools.base import ExecContext

READ = CanonicalToolCall(0, "c1", "Read", '{"path": "/a.txt"}', "run-1:0")


def children_with_a_round() -> tuple[RunChildren, QueueListener[Any]]:
    listener: QueueListener[Any] = QueueListener()
    # Only the tool runtime is started here; of the shared dependencies it takes only the
    # timers and server workers (none: no call of this round needs them).
    deps = cast(
        AgentDeps, SimpleNamespace(tasks=None, server_work=None, exec_answer_timeout_s=None)
    )
    children = RunChildren("run-1", RecordingOutput(), deps, cast(pykka.ActorRef[Any], listener))
    children.tools(StartToolRound("run-1:round:0", (READ,)), ExecContext("conv"))
    return children, listener


def test_aborting_a_running_tool_runtime_waits_for_its_stop() -> None:
    children, listener = children_with_a_round()
    assert children.tools_running
    assert children.abort_tools("the run ended") is True
    # The pending Read's exec id.
    assert listener.next() == ToolRuntimeStopped((EndedCall("c1", "Read", (1,)),))


def test_aborting_a_tool_runtime_that_already_stopped_says_nothing_will_answer() -> None:
    children, listener = children_with_a_round()
    tools = children._tools  # the ref, to stop it as a crash would
    assert tools is not None
    tools.stop()
    assert children.abort_tools("the run ended") is False
    assert not children.tools_running
    listener.assert_silent()
