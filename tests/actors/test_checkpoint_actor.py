"""The CheckpointActor at actor level: typed jobs in, ``PersistBlobs`` and frames out.

The actor under test is the real one. Its BlobSync is a double that records every
``PersistBlobs`` and lets the test answer ``BlobsPersisted`` or ``BlobSyncFailed`` itself; its
RunOutput double decodes each frame as one Connect data envelope holding an
``AgentServerMessage``; its listener records ``CheckpointPublished``/``CheckpointFailed`` and how
many frames had been sent when each reply arrived (so "frames, then the reply" is checked, not
assumed). Every wait is bounded: a message within ``WAIT_S``, silence checked over ``QUIET_S``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import peewee
import pykka
import pytest

from actors.checkpoint import start_checkpoint_actor
from actors.codecs.checkpoint_json import encode_root, encode_system_root
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    Role,
    TextPart,
)
from actors.conversation.request import ToolSpec
from actors.protocols.blob_sync import (
    BlobsPersisted,
    BlobSyncFailed,
    BlobSyncMessage,
    PersistBlobs,
)
from actors.protocols.checkpoint import (
    AssistantStep,
    CheckpointFailed,
    CheckpointJob,
    CheckpointMessage,
    CheckpointPublished,
    CheckpointSetup,
    MessagesCommitted,
    PublishFinal,
    PublishSettled,
    PublishStaged,
    ShellTurn,
    Step,
    ThinkingStep,
    ToolCallStep,
)
from actors.protocols.mailbox import ActorHandle
from store.conversations import roots_digest
from tests.support.actor_doubles import WAIT_S, QueueListener, RecordingOutput
from wire.errors import Code, ConnectError
from wire.interaction_updates import token_delta_frame, turn_ended_frame
from wire.proto import agent_v1_pb2 as agent

REQUEST_ID = "req-checkpoint"
MODEL = "test-model"
INSTRUCTIONS = "You are the test agent."
STARTED_AT_MS = 1_700_000_000_000
TOOLS = (
    ToolSpec("Read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec("Shell", "Run a command", {"type": "object", "properties": {}}),
)
USER_MESSAGE = agent.UserMessage(text="say hello", message_id="msg-1", mode=agent.AGENT_MODE_AGENT)


# ---- canonical messages ----


def user(n: int, text: str = "say hello") -> CanonicalMessage:
    return CanonicalMessage(
        message_id=f"runtime:run-request:{REQUEST_ID}-{n}",
        role=Role.USER,
        origin=Origin.RUNTIME,
        content=PartsContent((TextPart(text),)),
        runtime_event_id=f"run-request:{REQUEST_ID}-{n}",
    )


def answer(n: int, text: str) -> CanonicalMessage:
    return CanonicalMessage(
        message_id=f"assistant:{n}",
        role=Role.ASSISTANT,
        origin=Origin.ASSISTANT,
        content=AssistantContent(text=text),
    )


def call(index: int, call_id: str, name: str, **args: Any) -> CanonicalToolCall:
    return CanonicalToolCall(index, call_id, name, json.dumps(args), f"{REQUEST_ID}:0")


U1 = user(1)
A1 = answer(1, "Hello!")
A2 = answer(2, "Hello again!")


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def root_id(message: CanonicalMessage) -> bytes:
    return sha(encode_root(message, MODEL))


SYSTEM_ROOT = sha(encode_system_root(INSTRUCTIONS))


# ---- doubles ----


class BlobSyncDouble(QueueListener[BlobSyncMessage]):
    """Stands in for the BlobSyncActor: records each ``PersistBlobs``; the test answers."""

    def persist_request(self) -> PersistBlobs:
        request = self.next()
        assert isinstance(request, PersistBlobs), request
        return request


Reply = CheckpointPublished | CheckpointFailed


class IndexDouble:
    """Records what the actor indexes: (conversation id, roots digest, revision id)."""

    def __init__(self) -> None:
        self.records: list[tuple[str, bytes, int]] = []

    def record_checkpoint(self, conversation_id: str, digest: bytes, revision_id: int) -> None:
        self.records.append((conversation_id, digest, revision_id))


class CountingOutput(RecordingOutput[agent.AgentServerMessage]):
    """A RecordingOutput that counts the frames sent so far (read when a reply arrives)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def send(self, frame: bytes) -> None:
        super().send(frame)
        self.sent += 1


class Listener:
    """Records each reply with the number of frames the output had been sent by then."""

    def __init__(self, output: CountingOutput) -> None:
        self._replies: QueueListener[tuple[Reply, int]] = QueueListener()
        self._output = output

    def tell(self, message: Reply) -> None:
        self._replies.tell((message, self._output.sent))

    def next(self) -> tuple[Reply, int]:
        return self._replies.next()

    def assert_silent(self) -> None:
        self._replies.assert_silent()


class Run:
    """One started CheckpointActor with its doubles."""

    def __init__(self, setup: CheckpointSetup) -> None:
        self.output = CountingOutput()
        self.listener = Listener(self.output)
        self.blob_sync = BlobSyncDouble()
        self.index = IndexDouble()
        self.ref = start_checkpoint_actor(
            setup, self.output, self.blob_sync, self.listener, self.index
        )
        self.blobs: dict[bytes, bytes] = {}  # every blob handed to PersistBlobs, by SHA-256

    def submit(self, *jobs: CheckpointJob) -> None:
        for job in jobs:
            self.ref.tell(job)

    def persist_request(self, batch_id: int) -> PersistBlobs:
        request = self.blob_sync.persist_request()
        assert request.batch_id == batch_id, request
        for data in request.blobs:
            self.blobs[sha(data)] = data
        return request

    def persisted(self, request: PersistBlobs) -> None:
        request.reply_to.tell(BlobsPersisted(request.batch_id))

    def publish(self, job: CheckpointJob, frames: int = 1) -> tuple[PersistBlobs, list[Any]]:
        """Submit one job, let its blobs be persisted and return its request and frames."""
        self.submit(job)
        request = self.persist_request(job.job_id)
        self.persisted(request)
        return request, self.checkpoints(job.job_id, frames)

    def checkpoints(self, job_id: int, frames: int) -> list[agent.AgentServerMessage]:
        taken = self.output.take(frames)
        reply, frames_at_reply = self.listener.next()
        assert reply == CheckpointPublished(job_id), reply
        assert frames_at_reply == self.output.sent  # every frame was sent before the reply
        self.output.assert_silent()
        return taken

    def failed(self) -> CheckpointFailed:
        reply, _ = self.listener.next()
        assert isinstance(reply, CheckpointFailed), reply
        return reply


def state(message: agent.AgentServerMessage) -> agent.ConversationStateStructure:
    assert message.WhichOneof("message") == "conversation_checkpoint_update", message
    return message.conversation_checkpoint_update


def settled(
    job_id: int, *messages: CanonicalMessage, steps: tuple[Step, ...] = ()
) -> PublishSettled:
    return PublishSettled(job_id, messages, steps, None)


# ---- fixtures ----


# Starts a Run; keyword arguments override the CheckpointSetup's fields.
StartRun = Callable[..., Run]


@pytest.fixture
def start() -> Iterator[StartRun]:
    refs: list[ActorHandle[CheckpointMessage]] = []

    def make(**overrides: Any) -> Run:
        fields: dict[str, Any] = dict(
            request_id=REQUEST_ID,
            instructions=INSTRUCTIONS,
            model_name=MODEL,
            mode=agent.AGENT_MODE_AGENT,
            tools=TOOLS,
            context_window=128_000,
            user_message=USER_MESSAGE,
        )
        fields.update(overrides)
        run = Run(CheckpointSetup(**fields))
        refs.append(run.ref)
        return run

    yield make
    for ref in refs:
        with contextlib.suppress(pykka.ActorDeadError):
            ref.stop(timeout=WAIT_S)


@pytest.fixture
def run(start: StartRun) -> Run:
    return start()


# ---- barrier and order ----


def test_nothing_is_sent_before_the_jobs_blobs_are_persisted(run: Run) -> None:
    run.submit(settled(1, U1))
    request = run.persist_request(1)
    assert request.blobs and request.reply_to == run.ref
    run.output.assert_silent()
    run.listener.assert_silent()

    run.ref.tell(BlobsPersisted(99))  # another batch's answer publishes nothing
    run.output.assert_silent()
    run.listener.assert_silent()

    run.persisted(request)
    (frame,) = run.checkpoints(1, 1)
    assert state(frame).root_prompt_messages_json
    assert run.output.sent == 1

    run.ref.tell(BlobsPersisted(1))  # a repeated answer publishes nothing again
    run.output.assert_silent()
    run.listener.assert_silent()


def test_a_job_built_before_its_commit_sets_its_blobs_at_once_and_publishes_after_both(
    start: StartRun,
) -> None:
    run = start(conversation_id="conv-early")
    run.submit(PublishSettled(1, (U1,), (), None, awaits_commit=True))
    request = run.persist_request(1)  # the blobs go out while the commit is in progress
    assert root_id(U1) in {sha(data) for data in request.blobs}
    run.persisted(request)
    run.output.assert_silent()  # acknowledged, but not committed yet
    run.listener.assert_silent()

    run.ref.tell(MessagesCommitted(2, 40))  # another job's commit publishes nothing
    run.output.assert_silent()

    run.ref.tell(MessagesCommitted(1, 41))
    (frame,) = run.checkpoints(1, 1)
    roots = list(state(frame).root_prompt_messages_json)
    assert roots == [SYSTEM_ROOT, root_id(U1)]
    # Indexed as the revision the commit named.
    assert run.index.records == [("conv-early", roots_digest(roots[1:]), 41)]


def test_a_commit_before_the_acks_still_waits_for_them(start: StartRun) -> None:
    run = start(conversation_id="conv-early")
    run.submit(PublishSettled(1, (U1,), (), None, awaits_commit=True))
    request = run.persist_request(1)
    run.ref.tell(MessagesCommitted(1, 7))
    run.output.assert_silent()
    run.listener.assert_silent()
    run.persisted(request)
    run.checkpoints(1, 1)
    assert [record[2] for record in run.index.records] == [7]
    # A job that does not await a commit is published on its ACKs alone.
    run.publish(PublishSettled(2, (U1, A1), (), None, revision_id=8))
    assert [record[2] for record in run.index.records] == [7, 8]


@pytest.mark.parametrize(
    ("error", "level", "traceback"),
    [
        (peewee.OperationalError("database is locked"), logging.WARNING, False),
        (peewee.IntegrityError("a bug of ours"), logging.ERROR, True),
    ],
)
def test_a_failed_index_write_is_logged_and_the_checkpoint_stands(
    run: Run,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    error: peewee.DatabaseError,
    level: int,
    traceback: bool,
) -> None:
    """The index only saves work. A locked or full database is the database's state: one
    warning line; any other failure is ours: logged with its traceback."""
    caplog.set_level(logging.WARNING, logger="cursor_server.checkpoint")

    def failing(conversation_id: str, digest: bytes, revision_id: int) -> None:
        raise error

    monkeypatch.setattr(run.index, "record_checkpoint", failing)
    run.publish(PublishSettled(1, (U1,), (), None, revision_id=7))
    run.publish(PublishSettled(2, (U1, A1), (), None, revision_id=8))
    # The third job is handled after the second's index write: both lines are out by then.
    run.publish(PublishSettled(3, (U1, A1), (), None))
    lines = [r for r in caplog.records if r.name == "cursor_server.checkpoint"]
    assert len(lines) == 2
    for line in lines:
        assert line.levelno == level
        assert (line.exc_info is not None) is traceback
        assert REQUEST_ID in line.getMessage()


def test_jobs_are_processed_in_submission_order(run: Run) -> None:
    run.submit(settled(1, U1), settled(2, U1, A1), settled(3, U1, A1, user(2, "more")))
    first = run.persist_request(1)
    run.blob_sync.assert_silent()  # job 2 waits until job 1 is published
    run.persisted(first)
    (one,) = run.checkpoints(1, 1)

    second = run.persist_request(2)
    run.blob_sync.assert_silent()
    run.persisted(second)
    (two,) = run.checkpoints(2, 1)

    third = run.persist_request(3)
    run.persisted(third)
    (three,) = run.checkpoints(3, 1)
    assert [len(state(f).root_prompt_messages_json) for f in (one, two, three)] == [2, 3, 4]
    run.blob_sync.assert_silent()


# ---- what a settled checkpoint holds ----


def test_settled_has_the_system_root_one_root_per_message_and_the_turn(run: Run) -> None:
    request, (frame,) = run.publish(settled(1, U1, A1))
    checkpoint = state(frame)
    blobs = {sha(data): data for data in request.blobs}
    assert len(blobs) == len(request.blobs)  # no blob handed over twice in one batch

    roots = list(checkpoint.root_prompt_messages_json)
    assert roots == [SYSTEM_ROOT, root_id(U1), root_id(A1)]
    assert set(roots) <= set(blobs)  # every root id is the SHA-256 of a persisted blob
    system = json.loads(blobs[roots[0]])
    assert (system["role"], system["content"]) == (
        "system",
        [{"type": "text", "text": INSTRUCTIONS}],
    )
    assert json.loads(blobs[roots[1]])["content"] == [{"type": "text", "text": "say hello"}]
    assert json.loads(blobs[roots[2]])["role"] == "assistant"

    (turn_id,) = checkpoint.turns
    turn = agent.ConversationTurnStructure.FromString(blobs[turn_id]).agent_conversation_turn
    assert turn.request_id == REQUEST_ID
    assert list(turn.steps) == []
    stored_user = agent.UserMessage.FromString(blobs[turn.user_message])
    assert (stored_user.text, stored_user.message_id, stored_user.mode) == (
        "say hello",
        "msg-1",
        agent.AGENT_MODE_AGENT,
    )
    # Exactly these blobs: the roots, the user message and the turn; nothing else.
    assert set(blobs) == {*roots, turn.user_message, turn_id}
    assert list(checkpoint.pending_tool_calls) == []
    assert checkpoint.mode == agent.AGENT_MODE_AGENT


def test_without_a_user_message_there_is_no_turn(start: StartRun) -> None:
    run = start(user_message=None)
    request, (frame,) = run.publish(settled(1, U1, steps=(AssistantStep("ignored"),)))
    checkpoint = state(frame)
    assert list(checkpoint.root_prompt_messages_json) == [SYSTEM_ROOT, root_id(U1)]
    assert list(checkpoint.turns) == []
    assert set(request.blobs) == {
        encode_system_root(INSTRUCTIONS),
        encode_root(U1, MODEL),
        agent.ConversationStep(
            assistant_message=agent.AssistantMessage(text="ignored")
        ).SerializeToString(),
    }


def test_a_later_job_sends_only_the_blobs_it_adds(run: Run) -> None:
    first, (one,) = run.publish(settled(1, U1))
    tool_call = agent.ToolCall(
        tool_call_id="call-1", read_tool_call=agent.ReadToolCall(args=agent.ReadToolArgs(path="/a"))
    )
    steps = (
        ThinkingStep("pondering", 12),
        AssistantStep("Hello!"),
        ToolCallStep(tool_call.SerializeToString()),
    )
    second, (two,) = run.publish(settled(2, U1, A1, steps=steps))
    assert not set(first.blobs) & set(second.blobs)  # nothing is sent twice

    step_blobs = [
        agent.ConversationStep(
            thinking_message=agent.ThinkingMessage(text="pondering", duration_ms=12)
        ).SerializeToString(),
        agent.ConversationStep(
            assistant_message=agent.AssistantMessage(text="Hello!")
        ).SerializeToString(),
        agent.ConversationStep(tool_call=tool_call).SerializeToString(),
    ]
    (turn_id,) = state(two).turns
    assert set(second.blobs) == {
        encode_root(A1, MODEL),
        *step_blobs,
        run.blobs[turn_id],
    }
    turn = agent.ConversationTurnStructure.FromString(run.blobs[turn_id]).agent_conversation_turn
    assert list(turn.steps) == [sha(data) for data in step_blobs]
    assert turn.user_message in {sha(data) for data in first.blobs}  # sent with job 1
    roots_one = list(state(one).root_prompt_messages_json)
    assert list(state(two).root_prompt_messages_json) == [*roots_one, root_id(A1)]

    # The same state again adds nothing: an empty batch, and the same checkpoint.
    third, (three,) = run.publish(settled(3, U1, A1))
    assert third.blobs == ()
    assert three.SerializeToString() == two.SerializeToString()


# ---- staged ----


def test_staged_keeps_the_stable_roots_and_holds_one_pending_entry_with_every_call(
    run: Run,
) -> None:
    _, (initial,) = run.publish(settled(1, U1))
    pending = AssistantContent(
        text="Let me look.",
        tool_round_id="round-1",
        tool_calls=(call(1, "call-b", "Shell", command="ls"), call(0, "call-a", "Read", path="/a")),
    )
    staged_job = PublishStaged(2, (U1,), pending, (), None, STARTED_AT_MS)
    request, (frame,) = run.publish(staged_job)
    staged = state(frame)
    assert list(staged.root_prompt_messages_json) == list(state(initial).root_prompt_messages_json)
    assert list(staged.turns) == list(state(initial).turns)
    assert request.blobs == ()  # no new root, no new step: the turn blob is unchanged

    (entry,) = staged.pending_tool_calls
    wire = json.loads(entry)
    assert wire["role"] == "assistant"
    calls = [part for part in wire["content"] if part["type"] == "tool-call"]
    assert [(c["toolCallId"], c["toolName"], c["args"]) for c in calls] == [
        ("call-a", "Read", {"path": "/a"}),
        ("call-b", "Shell", {"command": "ls"}),
    ]
    assert {"type": "text", "text": "Let me look."} in wire["content"]
    cursor = wire["providerOptions"]["cursor"]
    assert cursor["pendingToolCallStartedAtMs"] == STARTED_AT_MS
    contracts = cursor["pendingToolExecutionContracts"]
    assert set(contracts) == {"call-a", "call-b"}
    assert contracts["call-b"]["toolIdentifier"] == "SHELL"
    assert contracts["call-a"]["allowedToolNames"] == ["Read", "Shell"]


# ---- final ----


def test_final_sends_lead_frames_then_staged_settled_settled(run: Run) -> None:
    _, (initial,) = run.publish(settled(1, U1))
    lead = (
        token_delta_frame(8),
        turn_ended_frame(
            input_tokens=20,
            output_tokens=8,
            cache_read_tokens=None,
            cache_write_tokens=None,
            reasoning_tokens=None,
        ),
    )
    job = PublishFinal(
        job_id=2,
        messages=(U1,),
        final=A1,
        steps=(AssistantStep("Hello!"),),
        used_tokens=28,
        lead_frames=lead,
        started_at_ms=STARTED_AT_MS,
    )
    run.submit(job)
    request = run.persist_request(2)
    run.output.assert_silent()  # not even the lead frames before the barrier
    run.persisted(request)
    token, ended, staged_frame, settled_frame, again_frame = run.checkpoints(2, 5)

    assert token.interaction_update.token_delta.tokens == 8
    assert ended.interaction_update.turn_ended.input_tokens == 20
    staged, final, again = state(staged_frame), state(settled_frame), state(again_frame)
    first = state(initial)
    assert list(staged.root_prompt_messages_json) == list(first.root_prompt_messages_json)
    (entry,) = staged.pending_tool_calls
    assert json.loads(entry)["content"] == [{"type": "text", "text": "Hello!"}]
    assert list(final.root_prompt_messages_json) == [
        *staged.root_prompt_messages_json,
        root_id(A1),
    ]
    assert list(final.pending_tool_calls) == []
    assert settled_frame.SerializeToString() == again_frame.SerializeToString()
    assert list(staged.turns) == list(final.turns) == list(again.turns)
    assert list(final.turns) != list(first.turns)  # the turn gained the assistant step
    for blob_id in [*final.root_prompt_messages_json, *final.turns]:
        assert blob_id in run.blobs
    assert encode_root(A1, MODEL) in request.blobs


# ---- failures ----


def test_a_failed_batch_fails_its_job_and_every_queued_and_later_job(run: Run) -> None:
    run.submit(settled(1, U1), settled(2, U1, A1), settled(3, U1, A1, A2))
    request = run.persist_request(1)
    error = ConnectError(Code.INVALID_ARGUMENT, "protocol error: KV SET xyz: disk full")
    request.reply_to.tell(BlobSyncFailed(error, batch_id=1))
    assert [run.failed() for _ in range(3)] == [
        CheckpointFailed(1, error),
        CheckpointFailed(2, error),
        CheckpointFailed(3, error),
    ]
    run.ref.tell(BlobsPersisted(1))  # too late: nothing is published
    run.submit(settled(4, U1))
    assert run.failed() == CheckpointFailed(4, error)
    run.output.assert_silent()
    run.blob_sync.assert_silent()  # no batch for any job after the failure
    run.listener.assert_silent()


def test_a_failed_batch_after_a_published_job_fails_only_what_is_left(run: Run) -> None:
    run.publish(settled(1, U1))
    run.submit(settled(2, U1, A1))
    request = run.persist_request(2)
    error = ConnectError(Code.CANCELED, "run was cancelled")
    request.reply_to.tell(BlobSyncFailed(error, batch_id=2))
    assert run.failed() == CheckpointFailed(2, error)
    run.listener.assert_silent()
    run.output.assert_silent()


@pytest.mark.parametrize(
    ("later", "message"),
    [
        ((user(2), A1), "checkpoint error: stable root changed at index 1"),
        ((U1, A2), "checkpoint error: stable root changed at index 2"),
        ((U1,), "checkpoint error: stable history shrank from 3 to 2 roots"),
    ],
    ids=["changed-at-1", "changed-at-2", "shrank"],
)
def test_a_changed_stable_root_fails_the_job_with_internal(
    run: Run, later: tuple[CanonicalMessage, ...], message: str
) -> None:
    run.publish(settled(1, U1, A1))
    run.submit(settled(2, *later), settled(3, U1, A1, A2))
    first = run.failed()
    assert (first.job_id, first.error.code, first.error.message) == (2, Code.INTERNAL, message)
    queued = run.failed()
    assert (queued.job_id, queued.error) == (3, first.error)
    run.submit(settled(4, U1, A1))
    assert run.failed() == CheckpointFailed(4, first.error)
    run.blob_sync.assert_silent()  # the failed job never reached BlobSync
    run.output.assert_silent()


def test_a_root_change_in_a_queued_job_fails_it_after_the_one_in_flight(run: Run) -> None:
    run.submit(settled(1, U1, A1), settled(2, U1, A2), settled(3, U1, A1, A2))
    request = run.persist_request(1)
    run.persisted(request)
    (frame,) = run.output.take(1)
    assert state(frame).root_prompt_messages_json
    reply, _ = run.listener.next()
    assert reply == CheckpointPublished(1)
    second, third = run.failed(), run.failed()
    assert (second.job_id, second.error.code) == (2, Code.INTERNAL)
    assert second.error.message == "checkpoint error: stable root changed at index 2"
    assert (third.job_id, third.error) == (3, second.error)
    run.blob_sync.assert_silent()
    run.output.assert_silent()


def test_a_crash_fails_the_job_in_flight_so_the_run_never_waits_for_it(run: Run) -> None:
    run.submit(settled(1, U1))
    run.persist_request(1)
    run.ref.tell(object())  # type: ignore[arg-type]  # not in the protocol: on_receive raises, the actor stops
    failed = run.failed()
    assert failed.job_id == 1 and failed.error.code is Code.INTERNAL
    assert "checkpoint failed" in failed.error.message


def test_a_crash_with_no_job_pending_still_tells_the_run(run: Run) -> None:
    run.ref.tell(object())  # type: ignore[arg-type]  # wrong on purpose: the actor crashes
    failed = run.failed()
    assert failed.job_id == 0 and failed.error.code is Code.INTERNAL


def test_a_shell_turn_is_the_runs_turn_and_is_indexed_before_the_run_hears_of_it(
    start: StartRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command the user ran: no user message, the turn is a ShellConversationTurnStructure of
    the command's and output's blobs, after the client's turns; its state is indexed before
    ``CheckpointPublished`` (the run ends on it, and the client then sends this state back)."""
    earlier_turn = sha(b"an earlier turn")
    base = agent.ConversationStateStructure(
        root_prompt_messages_json=[SYSTEM_ROOT], turns=[earlier_turn]
    )
    run = start(user_message=None, base=base, conversation_id="conv-sh")
    told: list[object] = []  # every reply the run was told, in order
    told_at_index: list[int] = []  # how many it had been told when the state was indexed
    record, tell = run.index.record_checkpoint, run.listener.tell

    def record_then_note(conversation_id: str, digest: bytes, revision_id: int) -> None:
        told_at_index.append(len(told))
        record(conversation_id, digest, revision_id)

    def note_then_tell(message: Any) -> None:
        told.append(message)
        tell(message)

    monkeypatch.setattr(run.index, "record_checkpoint", record_then_note)
    monkeypatch.setattr(run.listener, "tell", note_then_tell)
    command = agent.ShellCommand(command="ls").SerializeToString(deterministic=True)
    output = agent.ShellOutput(stdout="a\n", exit_code=0).SerializeToString(deterministic=True)
    job = PublishSettled(1, (U1,), (), None, revision_id=5, shell_turn=ShellTurn(command, output))
    _, (frame,) = run.publish(job)
    state = frame.conversation_checkpoint_update
    assert list(state.turns[:1]) == [earlier_turn] and len(state.turns) == 2
    turn = agent.ConversationTurnStructure.FromString(run.blobs[state.turns[1]])
    shell = turn.shell_conversation_turn
    assert (run.blobs[shell.shell_command], run.blobs[shell.shell_output]) == (command, output)
    assert list(state.root_prompt_messages_json) == [SYSTEM_ROOT, root_id(U1)]
    assert run.index.records == [("conv-sh", roots_digest([root_id(U1)]), 5)]
    assert told_at_index == [0]  # the run had not been told yet
