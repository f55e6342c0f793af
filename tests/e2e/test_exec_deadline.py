"""An exec the editor answers on its own (Read, Grep, Glob, ReadLints, MCP resources and
state) that it has not answered within ``exec_answer_timeout_s`` is aborted on the wire and
becomes an error result the model reads; the turn goes on. An exec that can wait on the user
(a Write's approval, a Shell) keeps waiting."""

from __future__ import annotations

import asyncio

import msgspec

from tests.conftest import TEST_LIMITS, StartServer
from tests.e2e.test_agent_tools_e2e import args, exec_requests, tool_results
from tests.support.fake_cursor import CursorSession, FakeCursor, updates, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from wire.proto import agent_v1_pb2 as agent

DEADLINE_S = 0.5
LIMITS = msgspec.structs.replace(
    TEST_LIMITS, exec_answer_timeout_s=DEADLINE_S, run_request_timeout_s=10.0
)


def aborted_ids(messages: list[agent.AgentServerMessage]) -> list[int]:
    return [
        m.exec_server_control_message.abort.id
        for m in messages
        if m.HasField("exec_server_control_message")
    ]


async def test_an_unanswered_read_is_aborted_and_the_model_reads_why(
    fake: FakeProvider, public_id: str, make_server: StartServer
) -> None:
    server = await make_server(limits=LIMITS)
    cursor = FakeCursor(f"http://{server.address}")
    tools = [
        FakeToolCall("call_read", "Read", args(path="/a.txt")),
        FakeToolCall("call_grep", "Grep", args(pattern="alpha")),
    ]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    fake.enqueue(Script.sse(chat_events(text=["Went on without them."])))
    try:
        # No workspace: this editor never answers an exec.
        session = CursorSession(cursor, "exec-deadline", batch_size=2)
        log = await asyncio.wait_for(session.run(user_turn_message("read a", public_id)), 20)
    finally:
        await cursor.aclose()
    assert log.end == {}
    read, grep = exec_requests(log)
    assert (read.WhichOneof("message"), grep.WhichOneof("message")) == ("read_args", "grep_args")
    assert sorted(aborted_ids(log.messages)) == sorted([read.id, grep.id])
    results = tool_results(fake.requests[1].json)
    assert results["call_read"].startswith(
        f"Error: the editor did not answer Read within {DEADLINE_S:g} s"
    )
    assert results["call_grep"].startswith(
        f"Error: the editor did not answer Grep within {DEADLINE_S:g} s"
    )
    # The card keeps its arguments and shows the error; the turn ended normally after it.
    completed = {c.call_id: c.tool_call for c in updates(log, "tool_call_completed")}
    card = completed["call_read"].read_tool_call
    assert card.args.path == "/a.txt"
    assert "did not answer Read" in card.result.error.error_message
    assert "turn_ended" in log.kinds()


class LateEditor(CursorSession):
    """An editor that answers each exec only once the server has aborted it."""

    late_answers = 0

    def _on_exec(self, exec_message: agent.ExecServerMessage) -> None:
        async def answer_when_aborted() -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                late = agent.ExecClientMessage(id=exec_message.id, read_result=agent.ReadResult())
                self._dispatch(agent.AgentClientMessage(exec_client_message=late), "exec")
                self.late_answers += 1
                raise

        self._exec_tasks[exec_message.id] = self._spawn(answer_when_aborted(), self._work)


async def test_a_late_answer_to_an_aborted_exec_is_dropped(
    fake: FakeProvider, public_id: str, make_server: StartServer
) -> None:
    """The editor answers after the abort: the run is not failed for it."""
    server = await make_server(limits=LIMITS)
    cursor = FakeCursor(f"http://{server.address}")
    fake.enqueue(Script.sse(chat_events(tools=[FakeToolCall("c1", "Read", args(path="/a"))])))
    fake.enqueue(Script.sse(chat_events(text=["ok"])))
    session = LateEditor(cursor, "exec-late")
    try:
        log = await asyncio.wait_for(session.run(user_turn_message("read", public_id)), 20)
    finally:
        await cursor.aclose()
    assert session.late_answers == 1
    assert log.end == {}
    assert len(fake.requests) == 2


async def test_an_exec_that_can_wait_on_the_user_keeps_waiting(
    fake: FakeProvider, public_id: str, make_server: StartServer
) -> None:
    server = await make_server(limits=LIMITS)
    cursor = FakeCursor(f"http://{server.address}")
    tools = [
        FakeToolCall("call_delete", "Delete", args(path="/b.txt")),
        FakeToolCall("call_shell", "Shell", args(command="make release")),
    ]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    session = CursorSession(cursor, "exec-waits")  # never answers: the user has not approved
    run = asyncio.create_task(session.run(user_turn_message("clean up", public_id)))
    try:
        await asyncio.sleep(4 * DEADLINE_S)
        assert not run.done()
        kinds = {m.WhichOneof("message") for m in exec_requests(session.log)}
        assert kinds == {"delete_args", "shell_stream_args"}
        assert aborted_ids(session.log.messages) == []  # still waiting for the approvals
        assert len(fake.requests) == 1
    finally:
        run.cancel()
        await asyncio.wait([run])
        await cursor.aclose()
