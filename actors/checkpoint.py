"""The CheckpointActor: the only builder of a run's ``ConversationStateStructure``.

The SessionActor submits jobs (settled, staged, final) in the order the loop reaches them and
waits for each one's reply before it continues where the protocol needs a barrier. For every
job this actor encodes what is new (root prompt messages, the turn's user message and steps,
the turn structure), has the BlobSyncActor put each new blob on the client (one KV SET each),
and only when every one of them is acknowledged publishes the checkpoint frame(s). Blobs are
content-addressed and remembered per run, so a job touches only what the turn added.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence

from actors.codecs.checkpoint_json import (
    CheckpointJsonError,
    encode_pending,
    encode_pending_result,
    encode_root,
    encode_system_root,
    regroup_rounds,
)
from actors.codecs.checkpoint_state import (
    CheckpointStateError,
    SummaryBlobs,
    assistant_step_blob,
    build_state,
    extend_turn_blob,
    plan_blob,
    progress_state,
    shell_turn_blob,
    summary_blobs,
    switched_mode,
    thinking_step_blob,
    todos_from_messages,
    token_details,
    turn_blob,
    turn_step_ids,
    user_message_blob,
)
from actors.conversation.model import AssistantContent, CanonicalMessage
from actors.pool import PooledActor
from actors.protocols.blob_sync import BlobsPersisted, BlobSyncFailed, BlobSyncMessage, PersistBlobs
from actors.protocols.checkpoint import (
    AssistantStep,
    CheckpointFailed,
    CheckpointIndex,
    CheckpointJob,
    CheckpointListener,
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
from actors.protocols.mailbox import ActorHandle, Mailbox
from actors.protocols.run_output import RunOutput
from actors.tell import Tellable, tell_if_alive
from store.blobs import blob_id_of
from store.conversations import roots_digest
from store.database import log_store_failure
from wire.connect import data_frame
from wire.errors import Code, ConnectError
from wire.log import log_event
from wire.proto import agent_v1_pb2 as agent

logger = logging.getLogger("cursor_server.checkpoint")


class CheckpointActor(PooledActor):
    """Builds and publishes checkpoints, one job at a time, in submission order."""

    def __init__(
        self,
        setup: CheckpointSetup,
        output: RunOutput,
        blob_sync: Mailbox[BlobSyncMessage],
        listener: CheckpointListener,
        index: CheckpointIndex | None = None,
    ) -> None:
        super().__init__()
        self._setup = setup
        self._index = index
        self._output = output
        self._blob_sync = blob_sync
        self._listener = listener
        self._jobs: deque[CheckpointJob] = deque()
        # The job waiting for its blobs' ACKs, its frames, and the settled roots to index.
        self._waiting: tuple[CheckpointJob, tuple[bytes, ...], bytes | None] | None = None
        self._acked = False  # the waiting job's blobs are all acknowledged
        self._commits: dict[int, int] = {}  # job id -> revision, for awaits_commit jobs
        self._sent: set[bytes] = set()  # blob ids handed to BlobSync in this run
        self._root_cache: dict[tuple[str, ...], tuple[bytes, bytes]] = {}
        self._published_roots: list[bytes] = []
        base = setup.base
        self._base_turns = list(base.turns) if base is not None else []
        if base is not None:
            # Blobs the client's own state references: it has them, so none is SET again.
            self._sent.update(base.root_prompt_messages_json)
            self._sent.update(base.turns)
            self._sent.update(base.todos)
            if base.HasField("plan"):
                self._sent.add(base.plan)
        self._step_ids: list[bytes] = []
        # The turn's steps so far (the resumed turn's too): a tool call's step, which a
        # staged checkpoint may already have shown, is added once.
        self._turn_steps: set[bytes] = set()
        if setup.resume_turn is not None:
            # The resumed turn replaces the client's last one (same turn, more steps).
            self._base_turns = self._base_turns[:-1]
            self._turn_steps.update(turn_step_ids(setup.resume_turn))
        self._user_blob: tuple[bytes, bytes] | None = None
        if setup.user_message is not None:
            data = user_message_blob(setup.user_message, setup.mode)
            self._user_blob = (blob_id_of(data), data)
        self._failed: ConnectError | None = None

    def on_failure(
        self, exception_type: object, exception_value: object, traceback: object
    ) -> None:
        """A bug must not leave the run waiting for a checkpoint that never comes: every job
        fails, and the run hears it even when none was pending (job id 0)."""
        if self._failed is not None:
            return
        error = ConnectError(Code.INTERNAL, f"checkpoint failed: {exception_value}")
        pending = self._waiting is not None or bool(self._jobs)
        self._fail(error)
        if not pending:
            self._tell(self._listener, CheckpointFailed(0, error))

    def _tell(self, to: Tellable, message: object) -> None:
        """The run stops its children together: a sibling or the run may be gone already."""
        tell_if_alive(to, message, logger, request_id=self._setup.request_id)

    def on_receive(self, message: CheckpointMessage) -> None:
        match message:
            case PublishSettled() | PublishStaged() | PublishFinal():
                if self._failed is not None:
                    self._tell(self._listener, CheckpointFailed(message.job_id, self._failed))
                    return
                self._jobs.append(message)
                self._next()
            case BlobsPersisted(batch_id=batch_id):
                if self._waiting is not None and self._waiting[0].job_id == batch_id:
                    self._acked = True
                    self._publish_when_ready()
            case MessagesCommitted(job_id=job_id, revision_id=revision_id):
                self._commits[job_id] = revision_id
                self._publish_when_ready()
            case BlobSyncFailed(error=error, batch_id=batch_id):
                if batch_id is not None:
                    self._fail(error)
            case _:
                raise TypeError(f"CheckpointActor cannot handle {type(message).__name__}")

    # ---- jobs ----

    def _next(self) -> None:
        if self._waiting is not None or not self._jobs:
            return
        job = self._jobs.popleft()
        try:
            new_blobs, frames, digest = self._build(job)
        except (CheckpointJsonError, CheckpointStateError) as exc:
            self._fail(ConnectError(Code.INTERNAL, f"checkpoint error: {exc}"), job.job_id)
            return
        self._waiting = (job, frames, digest)
        self._acked = False
        self._tell(self._blob_sync, PersistBlobs(job.job_id, new_blobs, self.actor_ref))

    def _publish_when_ready(self) -> None:
        """Publish the waiting job once its blobs are acknowledged and, for a job built
        before its messages were committed, once they are."""
        if self._waiting is None or not self._acked:
            return
        job, frames, digest = self._waiting
        awaits_commit = isinstance(job, PublishSettled) and job.awaits_commit
        if awaits_commit and job.job_id not in self._commits:
            return
        self._waiting = None
        revision_id = self._commits.pop(job.job_id, getattr(job, "revision_id", None))
        for frame in frames:
            self._output.send(frame)
        log_event(
            logger,
            logging.DEBUG,
            "checkpoint published",
            request_id=self._setup.request_id,
            job=type(job).__name__,
            roots=len(self._published_roots),
        )
        ends_run = isinstance(job, PublishSettled) and (job.shell_turn is not None or job.ends_run)
        if isinstance(job, PublishFinal) or ends_run:
            # Indexed before the run may end: the EndStream, after which the editor sends
            # this state back, waits for CheckpointPublished.
            self._record(digest, revision_id)
            self._tell(self._listener, CheckpointPublished(job.job_id))
        else:
            # Off the barrier's path: the model's held events are released first.
            self._tell(self._listener, CheckpointPublished(job.job_id))
            self._record(digest, revision_id)
        self._next()

    def _record(self, digest: bytes | None, revision_id: int | None) -> None:
        """Index a settled state, so a RunRequest carrying it back maps to its revision at once
        (no KV GET, no decoding of the history); a state not indexed yet is hydrated instead."""
        if self._index is None or digest is None or revision_id is None:
            return
        try:
            self._index.record_checkpoint(self._setup.conversation_id, digest, revision_id)
        except Exception as exc:
            # The index only saves work: without it the state is hydrated from its blobs.
            log_store_failure(
                logger, exc, "indexing checkpoint of run %s failed", self._setup.request_id
            )

    def _fail(self, error: ConnectError, job_id: int | None = None) -> None:
        self._failed = error
        failed = [job_id] if job_id is not None else []
        if self._waiting is not None:
            failed.append(self._waiting[0].job_id)
            self._waiting = None
        failed.extend(job.job_id for job in self._jobs)
        self._jobs.clear()
        for failed_id in failed:
            self._tell(self._listener, CheckpointFailed(failed_id, error))

    # ---- building ----

    def _build(
        self, job: CheckpointJob
    ) -> tuple[tuple[bytes, ...], tuple[bytes, ...], bytes | None]:
        """The new blobs the job needs on the client, the frames to send once they are, and
        the roots digest of the settled state it publishes (None for a staged one)."""
        new: dict[bytes, bytes] = {}
        self._add_steps(job.steps, new)
        turn_id = self._turn(new)
        if isinstance(job, PublishSettled) and job.shell_turn is not None:
            turn_id = self._shell_turn(job.shell_turn, new)
        turns = [*self._base_turns, *([turn_id] if turn_id is not None else [])]
        if isinstance(job, PublishSettled):
            roots = self._roots(job.messages, new)
            state = self._state(roots, turns, (), job.messages, job.used_tokens, new)
            frames = (*job.lead_frames, self._checkpoint_frame(state))
            return self._persist(new), frames, roots_digest(roots[1:])
        if isinstance(job, PublishStaged):
            roots = self._roots(job.messages, new)
            pending = encode_pending(
                job.pending,
                model_name=self._setup.model_name,
                allowed_tools=[t.name for t in self._setup.tools],
                dynamic_tools=dict(self._setup.dynamic_tools),
                started_at_ms=job.started_at_ms,
            )
            entries = (pending, *map(encode_pending_result, job.results))
            state = self._state(roots, turns, entries, job.messages, job.used_tokens, new)
            return self._persist(new), (self._checkpoint_frame(state),), None
        stable = self._roots(job.messages, new)
        final_content = job.final.content
        assert isinstance(final_content, AssistantContent)
        pending = encode_pending(
            final_content,
            model_name=self._setup.model_name,
            allowed_tools=[t.name for t in self._setup.tools],
            dynamic_tools=dict(self._setup.dynamic_tools),
            started_at_ms=job.started_at_ms,
        )
        everything = (*job.messages, job.final)
        staged = self._state(stable, turns, (pending,), everything, job.used_tokens, new)
        settled_roots = self._roots(everything, new)
        settled = self._state(settled_roots, turns, (), everything, job.used_tokens, new)
        settled_frame = self._checkpoint_frame(settled)
        frames = (*job.lead_frames, self._checkpoint_frame(staged), settled_frame, settled_frame)
        return self._persist(new), frames, roots_digest(settled_roots[1:])

    def _persist(self, new: dict[bytes, bytes]) -> tuple[bytes, ...]:
        fresh = tuple(data for blob_id, data in new.items() if blob_id not in self._sent)
        self._sent.update(new)
        return fresh

    def _roots(self, messages: Sequence[CanonicalMessage], new: dict[bytes, bytes]) -> list[bytes]:
        """Root blob ids: the system root, then one per regrouped message; the previously
        published roots must stay a prefix (only the system root may be replaced)."""
        ids: list[bytes] = []
        ids.append(
            self._cached(("system",), lambda: encode_system_root(self._setup.instructions), new)
        )
        setup = self._setup
        if setup.base_message_count and len(messages) >= setup.base_message_count:
            ids.extend(setup.base_roots)
            messages = messages[setup.base_message_count :]
        for message in regroup_rounds(messages):
            ids.append(
                self._cached(
                    (message.message_id, *self._group_key(message)),
                    lambda m=message: encode_root(m, self._setup.model_name),
                    new,
                )
            )
        published = self._published_roots
        if len(ids) < len(published):
            raise CheckpointStateError(
                f"stable history shrank from {len(published)} to {len(ids)} roots"
            )
        for index in range(1, len(published)):
            if ids[index] != published[index]:
                raise CheckpointStateError(f"stable root changed at index {index}")
        self._published_roots = ids
        return ids

    @staticmethod
    def _group_key(message: CanonicalMessage) -> tuple[str, ...]:
        content = message.content
        if isinstance(content, AssistantContent):
            return tuple(c.call_id for c in content.tool_calls)
        return ()

    def _cached(self, key: tuple[str, ...], encode, new: dict[bytes, bytes]) -> bytes:  # type: ignore[no-untyped-def]
        hit = self._root_cache.get(key)
        if hit is None:
            data = encode()
            hit = (blob_id_of(data), data)
            self._root_cache[key] = hit
        new.setdefault(hit[0], hit[1])
        return hit[0]

    def _add_steps(self, steps: Sequence[Step], new: dict[bytes, bytes]) -> None:
        for step in steps:
            match step:
                case ThinkingStep(text=text, duration_ms=duration):
                    data = thinking_step_blob(text, duration)
                case AssistantStep(text=text):
                    data = assistant_step_blob(text)
                case ToolCallStep(tool_call=raw):
                    data = agent.ConversationStep(
                        tool_call=agent.ToolCall.FromString(raw)
                    ).SerializeToString()
            blob_id = blob_id_of(data)
            if isinstance(step, ToolCallStep) and blob_id in self._turn_steps:
                continue
            new[blob_id] = data
            self._step_ids.append(blob_id)
            self._turn_steps.add(blob_id)

    def _turn(self, new: dict[bytes, bytes]) -> bytes | None:
        if self._setup.resume_turn is not None:
            data = extend_turn_blob(self._setup.resume_turn, self._step_ids)
            turn_id = blob_id_of(data)
            new.setdefault(turn_id, data)
            return turn_id
        if self._user_blob is None:
            return None
        user_id, user_data = self._user_blob
        new.setdefault(user_id, user_data)
        data = turn_blob(user_id, self._step_ids, self._setup.request_id)
        turn_id = blob_id_of(data)
        new.setdefault(turn_id, data)
        return turn_id

    @staticmethod
    def _shell_turn(shell: ShellTurn, new: dict[bytes, bytes]) -> bytes:
        command_id, output_id = blob_id_of(shell.command), blob_id_of(shell.output)
        new.setdefault(command_id, shell.command)
        new.setdefault(output_id, shell.output)
        data = shell_turn_blob(command_id, output_id)
        turn_id = blob_id_of(data)
        new.setdefault(turn_id, data)
        return turn_id

    def _state(
        self,
        roots: Sequence[bytes],
        turns: Sequence[bytes],
        pending: Sequence[str],
        messages: Sequence[CanonicalMessage],
        used_tokens: int | None,
        new: dict[bytes, bytes],
    ) -> agent.ConversationStateStructure:
        setup = self._setup
        todo_ids: list[bytes] | None = None
        todo_blobs = todos_from_messages(messages)
        if todo_blobs is not None:
            todo_ids = []
            for data in todo_blobs:
                todo_ids.append(blob_id_of(data))
                new.setdefault(todo_ids[-1], data)
        plan = plan_blob(messages)
        plan_id: bytes | None = None
        if plan is not None:
            plan_id = blob_id_of(plan)
            new.setdefault(plan_id, plan)
        summaries = summary_blobs(messages, roots)
        summary_ids: SummaryBlobs | None = None
        if summaries is not None:
            for data in (summaries[0], *summaries[1]):
                new.setdefault(blob_id_of(data), data)
            ids = tuple(blob_id_of(data) for data in summaries[1])
            summary_ids = SummaryBlobs(blob_id_of(summaries[0]), ids)
        base = setup.base
        details = token_details(
            base.token_details if base is not None and base.HasField("token_details") else None,
            used_tokens=used_tokens,
            context_window=setup.context_window,
            instructions=setup.instructions,
            tools=setup.tools,
            dynamic_tools=dict(setup.dynamic_tools),
            messages=messages,
        )
        return build_state(
            base,
            roots=roots,
            turns=turns,
            pending=pending,
            # An approved SwitchMode is the next run's mode; this run keeps its own.
            mode=switched_mode(messages) or setup.mode,
            todos=todo_ids,
            plan=plan_id,
            token_details=details,
            progress=(
                (setup.parent_tool_call_id, progress_state(messages))
                if setup.parent_tool_call_id
                else None
            ),
            summaries=summary_ids,
        )

    @staticmethod
    def _checkpoint_frame(state: agent.ConversationStateStructure) -> bytes:
        return data_frame(agent.AgentServerMessage(conversation_checkpoint_update=state))


def start_checkpoint_actor(
    setup: CheckpointSetup,
    output: RunOutput,
    blob_sync: Mailbox[BlobSyncMessage],
    listener: CheckpointListener,
    index: CheckpointIndex | None = None,
) -> ActorHandle[CheckpointMessage]:
    return CheckpointActor.start(setup, output, blob_sync, listener, index)
