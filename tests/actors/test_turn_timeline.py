"""What a run tells its event recorder (``actors.turn.timeline``): pure functions from the facts
the run hears to the spans the recorder writes, tested without IO."""

from __future__ import annotations

from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    Role,
)
from actors.protocols.checkpoint import (
    CheckpointFailed,
    CheckpointPublished,
    PublishFinal,
    PublishSettled,
    PublishStaged,
)
from actors.protocols.run_events import SpanClosed, SpanOpened
from actors.protocols.tool_runtime import EndedCall, ToolCompleted, ToolRuntimeStopped
from actors.turn import timeline
from store.run_events import EventKind
from tests.support.fake_cursor import resume_message, user_turn_message
from wire.errors import Code, ConnectError, cancelled_error
from wire.proto import agent_v1_pb2 as agent


def test_a_typed_message_starts_a_run_with_its_text_cut_to_500_chars() -> None:
    request = user_turn_message("x" * 600, "abcd0123").run_request
    assert timeline.run_started(request, "abcd0123", 10, "default") == SpanOpened(
        EventKind.RUN,
        "",
        10,
        {
            "model": "abcd0123",
            "asked": "default",
            "mode": "agent",
            "resumed": False,
            "text": "x" * 500,
        },
    )


def test_a_resume_starts_a_run_without_text() -> None:
    state = agent.ConversationStateStructure(root_prompt_messages_json=[b"r"])
    request = resume_message("abcd0123", conversation_id="c", conversation_state=state)
    opened = timeline.run_started(request.run_request, "abcd0123", 10)
    assert opened.detail == {
        "model": "abcd0123",
        "asked": "",
        "mode": "agent",
        "resumed": True,
        "text": None,
    }


def test_an_empty_text_is_no_title() -> None:
    request = user_turn_message("", "abcd0123").run_request
    assert timeline.run_started(request, "m", 1).detail["text"] is None


def test_the_end_names_the_endstream_code_ok_on_success() -> None:
    assert timeline.run_ended(None, 20) == SpanClosed(
        EventKind.RUN, "", 20, {"code": "ok", "message": None}
    )
    assert timeline.run_ended(cancelled_error(), 21).detail == {
        "code": "canceled",
        "message": "run was cancelled",
    }
    unavailable = ConnectError(Code.UNAVAILABLE, "provider error: HTTP 500")
    assert timeline.run_ended(unavailable, 22).detail["code"] == "unavailable"


FINAL = CanonicalMessage("m", Role.ASSISTANT, Origin.ASSISTANT, AssistantContent(text="a"))


def test_each_job_kind_is_submitted_under_its_job_id() -> None:
    jobs = (
        PublishSettled(2, (), (), None),
        PublishStaged(3, (), AssistantContent(), (), None, 0),
        PublishFinal(4, (), FINAL, (), None, (), 0),
    )
    opened = [timeline.checkpoint_submitted(job, 5) for job in jobs]
    assert [(o.kind, o.key, o.started_at_ms) for o in opened] == [
        (EventKind.CHECKPOINT, "2", 5),
        (EventKind.CHECKPOINT, "3", 5),
        (EventKind.CHECKPOINT, "4", 5),
    ]
    assert [o.detail for o in opened] == [
        {"job_id": 2, "kind": "settled"},
        {"job_id": 3, "kind": "staged"},
        {"job_id": 4, "kind": "final"},
    ]


def test_a_job_ends_published_or_failed_with_its_error() -> None:
    assert timeline.checkpoint_ended(CheckpointPublished(3), 9) == SpanClosed(
        EventKind.CHECKPOINT, "3", 9, {"outcome": "published"}
    )
    failed = CheckpointFailed(4, ConnectError(Code.INTERNAL, "no ack"))
    assert timeline.checkpoint_ended(failed, 9).detail == {"outcome": "failed", "error": "no ack"}


CALLS = (
    CanonicalToolCall(0, "c1", "Read", "{}", "run:0"),
    CanonicalToolCall(1, "c2", "Shell", "{}", "run:0"),
)


def test_a_round_opens_one_span_per_call() -> None:
    assert timeline.tools_dispatched(CALLS, 7) == (
        SpanOpened(EventKind.TOOL, "c1", 7, {"call_id": "c1", "tool": "Read"}),
        SpanOpened(EventKind.TOOL, "c2", 7, {"call_id": "c2", "tool": "Shell"}),
    )


def test_a_completion_closes_its_call_with_the_runtimes_times_and_wire_ids() -> None:
    done = ToolCompleted("r", "c1", "Read", "run:0", "text", False, b"", 100, 150, (3,))
    assert timeline.tool_completed(done) == SpanClosed(
        EventKind.TOOL,
        "c1",
        150,
        {"call_id": "c1", "tool": "Read", "wire_ids": (3,), "outcome": "success"},
        started_at_ms=100,
    )
    failed = ToolCompleted("r", "c2", "Read", "run:0", "bad", True, b"", 1, 1)
    closed = timeline.tool_completed(failed)
    assert closed.detail["outcome"] == "error" and closed.detail["wire_ids"] == ()


def test_an_abort_closes_each_aborted_call() -> None:
    stopped = ToolRuntimeStopped((EndedCall("c2", "StrReplace", (4, 5)),))
    assert stopped.aborted_ids == (5,)
    assert timeline.tools_aborted(stopped, 30) == (
        SpanClosed(
            EventKind.TOOL,
            "c2",
            30,
            {"call_id": "c2", "tool": "StrReplace", "wire_ids": (4, 5), "outcome": "aborted"},
        ),
    )
    assert timeline.tools_aborted(ToolRuntimeStopped(()), 30) == ()
