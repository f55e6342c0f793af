"""The turn's phases (``actors.turn``) on their own: no threads, no sockets, no SQLite.

Each phase is fed the messages the run's actors would send and checked on what it returns
(frames, steps, outcomes, store writes, end effects). The end-to-end behaviour of the same
phases, driven by AgentRun against a real store and client, is in ``tests/e2e/test_agent_turn.py``.
"""

from __future__ import annotations

import ast

import msgspec
import pytest

from actors.codecs.checkpoint_json import encode_root, encode_system_root
from actors.conversation.events import (
    FinishReason,
    ProviderEvent,
    TextDelta,
    TextEnded,
    TextStarted,
    ThinkingDelta,
    ThinkingEnded,
    ThinkingStarted,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    Usage,
    UsageReported,
)
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    ReplayState,
    Role,
    TextPart,
    ToolResultContent,
)
from actors.conversation.request import ProviderToolCall
from actors.protocols.blob_sync import BlobFetched
from actors.protocols.checkpoint import AssistantStep, ThinkingStep, ToolCallStep
from actors.protocols.provider import ProviderCallEnded, ProviderEventsReceived
from actors.protocols.tool_runtime import ToolCompleted
from actors.turn.ending import (
    AbortPendingCalls,
    EndStream,
    RecordRunEnd,
    ReleaseConversation,
    RunEnding,
    StopChildren,
)
from actors.turn.interrupted import INTERRUPTED_RESULT, interrupted_pairs
from actors.turn.model_call import (
    CallAnswered,
    CallCancelled,
    CallFailed,
    CallOutcome,
    CallWantsTools,
    ModelCall,
    add_usage,
    turn_ended,
)
from actors.turn.plan import (
    BaseFetch,
    CheckpointJobs,
    TurnKind,
    exec_context,
    imported_history,
    plan_turn,
    wanted_blobs,
)
from actors.turn.tool_round import ToolRound
from prompt import load_prompt_assets
from store.blobs import blob_id_of
from store.conversations import (
    RunStatus,
    ToolCallRecord,
    ToolCallStatus,
    ToolRoundRecord,
    ToolRoundStatus,
)
from store.llm_calls import CallStatus
from tests.support.process import REPO
from wire.connect import EnvelopeReader
from wire.errors import Code, ConnectError, cancelled_error
from wire.proto import agent_v1_pb2 as agent
from wire.providers.errors import FailureKind, ProviderFailure
from wire.providers.grammar import CallResult
from wire.tools.base import ExecContext, ModeTools

CALL = "run-1:0"


def updates(frames: tuple[bytes, ...]) -> list[agent.InteractionUpdate]:
    out = []
    for frame in frames:
        (envelope,) = EnvelopeReader().feed(frame)
        message = agent.AgentServerMessage.FromString(envelope.payload)
        out.append(message.interaction_update)
    return out


def kinds(frames: tuple[bytes, ...]) -> list[str | None]:
    return [update.WhichOneof("message") for update in updates(frames)]


def events(*items: ProviderEvent) -> ProviderEventsReceived:
    return ProviderEventsReceived(CALL, tuple(items))


def result(
    text: str = "",
    calls: tuple[ProviderToolCall, ...] = (),
    finish: FinishReason = FinishReason.STOP,
) -> CallResult:
    return CallResult(text, "", calls, None, None, finish)


def ended(
    call_result: CallResult | None = None, failure: ProviderFailure | None = None
) -> ProviderCallEnded:
    status = CallStatus.FAILED if failure else CallStatus.COMPLETED
    return ProviderCallEnded(CALL, None, status, call_result, failure)


def released(
    call: ModelCall, *messages: ProviderEventsReceived | ProviderCallEnded
) -> tuple[tuple[bytes, ...], CallOutcome | None]:
    """Feed ``messages`` (arriving one second apart) to a call already released."""
    call.release()
    steps = [call.receive(message, float(n)) for n, message in enumerate(messages)]
    frames = tuple(frame for step in steps for frame in step.frames)
    outcome = next((s.outcome for s in steps if s.outcome is not None), None)
    return frames, outcome


# ---- ModelCall ----


def test_a_call_is_held_until_its_checkpoint_is_out_then_replays_in_order() -> None:
    call = ModelCall(CALL, 0)
    first = call.receive(events(TextStarted(), TextDelta("Hel")), 1.0)
    second = call.receive(events(TextDelta("lo"), TextEnded()), 2.0)
    end = call.receive(ended(result("Hello")), 3.0)
    assert first.frames == second.frames == () and end.outcome is None
    step = call.release()
    assert [u.text_delta.text for u in updates(step.frames)] == ["Hel", "lo"]
    assert step.outcome == CallAnswered(AssistantContent(text="Hello"))
    assert call.steps == [AssistantStep("Hello")]


def test_thinking_lasts_from_its_arrival_not_from_its_release() -> None:
    call = ModelCall(CALL, 0)
    call.receive(events(ThinkingStarted(), ThinkingDelta("hmm")), 10.0)
    call.receive(events(ThinkingEnded()), 10.25)
    step = call.release()
    assert kinds(step.frames) == ["thinking_delta", "thinking_completed"]
    assert updates(step.frames)[1].thinking_completed.thinking_duration_ms == 250
    assert call.steps == [ThinkingStep("hmm", 250)]


def test_empty_text_or_thinking_makes_no_step() -> None:
    call = ModelCall(CALL, 0)
    frames, _ = released(
        call, events(ThinkingStarted(), ThinkingEnded(), TextStarted(), TextEnded())
    )
    assert kinds(frames) == ["thinking_completed"]
    assert call.steps == []


def test_a_silent_call_shows_thinking_until_the_model_speaks_and_leaves_its_steps_alone() -> None:
    call = ModelCall(CALL, 0, opened_at=100.0)
    assert call.keep_alive().frames == ()  # held: its checkpoint comes first
    call.release()
    assert call.silent
    for _ in range(3):
        step = call.keep_alive()
        assert kinds(step.frames) == ["thinking_delta"]
        assert updates(step.frames)[0].thinking_delta.text == ""
    frames = call.receive(events(UsageReported(Usage()), TextStarted()), 130.0).frames
    # The shown thinking ends at the model's first text, having lasted since the request.
    assert kinds(frames) == ["thinking_completed"]
    assert updates(frames)[0].thinking_completed.thinking_duration_ms == 30_000
    assert not call.silent and call.keep_alive().frames == ()
    call.receive(events(TextDelta("hi"), TextEnded()), 131.0)
    assert call.steps == [AssistantStep("hi")]  # no thinking step for a silence


def test_thinking_after_a_silence_continues_the_shown_block() -> None:
    call = ModelCall(CALL, 0, opened_at=100.0)
    call.release()
    call.keep_alive()
    step = call.receive(events(ThinkingStarted(), ThinkingDelta("so"), ThinkingEnded()), 112.0)
    assert kinds(step.frames) == ["thinking_delta", "thinking_completed"]
    assert updates(step.frames)[1].thinking_completed.thinking_duration_ms == 12_000
    assert call.steps == [ThinkingStep("so", 12_000)]


def test_another_calls_messages_and_anything_after_the_end_are_ignored() -> None:
    call = ModelCall(CALL, 0)
    call.release()
    other = ProviderEventsReceived("run-1:9", (TextDelta("stale"),))
    assert call.receive(other, 0.0).frames == ()
    assert call.receive(ended(result("done")), 0.0).outcome is not None
    assert call.receive(events(TextDelta("late")), 0.0).frames == ()
    assert call.receive(ended(result("again")), 0.0).outcome is None


def test_usage_is_summed_only_while_every_report_has_the_field() -> None:
    call = ModelCall(CALL, 0)
    frames, _ = released(
        call,
        events(UsageReported(Usage(input_tokens=10, output_tokens=3, cache_read_tokens=4))),
        events(UsageReported(Usage(input_tokens=5, output_tokens=2))),
    )
    assert [u.token_delta.tokens for u in updates(frames)] == [3, 2]
    assert call.usage == Usage(input_tokens=15, output_tokens=5, cache_read_tokens=None)
    assert call.last_tokens == 7
    assert add_usage(None, None) is None
    assert add_usage(Usage(input_tokens=1), None) == Usage(input_tokens=1)


def test_turn_ended_carries_the_turns_usage() -> None:
    (update,) = updates((turn_ended(Usage(input_tokens=7, output_tokens=2)),))
    assert update.turn_ended.input_tokens == 7 and update.turn_ended.output_tokens == 2
    assert updates((turn_ended(None),))[0].WhichOneof("message") == "turn_ended"


def test_a_streamed_tool_call_shows_a_card_and_ends_as_canonical_calls() -> None:
    call = ModelCall(CALL, 0)
    arguments = '{"path": "/a.txt"}'
    frames, outcome = released(
        call,
        events(ToolCallStarted(0, "c1", "Read"), ToolCallArgumentsDelta(0, arguments)),
        events(ToolCallStarted(1, "c2", "NoSuchTool"), ToolCallArgumentsDelta(1, "{}")),
        ended(result("let me look", (ProviderToolCall(0, "c1", "Read", arguments),))),
    )
    partials = [u.partial_tool_call for u in updates(frames)]
    assert [(p.call_id, p.args_text_delta, p.model_call_id) for p in partials] == [
        ("c1", "", CALL),
        ("c1", arguments, CALL),
    ]  # an unknown tool gets no card: its round refuses it
    assert outcome == CallWantsTools(
        (CanonicalToolCall(0, "c1", "Read", arguments, CALL),),
        AssistantContent(text="let me look"),
    )


def test_a_write_call_streams_its_content_into_the_card() -> None:
    call = ModelCall(CALL, 0)
    frames, _ = released(
        call,
        events(
            ToolCallStarted(0, "w1", "Write"),
            ToolCallArgumentsDelta(0, '{"path": "/b.txt", "contents": "li'),
            ToolCallArgumentsDelta(0, 'ne\\n"}'),
        ),
    )
    names = kinds(frames)
    assert names[0] == "partial_tool_call" and "tool_call_delta" in names
    assert all(u.partial_tool_call.args_text_delta == "" for u in updates(frames))


def test_a_tool_the_mode_does_not_offer_streams_no_card() -> None:
    """Ask mode offers no Write: the editor sees neither its card nor its content, while the
    offered Read (named the model's own way) streams as usual."""
    call = ModelCall(CALL, 0, ("Glob", "Grep", "Read", "ReadLints"))
    frames, _ = released(
        call,
        events(
            ToolCallStarted(0, "w1", "Write"),
            ToolCallArgumentsDelta(0, '{"path": "/b.txt", "contents": "line\\n"}'),
            ToolCallStarted(1, "r1", "read"),
            ToolCallArgumentsDelta(1, '{"path": "/a"}'),
        ),
    )
    assert [
        (u.partial_tool_call.call_id, u.partial_tool_call.args_text_delta) for u in updates(frames)
    ] == [
        ("r1", ""),
        ("r1", '{"path": "/a"}'),
    ]


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (ended(failure=ProviderFailure(FailureKind.PROVIDER, "HTTP 500")), Code.UNAVAILABLE),
        (ended(failure=ProviderFailure(FailureKind.PROTOCOL, "bad stream")), Code.INVALID_ARGUMENT),
    ],
)
def test_a_failed_call_fails_the_run(message: ProviderCallEnded, code: Code) -> None:
    _, outcome = released(ModelCall(CALL, 0), message)
    assert isinstance(outcome, CallFailed) and outcome.error.code is code


def test_a_provider_failure_carries_cursors_retryable_detail() -> None:
    failure = ProviderFailure(FailureKind.PROVIDER, "HTTP 503")
    _, outcome = released(ModelCall(CALL, 0), ended(failure=failure))
    assert isinstance(outcome, CallFailed)
    assert outcome.error.message == "provider error: HTTP 503" and outcome.error.details


def test_a_call_cancelled_by_its_run_ends_without_an_answer() -> None:
    _, outcome = released(ModelCall(CALL, 0), ended(None))
    assert outcome == CallCancelled()


# ---- ToolRound ----

REPLAY = ReplayState("anthropic", {"signature": "s"})
CALLS = (
    CanonicalToolCall(0, "c1", "Read", '{"path":"/a"}', CALL),
    CanonicalToolCall(1, "c2", "Read", '{"path":"/b"}', CALL),
)


def completed(call_id: str, content: str = "text", *, is_error: bool = False) -> ToolCompleted:
    tool_call = agent.ToolCall(tool_call_id=call_id).SerializeToString()
    return ToolCompleted("r1", call_id, "Read", CALL, content, is_error, tool_call, 1, 2)


def test_a_new_round_stores_every_call_pending_with_the_models_message() -> None:
    message = AssistantContent(text="t", thinking="th", replay_state=REPLAY)
    round_ = ToolRound.opened("r1", CALLS, message, 123)
    assert round_.assistant.tool_round_id == "r1" and round_.assistant.tool_calls == CALLS
    new = round_.new_round()
    assert [c.call_id for c in new.calls] == ["c1", "c2"] and new.created_at_ms == 123
    assert msgspec.json.decode(new.assistant_json, type=AssistantContent) == round_.assistant


def test_only_the_first_committed_pair_carries_the_models_text_and_replay_state() -> None:
    message = AssistantContent(text="t", thinking="th", replay_state=REPLAY)
    round_ = ToolRound.opened("r1", CALLS, message, 0)
    # Completion order, not call order: c2 finished first.
    first = round_.pair_for(completed("c2", "B"))
    assert first.assistant.content == AssistantContent(
        text="t", thinking="th", tool_round_id="r1", replay_state=REPLAY, tool_calls=(CALLS[1],)
    )
    assert first.result == CanonicalMessage(
        "r1:c2:result", Role.TOOL, Origin.TOOL, ToolResultContent("c2", "Read", "B", False)
    )
    frame = round_.committed(first, completed("c2", "B"))
    (update,) = updates((frame,))
    assert update.tool_call_completed.call_id == "c2"
    assert update.tool_call_completed.model_call_id == CALL
    second = round_.pair_for(completed("c1", "A", is_error=True))
    assert second.assistant.content == AssistantContent(tool_round_id="r1", tool_calls=(CALLS[0],))
    assert second.assistant.message_id == "r1:c1:assistant"
    assert second.result.content == ToolResultContent("c1", "Read", "A", True)
    round_.committed(second, completed("c1"))
    assert [type(s) for s in round_.steps] == [ToolCallStep, ToolCallStep]


def test_an_adopted_round_runs_only_its_calls_without_a_result() -> None:
    assistant = AssistantContent(text="t", tool_round_id="r1", tool_calls=CALLS)

    def record(call: CanonicalToolCall, status: ToolCallStatus) -> ToolCallRecord:
        done = status is ToolCallStatus.COMPLETED
        return ToolCallRecord(
            call.index,
            call.call_id,
            call.model_call_id,
            call.name,
            call.arguments,
            status,
            0 if done else None,
            7 if done else None,
            None,
        )

    stored = ToolRoundRecord(
        "r1",
        "run-1",
        3,
        msgspec.json.encode(assistant),
        ToolRoundStatus.PENDING,
        1,
        0,
        0,
        (record(CALLS[0], ToolCallStatus.COMPLETED), record(CALLS[1], ToolCallStatus.PENDING)),
    )
    round_ = ToolRound.adopted(stored, 55)
    assert round_.pending == (CALLS[1],) and round_.started_at_ms == 55
    # A pair was committed before the drop: the next one carries no text again.
    content = round_.pair_for(completed("c2")).assistant.content
    assert isinstance(content, AssistantContent) and content.text == ""


# ---- RunEnding ----


def test_a_completed_run_records_its_usage_then_releases_and_ends_the_stream() -> None:
    usage = Usage(input_tokens=3)
    effects = RunEnding().end(None, claimed=True, usage=usage, tools_running=False)
    assert effects == (
        RecordRunEnd(RunStatus.COMPLETED, '{"input_tokens":3}'),
        StopChildren(),
        ReleaseConversation(),
        EndStream(None),
    )


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (cancelled_error(), RunStatus.CANCELLED),
        (ConnectError(Code.UNAVAILABLE, "provider error: x"), RunStatus.FAILED),
    ],
)
def test_a_failed_or_cancelled_run_records_why(error: ConnectError, status: RunStatus) -> None:
    (record, *_rest, end) = RunEnding().end(error, claimed=True, usage=None, tools_running=False)
    assert record == RecordRunEnd(status, None, error.code.value, error.message)
    assert end == EndStream(error)


def test_a_run_that_never_claimed_its_conversation_records_nothing() -> None:
    error = cancelled_error()
    effects = RunEnding().end(error, claimed=False, usage=None, tools_running=False)
    assert effects == (StopChildren(), ReleaseConversation(), EndStream(error))


def test_pending_execs_are_aborted_before_the_stream_ends() -> None:
    ending = RunEnding()
    error = cancelled_error()
    first = ending.end(error, claimed=True, usage=None, tools_running=True)
    assert [type(e) for e in first] == [RecordRunEnd, AbortPendingCalls, StopChildren]
    assert ending.started
    assert ending.end(None, claimed=True, usage=None, tools_running=True) == ()
    assert ending.tools_stopped() == (ReleaseConversation(), EndStream(error))
    assert ending.tools_stopped() == ()


def test_only_the_first_end_counts() -> None:
    ending = RunEnding()
    assert not ending.started
    ending.end(cancelled_error(), claimed=False, usage=None, tools_running=False)
    assert ending.end(None, claimed=True, usage=None, tools_running=False) == ()
    assert ending.tools_stopped() == ()


# ---- the plan and the base's blobs ----


def user_request(mode: agent.AgentMode = agent.AGENT_MODE_AGENT) -> agent.AgentRunRequest:
    request = agent.AgentRunRequest(conversation_id="conv")
    request.action.user_message_action.user_message.text = "hi"
    request.action.user_message_action.user_message.mode = mode
    return request


def test_a_user_message_plans_a_new_turn_in_its_mode() -> None:
    plan = plan_turn("run-1", user_request())
    assert plan.kind is TurnKind.NEW and plan.mode_name == "agent"
    assert plan.conversation_id == "conv" and plan.state is None
    assert (
        plan_turn("run-2", agent.AgentRunRequest(action=user_request().action)).conversation_id
        == "run-2"
    )


@pytest.mark.parametrize(
    ("request_", "code", "words"),
    [
        (user_request(agent.AGENT_MODE_PROJECT), Code.INVALID_ARGUMENT, "AGENT_MODE_PROJECT"),
        (user_request(agent.AGENT_MODE_UNSPECIFIED), Code.INVALID_ARGUMENT, "UNSPECIFIED"),
        (user_request(agent.AGENT_MODE_TRIAGE), Code.INVALID_ARGUMENT, "AGENT_MODE_TRIAGE"),
        (user_request(agent.AGENT_MODE_CUSTOM), Code.INVALID_ARGUMENT, "AGENT_MODE_CUSTOM"),
        (user_request(42), Code.INVALID_ARGUMENT, "42"),  # type: ignore[arg-type]  # no such mode: refused
        (agent.AgentRunRequest(), Code.UNIMPLEMENTED, "none"),
        (
            agent.AgentRunRequest(action=agent.ConversationAction(cancel_action={})),
            Code.UNIMPLEMENTED,
            "cancel_action",
        ),
        (
            agent.AgentRunRequest(action=agent.ConversationAction(resume_action={})),
            Code.INVALID_ARGUMENT,
            "conversation_state",
        ),
    ],
)
def test_a_request_this_server_cannot_run_is_refused(
    request_: agent.AgentRunRequest, code: Code, words: str
) -> None:
    with pytest.raises(ConnectError) as raised:
        plan_turn("run-1", request_)
    assert raised.value.code is code and words in raised.value.message


def resume_request(roots: list[bytes], turns: list[bytes]) -> agent.AgentRunRequest:
    request = agent.AgentRunRequest(action=agent.ConversationAction(resume_action={}))
    request.conversation_state.root_prompt_messages_json.extend(roots)
    request.conversation_state.turns.extend(turns)
    return request


SERVED_MODES = [
    (agent.AGENT_MODE_AGENT, "agent"),
    (agent.AGENT_MODE_ASK, "ask"),
    (agent.AGENT_MODE_PLAN, "plan"),
    (agent.AGENT_MODE_DEBUG, "debug"),
    (agent.AGENT_MODE_MULTITASK, "multitask"),
]


@pytest.mark.parametrize(("number", "name"), SERVED_MODES)
def test_each_served_mode_plans_its_assets_and_the_state_mode_does_not_override_it(
    number: agent.AgentMode, name: str
) -> None:
    request = user_request(number)
    request.conversation_state.mode = agent.AGENT_MODE_PLAN  # the previous run's mode
    plan = plan_turn("run-1", request)
    assert (plan.mode_number, plan.mode_name) == (number, name)


@pytest.mark.parametrize(("number", "name"), SERVED_MODES)
def test_a_resume_runs_in_the_mode_its_state_records(number: agent.AgentMode, name: str) -> None:
    request = resume_request([b"r0"], [b"t0"])
    request.conversation_state.mode = number
    plan = plan_turn("run-1", request)
    assert (plan.kind, plan.mode_number, plan.mode_name) == (TurnKind.RESUME, number, name)


def test_a_resume_of_a_state_in_a_mode_without_assets_is_refused_naming_it() -> None:
    request = resume_request([b"r0"], [b"t0"])
    request.conversation_state.mode = agent.AGENT_MODE_PROJECT
    with pytest.raises(ConnectError, match="unsupported agent mode: AGENT_MODE_PROJECT"):
        plan_turn("run-1", request)


def test_the_exec_context_carries_the_modes_label_and_tools() -> None:
    plan = plan_turn("run-1", user_request(agent.AGENT_MODE_ASK))
    ask = load_prompt_assets().mode("ask")
    context = exec_context(plan, ask, user_request(agent.AGENT_MODE_ASK))
    assert context.mode == ModeTools("Ask", tuple(ask.tool_names))
    assert "Write" not in context.mode.tools
    assert context.conversation_id == "conv"


def test_the_exec_context_comes_from_a_user_turns_or_a_resumes_request_context() -> None:
    editor = agent.RequestContext(
        env=agent.RequestContextEnv(terminals_folder="/t"), admin_command_denylist=["rm -rf /"]
    )
    mode = load_prompt_assets().mode("agent")
    tools = ModeTools(mode.label, mode.tool_names)
    expected = ExecContext(
        conversation_id="conv",
        root_conversation_id="conv",
        terminals_folder="/t",
        admin_command_denylist=("rm -rf /",),
        mode=tools,
    )
    user = user_request()
    user.action.user_message_action.request_context.CopyFrom(editor)
    assert exec_context(plan_turn("run-1", user), mode, user) == expected
    resume = resume_request([b"r0"], [])
    resume.conversation_id = "conv"
    plan = plan_turn("run-2", resume)
    none_sent = ExecContext(conversation_id="conv", root_conversation_id="conv", mode=tools)
    assert exec_context(plan, mode, resume) == none_sent
    resume.action.resume_action.request_context.CopyFrom(editor)
    assert exec_context(plan, mode, resume) == expected


def test_the_base_fetches_images_roots_unless_indexed_and_the_resumed_turn_once() -> None:
    plan = plan_turn("run-1", resume_request([b"r0", b"r1", b"r0"], [b"t0", b"t1"]))
    assert plan.kind is TurnKind.RESUME and plan.stable_roots == (b"r1", b"r0")
    assert wanted_blobs(plan, roots_indexed=False) == (b"r0", b"r1", b"t1")
    assert wanted_blobs(plan, roots_indexed=True) == (b"t1",)
    request = user_request()
    image = request.action.user_message_action.user_message.selected_context.selected_images.add()
    image.blob_id = b"img"
    assert wanted_blobs(plan_turn("run-1", request), roots_indexed=False) == (b"img",)


def test_base_fetch_waits_for_every_blob_and_refuses_one_the_client_lacks() -> None:
    fetch = BaseFetch((b"a", b"b"))
    assert fetch.requests() == ((1, b"a"), (2, b"b")) and not fetch.done
    assert fetch.receive(BlobFetched(9, b"z", b"?")) is False  # not one of ours
    assert fetch.receive(BlobFetched(1, b"a", b"A")) is False
    assert fetch.receive(BlobFetched(2, b"b", b"B")) is True
    assert fetch.fetched == {b"a": b"A", b"b": b"B"}
    missing = BaseFetch((b"c",))
    with pytest.raises(ConnectError, match="the client has no blob"):
        missing.receive(BlobFetched(1, b"c", None))
    assert BaseFetch(()).done


def test_blobs_the_request_sent_along_are_in_at_once_and_never_fetched() -> None:
    fetch = BaseFetch((b"a", b"b", b"c"), {b"b": b"B", b"x": b"X"})
    assert fetch.requests() == ((1, b"a"), (2, b"c"))
    assert fetch.fetched == {b"b": b"B"}  # only the wanted ones
    assert fetch.receive(BlobFetched(1, b"a", b"A")) is False
    assert fetch.receive(BlobFetched(2, b"c", b"C")) is True
    assert fetch.fetched == {b"a": b"A", b"b": b"B", b"c": b"C"}
    assert BaseFetch((b"b",), {b"b": b"B"}).done


def test_the_context_parts_are_wanted_and_the_dynamic_context_is_the_runs_context() -> None:
    request = user_request()
    refs = request.action.request_context_parts
    refs.dynamic_context.env.terminals_folder = "/dynamic/terminals"
    refs.rules_blob_id, refs.rules_byte_length = b"r" * 32, 3
    refs.mcps_blob_id, refs.mcps_byte_length = b"m" * 32, 0
    plan = plan_turn("run-1", request)
    assert wanted_blobs(plan, roots_indexed=False) == (b"r" * 32, b"m" * 32)
    mode = load_prompt_assets().mode("agent")
    assert exec_context(plan, mode, request).terminals_folder == "/dynamic/terminals"


def root(role: Role, text: str) -> bytes:
    message = CanonicalMessage(f"m-{text}", role, Origin.USER, PartsContent((TextPart(text),)))
    return encode_root(message, "model")


def test_an_imported_state_is_one_system_root_then_history() -> None:
    system, user = encode_system_root("be helpful"), root(Role.USER, "hello")
    fetched = {blob_id_of(b): b for b in (system, user)}
    ids = (blob_id_of(system), blob_id_of(user))
    (message,) = imported_history(ids, fetched)
    assert message.role is Role.USER and message.content == PartsContent((TextPart("hello"),))
    with pytest.raises(ConnectError, match="first root is not the system prompt"):
        imported_history(ids[::-1], fetched)
    with pytest.raises(ConnectError, match="more than one system root"):
        imported_history((ids[0], ids[0]), fetched)


def test_checkpoint_jobs_count_up_and_only_barrier_jobs_move_the_barrier() -> None:
    jobs = CheckpointJobs()
    assert jobs.next() == 2 and jobs.barrier == 2
    assert jobs.next(barrier=False) == 3 and jobs.barrier == 2
    assert jobs.next() == 4 and jobs.barrier == 4


# ---- the phases stay free of IO ----

IO_MODULES = ("pykka", "peewee", "threading", "asyncio", "httpx", "aiohttp", "socket")


def test_the_phases_import_no_io() -> None:
    package = REPO / "actors" / "turn"
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in IO_MODULES, f"{path.name} imports {name}"


# ---- a round a new user message interrupted ----


def _interrupted_round() -> ToolRound:
    calls = (
        CanonicalToolCall(1, "sh", "Shell", '{"command": "make"}', "m:0"),
        CanonicalToolCall(0, "rd", "Read", '{"path": "/a"}', "m:0"),
    )
    return ToolRound.opened("r", calls, AssistantContent(text="On it."), 5)


def test_interrupted_pairs_close_every_pending_call_in_index_order() -> None:
    resolutions = agent.InterruptedPendingToolCallResolutions()
    failure = agent.ShellFailure(command="make", exit_code=2, stderr="no rule\n")
    resolutions.resolutions.add(tool_call_id="sh", shell_result=agent.ShellResult(failure=failure))
    pairs = interrupted_pairs(_interrupted_round(), resolutions, 9)
    assert [m.message_id for m in pairs] == [
        "r:rd:assistant",
        "r:rd:result",
        "r:sh:assistant",
        "r:sh:result",
    ]
    first, second = pairs[0].content, pairs[2].content
    assert isinstance(first, AssistantContent) and isinstance(second, AssistantContent)
    assert (first.text, second.text) == ("On it.", "")  # only the first pair carries the text
    results = [m.content for m in pairs[1::2]]
    assert all(isinstance(r, ToolResultContent) for r in results)
    assert [(r.content, r.is_error) for r in results if isinstance(r, ToolResultContent)] == [
        (INTERRUPTED_RESULT, True),
        ("the command failed with exit code 2\n<stderr>\nno rule\n</stderr>", True),
    ]


def test_interrupted_resolutions_the_client_got_wrong_are_refused() -> None:
    twice = agent.InterruptedPendingToolCallResolutions()
    twice.resolutions.add(tool_call_id="sh")
    twice.resolutions.add(tool_call_id="sh")
    with pytest.raises(ConnectError, match="'sh' is resolved twice"):
        interrupted_pairs(_interrupted_round(), twice, 9)
    not_a_shell = agent.InterruptedPendingToolCallResolutions()
    not_a_shell.resolutions.add(tool_call_id="rd", shell_result=agent.ShellResult())
    with pytest.raises(ConnectError, match="a shell_result resolves tool call rd, a Read call"):
        interrupted_pairs(_interrupted_round(), not_a_shell, 9)
