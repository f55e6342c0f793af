"""The BlobSyncActor at actor level: typed messages in, typed replies and KV frames out.

A real ``BlobStore`` on a temporary SQLite file, real loop timers (``LoopTasks.call_later`` on a
loop running in its own thread, as on the server), a RunOutput double that decodes every frame
with our proto classes, and a listener whose thread-safe ``tell`` feeds a queue. Every wait is
bounded: a reply within ``WAIT_S``, silence checked over ``QUIET_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pykka
import pytest

from actors.blob_sync import KvLimits, start_blob_sync
from actors.loop.bridge import LoopTasks
from actors.protocols.blob_sync import (
    BlobFetched,
    BlobsPersisted,
    BlobSyncFailed,
    BlobSyncMessage,
    BlobSyncReply,
    CancelBlobSync,
    FetchBlob,
    KvClientMessageReceived,
    PersistBlobs,
    b64,
)
from actors.protocols.mailbox import ActorHandle
from store import Store, blob_id_of, connect_store
from store.base.typed_peewee import execute_sql
from store.database import ReusingSqliteDatabase
from tests.support.actor_doubles import QUIET_S, WAIT_S, QueueListener, RecordingOutput
from tests.support.connections import set_sqlite_pragmas, sqlite_pragmas
from wire.errors import Code
from wire.proto import agent_v1_pb2 as agent

REQUEST_ID = "req-blob-sync"

A, B, C, D = (f"blob {name}".encode() for name in "abcd")


# ---- doubles ----


def kv_output() -> RecordingOutput[agent.KvServerMessage]:
    """The actor's frames, each checked to be a KV request."""

    def kv_only(message: agent.AgentServerMessage) -> agent.KvServerMessage:
        assert message.WhichOneof("message") == "kv_server_message", message
        return message.kv_server_message

    return RecordingOutput(kv_only)


Listener = QueueListener[BlobSyncReply]


class Run:
    """One started actor with its output, listener and store."""

    def __init__(
        self,
        ref: ActorHandle[BlobSyncMessage],
        output: RecordingOutput[agent.KvServerMessage],
        store: Store,
    ) -> None:
        self.ref = ref
        self.output = output
        self.store = store
        self.listener = Listener()

    def persist(self, batch_id: int, *blobs: bytes) -> None:
        self.ref.tell(PersistBlobs(batch_id, blobs, self.listener))

    def fetch(self, fetch_id: int, blob_id: bytes) -> None:
        self.ref.tell(FetchBlob(fetch_id, blob_id, self.listener))

    def client(self, message: agent.KvClientMessage) -> None:
        self.ref.tell(KvClientMessageReceived(message))

    def ack(self, kv_id: int) -> None:
        self.client(agent.KvClientMessage(id=kv_id, set_blob_result=agent.SetBlobResult()))

    def reject(self, kv_id: int, text: str) -> None:
        result = agent.SetBlobResult(error=agent.Error(message=text))
        self.client(agent.KvClientMessage(id=kv_id, set_blob_result=result))

    def answer_get(self, kv_id: int, data: bytes | None) -> None:
        result = agent.GetBlobResult() if data is None else agent.GetBlobResult(blob_data=data)
        self.client(agent.KvClientMessage(id=kv_id, get_blob_result=result))


def sets(frames: list[agent.KvServerMessage]) -> dict[bytes, int]:
    """blob data -> KV id of each SET frame (and every frame must be a SET)."""
    out: dict[bytes, int] = {}
    for frame in frames:
        assert frame.WhichOneof("message") == "set_blob_args", frame
        assert frame.set_blob_args.blob_id == blob_id_of(frame.set_blob_args.blob_data)
        out[frame.set_blob_args.blob_data] = frame.id
    return out


def failed(reply: BlobSyncReply, message: str, code: Code = Code.INVALID_ARGUMENT) -> None:
    assert isinstance(reply, BlobSyncFailed), reply
    assert (reply.error.code, reply.error.message) == (code, message)


# ---- fixtures ----


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = connect_store(f"sqlite:///{tmp_path}/blobs.db")
    yield opened
    opened.close()


@pytest.fixture
def loop_tasks() -> Iterator[LoopTasks]:
    """The server's shape: an asyncio loop on its own thread, actors on theirs."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield LoopTasks(loop)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(WAIT_S)
    loop.close()


@pytest.fixture
def start_run(store: Store, loop_tasks: LoopTasks) -> Iterator[Callable[..., Run]]:
    refs: list[ActorHandle[BlobSyncMessage]] = []

    def start(**limits: float) -> Run:
        output = kv_output()
        ref = start_blob_sync(REQUEST_ID, output, store, loop_tasks, KvLimits(**limits))
        refs.append(ref)
        return Run(ref, output, store)

    yield start
    for ref in refs:
        with contextlib.suppress(pykka.ActorDeadError):
            ref.stop(timeout=WAIT_S)


@pytest.fixture
def run(start_run: Callable[..., Run]) -> Run:
    return start_run()


# ---- SET ----


def test_kv_ids_start_at_one_and_are_shared_by_set_and_get(run: Run) -> None:
    run.persist(1, A, B)
    assert sets(run.output.take(2)) == {A: 1, B: 2}
    run.fetch(7, blob_id_of(C))
    get = run.output.next()
    assert (get.id, get.WhichOneof("message"), get.get_blob_args.blob_id) == (
        3,
        "get_blob_args",
        blob_id_of(C),
    )
    run.persist(2, D)
    assert sets([run.output.next()]) == {D: 4}


def test_set_carries_the_whole_blob_under_its_raw_sha256(run: Run) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB, one message, no chunking
    run.persist(1, big)
    frame = run.output.next()
    assert frame.set_blob_args.blob_id == blob_id_of(big)
    assert len(frame.set_blob_args.blob_id) == 32
    assert frame.set_blob_args.blob_data == big


def test_a_batch_repeating_a_blob_sends_it_once(run: Run) -> None:
    run.persist(1, A, B, A, A)
    ids = sets(run.output.take(2))
    assert set(ids) == {A, B}
    run.output.assert_silent()
    for kv_id in ids.values():
        run.ack(kv_id)
    assert run.listener.next() == BlobsPersisted(1)


def test_a_blob_acked_earlier_in_the_run_is_not_sent_again(run: Run) -> None:
    run.persist(1, A)
    run.ack(run.output.next().id)
    assert run.listener.next() == BlobsPersisted(1)

    run.persist(2, A)  # nothing new: answered at once, no frame
    assert run.listener.next() == BlobsPersisted(2)
    run.persist(3, A, B)
    assert sets([run.output.next()]) == {B: 2}
    run.output.assert_silent()


def test_the_batch_reply_waits_for_every_ack_in_any_order(run: Run) -> None:
    run.persist(5, A, B, C)
    ids = sets(run.output.take(3))  # the whole batch at once, before any ACK
    run.ack(ids[C])
    run.ack(ids[A])
    run.listener.assert_silent()
    run.ack(ids[B])
    assert run.listener.next() == BlobsPersisted(5)


def test_a_blob_in_flight_is_waited_for_not_sent_twice(run: Run) -> None:
    run.persist(1, A)
    first = run.output.next()
    run.persist(2, A, B)
    second = run.output.next()
    assert sets([second]) == {B: 2}
    run.output.assert_silent()
    run.ack(first.id)
    assert run.listener.next() == BlobsPersisted(1)
    run.listener.assert_silent()  # batch 2 still waits for B
    run.ack(second.id)
    assert run.listener.next() == BlobsPersisted(2)


def test_a_rejected_set_fails_this_and_every_later_request(run: Run) -> None:
    run.persist(1, A, B)
    ids = sets(run.output.take(2))
    run.reject(ids[A], "disk full")
    expected = f"protocol error: KV SET {b64(blob_id_of(A))}: disk full"
    reply = run.listener.next()
    failed(reply, expected)
    assert isinstance(reply, BlobSyncFailed) and reply.batch_id == 1

    run.ack(ids[B])  # a late ACK changes nothing
    run.persist(2, C)
    reply = run.listener.next()
    failed(reply, expected)
    assert isinstance(reply, BlobSyncFailed) and reply.batch_id == 2
    run.fetch(3, blob_id_of(D))
    reply = run.listener.next()
    failed(reply, expected)
    assert isinstance(reply, BlobSyncFailed) and reply.fetch_id == 3
    run.output.assert_silent()  # no retry under a new id, nothing for later requests


def test_a_missing_ack_times_out_naming_the_blob(start_run: Callable[..., Run]) -> None:
    run = start_run(set_ack_timeout_s=0.3)
    sent = time.monotonic()
    run.persist(1, A)
    kv_id = run.output.next().id
    reply = run.listener.next()
    assert time.monotonic() - sent >= 0.3
    failed(reply, f"protocol error: KV SET timed out: {b64(blob_id_of(A))}")
    run.ack(kv_id)  # too late: ignored, the failure stands
    run.persist(2, B)
    failed(run.listener.next(), f"protocol error: KV SET timed out: {b64(blob_id_of(A))}")
    run.output.assert_silent()


def test_an_ack_in_time_disarms_its_deadline(start_run: Callable[..., Run]) -> None:
    run = start_run(set_ack_timeout_s=0.2)
    run.persist(1, A)
    run.ack(run.output.next().id)
    assert run.listener.next() == BlobsPersisted(1)
    time.sleep(0.4)  # past the first SET's deadline
    run.persist(2, B)
    run.ack(run.output.next().id)
    assert run.listener.next() == BlobsPersisted(2)


def test_the_captured_client_ack_is_understood(run: Run) -> None:
    captured = agent.AgentClientMessage.FromString(bytes.fromhex("1a0408011a00"))
    run.persist(1, A)
    assert run.output.next().id == 1
    run.client(captured.kv_client_message)
    assert run.listener.next() == BlobsPersisted(1)


def test_unknown_and_repeated_kv_ids_are_ignored(
    run: Run, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="cursor_server.blob_sync")
    run.persist(1, A, B)
    ids = sets(run.output.take(2))
    run.ack(99)
    run.ack(ids[A])
    run.ack(ids[A])  # duplicate ACK for an acked id
    run.listener.assert_silent()
    run.ack(ids[B])
    assert run.listener.next() == BlobsPersisted(1)
    run.output.assert_silent()
    assert any("unknown KV id" in r.message and "kv_id=99" in r.message for r in caplog.records)


def test_acknowledged_blobs_become_rows_in_the_cas(run: Run) -> None:
    """A batch is answered as soon as the client has every blob; its blobs are then stored
    (before the actor handles anything else), so a later fetch needs no KV GET."""
    blobs = (A, b"", bytes(range(256)), B)
    run.persist(1, *blobs, A)
    ids = [blob_id_of(data) for data in blobs]
    assert run.store.blobs.has_many(ids) == set()  # nothing stored before the ACKs
    for frame in run.output.take(len(blobs)):
        run.ack(frame.id)
    assert run.listener.next() == BlobsPersisted(1)
    run.fetch(7, ids[2])
    assert run.listener.next() == BlobFetched(7, ids[2], blobs[2])
    run.output.assert_silent()  # answered from the CAS: no KV GET
    assert run.store.blobs.has_many(ids) == set(ids)
    assert [run.store.blobs.get(blob_id) for blob_id in ids] == list(blobs)
    (count,) = execute_sql(run.store.database, "SELECT COUNT(*) FROM blobs").fetchone()
    assert count == len(blobs)


def test_a_blob_acknowledged_in_an_open_batch_is_fetched_without_a_get(run: Run) -> None:
    run.persist(1, A, B)
    first, _second = run.output.take(2)
    run.ack(first.id)
    run.fetch(3, blob_id_of(A))
    assert run.listener.next() == BlobFetched(3, blob_id_of(A), A)
    run.output.assert_silent()


def test_one_debug_line_per_set_and_ack(run: Run, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="cursor_server.blob_sync")
    run.persist(1, A, B)
    for frame in run.output.take(2):
        run.ack(frame.id)
    assert run.listener.next() == BlobsPersisted(1)
    lines = [r.message for r in caplog.records if r.levelno == logging.DEBUG]
    for data in (A, B):
        encoded = b64(blob_id_of(data))
        for event in ("kv set sent", "kv set acked"):
            found = [line for line in lines if line.startswith(event) and encoded in line]
            assert len(found) == 1, (event, lines)
            assert f"request_id={REQUEST_ID}" in found[0]


# ---- GET ----


def test_get_is_served_from_the_cas_without_kv_traffic(run: Run) -> None:
    blob_id = blob_id_of(C)
    run.store.blobs.put(blob_id, C)
    run.fetch(1, blob_id)
    assert run.listener.next() == BlobFetched(1, blob_id, C)
    run.output.assert_silent()


def test_get_via_kv_checks_and_stores_the_data(run: Run) -> None:
    blob_id = blob_id_of(C)
    run.fetch(1, blob_id)
    run.fetch(2, blob_id)  # the same missing blob: one GET serves both
    frame = run.output.next()
    assert frame.get_blob_args.blob_id == blob_id
    run.output.assert_silent()
    run.answer_get(frame.id, C)
    assert {run.listener.next(), run.listener.next()} == {
        BlobFetched(1, blob_id, C),
        BlobFetched(2, blob_id, C),
    }
    assert run.store.blobs.get(blob_id) == C
    run.fetch(3, blob_id)  # now local
    assert run.listener.next() == BlobFetched(3, blob_id, C)
    run.persist(4, C)  # the client gave it to us, so it has it: no SET
    assert run.listener.next() == BlobsPersisted(4)
    run.output.assert_silent()


def test_get_data_that_does_not_hash_to_the_id_fails(run: Run) -> None:
    blob_id = blob_id_of(C)
    run.fetch(1, blob_id)
    run.answer_get(run.output.next().id, D)
    reply = run.listener.next()
    failed(
        reply,
        f"protocol error: KV GET blob hash mismatch: expected {b64(blob_id)}, "
        f"got {b64(blob_id_of(D))}",
    )
    assert isinstance(reply, BlobSyncFailed) and reply.fetch_id == 1
    assert not run.store.blobs.has(blob_id)
    assert not run.store.blobs.has(blob_id_of(D))


def test_get_without_data_is_not_found(run: Run) -> None:
    blob_id = blob_id_of(C)
    run.fetch(1, blob_id)
    run.answer_get(run.output.next().id, None)
    assert run.listener.next() == BlobFetched(1, blob_id, None)
    assert not run.store.blobs.has(blob_id)


def test_a_get_error_fails_the_run(run: Run) -> None:
    blob_id = blob_id_of(C)
    run.fetch(1, blob_id)
    kv_id = run.output.next().id
    result = agent.GetBlobResult(error=agent.Error(message="no such blob"))
    run.client(agent.KvClientMessage(id=kv_id, get_blob_result=result))
    failed(run.listener.next(), f"protocol error: KV GET {b64(blob_id)}: no such blob")


def test_a_set_answered_as_a_get_fails_the_run(run: Run) -> None:
    run.persist(1, A)
    run.answer_get(run.output.next().id, A)
    failed(
        run.listener.next(),
        f"protocol error: KV SET {b64(blob_id_of(A))}: answered with get_blob_result",
    )


def test_a_missing_get_reply_times_out(start_run: Callable[..., Run]) -> None:
    run = start_run(get_reply_timeout_s=0.3)
    blob_id = blob_id_of(C)
    sent = time.monotonic()
    run.fetch(1, blob_id)
    run.output.next()
    reply = run.listener.next()
    assert time.monotonic() - sent >= 0.3
    failed(reply, f"protocol error: KV GET timed out: {b64(blob_id)}")


def test_a_malformed_blob_id_fails_only_that_request(run: Run) -> None:
    run.fetch(1, blob_id_of(C).hex().encode())
    reply = run.listener.next()
    assert isinstance(reply, BlobSyncFailed) and reply.fetch_id == 1
    assert reply.error.code is Code.INVALID_ARGUMENT
    assert reply.error.message.startswith("protocol error: KV GET: blob id must be 32 raw bytes")
    run.output.assert_silent()
    run.persist(2, A)
    run.ack(run.output.next().id)
    assert run.listener.next() == BlobsPersisted(2)


# ---- cancel and failures ----


def test_cancel_fails_pending_work_with_canceled(run: Run) -> None:
    run.persist(1, A)
    run.fetch(2, blob_id_of(C))
    run.output.take(2)
    run.ref.tell(CancelBlobSync("client cancelled"))
    replies = [run.listener.next(), run.listener.next()]
    for reply in replies:
        failed(reply, "run was cancelled", Code.CANCELED)
    assert {(r.batch_id, r.fetch_id) for r in replies if isinstance(r, BlobSyncFailed)} == {
        (1, None),
        (None, 2),
    }
    run.persist(3, B)
    failed(run.listener.next(), "run was cancelled", Code.CANCELED)
    run.output.assert_silent()


def test_stopping_the_actor_fails_pending_work_with_canceled(run: Run) -> None:
    run.persist(1, A)
    run.output.next()
    run.ref.stop(timeout=WAIT_S)
    failed(run.listener.next(), "run was cancelled", Code.CANCELED)


def test_an_internal_error_fails_pending_and_later_work(run: Run) -> None:
    run.persist(1, A)
    run.output.next()
    run.ref.tell("not a message")  # type: ignore[arg-type]  # wrong on purpose: it fails
    expected = "blob sync failed: BlobSyncActor cannot handle str"
    failed(run.listener.next(), expected, Code.INTERNAL)
    run.fetch(2, blob_id_of(C))
    failed(run.listener.next(), expected, Code.INTERNAL)
    run.output.assert_silent()


def test_a_full_database_fails_later_work_unavailable_in_one_log_line(
    run: Run, caplog: pytest.LogCaptureFixture
) -> None:
    """Storing acknowledged blobs into a full database: the batch was answered already (the
    client holds its blobs); later work fails ``unavailable`` as the run's own writes do, and
    the log says it in one warning, without a traceback (a locked or full database is not a
    bug)."""
    caplog.set_level(logging.WARNING, logger="cursor_server.blob_sync")
    database = run.store.database
    assert isinstance(database, ReusingSqliteDatabase)  # the fixture's store is a SQLite file
    saved = sqlite_pragmas(database)
    pages = execute_sql(database, "PRAGMA page_count").fetchone()[0]
    set_sqlite_pragmas(database, [*saved, ("max_page_count", pages + 4)])
    database.stop_writer()
    database.close_idle()
    try:
        big = bytes(range(256)) * 4096  # 1 MiB: more than four pages
        run.persist(1, big)
        (frame,) = run.output.take(1)
        run.ack(frame.id)
        assert run.listener.next() == BlobsPersisted(1)
        run.fetch(2, blob_id_of(C))
        reply = run.listener.next()
    finally:
        set_sqlite_pragmas(database, saved)
        database.stop_writer()
        database.close_idle()
    assert isinstance(reply, BlobSyncFailed), reply
    assert reply.error.code == Code.UNAVAILABLE, reply.error
    assert "what was saved before is kept" in reply.error.message
    lines = [r for r in caplog.records if r.name == "cursor_server.blob_sync"]
    assert [r.getMessage().split(" request_id")[0] for r in lines] == [
        "blob sync store unavailable",
        "blob sync failed",
    ]
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in lines)
    assert not run.store.blobs.has(blob_id_of(big))


# ---- the timer the actor uses ----


def test_loop_timer_fires_once_after_its_delay(loop_tasks: LoopTasks) -> None:
    fired: queue.Queue[float] = queue.Queue()
    start = time.monotonic()
    loop_tasks.call_later(0.1, lambda: fired.put(time.monotonic()))
    assert fired.get(timeout=WAIT_S) - start >= 0.1
    with pytest.raises(queue.Empty):
        fired.get(timeout=QUIET_S)


def test_a_cancelled_loop_timer_keeps_nothing_its_callback_held(loop_tasks: LoopTasks) -> None:
    """A cancel does not wake the loop; the handle waits there until its time, so it must
    not keep what the callback refers to (a run's actor, its frames) alive until then."""

    class Held:
        def __call__(self) -> None:
            raise AssertionError("a cancelled timer fired")

    held = Held()
    gone = weakref.ref(held)
    timer = loop_tasks.call_later(60.0, held)
    timer.cancel()
    del held
    gc.collect()
    assert gone() is None


def test_loop_timer_cancelled_from_another_thread_never_fires(loop_tasks: LoopTasks) -> None:
    fired: queue.Queue[int] = queue.Queue()
    timers = [loop_tasks.call_later(0.1, functools.partial(fired.put, i)) for i in range(3)]
    cancelling = threading.Thread(target=timers[1].cancel)
    cancelling.start()
    cancelling.join(WAIT_S)
    timers[1].cancel()  # twice is harmless
    assert sorted([fired.get(timeout=WAIT_S), fired.get(timeout=WAIT_S)]) == [0, 2]
    with pytest.raises(queue.Empty):
        fired.get(timeout=QUIET_S)
    timers[0].cancel()  # after firing: a no-op
