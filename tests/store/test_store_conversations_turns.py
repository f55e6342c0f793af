"""The conversation store's two critical-path writes, ``start_turn`` and
``commit_tool_result``: each does in one transaction what ``claim_run``, ``append_once`` and
``begin_provider_call`` (or ``_own``, ``_extend``, ``begin_provider_call``) do, with its own
reads and writes, so each refusal and each claim effect is checked on them directly, plus that
they open no savepoint and keep their statement counts.

Each test runs on a SQLite file and, when CURSOR_TEST_POSTGRES_URL is set, on PostgreSQL.
"""

from __future__ import annotations

import threading

import pytest
from playhouse.test_utils import count_queries

from store import Store
from store.conversations import (
    ConversationNotFound,
    ConversationStore,
    HeadMoved,
    InvalidInput,
    RevisionNotFound,
    RunConflict,
    RunStatus,
    StaleRun,
    StartedTurn,
    StoredMessage,
    ToolCallSpec,
    ToolRoundNotFound,
)
from tests.store.test_conversation_store import (
    assistant,
    count,
    in_threads,
    runtime,
    snapshot,
    tool_pair,
)


@pytest.fixture
def cs(opened: Store) -> ConversationStore:
    return ConversationStore(opened.database)


# --- start_turn --------------------------------------------------------------------------------


def test_start_turn_refuses_what_claim_run_refuses_and_writes_nothing(
    cs: ConversationStore, opened: Store
) -> None:
    root = cs.ensure_conversation("conv")
    other_root = cs.ensure_conversation("other")
    cs.start_turn("run-1", "conv", None, runtime("run-1"))
    before = snapshot(opened.database)
    turn = runtime("run-2")
    with pytest.raises(ConversationNotFound):
        cs.start_turn("run-2", "missing", root, turn)
    with pytest.raises(RevisionNotFound, match="belongs to other"):
        cs.start_turn("run-2", "conv", other_root, turn)
    with pytest.raises(RevisionNotFound):
        cs.start_turn("run-2", "conv", 999_999, turn)
    with pytest.raises(RunConflict, match="already running"):
        cs.start_turn("run-1", "conv", None, turn)
    with pytest.raises(RunConflict, match="belongs to conversation conv"):
        cs.start_turn("run-1", "other", other_root, turn)
    # A conversation the refused turn would have created is rolled back with it.
    with pytest.raises(RunConflict, match="belongs to conversation conv"):
        cs.start_turn("run-1", "new", None, turn)
    bad = StoredMessage(turn.message_id, "nobody", turn.origin, turn.payload, "run-2")
    with pytest.raises(InvalidInput, match="unknown role"):
        cs.start_turn("run-2", "new", None, bad)
    with pytest.raises(InvalidInput, match="run_id"):
        cs.start_turn("", "new", None, turn)
    with pytest.raises(InvalidInput, match="conversation_id"):
        cs.start_turn("run-2", "", None, turn)
    assert snapshot(opened.database) == before
    assert cs.conversation("new") is None


def test_start_turn_supersedes_the_active_run(cs: ConversationStore) -> None:
    first = cs.start_turn("run-1", "conv", None, runtime("run-1"))
    second = cs.start_turn("run-2", "conv", None, runtime("run-2"))
    assert second.claimed.superseded_run_id == "run-1"
    assert second.claimed.base_revision_id == first.head  # None: the conversation's head
    assert (second.inserted, second.call_index) == (True, 0)
    superseded = cs.run("run-1")
    assert superseded is not None
    assert superseded.status is RunStatus.CANCELLED
    assert superseded.failure_message == "superseded by run run-2"
    assert superseded.finished_at_ms is not None
    with pytest.raises(StaleRun):
        cs.begin_provider_call("run-1")
    run = cs.run("run-2")
    assert run is not None
    assert (run.status, run.base_revision_id, run.head_revision_id) == (
        RunStatus.RUNNING,
        first.head,
        second.head,
    )
    conversation = cs.conversation("conv")
    assert conversation is not None
    assert (conversation.current_revision_id, conversation.active_run_id) == (second.head, "run-2")
    assert [m.message_id for m in cs.messages_at(second.head)] == [
        "runtime:run-request:run-1",
        "runtime:run-request:run-2",
    ]


def test_start_turn_restarts_a_finished_run_and_keeps_counting_its_calls(
    cs: ConversationStore,
) -> None:
    first = cs.start_turn("run-1", "conv", None, runtime("run-1"))
    assert cs.begin_provider_call("run-1") == 1
    head = cs.append_messages("run-1", first.head, [assistant("a1")])
    assert cs.finish_run("run-1", RunStatus.FAILED, '{"x":1}', "provider", "boom")
    finished = cs.run("run-1")
    assert finished is not None
    again = cs.start_turn("run-1", "conv", None, runtime("run-1b"))
    assert (again.claimed.base_revision_id, again.inserted, again.call_index) == (head, True, 2)
    assert again.claimed.superseded_run_id is None
    run = cs.run("run-1")
    assert run is not None
    assert run.status is RunStatus.RUNNING
    assert (run.base_revision_id, run.head_revision_id, run.provider_call_index) == (
        head,
        again.head,
        2,
    )
    assert (run.usage_json, run.failure_category, run.failure_message, run.finished_at_ms) == (
        None,
        None,
        None,
        None,
    )
    assert run.created_at_ms == finished.created_at_ms


def test_start_turn_on_a_history_holding_the_turn_appends_nothing(
    cs: ConversationStore, opened: Store
) -> None:
    first = cs.start_turn("run-1", "conv", None, runtime("run-1"))
    cs.finish_run("run-1", RunStatus.COMPLETED)
    revisions = count(opened.database, "conversation_revisions")
    # Another run on a head whose history already holds the turn: claimed, not appended.
    again = cs.start_turn("run-2", "conv", None, runtime("run-1"))
    assert (again.head, again.inserted, again.call_index) == (first.head, False, 0)
    assert count(opened.database, "conversation_revisions") == revisions
    assert count(opened.database, "conversation_messages") == 1
    run = cs.run("run-2")
    assert run is not None
    assert (run.base_revision_id, run.head_revision_id) == (first.head, first.head)


def test_concurrent_turns_on_a_new_conversation_chain_up(
    cs: ConversationStore, opened: Store
) -> None:
    """Six runs start a turn on one new conversation at once: one creates it, each claims the
    head the previous one left, so every turn is in the last head's history exactly once and
    every run but the last is superseded."""
    threads = 6
    run_ids = [f"run-{i}" for i in range(threads)]
    lock = threading.Lock()

    def start() -> StartedTurn:
        with lock:
            run_id = run_ids.pop()
        return cs.start_turn(run_id, "conv", None, runtime(run_id))

    started = in_threads(threads, start, opened.database)
    assert all(turn.inserted and turn.call_index == 0 for turn in started)
    last = max(started, key=lambda turn: turn.head)
    history = [m.message_id for m in cs.messages_at(last.head)]
    assert sorted(history) == sorted(f"runtime:run-request:run-{i}" for i in range(threads))
    assert count(opened.database, "conversation_revisions") == threads + 1  # one root
    superseded = {turn.claimed.superseded_run_id for turn in started} - {None}
    assert len(superseded) == threads - 1
    statuses = [cs.run(f"run-{i}") for i in range(threads)]
    assert sorted(r.status for r in statuses if r is not None) == sorted(
        [RunStatus.CANCELLED] * (threads - 1) + [RunStatus.RUNNING]
    )
    conversation = cs.conversation("conv")
    assert conversation is not None
    assert (conversation.current_revision_id, conversation.active_run_id) == (
        last.head,
        last.claimed.run_id,
    )


# --- commit_tool_result ------------------------------------------------------------------------


def test_commit_tool_result_needs_the_run_s_own_round(cs: ConversationStore, opened: Store) -> None:
    first = cs.start_turn("run-1", "conv", None, runtime("run-1"))
    call = ToolCallSpec(0, "call-a", "run-1:0", "Read", "{}")
    cs.create_tool_round("run-1", "round-1", first.head, b"{}", [call])
    cs.finish_run("run-1", RunStatus.FAILED)
    cs.start_turn("run-2", "conv", None, runtime("run-2"))
    before = snapshot(opened.database)
    with pytest.raises(ToolRoundNotFound, match="run run-2 has no tool round round-1"):
        cs.commit_tool_result("run-2", "round-1", "call-a", tool_pair("round-1", call, "a"))
    assert snapshot(opened.database) == before


def test_a_one_call_round_settles_on_its_result_and_reserves_only_when_asked(
    cs: ConversationStore,
) -> None:
    turn = cs.start_turn("run-1", "conv", None, runtime("run-1"))
    head = turn.head
    for n, reserve in enumerate((False, True)):
        round_id = f"round-{n}"
        call = ToolCallSpec(0, f"call-{n}", f"run-1:{n}", "Read", "{}")
        cs.create_tool_round("run-1", round_id, head, b"{}", [call])
        committed = cs.commit_tool_result(
            "run-1",
            round_id,
            call.call_id,
            tool_pair(round_id, call, "x"),
            reserve_call_when_settled=reserve,
        )
        assert (committed.completion_seq, committed.settled) == (0, True)
        assert committed.call_index == (1 if reserve else None)
        head = committed.revision_id
        run = cs.run("run-1")
        assert run is not None
        assert (cs.head("conv"), run.provider_call_index) == (head, 1 if reserve else 0)
        record = cs.tool_round(round_id)
        assert record is not None
        assert record.calls[0].committed_revision_id == head


# --- what the hot path costs -------------------------------------------------------------------


def statements(fn: object) -> list[str]:
    """The SQL text of every statement ``fn`` runs (peewee's log records, kept in memory)."""
    assert callable(fn)
    with count_queries() as counter:
        fn()
    return [record.msg[0] for record in counter.get_queries()]


def test_the_critical_path_writes_open_no_savepoint_and_keep_their_statement_counts(
    cs: ConversationStore,
) -> None:
    """Counts, not times: each statement costs ~0.3 ms to build as a peewee query and ~20 us
    to run precompiled, so a regression here shows as a count first."""
    new = statements(lambda: cs.start_turn("run-1", "conv", None, runtime("run-1")))
    turn = cs.start_turn("run-2", "conv", None, runtime("run-2"))
    existing = statements(lambda: cs.start_turn("run-3", "conv", turn.head, runtime("run-3")))
    calls = [
        ToolCallSpec(0, "call-a", "run-3:0", "Read", "{}"),
        ToolCallSpec(1, "call-b", "run-3:0", "Read", "{}"),
    ]
    head = cs.run("run-3")
    assert head is not None
    cs.create_tool_round("run-3", "r", head.head_revision_id, b"{}", calls)
    pairs = [tool_pair("r", call, "x") for call in calls]
    first = statements(
        lambda: cs.commit_tool_result(
            "run-3", "r", "call-b", pairs[1], reserve_call_when_settled=True
        )
    )
    last = statements(
        lambda: cs.commit_tool_result(
            "run-3", "r", "call-a", pairs[0], reserve_call_when_settled=True
        )
    )
    run = cs.run("run-3")
    assert run is not None and run.provider_call_index == 1
    for sql in (*new, *existing, *first, *last):
        assert "SAVEPOINT" not in sql
    assert (len(new), len(existing), len(first), len(last)) == (8, 11, 12, 14)


def test_head_is_the_current_revision_or_none_for_an_unknown_conversation(
    cs: ConversationStore,
) -> None:
    assert cs.head("no-such-conversation") is None
    root = cs.ensure_conversation("conv-head")
    assert cs.head("conv-head") == root
    started = cs.start_turn("run-head", "conv-head", None, runtime("run-head"))
    assert cs.head("conv-head") == started.head != root


def test_start_turn_with_an_expected_head_refuses_a_moved_one_and_writes_nothing(
    cs: ConversationStore, opened: Store
) -> None:
    """A turn prepared from the head it read (no client state) never commits on another."""
    with pytest.raises(HeadMoved):  # expected a new conversation, but it exists now
        root = cs.ensure_conversation("conv-moved")
        cs.start_turn("run-a", "conv-moved", None, runtime("run-a"), expected_head=None)
    before = snapshot(opened.database)
    with pytest.raises(HeadMoved):
        cs.start_turn("run-a", "conv-moved", None, runtime("run-a"), expected_head=root + 999)
    assert snapshot(opened.database) == before
    started = cs.start_turn("run-a", "conv-moved", None, runtime("run-a"), expected_head=root)
    assert started.claimed.base_revision_id == root
    fresh = cs.start_turn("run-b", "conv-new", None, runtime("run-b"), expected_head=None)
    assert fresh.base_message_count == 0
