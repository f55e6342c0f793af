"""The ToolRuntimeActor at actor level: typed messages in, frames and typed replies out.

A RunOutput double decodes every frame with our proto classes; a listener with a thread-safe
``tell`` collects replies; the clock is a counter so timestamps are checkable. Every wait is
bounded: a frame or reply within ``WAIT_S``, silence checked over ``QUIET_S``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pykka
import pytest

from actors.conversation.model import CanonicalToolCall
from actors.protocols.mailbox import ActorHandle
from actors.protocols.tool_runtime import (
    AbortPendingExecs,
    EndedCall,
    ExecControlReceived,
    ExecMessageReceived,
    InteractionResponseReceived,
    RoundSettled,
    RunUserCommand,
    StartToolRound,
    ToolCompleted,
    ToolRuntimeFailed,
    ToolRuntimeMessage,
    ToolRuntimeReply,
    ToolRuntimeStopped,
)
from actors.tool_runtime import start_tool_runtime
from tests.support.actor_doubles import QUIET_S, WAIT_S, QueueListener, RecordingOutput
from wire.errors import Code
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import ExecContext, ModeTools, Todo
from wire.tools.registry import unavailable_tool_result, unknown_tool_result

MODEL_CALL_ID = "req-tools:0"


# ---- doubles ----


class Listener(QueueListener[ToolRuntimeReply]):
    def completed(self) -> ToolCompleted:
        reply = self.next()
        assert isinstance(reply, ToolCompleted), reply
        return reply


class Run:
    """One started actor with its output and listener."""

    def __init__(
        self,
        ref: ActorHandle[ToolRuntimeMessage],
        output: RecordingOutput[agent.AgentServerMessage],
        listener: Listener,
    ) -> None:
        assert isinstance(ref, pykka.ActorRef)  # tests wait on its actor_stopped
        self.ref = ref
        self.output = output
        self.listener = listener

    def round(self, round_id: str, *calls: CanonicalToolCall) -> None:
        self.ref.tell(StartToolRound(round_id, calls))

    def client(self, message: agent.ExecClientMessage) -> None:
        self.ref.tell(ExecMessageReceived(message))

    def control(self, **variant: Any) -> None:
        self.ref.tell(ExecControlReceived(agent.ExecClientControlMessage(**variant)))

    def dispatched(self) -> tuple[agent.ToolCallStartedUpdate, agent.ExecServerMessage]:
        """The next two frames: a call's ``tool_call_started`` and then its exec request."""
        started, request = self.output.take(2)
        assert started.interaction_update.WhichOneof("message") == "tool_call_started", started
        assert request.WhichOneof("message") == "exec_server_message", request
        return started.interaction_update.tool_call_started, request.exec_server_message

    def exec_request(self) -> agent.ExecServerMessage:
        frame = self.output.next()
        assert frame.WhichOneof("message") == "exec_server_message", frame
        return frame.exec_server_message

    def failed(self, message: str) -> None:
        reply = self.listener.next()
        assert isinstance(reply, ToolRuntimeFailed), reply
        assert (reply.error.code, reply.error.message) == (Code.INVALID_ARGUMENT, message)


def call(call_id: str, name: str, index: int = 0, **args: Any) -> CanonicalToolCall:
    return CanonicalToolCall(index, call_id, name, json.dumps(args), MODEL_CALL_ID)


def read_ok(wire_id: int, content: str) -> agent.ExecClientMessage:
    result = agent.ReadResult(success=agent.ReadSuccess(path="/p", content=content))
    return agent.ExecClientMessage(id=wire_id, read_result=result)


def write_ok(wire_id: int) -> agent.ExecClientMessage:
    result = agent.WriteResult(success=agent.WriteSuccess(path="/p", lines_created=1))
    return agent.ExecClientMessage(id=wire_id, write_result=result)


def shell(wire_id: int, **event: Any) -> agent.ExecClientMessage:
    return agent.ExecClientMessage(id=wire_id, shell_stream=agent.ShellStream(**event))


# ---- fixtures ----


@pytest.fixture
def run() -> Iterator[Run]:
    output, listener = RecordingOutput[agent.AgentServerMessage](), Listener()
    clock = itertools.count(1_700_000_000_000, 7)
    ref = start_tool_runtime(
        "req-tools",
        output,
        listener,
        ExecContext(conversation_id="conv-1", terminals_folder="/t"),
        clock=lambda: next(clock),
    )
    yield Run(ref, output, listener)
    with contextlib.suppress(pykka.ActorDeadError):
        ref.stop(timeout=WAIT_S)


# ---- wire ids ----


def test_ids_start_at_one_and_grow_across_rounds_and_edit_phases(run: Run) -> None:
    run.round("r1", call("a", "Read", 0, path="/a"), call("b", "Delete", 1, path="/b"))
    started_a, read = run.dispatched()
    started_b, delete = run.dispatched()
    assert (started_a.call_id, read.id, read.exec_id) == ("a", 1, "a")
    assert (started_b.call_id, delete.id, delete.exec_id) == ("b", 2, "b")
    run.client(read_ok(1, "A"))
    deleted = agent.DeleteResult(success=agent.DeleteSuccess(path="/b"))
    run.client(agent.ExecClientMessage(id=2, delete_result=deleted))
    # Each completion names the wire ids of its call's execs.
    done_a, done_b = run.listener.completed(), run.listener.completed()
    assert [(d.call_id, d.wire_ids) for d in (done_a, done_b)] == [("a", (1,)), ("b", (2,))]
    run.ref.tell(RoundSettled("r1"))

    run.round("r2", call("c", "StrReplace", 0, path="/p", old_string="x", new_string="y"))
    started_c, hidden_read = run.dispatched()
    assert (started_c.call_id, hidden_read.id, hidden_read.WhichOneof("message")) == (
        "c",
        3,
        "read_args",
    )
    run.client(read_ok(3, "x\n"))
    write = run.exec_request()
    assert (write.id, write.exec_id, write.write_args.file_text) == (4, "c", "y\n")
    run.output.assert_silent()  # one call: no second tool_call_started
    run.client(write_ok(4))
    done = run.listener.completed()
    assert (done.call_id, done.is_error, done.wire_ids) == ("c", False, (3, 4))
    assert done.content == "edited /p: replaced 1 occurrence; the file now has 1 line"

    # Settled ids are gone for good: they are not reused and not answerable.
    run.ref.tell(RoundSettled("r2"))
    run.client(read_ok(1, "late"))
    run.failed("protocol error: unknown ExecClientMessage id: 1")


def test_each_call_is_started_then_sent_in_index_order(run: Run) -> None:
    run.round(
        "r1",
        call("second", "Grep", 1, pattern="x"),
        call("first", "Shell", 0, command="ls"),
    )
    first_started, first = run.dispatched()
    second_started, second = run.dispatched()
    assert (first_started.call_id, first.id, first.WhichOneof("message")) == (
        "first",
        1,
        "shell_stream_args",
    )
    assert (second_started.call_id, second.id) == ("second", 2)
    assert first_started.model_call_id == MODEL_CALL_ID
    assert first_started.tool_call.shell_tool_call.args.command == "ls"
    assert first_started.tool_call.tool_call_id == "first"
    assert first_started.tool_call.started_at_ms > 0
    assert not first_started.tool_call.HasField("completed_at_ms")


# ---- completions ----


def test_parallel_results_answered_in_reverse_complete_in_arrival_order(run: Run) -> None:
    run.round(
        "r1",
        call("a", "Read", 0, path="/a"),
        call("b", "Read", 1, path="/b"),
        call("c", "Read", 2, path="/c"),
    )
    ids = [run.dispatched()[1].id for _ in range(3)]
    assert ids == [1, 2, 3]
    for wire_id, text in ((3, "C text\n"), (2, "B text\n"), (1, "A text\n")):
        run.client(read_ok(wire_id, text))
    done = [run.listener.completed() for _ in range(3)]
    assert [(d.call_id, d.content, d.is_error) for d in done] == [
        ("c", "C text\n", False),
        ("b", "B text\n", False),
        ("a", "A text\n", False),
    ]
    for completion in done:
        assert (completion.round_id, completion.name) == ("r1", "Read")
        assert completion.model_call_id == MODEL_CALL_ID
        typed = agent.ToolCall.FromString(completion.tool_call)
        assert typed.tool_call_id == completion.call_id
        assert typed.started_at_ms == completion.started_at_ms
        assert typed.completed_at_ms == completion.completed_at_ms
        assert completion.completed_at_ms > completion.started_at_ms
        assert typed.read_tool_call.result.success.content == completion.content
    run.listener.assert_silent()


def test_shell_output_streams_as_deltas_then_exit_completes(run: Run) -> None:
    run.round("r1", call("sh", "Shell", 0, command="make"))
    _, request = run.dispatched()
    run.client(shell(request.id, start=agent.ShellStreamStart()))
    run.client(shell(request.id, stdout=agent.ShellStreamStdout(data="compiling\n")))
    run.client(shell(request.id, stderr=agent.ShellStreamStderr(data="warning\n")))
    deltas = [frame.interaction_update.tool_call_delta for frame in run.output.take(2)]
    assert [(d.call_id, d.model_call_id) for d in deltas] == [("sh", MODEL_CALL_ID)] * 2
    assert deltas[0].tool_call_delta.shell_tool_call_delta.stdout.content == "compiling\n"
    assert deltas[1].tool_call_delta.shell_tool_call_delta.stderr.content == "warning\n"
    run.listener.assert_silent()
    run.client(shell(request.id, exit=agent.ShellStreamExit(code=0, cwd="/w")))
    done = run.listener.completed()
    assert (done.content, done.is_error) == ("compiling\n<stderr>\nwarning\n</stderr>", False)
    result = agent.ToolCall.FromString(done.tool_call).shell_tool_call.result
    assert result.success.stdout == "compiling\n"
    run.control(stream_close=agent.ExecClientStreamClose(id=request.id))  # the usual tail
    run.listener.assert_silent()
    run.output.assert_silent()


def test_a_backgrounded_shell_ends_the_call_and_is_not_aborted(run: Run) -> None:
    run.round("r1", call("dev", "Shell", 0, command="npm run dev", block_until_ms=0))
    _, request = run.dispatched()
    backgrounded = agent.ShellStreamBackgrounded(shell_id=9, pid=77)
    run.client(shell(request.id, backgrounded=backgrounded))
    done = run.listener.completed()
    assert done.content == (
        "the command keeps running in the background: shell_id=9 pid=77; "
        "its output keeps going to /t/9.txt"
    )
    assert not done.is_error
    run.ref.tell(AbortPendingExecs("cancelled"))
    assert run.listener.next() == ToolRuntimeStopped(())
    run.output.assert_silent()


def test_an_empty_exec_client_message_is_not_terminal(run: Run) -> None:
    run.round("r1", call("a", "Read", 0, path="/a"))
    _, request = run.dispatched()
    run.client(agent.ExecClientMessage(id=request.id))
    run.listener.assert_silent()
    run.client(read_ok(request.id, "text"))
    assert run.listener.completed().content == "text"


def test_todo_write_completes_locally_without_an_exec_frame(run: Run) -> None:
    todos = [
        {"id": "1", "content": "a", "status": "completed"},
        {"id": "2", "content": "b", "status": "pending"},
    ]
    run.round("r1", call("t", "TodoWrite", 0, todos=todos, merge=False))
    started = run.output.next()
    assert started.interaction_update.tool_call_started.call_id == "t"
    done = run.listener.completed()
    assert (done.call_id, done.is_error) == ("t", False)
    assert done.content.splitlines()[1:] == ["- [completed] 1: a", "- [pending] 2: b"]
    assert agent.ToolCall.FromString(done.tool_call).update_todos_tool_call.result.success
    run.output.assert_silent()
    # It took no wire id: the next exec is still number 1.
    run.round("r2", call("r", "Read", 0, path="/a"))
    assert run.dispatched()[1].id == 1


def test_each_todo_write_merges_onto_the_list_the_round_gives_it(run: Run) -> None:
    item = {"id": "2", "content": "b", "status": "completed"}
    given = (Todo("1", "a", "pending"), Todo("2", "b", "pending"))
    calls = (call("t", "TodoWrite", 0, todos=[item], merge=True),)
    run.ref.tell(StartToolRound("r1", calls, {"t": given}))
    done = run.listener.completed()
    success = agent.ToolCall.FromString(done.tool_call).update_todos_tool_call.result.success
    assert [(t.id, t.status) for t in success.todos] == [
        ("1", agent.TODO_STATUS_PENDING),
        ("2", agent.TODO_STATUS_COMPLETED),
    ]


def test_bad_arguments_complete_at_once_as_an_error_without_a_request(run: Run) -> None:
    run.round("r1", call("bad", "Read", 0, offset=3), call("ok", "Read", 1, path="/a"))
    started_bad = run.output.next().interaction_update.tool_call_started
    assert started_bad.call_id == "bad"
    done = run.listener.completed()
    assert (done.call_id, done.is_error, done.wire_ids) == ("bad", True, ())
    assert done.content == "invalid arguments for Read: 'path' is required (a string)"
    _, request = run.dispatched()
    assert (request.exec_id, request.id) == ("ok", 1)


# ---- protocol errors (notes/wire.md §3.5) ----


def test_unknown_id_fails_the_run(run: Run) -> None:
    run.client(read_ok(999, "x"))
    run.failed("protocol error: unknown ExecClientMessage id: 999")


def test_duplicate_terminal_fails_the_run(run: Run) -> None:
    run.round("r1", call("a", "Read", 0, path="/a"))
    _, request = run.dispatched()
    run.client(read_ok(request.id, "x"))
    run.listener.completed()
    run.client(read_ok(request.id, "x again"))
    run.failed(f"protocol error: duplicate terminal ExecClientMessage id: {request.id}")


def test_an_empty_message_after_the_terminal_is_a_duplicate_too(run: Run) -> None:
    run.round("r1", call("a", "Read", 0, path="/a"))
    _, request = run.dispatched()
    run.client(read_ok(request.id, "x"))
    run.listener.completed()
    run.client(agent.ExecClientMessage(id=request.id))
    run.failed(f"protocol error: duplicate terminal ExecClientMessage id: {request.id}")


def test_stream_close_before_the_result_fails_the_run(run: Run) -> None:
    run.round("r1", call("a", "Read", 0, path="/a"), call("b", "Read", 1, path="/b"))
    run.dispatched()
    run.dispatched()
    run.control(stream_close=agent.ExecClientStreamClose(id=2))
    run.failed("protocol error: Exec stream closed before result for id: 2")
    # The closed exec is consumed; the other one is still pending and gets the abort.
    run.ref.tell(AbortPendingExecs("run failed"))
    assert run.output.next().exec_server_control_message.abort.id == 1
    assert run.listener.next() == ToolRuntimeStopped((EndedCall("a", "Read", (1,)),))


def test_a_throw_fails_the_run_with_the_clients_error(run: Run) -> None:
    run.round("r1", call("call-a", "Read", 0, path="/a"))
    _, request = run.dispatched()
    run.control(throw=agent.ExecClientThrow(id=request.id, error="ENOENT: boom"))
    run.failed("protocol error: Exec call-a failed: ENOENT: boom")


def test_a_throw_for_an_unknown_id_fails_the_run(run: Run) -> None:
    run.control(throw=agent.ExecClientThrow(id=7, error="x"))
    run.failed("protocol error: unknown ExecClientThrow id: 7")


def test_a_result_of_the_wrong_kind_fails_the_run_and_consumes_the_exec(run: Run) -> None:
    run.round("r1", call("a", "Read", 0, path="/a"))
    _, request = run.dispatched()
    run.client(write_ok(request.id))
    run.failed("protocol error: unexpected Exec result for tool Read")
    run.ref.tell(AbortPendingExecs("run failed"))
    assert run.listener.next() == ToolRuntimeStopped(())
    run.output.assert_silent()


def test_only_the_first_failure_is_told(run: Run) -> None:
    run.client(read_ok(5, "x"))
    run.failed("protocol error: unknown ExecClientMessage id: 5")
    run.client(read_ok(6, "x"))
    run.control(throw=agent.ExecClientThrow(id=8, error="x"))
    run.listener.assert_silent()


def test_an_unknown_tool_name_is_an_error_result_for_the_model_and_shows_no_card(
    run: Run,
) -> None:
    """The model's mistake, not the client's: the known call runs, the unknown one completes
    at once as an error the model reads, with no card and no exec."""
    run.round("r1", call("a", "Read", 0, path="/a"), call("b", "Teleport", 1, to="mars"))
    started, request = run.dispatched()
    assert started.call_id == "a" and request.WhichOneof("message") == "read_args"
    refused = run.listener.completed()
    assert (refused.call_id, refused.name, refused.is_error) == ("b", "Teleport", True)
    assert refused.content == unknown_tool_result("Teleport")
    assert refused.tool_call == b"" and refused.wire_ids == ()
    run.output.assert_silent()  # nothing about the unknown call reaches the editor
    run.client(read_ok(request.id, "text"))
    done = run.listener.completed()
    assert (done.call_id, done.is_error) == ("a", False)


def test_a_tool_outside_the_runs_mode_is_an_error_result_for_the_model_and_shows_no_card() -> None:
    """Write in Ask mode: refused like an unknown tool, naming the mode; the allowed call runs."""
    output, listener = RecordingOutput[agent.AgentServerMessage](), Listener()
    ask = ModeTools("Ask", ("Glob", "Grep", "Read", "ReadLints"))
    ref = start_tool_runtime("req-ask", output, listener, ExecContext(mode=ask))
    ask_run = Run(ref, output, listener)
    try:
        ask_run.round(
            "r1",
            call("a", "Write", 0, path="/a", contents="x"),
            call("b", "read", 1, path="/b"),  # a tool name the model spelt its own way
        )
        refused = ask_run.listener.completed()
        assert (refused.call_id, refused.name, refused.is_error) == ("a", "Write", True)
        assert refused.content == unavailable_tool_result("Write", ask)
        assert refused.content.startswith("Error: Write is not available in Ask mode.")
        assert "Glob, Grep, Read, ReadLints" in refused.content
        assert refused.tool_call == b"" and refused.wire_ids == ()
        started, request = ask_run.dispatched()  # only the Read reaches the editor
        assert started.call_id == "b" and request.WhichOneof("message") == "read_args"
        ask_run.output.assert_silent()
    finally:
        with contextlib.suppress(pykka.ActorDeadError):
            ref.stop(timeout=WAIT_S)


def test_an_unknown_interaction_response_fails_the_run(run: Run) -> None:
    run.ref.tell(InteractionResponseReceived(agent.InteractionResponse(id=4)))
    run.failed("protocol error: unknown InteractionResponse id: 4")


# ---- the interaction channel ----

QUESTION = {
    "id": "q1",
    "prompt": "Which database?",
    "options": [{"id": "pg", "label": "PostgreSQL"}, {"id": "sq", "label": "SQLite"}],
}


def asked(run: Run) -> tuple[agent.ToolCallStartedUpdate, agent.InteractionQuery]:
    """The next two frames: a call's ``tool_call_started`` and then its interaction query."""
    started, query = run.output.take(2)
    assert started.interaction_update.WhichOneof("message") == "tool_call_started", started
    assert query.WhichOneof("message") == "interaction_query", query
    return started.interaction_update.tool_call_started, query.interaction_query


def answered(wire_id: int, *options: str, text: str = "") -> agent.InteractionResponse:
    answer = agent.AskQuestionSuccess.Answer(
        question_id="q1", selected_option_ids=options, freeform_text=text
    )
    result = agent.AskQuestionResult(success=agent.AskQuestionSuccess(answers=[answer]))
    return agent.InteractionResponse(
        id=wire_id,
        ask_question_interaction_response=agent.AskQuestionInteractionResponse(result=result),
    )


def respond(run: Run, response: agent.InteractionResponse) -> None:
    run.ref.tell(InteractionResponseReceived(response))


def test_execs_and_queries_share_one_id_space_and_an_answer_completes_the_call(
    run: Run,
) -> None:
    run.round(
        "r1",
        call("a", "Read", 0, path="/a"),
        call("q", "AskQuestion", 1, title="Setup", questions=[QUESTION]),
        call("d", "Delete", 2, path="/d"),
    )
    assert run.dispatched()[1].id == 1
    started, query = asked(run)
    assert run.dispatched()[1].id == 3
    assert query.id == 2
    ask = query.ask_question_interaction_query
    assert (ask.tool_call_id, ask.args.title, ask.args.questions[0].options[1].label) == (
        "q",
        "Setup",
        "SQLite",
    )
    assert started.tool_call.ask_question_tool_call.args == ask.args
    respond(run, answered(2, "pg"))
    done = run.listener.completed()
    assert (done.call_id, done.content, done.is_error, done.wire_ids) == (
        "q",
        "q1: pg",
        False,
        (2,),
    )
    card = agent.ToolCall.FromString(done.tool_call).ask_question_tool_call
    assert card.result.success.answers[0].selected_option_ids == ["pg"]
    # The next exec gets the next id: nothing is reused.
    run.round("r2", call("b", "Read", 0, path="/b"))
    assert run.dispatched()[1].id == 4


def test_typed_words_win_over_options_and_a_refusal_is_an_error_result(run: Run) -> None:
    run.round("r1", call("q", "AskQuestion", 0, questions=[QUESTION]))
    asked(run)
    respond(run, answered(1, "pg", text="MySQL, actually"))
    assert run.listener.completed().content == "q1: MySQL, actually"
    run.round("r2", call("q2", "AskQuestion", 0, questions=[QUESTION]))
    asked(run)
    rejected = agent.AskQuestionResult(rejected=agent.AskQuestionRejected(reason="later"))
    respond(
        run,
        agent.InteractionResponse(
            id=2,
            ask_question_interaction_response=agent.AskQuestionInteractionResponse(result=rejected),
        ),
    )
    done = run.listener.completed()
    assert (done.content, done.is_error) == ("the user declined to answer: later", True)


def test_bad_questions_are_an_error_result_and_send_no_query(run: Run) -> None:
    one_option = {**QUESTION, "options": QUESTION["options"][:1]}
    run.round("r1", call("q", "AskQuestion", 0, questions=[one_option]))
    run.output.next()  # its started card
    done = run.listener.completed()
    assert done.is_error and "at least two options" in done.content
    run.output.assert_silent()


def test_a_duplicate_interaction_response_fails_the_run(run: Run) -> None:
    run.round("r1", call("q", "AskQuestion", 0, questions=[QUESTION]))
    asked(run)
    respond(run, answered(1, "pg"))
    run.listener.completed()
    respond(run, answered(1, "sq"))
    run.failed("protocol error: duplicate terminal InteractionResponse id: 1")


def test_an_exec_message_for_a_query_id_is_an_unknown_exec_id(run: Run) -> None:
    run.round("r1", call("q", "AskQuestion", 0, questions=[QUESTION]))
    asked(run)
    run.client(read_ok(1, "not a question's answer"))
    run.failed("protocol error: unknown ExecClientMessage id: 1")


def test_an_interaction_response_for_an_exec_id_is_unknown_even_after_its_result(
    run: Run,
) -> None:
    run.round("r1", call("a", "Read", 0, path="/a"))
    run.dispatched()
    run.client(read_ok(1, "A"))
    run.listener.completed()
    respond(run, answered(1, "pg"))
    run.failed("protocol error: unknown InteractionResponse id: 1")


@pytest.mark.parametrize(
    "response",
    [
        agent.InteractionResponse(id=1),  # no result at all
        # A variant this subset does not declare (field 5; 4 is SwitchMode's, declared).
        agent.InteractionResponse.FromString(
            agent.InteractionResponse(id=1).SerializeToString() + b"\x2a\x00"
        ),
        # A declared variant of another tool (SwitchMode's).
        agent.InteractionResponse(
            id=1, switch_mode_request_response=agent.SwitchModeRequestResponse()
        ),
    ],
    ids=["empty", "undeclared-variant", "another-tools-response"],
)
def test_a_response_that_is_not_this_tools_answer_fails_the_run(
    run: Run, response: agent.InteractionResponse
) -> None:
    run.round("r1", call("q", "AskQuestion", 0, questions=[QUESTION]))
    asked(run)
    respond(run, response)
    run.failed("protocol error: unexpected InteractionResponse for tool AskQuestion")


def test_abort_closes_a_pending_query_without_a_wire_message(run: Run) -> None:
    run.round(
        "r1",
        call("q", "AskQuestion", 0, questions=[QUESTION]),
        call("a", "Read", 1, path="/a"),
    )
    asked(run)
    run.dispatched()
    run.ref.tell(AbortPendingExecs("user cancelled"))
    (abort,) = run.output.take(1)
    assert abort.exec_server_control_message.abort.id == 2
    assert run.listener.next() == ToolRuntimeStopped(
        (EndedCall("a", "Read", (2,)),), (EndedCall("q", "AskQuestion", (1,)),)
    )
    assert run.ref.actor_stopped.wait(WAIT_S)
    run.output.assert_silent()


# ---- cancel ----


def test_abort_sends_one_abort_per_pending_exec_in_ascending_order_then_stops(run: Run) -> None:
    run.round(
        "r1",
        call("a", "Read", 0, path="/a"),
        call("b", "Shell", 1, command="sleep 60"),
        call("c", "Grep", 2, pattern="x"),
        call("d", "Delete", 3, path="/d"),
    )
    ids = [run.dispatched()[1].id for _ in range(4)]
    assert ids == [1, 2, 3, 4]
    run.client(read_ok(1, "done"))
    run.listener.completed()
    run.client(shell(2, stdout=agent.ShellStreamStdout(data="zzz")))
    run.output.next()  # its delta
    run.ref.tell(AbortPendingExecs("user cancelled"))
    aborts = [frame.exec_server_control_message.abort.id for frame in run.output.take(3)]
    assert aborts == [2, 3, 4]
    assert run.listener.next() == ToolRuntimeStopped(
        (
            EndedCall("b", "Shell", (2,)),
            EndedCall("c", "Grep", (3,)),
            EndedCall("d", "Delete", (4,)),
        )
    )
    assert run.ref.actor_stopped.wait(WAIT_S)
    run.output.assert_silent()


# ---- pauses (AwaitShell's polls and timer) ----


class ManualTimer:
    """One scheduled callback the test fires by hand."""

    def __init__(self, delay: float, callback: Callable[[], None]) -> None:
        self.delay = delay
        self.callback = callback
        self.cancelled = threading.Event()

    def cancel(self) -> None:
        self.cancelled.set()

    def fire(self) -> None:
        self.callback()


class ManualTimers:
    """The ``Timers`` port with no clock: every pause waits until the test fires it."""

    def __init__(self) -> None:
        self.scheduled: queue.Queue[ManualTimer] = queue.Queue()

    def call_later(self, delay: float, callback: Callable[[], None]) -> ManualTimer:
        timer = ManualTimer(delay, callback)
        self.scheduled.put(timer)
        return timer

    def next(self) -> ManualTimer:
        return self.scheduled.get(timeout=WAIT_S)

    def assert_none(self) -> None:
        with pytest.raises(queue.Empty):
            timer = self.scheduled.get(timeout=QUIET_S)
            pytest.fail(f"unexpected pause of {timer.delay} s")


@pytest.fixture
def timers() -> ManualTimers:
    return ManualTimers()


@pytest.fixture
def timed_run(timers: ManualTimers) -> Iterator[Run]:
    output, listener = RecordingOutput[agent.AgentServerMessage](), Listener()
    clock = itertools.count(1_700_000_000_000, 7)
    ref = start_tool_runtime(
        "req-tools",
        output,
        listener,
        ExecContext(conversation_id="conv-1", terminals_folder="/t"),
        clock=lambda: next(clock),
        timers=timers,
    )
    yield Run(ref, output, listener)
    with contextlib.suppress(pykka.ActorDeadError):
        ref.stop(timeout=WAIT_S)


def test_each_poll_takes_a_fresh_wire_id_after_a_timer_pause(
    timed_run: Run, timers: ManualTimers
) -> None:
    run = timed_run
    run.round(
        "r1",
        call("w", "AwaitShell", 0, shell_id="7", pattern="^ready", block_until_ms=5000),
        call("a", "Read", 1, path="/a"),
    )
    _, first = run.dispatched()
    assert (first.id, first.read_args.path, first.accept_hook_additional_contexts) == (
        1,
        "/t/7.txt",
        False,
    )
    assert run.dispatched()[1].id == 2
    run.client(read_ok(1, "booting\n"))
    pause = timers.next()
    assert pause.delay == 1.0
    run.output.assert_silent()  # a pause sends nothing
    run.client(read_ok(2, "A"))  # and the mailbox is not asleep meanwhile
    assert run.listener.completed().call_id == "a"
    pause.fire()
    second = run.exec_request()
    assert (second.id, second.read_args.path) == (3, "/t/7.txt")
    run.client(read_ok(1, "late"))  # the first poll's id took its answer already
    run.failed("protocol error: duplicate terminal ExecClientMessage id: 1")


def test_a_poll_that_sees_the_pattern_completes_with_every_polls_id(
    timed_run: Run, timers: ManualTimers
) -> None:
    run = timed_run
    run.round("r1", call("w", "AwaitShell", 0, shell_id="7", pattern="^ready", block_until_ms=5000))
    run.dispatched()
    run.client(read_ok(1, "booting\n"))
    timers.next().fire()
    assert run.exec_request().id == 2
    run.client(read_ok(2, "booting\nready at last\n"))
    done = run.listener.completed()
    assert (done.call_id, done.is_error, done.wire_ids) == ("w", False, (1, 2))
    assert json.loads(done.content)["match"] == "ready"
    card = agent.ToolCall.FromString(done.tool_call).await_tool_call
    assert card.result.success.still_running.runtime_ms == 1000
    timers.assert_none()


def test_a_timer_only_wait_sends_only_its_started_card_and_completes_when_due(
    timed_run: Run, timers: ManualTimers
) -> None:
    run = timed_run
    run.round("r1", call("w", "AwaitShell", 0, block_until_ms=1500))
    (started,) = run.output.take(1)
    assert started.interaction_update.tool_call_started.call_id == "w"
    pause = timers.next()
    assert pause.delay == 1.5
    run.listener.assert_silent()
    pause.fire()
    done = run.listener.completed()
    assert (done.content, done.is_error, done.wire_ids) == ("Waited 1500 ms", False, ())
    run.output.assert_silent()  # no exec, before or after


def test_abort_closes_a_pause_cancels_its_timer_and_aborts_only_the_pending_execs(
    timed_run: Run, timers: ManualTimers
) -> None:
    run = timed_run
    run.round(
        "r1",
        call("w", "AwaitShell", 0, shell_id="7", pattern="ready"),
        call("a", "Read", 1, path="/a"),
    )
    run.dispatched()
    run.dispatched()
    run.client(read_ok(1, "booting\n"))
    pause = timers.next()
    run.ref.tell(AbortPendingExecs("user cancelled"))
    (abort,) = run.output.take(1)
    assert abort.exec_server_control_message.abort.id == 2
    assert run.listener.next() == ToolRuntimeStopped(
        (EndedCall("a", "Read", (2,)),), (EndedCall("w", "AwaitShell", (1,)),)
    )
    assert pause.cancelled.is_set()
    assert run.ref.actor_stopped.wait(WAIT_S)
    pause.fire()  # a timer that fires anyway finds the actor gone: nothing happens
    run.output.assert_silent()


def test_abort_while_a_poll_is_pending_aborts_that_read(
    timed_run: Run, timers: ManualTimers
) -> None:
    run = timed_run
    run.round("r1", call("w", "AwaitShell", 0, shell_id="7"))
    run.dispatched()
    run.client(read_ok(1, "booting\n"))
    timers.next().fire()
    assert run.exec_request().id == 2
    run.ref.tell(AbortPendingExecs("user cancelled"))
    (abort,) = run.output.take(1)
    assert abort.exec_server_control_message.abort.id == 2
    assert run.listener.next() == ToolRuntimeStopped((EndedCall("w", "AwaitShell", (1, 2)),))


# ---- a command the user ran ----


def test_a_user_command_is_one_shell_exec_under_its_exec_id_without_a_card(run: Run) -> None:
    run.ref.tell(RunUserCommand("req-tools:shell", "user-exec-1", "make test"))
    request = run.exec_request()  # no tool_call_started before it: the model did not call it
    assert (request.id, request.exec_id) == (1, "user-exec-1")
    args = request.shell_stream_args
    assert (args.command, args.tool_call_id, args.conversation_id) == (
        "make test",
        "user-exec-1",
        "conv-1",
    )
    run.client(shell(1, stdout=agent.ShellStreamStdout(data="ok\n")))
    delta = run.output.next().interaction_update.tool_call_delta
    assert (delta.call_id, delta.model_call_id) == ("user-exec-1", "")
    assert delta.tool_call_delta.shell_tool_call_delta.stdout.content == "ok\n"
    run.client(shell(1, exit=agent.ShellStreamExit(code=2)))
    done = run.listener.completed()
    assert (done.round_id, done.call_id, done.wire_ids, done.is_error) == (
        "req-tools:shell",
        "user-exec-1",
        (1,),
        True,
    )
    result = agent.ToolCall.FromString(done.tool_call).shell_tool_call.result
    assert (result.failure.exit_code, result.failure.stdout) == (2, "ok\n")
    run.output.assert_silent()


def test_a_user_command_is_aborted_like_any_pending_exec(run: Run) -> None:
    run.ref.tell(RunUserCommand("req-tools:shell", "user-exec-1", "sleep 100"))
    run.exec_request()
    run.ref.tell(AbortPendingExecs("the run ended"))
    abort = run.output.next().exec_server_control_message.abort
    assert abort.id == 1
    stopped = run.listener.next()
    assert isinstance(stopped, ToolRuntimeStopped)
    assert stopped.aborted == (EndedCall("user-exec-1", "Shell", (1,)),)
