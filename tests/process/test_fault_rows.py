"""The rows of the fault matrix that ``tests/process/test_fault_matrix.py`` and
``tests/process/test_crash_recovery.py`` did not hold, with ``python run.py`` as a real process:

- a KV SET the editor rejects and a KV SET it never acknowledges (the latter after the named
  15 s, on SQLite only: the wait is the store-independent part);
- RunSSE dropped and reopened mid-run: the reopened stream replays the run from its start and
  the turn completes, each exec answered once;
- the provider and seqno-gap rows of ``tests/process/test_fault_matrix.py`` on PostgreSQL: the same
  test functions, collected here again with this module's ``served`` fixture, which puts the
  server on PostgreSQL (the locked and full-disk rows are SQLite's own).

Each asserts what the user sees (frames, the EndStream's code and message) and what is stored
afterwards (the committed messages, every ``llm_calls`` row ended, the run's status).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from actors.protocols.blob_sync import b64
from store import Store
from store.conversations import ConversationStore
from tests.conftest import add_fake_model
from tests.process.test_fault_matrix import (
    GAP_S,
    IDLE_S,
    Served,
    calls_of,
    origins,
    stored,
    test_529_three_times_gives_up_unavailable_with_the_providers_message,
    test_a_failure_after_the_first_event_is_not_retried_and_ends_clearly,
    test_a_seqno_gap_that_does_not_fill_ends_the_run_naming_it,
    test_a_transient_failure_before_the_first_token_is_retried_and_shown_once,
)
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    RunBody,
    final_text,
    kv_ack,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from tests.support.process import SHARED_KEY_ENV, ServerProcess, connect_shared_store, server_env
from wire.proto import agent_v1_pb2 as agent

# Collected again here, on PostgreSQL (``served`` below); ``stored`` is their fixture.
ON_POSTGRES = (
    stored,
    test_529_three_times_gives_up_unavailable_with_the_providers_message,
    test_a_failure_after_the_first_event_is_not_retried_and_ends_clearly,
    test_a_seqno_gap_that_does_not_fill_ends_the_run_naming_it,
    test_a_transient_failure_before_the_first_token_is_retried_and_shown_once,
)
READ = FakeToolCall("call_r", "Read", ('{"path": "/in.txt"}',))
KV_ACK_TIMEOUT_S = 15.0  # actors/blob_sync.py's limit, named in docs/limits.md


@asynccontextmanager
async def serving(tmp_path: Path, fake: FakeProvider, db_url: str) -> AsyncIterator[Served]:
    """``run.py`` on ``db_url`` (seeded with the fake provider's model) and a client of it."""
    seeded = connect_shared_store(db_url)
    try:
        public_id = add_fake_model(seeded, fake)
    finally:
        seeded.close()
    env = server_env(
        tmp_path,
        CURSOR_DATABASE_URL=db_url,
        CURSOR_PROVIDER_IDLE_SECONDS=IDLE_S,
        CURSOR_APPEND_GAP_SECONDS=GAP_S,
        **SHARED_KEY_ENV,
    )
    process = ServerProcess(env)
    try:
        address = await asyncio.to_thread(process.wait_for_address)
        cursor = FakeCursor(f"http://{address}")
        try:
            yield Served(process, db_url, cursor, public_id)
        finally:
            await cursor.aclose()
    finally:
        process.stop()


@pytest.fixture
async def served(tmp_path: Path, fake: FakeProvider, pg_url: str) -> AsyncIterator[Served]:
    """The fault matrix's server, on PostgreSQL (for the rows collected from it)."""
    async with serving(tmp_path, fake, pg_url) as running:
        yield running


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def on_both(
    request: pytest.FixtureRequest, tmp_path: Path, fake: FakeProvider
) -> AsyncIterator[Served]:
    """The server on a SQLite file and (when configured) on PostgreSQL."""
    if request.param == "postgres":
        db_url = str(request.getfixturevalue("pg_url"))
    else:
        db_url = f"sqlite:///{tmp_path / 'server.db'}"
    async with serving(tmp_path, fake, db_url) as running:
        yield running


def run_status(store: Store, run_id: str) -> str:
    run = ConversationStore(store.database).run(run_id)
    assert run is not None
    return str(run.status.value)


def set_blob_ids(messages: list[agent.AgentServerMessage]) -> list[bytes]:
    return [
        m.kv_server_message.set_blob_args.blob_id
        for m in messages
        if m.kv_server_message.HasField("set_blob_args")
    ]


async def test_a_rejected_kv_set_ends_the_run_and_keeps_the_committed_answer(
    on_both: Served, fake: FakeProvider
) -> None:
    """The editor refuses a blob of the final checkpoint: the run ends ``invalid_argument``
    with the editor's words, no checkpoint follows, and the answer committed before the
    checkpoint was built is kept."""
    fake.enqueue(Script.sse(chat_events(text=["an answer"])))
    session = CursorSession(on_both.cursor, "run-rejected")

    def reject(_kv_id: int) -> bool:
        texts = any(m.interaction_update.HasField("text_delta") for m in session.log.messages)
        return texts and not session.rejected

    log = await session.run(user_turn_message("hi", on_both.public_id), reject_set=reject)
    assert log.end is not None
    error = log.end["error"]
    assert error["code"] == "invalid_argument", error
    assert "KV SET" in error["message"]
    assert "the test client refused this blob" in error["message"]
    assert len(log.checkpoints()) == 1  # the first one; nothing after the rejection
    assert "turn_ended" not in log.kinds()
    store = on_both.store()
    try:
        assert origins(store) == ["runtime", "assistant"]
        assert [r.status for r in calls_of(store, "run-rejected")] == ["completed"]
        assert all(r.ended_at_ms is not None for r in calls_of(store, "run-rejected"))
        assert run_status(store, "run-rejected") == "failed"
    finally:
        store.close()


async def test_a_kv_ack_never_sent_ends_the_run_after_the_named_time_naming_the_blob(
    tmp_path: Path, fake: FakeProvider
) -> None:
    """The editor stores the first checkpoint's blobs but never acknowledges them: after
    15 s the run ends ``invalid_argument`` naming the blob; the model's answer, held behind
    that checkpoint, is never shown nor stored; the user turn is kept."""
    fake.enqueue(Script.sse(chat_events(text=["never shown"])))
    async with serving(tmp_path, fake, f"sqlite:///{tmp_path / 'server.db'}") as running:
        session = CursorSession(running.cursor, "run-no-ack")
        started = asyncio.get_running_loop().time()
        log = await session.run(
            user_turn_message("hi", running.public_id),
            hold_ack=lambda _kv_id: True,
            timeout=KV_ACK_TIMEOUT_S + 10,
            total_timeout=KV_ACK_TIMEOUT_S + 15,
        )
        waited = asyncio.get_running_loop().time() - started
        assert log.end is not None
        error = log.end["error"]
        assert error["code"] == "invalid_argument", error
        prefix = "protocol error: KV SET timed out: "
        assert error["message"].startswith(prefix), error
        named = error["message"].removeprefix(prefix)
        assert named in [b64(blob_id) for blob_id in set_blob_ids(log.messages)]
        assert waited >= KV_ACK_TIMEOUT_S - 0.5
        assert log.checkpoints() == [] and final_text(log) == ""
        await asyncio.sleep(0.3)  # the recorder writes the call's end
        store = running.store()
        try:
            assert origins(store) == ["runtime"]
            assert all(r.ended_at_ms is not None for r in calls_of(store, "run-no-ack"))
            assert run_status(store, "run-no-ack") == "failed"
        finally:
            store.close()


async def test_runsse_dropped_and_reopened_mid_run_replays_it_and_the_turn_completes(
    on_both: Served, fake: FakeProvider, tmp_path: Path
) -> None:
    """A Read round: the client drops its RunSSE after the first checkpoint and opens it again
    on the same request id. The run went on meanwhile; the reopened stream replays every frame
    from the start, then the rest live, and the turn completes: the Read answered once, the
    answer shown once, every message stored once."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "in.txt").write_text("input lines\n")
    fake.enqueue(Script.sse(chat_events(text=["Reading."], tools=[READ])))
    fake.enqueue(Script.sse(chat_events(text=["It says input lines."])))
    cursor = on_both.cursor
    session = CursorSession(cursor, "run-reopen", workspace=workspace)
    acked: set[int] = set()
    answered: list[int] = []

    async def client(message: agent.AgentServerMessage) -> None:
        """What the editor does with a frame, once per frame however often it is replayed."""
        kv = message.kv_server_message
        if kv.HasField("set_blob_args") and kv.id not in acked:
            acked.add(kv.id)
            session.log.blobs[kv.set_blob_args.blob_id] = kv.set_blob_args.blob_data
            await session.send(kv_ack(kv.id))
        if message.HasField("exec_server_message"):
            exec_message = message.exec_server_message
            if exec_message.id not in answered:
                answered.append(exec_message.id)
                await session.answer(exec_message)

    async def read(
        stream: RunBody, until: Callable[[agent.AgentServerMessage], bool]
    ) -> tuple[list[agent.AgentServerMessage], dict[str, object] | None]:
        got: list[agent.AgentServerMessage] = []
        while (envelope := await stream.next_envelope(10.0)) is not None:
            if envelope.is_end_stream:
                return got, json.loads(envelope.payload)
            message = agent.AgentServerMessage.FromString(envelope.payload)
            if not message.interaction_update.HasField("heartbeat"):
                got.append(message)
            await client(message)
            if until(message):
                break
        return got, None

    first = await cursor.open_run_sse("run-reopen")
    await session.send(user_turn_message("read it", on_both.public_id))
    seen, end = await read(first, lambda m: m.HasField("conversation_checkpoint_update"))
    await first.aclose()
    assert end is None and seen[-1].HasField("conversation_checkpoint_update")

    reopened = await cursor.open_run_sse("run-reopen")
    replayed, end = await read(reopened, lambda _m: False)
    await reopened.aclose()
    assert end == {}
    assert replayed[: len(seen)] == seen  # the whole run from its start, then the rest
    later = replayed[len(seen) :]
    assert later, "the reopened stream carried the rest of the run"
    texts = "".join(m.interaction_update.text_delta.text for m in replayed)
    assert texts == "Reading.It says input lines."
    assert len(answered) == 1 and len(fake.requests) == 2
    results = [m for m in fake.requests[1].json["messages"] if m["role"] == "tool"]
    assert len(results) == 1 and "input lines" in results[0]["content"]
    await session.flush()
    store = on_both.store()
    try:
        assert origins(store) == ["runtime", "assistant", "tool", "assistant"]
        rows = calls_of(store, "run-reopen")
        assert [r.status for r in rows] == ["completed", "completed"]
        assert all(r.ended_at_ms is not None for r in rows)
        assert run_status(store, "run-reopen") == "completed"
    finally:
        store.close()
