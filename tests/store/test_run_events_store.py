"""Run events at rest: migration 9, the spans written open and ended by id, retention counted
in runs, the console's reads (conversations, a conversation's runs, a run's timeline), and the
RunEventRecorderActor that writes them; SQLite and PostgreSQL alike."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import peewee
import pykka
import pytest

from actors.protocols.mailbox import ActorHandle
from actors.protocols.run_events import (
    RunEvent,
    RunEventMessage,
    RunEventsHappened,
    SpanClosed,
    SpanOpened,
)
from actors.run_events import RunEventRecorderActor, start_run_event_recorder
from store import Store, apply_migrations, open_database
from store.base.typed_peewee import execute_sql
from store.catalog import update_observability
from store.conversations import ConversationStore, RunStatus
from store.group_commit import GroupCommit
from store.llm_calls import CallEnd, CallRecords, CallStatus, NewCall
from store.migrations import create_run_events, latest_version, registered_migrations
from store.run_events import Detail, EventKind, RunEvents
from store.run_history import PageCursor, RunHistory

RUN, CHECKPOINT, TOOL = EventKind.RUN, EventKind.CHECKPOINT, EventKind.TOOL


# ---- migration 9 ----


@pytest.fixture
def at_version_8(db_url: str) -> Iterator[peewee.Database]:
    db = open_database(db_url)
    db.connect()
    apply_migrations(db, registered_migrations()[:8])
    yield db
    db.close()


def test_migration_9_adds_run_events_to_a_database_at_version_8(
    at_version_8: peewee.Database,
) -> None:
    db = at_version_8
    assert not db.table_exists("run_events")
    assert apply_migrations(db) == list(range(9, latest_version() + 1))
    columns = {c.name for c in db.get_columns("run_events")}
    assert columns == {
        "id",
        "run_id",
        "conversation_id",
        "kind",
        "started_at_ms",
        "ended_at_ms",
        "detail_json",
    }
    indexes = {tuple(index.columns) for index in db.get_indexes("run_events")}
    assert {("run_id", "id"), ("kind", "id"), ("conversation_id", "kind")} <= indexes
    create_run_events(db)  # re-runnable
    assert apply_migrations(db) == []
    with pytest.raises(peewee.IntegrityError), db.atomic():
        execute_sql(
            db,
            "INSERT INTO run_events (run_id, conversation_id, kind, started_at_ms, detail_json) "
            f"VALUES ({db.param}, {db.param}, {db.param}, 1, '{{}}')",
            ("r", "c", "provider"),  # the provider lane is llm_calls, never a run event
        )


# ---- the table ----


def test_a_span_is_written_open_and_ended_by_its_row_id(opened: Store) -> None:
    events = RunEvents(opened.database)
    row = events.insert("r1", "c1", CHECKPOINT, 10, None, {"job_id": 2, "kind": "settled"})
    (open_span,) = events.events_of("r1")
    assert (open_span.id, open_span.ended_at_ms, open_span.detail) == (
        row,
        None,
        {"job_id": 2, "kind": "settled"},
    )
    events.close(row, 10, 25, {"job_id": 2, "kind": "settled", "outcome": "published"})
    (closed,) = events.events_of("r1")
    assert (closed.started_at_ms, closed.ended_at_ms, closed.detail["outcome"]) == (
        10,
        25,
        "published",
    )
    assert events.events_of("other") == []


def spans(db: peewee.Database, *rows: tuple[str, EventKind]) -> None:
    events = RunEvents(db)
    for at, (run_id, kind) in enumerate(rows):
        events.insert(run_id, f"conv-{run_id}", kind, at, at, {})


def runs_kept(db: peewee.Database) -> list[tuple[str, str]]:
    rows = execute_sql(db, "SELECT run_id, kind FROM run_events ORDER BY id").fetchall()
    return [(str(run_id), str(kind)) for run_id, kind in rows]


def test_retention_keeps_the_events_of_the_newest_runs(opened: Store) -> None:
    db = opened.database
    events = RunEvents(db)
    spans(db, ("ghost", TOOL), ("r1", RUN), ("r1", TOOL), ("r2", RUN), ("r2", TOOL))
    spans(db, ("r3", RUN), ("r3", CHECKPOINT), ("r4", RUN))
    assert events.prune(10) == 0  # fewer runs than kept: nothing goes
    # The two newest runs stay, with all their rows; an older row of no run goes too.
    assert events.prune(2) == 5
    assert runs_kept(db) == [("r3", "run"), ("r3", "checkpoint"), ("r4", "run")]
    # r3 is retried under its id: its newest attempt is the newest run, so all its rows stay.
    spans(db, ("r3", RUN))
    assert events.prune(1) == 1
    assert runs_kept(db) == [("r3", "run"), ("r3", "checkpoint"), ("r3", "run")]


# ---- the console's reads ----


def new_call(run_id: str) -> NewCall:
    return NewCall(run_id, f"{run_id}:0", 1, "p", "openai-chat", "u", "m1", "m", "M", False)


def call(
    db: peewee.Database,
    run_id: str,
    tokens: tuple[int, int] | None,
    ttfb_ms: float | None = None,
    ttft_ms: float | None = None,
) -> int:
    records = CallRecords(db)
    call_id = records.start(new_call(run_id))
    usage = {} if tokens is None else {"input_tokens": tokens[0], "output_tokens": tokens[1]}
    end = CallEnd(CallStatus.COMPLETED, 12.0, 0, usage=usage, ttfb_ms=ttfb_ms, ttft_ms=ttft_ms)
    records.finish(call_id, end)
    return call_id


def run_span(
    db: peewee.Database,
    run_id: str,
    conversation_id: str,
    started: int,
    ended: int | None,
    text: str | None,
    code: str | None = "ok",
) -> None:
    detail: Detail = {
        "model": "m1",
        "resumed": text is None,
        "text": text,
        "code": code,
        "message": None,
    }
    RunEvents(db).insert(run_id, conversation_id, RUN, started, ended, detail)


def test_conversations_newest_activity_first_with_titles_counts_and_tokens(opened: Store) -> None:
    db = opened.database
    run_span(db, "a1", "conv-a", 100, 150, "first question")
    run_span(db, "a2", "conv-a", 400, 450, "second question")
    run_span(db, "b1", "conv-b", 200, None, None, code=None)  # running, resumed: no title
    run_span(db, "c1", "conv-c", 300, 450, "third")
    call(db, "a1", (10, 5))
    call(db, "a2", (30, 3))
    call(db, "a2", None)  # usage not reported: adds nothing
    call(db, "c1", None)
    call(db, "elsewhere", (1000, 1000))
    history = RunHistory(db)
    listed = history.conversations(10)
    assert [
        (c.conversation_id, c.title, c.last_activity_ms, c.run_count)
        for c in listed
    ] == [
        ("conv-c", "third", 450, 1),
        ("conv-a", "first question", 450, 2),
        ("conv-b", None, 200, 1),
    ]  # fmt: skip
    tokens = {c.conversation_id: (c.input_tokens, c.output_tokens) for c in listed}
    assert tokens == {"conv-a": (40, 8), "conv-b": (None, None), "conv-c": (None, None)}
    # Pages end at a (time, id) cursor, so a tie on the time neither repeats nor skips one.
    (first,) = history.conversations(1)
    assert first.conversation_id == "conv-c"
    (second,) = history.conversations(1, PageCursor(450, "conv-c"))
    assert second.conversation_id == "conv-a"
    assert [c.conversation_id for c in history.conversations(5, PageCursor(450, "conv-a"))] == [
        "conv-b"
    ]
    assert history.conversations(5, PageCursor(200, "conv-b")) == []


def test_a_conversations_runs_newest_first_with_the_stores_status_where_claimed(
    opened: Store,
) -> None:
    db = opened.database
    store = ConversationStore(db)
    root = store.ensure_conversation("conv")
    store.claim_run("claimed", "conv", root)
    store.finish_run("claimed", RunStatus.COMPLETED)
    run_span(db, "claimed", "conv", 100, 200, "hello")
    run_span(db, "refused", "conv", 300, 310, "bad", code="invalid_argument")  # never claimed
    run_span(db, "retried", "conv", 400, 420, "again", code="unavailable")
    run_span(db, "retried", "conv", 500, 520, "again", code="ok")  # the editor's retry
    run_span(db, "open", "conv", 600, None, "still going", code=None)
    detail = RunHistory(db).conversation("conv")
    assert detail is not None and detail.title == "hello"
    assert [
        (r.run_id, r.status, r.started_at_ms, r.ended_at_ms, r.code, r.model) for r in detail.runs
    ] == [
        ("open", "running", 600, None, None, "m1"),
        ("retried", "completed", 400, 520, "ok", "m1"),
        ("refused", "failed", 300, 310, "invalid_argument", "m1"),
        ("claimed", "completed", 100, 200, "ok", "m1"),
    ]
    assert RunHistory(db).conversation("nobody") is None


def test_a_timeline_holds_each_lane_and_the_provider_calls_of_the_run(opened: Store) -> None:
    db = opened.database
    events = RunEvents(db)
    run_span(db, "r", "conv", 100, 900, "go")
    published: Detail = {"job_id": 2, "kind": "settled", "outcome": "published"}
    events.insert("r", "conv", CHECKPOINT, 110, 130, published)
    events.insert("r", "conv", CHECKPOINT, 140, None, {"job_id": 3, "kind": "staged"})
    read: Detail = {"call_id": "c1", "tool": "Read", "wire_ids": [1], "outcome": "success"}
    events.insert("r", "conv", TOOL, 150, 160, read)
    events.insert("r", "conv", TOOL, 155, None, {"call_id": "c2", "tool": "Shell"})
    first = call(db, "r", (10, 5), ttfb_ms=4.4, ttft_ms=6.6)
    call(db, "other", (1, 1))
    timeline = RunHistory(db).timeline("r")
    assert timeline is not None and timeline.conversation_id == "conv"
    lanes = timeline.lanes
    assert [(r.started_at_ms, r.ended_at_ms, r.code, r.text) for r in lanes.run] == [
        (100, 900, "ok", "go")
    ]
    assert [
        (c.job_id, c.kind, c.submitted_at_ms, c.published_at_ms) for c in lanes.checkpoints
    ] == [
        (2, "settled", 110, 130),
        (3, "staged", 140, None),  # still waiting for its ACKs
    ]
    assert [(t.call_id, t.tool, t.wire_ids, t.outcome, t.ended_at_ms) for t in lanes.tools] == [
        ("c1", "Read", [1], "success", 160),
        ("c2", "Shell", [], None, None),  # the editor has not answered
    ]
    (provider,) = lanes.provider
    assert (provider.id, provider.ttfb_ms, provider.ttft_ms) == (first, 4.4, 6.6)
    assert provider.first_byte_at_ms == round(provider.started_at_ms + 4.4)
    assert provider.first_token_at_ms == round(provider.started_at_ms + 6.6)
    assert (provider.input_tokens, provider.output_tokens) == (10, 5)
    assert RunHistory(db).timeline("unknown") is None
    # A run whose events were pruned still shows the calls kept of it.
    only_calls = RunHistory(db).timeline("other")
    assert only_calls is not None and only_calls.conversation_id is None
    assert only_calls.lanes.run == [] and len(only_calls.lanes.provider) == 1


def test_a_schema_without_ttft_gives_the_provider_lane_without_it(tmp_path: Path) -> None:
    db = open_database(f"sqlite://{tmp_path / 'v7.db'}")
    db.connect()
    apply_migrations(db, [*registered_migrations()[:7], (9, create_run_events)])
    try:
        # The row as a version-7 table takes it: this version's writes name later columns.
        fields = [c for c in NewCall.__struct_fields__ if c not in ("chain_position", "attempt")]
        quoted = ", ".join(f'"{c}"' for c in fields)
        marks = ", ".join([db.param] * (len(fields) + 1))
        values = [getattr(new_call("r"), c) for c in fields]
        cursor = execute_sql(
            db,
            f'INSERT INTO "llm_calls" ({quoted}, status, started_at_ms, response_bytes) '
            f"VALUES ({marks}, 0, 0)",
            (*values, CallStatus.RUNNING.value),
        )
        call_id = cursor.lastrowid
        timeline = RunHistory(db).timeline("r")
        assert timeline is not None
        (provider,) = timeline.lanes.provider
        assert (provider.id, provider.status, provider.ttft_ms) == (call_id, "running", None)
    finally:
        db.close()


# ---- the recorder ----


def happened(run_id: str, *events: RunEvent) -> RunEventsHappened:
    return RunEventsHappened(run_id, f"conv-{run_id}", events)


def stop(ref: ActorHandle[RunEventMessage]) -> None:
    """Stopping waits for what was told before (and writes what is still pending)."""
    ref.stop(timeout=10)


def test_the_recorder_writes_spans_open_then_ended_and_drops_closes_it_never_opened(
    opened: Store,
) -> None:
    recorder = start_run_event_recorder(opened.database)
    recorder.tell(happened("r", SpanOpened(RUN, "", 1, {"model": "m", "text": "hi"})))
    recorder.tell(happened("r", SpanOpened(TOOL, "c1", 2, {"call_id": "c1", "tool": "Read"})))
    closed = SpanClosed(TOOL, "c1", 9, {"outcome": "success", "wire_ids": (1,)}, started_at_ms=3)
    recorder.tell(happened("r", closed))
    # A checkpoint failure naming no job closes nothing; a completed call never opened is
    # written whole (it knows its start).
    recorder.tell(happened("r", SpanClosed(CHECKPOINT, "0", 9, {"outcome": "failed"})))
    recorder.tell(happened("r", SpanClosed(TOOL, "c9", 8, {"outcome": "error"}, started_at_ms=7)))
    recorder.tell(happened("r", SpanClosed(RUN, "", 10, {"code": "ok", "message": None})))
    stop(recorder)
    rows = RunEvents(opened.database).events_of("r")
    assert [(e.kind, e.started_at_ms, e.ended_at_ms, e.detail) for e in rows] == [
        (RUN, 1, 10, {"model": "m", "text": "hi", "code": "ok", "message": None}),
        (TOOL, 3, 9, {"call_id": "c1", "tool": "Read", "outcome": "success", "wire_ids": [1]}),
        (TOOL, 7, 8, {"outcome": "error"}),
    ]
    assert {e.conversation_id for e in rows} == {"conv-r"}


class HeldTimers:
    """Timers the test fires by hand (the ``actors.loop.timers`` port): the deadline is the
    test's to decide, the recorder's batching is what is checked."""

    def __init__(self) -> None:
        self.scheduled: list[tuple[float, Callable[[], None]]] = []

    def call_later(self, delay: float, callback: Callable[[], None]) -> HeldTimers:
        self.scheduled.append((delay, callback))
        return self

    def cancel(self) -> None:
        pass

    def fire(self) -> None:
        due, self.scheduled = self.scheduled, []
        for _, callback in due:
            callback()


def test_facts_told_before_the_deadline_are_written_in_one_transaction_when_it_passes(
    opened: Store,
) -> None:
    db = opened.database
    timers = HeldTimers()
    recorder = start_run_event_recorder(db, timers, 0.25)
    assert isinstance(recorder, pykka.ActorRef)  # asked below: told facts are handled on return
    recorder.tell(happened("r", SpanOpened(RUN, "", 1, {"text": "hi"})))
    recorder.tell(happened("r", SpanOpened(TOOL, "c1", 2, {"tool": "Read"})))
    recorder.ask(happened("r", SpanClosed(TOOL, "c1", 3, {"outcome": "success"})))
    assert [delay for delay, _ in timers.scheduled] == [0.25]  # one deadline for the burst
    assert RunEvents(db).events_of("r") == []  # nothing written before it passes
    assert isinstance(db, GroupCommit)  # every store database group-commits its writes
    commits = db.group_commits
    timers.fire()
    wait_until(lambda: len(RunEvents(db).events_of("r")) == 2, "the batch")
    assert db.group_commits - commits == 1
    recorder.ask(happened("r", SpanClosed(RUN, "", 4, {"code": "ok"})))
    assert len(timers.scheduled) == 1  # the next fact starts the next deadline
    stop(recorder)  # what is pending when it stops is written then, its deadline not waited for
    run, tool = RunEvents(db).events_of("r")
    assert (run.ended_at_ms, tool.ended_at_ms) == (4, 3)


def test_a_flush_deadline_without_timers_is_refused(opened: Store) -> None:
    with pytest.raises(ValueError, match="needs timers"):
        RunEventRecorderActor(opened.database, None, 0.25)


def wait_until(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_a_failed_write_is_logged_and_the_recorder_goes_on(
    at_version_8: peewee.Database, caplog: pytest.LogCaptureFixture
) -> None:
    """Without its table every write fails: logged, never raised; once the table exists the
    next facts are written (the failed batch is gone, as the recorder said)."""
    caplog.set_level(logging.ERROR, logger="cursor_server.run_events")
    db = at_version_8
    recorder = start_run_event_recorder(db)
    recorder.tell(happened("lost", SpanOpened(RUN, "", 1, {"text": "x"})))
    wait_until(lambda: any("run event" in r.getMessage() for r in caplog.records), "the error")
    apply_migrations(db)
    recorder.tell(happened("kept", SpanOpened(RUN, "", 2, {"text": "y"})))
    recorder.tell(happened("kept", SpanClosed(RUN, "", 3, {"code": "ok"})))
    stop(recorder)
    events = RunEvents(db)
    assert events.events_of("lost") == []
    (kept,) = events.events_of("kept")
    assert (kept.ended_at_ms, kept.detail) == (3, {"text": "y", "code": "ok"})


def test_the_recorder_prunes_beyond_retained_calls_once_a_run_ends(opened: Store) -> None:
    db = opened.database
    update_observability(db, retained_calls=2)
    recorder = start_run_event_recorder(db)
    for index in range(4):
        run_id = f"r{index}"
        recorder.tell(happened(run_id, SpanOpened(RUN, "", index, {})))
        recorder.tell(happened(run_id, SpanOpened(TOOL, "c", index, {})))
        recorder.tell(happened(run_id, SpanClosed(RUN, "", index, {"code": "ok"})))
    stop(recorder)
    assert sorted({run_id for run_id, _ in runs_kept(db)}) == ["r2", "r3"]
    # A run still running when pruned away keeps nothing it wrote before.
    assert RunEvents(db).events_of("r0") == []
