"""The store statements written once as SQL text instead of built by peewee per call: call
records (start, request, chunks, finish, prune), the observability settings read, and the
conversation store's ``revision``, checkpoint index and ``finish_run``. Each behaviour the
rewrite had to keep is checked on the rows written.

Each test runs on a SQLite file and, when CURSOR_TEST_POSTGRES_URL is set, on PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import peewee
import pytest

from store import Store
from store import catalog as cat
from store.conversations import (
    EMPTY_STATE_DIGEST,
    ConversationStore,
    RevisionRecord,
    RunNotFound,
    RunStatus,
    roots_digest,
)
from store.llm_calls import (
    CallEnd,
    CallRecords,
    CallStatus,
    CallSummary,
    NewCall,
    OutgoingRequest,
    RecordedChunk,
    RecordedRequest,
)
from tests.store.test_conversation_store import rows, snapshot, started, user

CALL_TABLES = ("llm_calls", "llm_call_requests", "llm_call_chunks")


@pytest.fixture
def records(opened: Store) -> CallRecords:
    return CallRecords(opened.database)


@pytest.fixture
def cs(opened: Store) -> ConversationStore:
    return ConversationStore(opened.database)


def new_call(index: int = 0, *, verbose: bool = False, run_id: str | None = "run") -> NewCall:
    return NewCall(
        run_id=run_id,
        model_call_id=f"run:{index}",
        provider_id=7,
        provider_name="fake",
        provider_type="openai-chat",
        provider_url="http://127.0.0.1:9/v1",
        public_id="abcd1234",
        model_id="fake-model",
        display_name="Fake",
        verbose=verbose,
    )


REQUEST = OutgoingRequest({"content-type": "application/json", "x-key": "[redacted]"}, "{}", 2)


def call_rows(db: peewee.Database) -> dict[str, list[tuple[Any, ...]]]:
    return {table: rows(db, table) for table in CALL_TABLES}


# --- call records ------------------------------------------------------------------------------


def test_start_writes_the_running_row_and_the_request_by_mode(
    records: CallRecords, opened: Store
) -> None:
    plain = records.start(new_call(0), REQUEST)
    verbose = records.start(new_call(1, verbose=True, run_id=None), REQUEST)
    bare = records.start(new_call(2, verbose=True))
    assert len({plain, verbose, bare}) == 3
    assert sorted([plain, verbose, bare]) == [plain, verbose, bare]  # ids grow

    first = records.get(plain)
    assert first is not None
    call = first.call
    assert (call.id, call.run_id, call.model_call_id, call.status) == (
        plain,
        "run",
        "run:0",
        "running",
    )
    assert (call.provider_id, call.provider_name, call.provider_type) == (7, "fake", "openai-chat")
    assert (call.provider_url, call.public_id, call.model_id) == (
        "http://127.0.0.1:9/v1",
        "abcd1234",
        "fake-model",
    )
    assert (call.display_name, call.verbose, call.request_bytes, call.response_bytes) == (
        "Fake",
        False,
        2,
        0,
    )
    assert call.started_at_ms > 0
    assert call.ended_at_ms is None and call.duration_ms is None and call.finish_reason is None
    assert first.request is None  # not verbose: only the size

    second = records.get(verbose)
    assert second is not None
    assert (second.call.run_id, second.call.verbose, second.call.request_bytes) == (None, True, 2)
    assert second.request == RecordedRequest(REQUEST.headers, REQUEST.body)

    third = records.get(bare)
    assert third is not None
    assert third.call.request_bytes is None  # no request given: NULL, not 0
    assert third.request is None
    assert len(rows(opened.database, "llm_call_requests")) == 1


def test_chunks_are_stored_in_order_with_their_bytes(records: CallRecords) -> None:
    call_id = records.start(new_call(verbose=True))
    records.record_chunks(call_id, [])
    first = [RecordedChunk(0, 0.5, b"data: a\n\n"), RecordedChunk(1, 1.25, b"\x00\xff")]
    records.record_chunks(call_id, first)
    records.record_chunks(call_id, [RecordedChunk(2, 3.0, b"")])
    detail = records.get(call_id)
    assert detail is not None
    assert detail.chunks == [*first, RecordedChunk(2, 3.0, b"")]
    assert all(type(chunk.data) is bytes for chunk in detail.chunks)


def stored_call(records: CallRecords, call_id: int) -> CallSummary:
    detail = records.get(call_id)
    assert detail is not None  # the call was started
    return detail.call


def test_finish_writes_only_what_was_reported_and_the_first_finish_wins(
    records: CallRecords, opened: Store
) -> None:
    reported = records.start(new_call(0))
    silent = records.start(new_call(1))
    end = CallEnd(
        CallStatus.COMPLETED,
        duration_ms=120.5,
        response_bytes=1000,
        finish_reason="stop",
        usage={"output_tokens": 5, "input_tokens": 10, "reasoning_tokens": 0},
        http_status=200,
        ttfb_ms=12.25,
    )
    assert records.finish(reported, end) is True
    call = stored_call(records, reported)
    assert (call.status, call.finish_reason, call.duration_ms, call.response_bytes) == (
        "completed",
        "stop",
        120.5,
        1000,
    )
    assert (call.http_status, call.ttfb_ms, call.error_message) == (200, 12.25, None)
    assert (call.input_tokens, call.output_tokens, call.reasoning_tokens) == (10, 5, 0)
    assert (call.cache_read_tokens, call.cache_write_tokens) == (None, None)  # absent: NULL
    assert call.ended_at_ms is not None and call.ended_at_ms >= call.started_at_ms

    failed = CallEnd(CallStatus.FAILED, 3.0, 0, error_message="boom")
    assert records.finish(silent, failed) is True
    call = stored_call(records, silent)
    assert (call.status, call.error_message, call.finish_reason) == ("failed", "boom", None)
    assert (call.http_status, call.ttfb_ms, call.input_tokens, call.output_tokens) == (
        None,
        None,
        None,
        None,
    )

    # A second finish, an unknown id and an unknown usage column change nothing.
    before = call_rows(opened.database)
    late = CallEnd(CallStatus.CANCELLED, 9.0, 5, "late", {"input_tokens": 1}, "late", 500, 1.0)
    assert records.finish(reported, late) is False
    assert records.finish(silent, late) is False
    assert records.finish(10**9, late) is False
    assert call_rows(opened.database) == before
    running = records.start(new_call(2))
    before = call_rows(opened.database)
    with pytest.raises(ValueError, match=r"unknown usage columns: \['tokens'\]"):
        records.finish(running, CallEnd(CallStatus.COMPLETED, 1.0, 0, usage={"tokens": 1}))
    assert call_rows(opened.database) == before
    assert stored_call(records, running).status == "running"


def test_prune_keeps_exactly_the_newest_rows_with_their_payloads(
    records: CallRecords, opened: Store
) -> None:
    ids = []
    for index in range(6):
        call_id = records.start(new_call(index, verbose=True), REQUEST)
        records.record_chunks(call_id, [RecordedChunk(0, 0.0, f"chunk {index}".encode())])
        ids.append(call_id)
    db = opened.database
    before = call_rows(db)
    assert records.prune(6) == 0  # as many as kept: nothing goes
    assert records.prune(100) == 0
    assert call_rows(db) == before

    assert records.prune(4) == 2
    assert [c.id for c in records.list(10)] == ids[:1:-1]
    kept = set(ids[2:])
    assert {row[0] for row in rows(db, "llm_call_requests")} == kept
    assert {row[0] for row in rows(db, "llm_call_chunks")} == kept
    for index, call_id in enumerate(ids[2:], start=2):
        detail = records.get(call_id)
        assert detail is not None
        assert detail.request == RecordedRequest(REQUEST.headers, REQUEST.body)
        assert detail.chunks == [RecordedChunk(0, 0.0, f"chunk {index}".encode())]
    assert records.get(ids[0]) is None and records.get(ids[1]) is None

    assert records.prune(1) == 3
    assert [c.id for c in records.list(10)] == [ids[-1]]
    assert records.prune(1) == 0


# --- observability settings --------------------------------------------------------------------


def test_observability_defaults_until_saved_then_the_saved_values(opened: Store) -> None:
    db = opened.database
    assert cat.get_observability(db) == cat.ObservabilitySettings(
        verbose=False, retained_calls=10000
    )
    assert rows(db, "settings") == []  # reading writes nothing
    cat.update_observability(db, verbose=True, retained_calls=3)
    assert cat.get_observability(db) == cat.ObservabilitySettings(verbose=True, retained_calls=3)


# --- conversations -----------------------------------------------------------------------------


def test_revision_reads_the_whole_record(cs: ConversationStore) -> None:
    root = started(cs)
    head = cs.append_messages("run-1", root, [user("a")])
    record = cs.revision(head)
    assert isinstance(record, RevisionRecord)
    assert (record.revision_id, record.conversation_id, record.parent_revision_id) == (
        head,
        "conv",
        root,
    )
    assert type(record.state_digest) is bytes and len(record.state_digest) == 32
    assert record.message_count == 1
    root_record = cs.revision(root)
    assert root_record is not None
    assert (root_record.parent_revision_id, root_record.state_digest) == (None, EMPTY_STATE_DIGEST)
    assert cs.revision(10**9) is None


def test_checkpoint_lookup_returns_an_int_or_none(cs: ConversationStore) -> None:
    root = started(cs)
    digest = roots_digest([b"\x01" * 32])
    assert cs.revision_for_checkpoint("conv", digest) is None
    assert cs.revision_for_checkpoint("nowhere", digest) is None
    cs.record_checkpoint("conv", digest, root)
    found = cs.revision_for_checkpoint("conv", digest)
    assert type(found) is int and found == root


def test_finish_run_writes_the_end_once_and_refuses_an_unknown_run(
    cs: ConversationStore, opened: Store
) -> None:
    started(cs)
    db = opened.database
    before = snapshot(db)
    with pytest.raises(RunNotFound, match="no run nobody"):
        cs.finish_run("nobody", RunStatus.FAILED)
    assert snapshot(db) == before

    assert cs.finish_run("run-1", RunStatus.FAILED, None, "provider", "boom") is True
    run = cs.run("run-1")
    assert run is not None
    assert (run.status, run.usage_json, run.failure_category, run.failure_message) == (
        RunStatus.FAILED,
        None,
        "provider",
        "boom",
    )
    assert run.finished_at_ms is not None and run.finished_at_ms == run.updated_at_ms
    conversation = cs.conversation("conv")
    assert conversation is not None
    assert conversation.active_run_id is None
    assert conversation.updated_at_ms == run.finished_at_ms

    finished = snapshot(db)
    assert cs.finish_run("run-1", RunStatus.COMPLETED, '{"output_tokens":1}') is False
    assert snapshot(db) == finished
