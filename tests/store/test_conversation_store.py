"""The conversation store: revision lineage and digest, append-only rows, exactly-once runtime
turns (across retries, restarts and threads), rollback branches, run ownership, provider call
indexes, tool rounds, imports of client history and input anchors.

Each test runs on a SQLite file and, when CURSOR_TEST_POSTGRES_URL is set, on PostgreSQL.
Payloads are real canonical messages (``actors.conversation.model.encode_message``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import peewee
import pytest
from playhouse.test_utils import count_queries

from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    Role,
    TextPart,
    ToolResultContent,
    decode_message,
)
from actors.turn.plan import stored
from store import Store, apply_migrations, connect_store, open_database
from store.base.typed_peewee import execute_sql
from store.conversations import (
    EMPTY_STATE_DIGEST,
    ConversationNotFound,
    ConversationStore,
    ConversationStoreError,
    DuplicateToolResult,
    InvalidInput,
    MessageConflict,
    RevisionNotFound,
    RunConflict,
    RunNotFound,
    RunStatus,
    StaleRun,
    StoredMessage,
    ToolCallSpec,
    ToolCallStatus,
    ToolRoundConversationMismatch,
    ToolRoundExists,
    ToolRoundNotFound,
    ToolRoundSettled,
    ToolRoundStatus,
    UnknownToolCall,
    extend_digest,
    roots_digest,
    state_digest,
)
from store.group_commit import GroupCommit
from store.migrations import (
    MigrationError,
    applied_versions,
    chain_digests_and_checkpoint_states,
    drop_tool_result_content,
    drop_unread_copies,
    latest_version,
    registered_migrations,
)
from tests.support.connections import connection

# --- fixtures and helpers ----------------------------------------------------------------------


@pytest.fixture
def cs(opened: Store) -> ConversationStore:
    return ConversationStore(opened.database)


def user(message_id: str, text: str | None = None) -> StoredMessage:
    content = PartsContent((TextPart(text or f"text of {message_id}"),))
    return stored(CanonicalMessage(message_id, Role.USER, Origin.USER, content))


def runtime(request_id: str, text: str = "the user turn") -> StoredMessage:
    """The rendered user turn of a RunRequest, with its stable event id."""
    content = PartsContent((TextPart(text),))
    return stored(
        CanonicalMessage(
            f"runtime:run-request:{request_id}",
            Role.USER,
            Origin.RUNTIME,
            content,
            runtime_event_id=f"run-request:{request_id}",
        )
    )


def assistant(message_id: str, text: str = "an answer") -> StoredMessage:
    content = AssistantContent(text=text)
    return stored(CanonicalMessage(message_id, Role.ASSISTANT, Origin.ASSISTANT, content))


def tool_pair(
    round_id: str, call: ToolCallSpec, result: str, *, is_error: bool = False
) -> tuple[StoredMessage, StoredMessage]:
    """The (assistant with one call, tool result) pair a completed call commits."""
    asst = AssistantContent(
        tool_round_id=round_id,
        tool_calls=(
            CanonicalToolCall(
                call.index, call.call_id, call.name, call.arguments, call.model_call_id
            ),
        ),
    )
    res = ToolResultContent(call.call_id, call.name, result, is_error)
    return (
        stored(
            CanonicalMessage(
                f"{round_id}:{call.call_id}:assistant", Role.ASSISTANT, Origin.ASSISTANT, asst
            )
        ),
        stored(CanonicalMessage(f"{round_id}:{call.call_id}:result", Role.TOOL, Origin.TOOL, res)),
    )


def rows(db: peewee.Database, table: str) -> list[tuple[Any, ...]]:
    """Every row of a table, bytes normalised, in a stable order."""
    cursor = execute_sql(db, f'SELECT * FROM "{table}"')
    normalised = [
        tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
        for row in cursor.fetchall()
    ]
    return sorted(normalised, key=repr)


STORE_TABLES = (
    "conversations",
    "conversation_revisions",
    "conversation_messages",
    "revision_messages",
    "runs",
    "tool_rounds",
    "tool_round_calls",
    "checkpoint_states",
)


def snapshot(db: peewee.Database) -> dict[str, list[tuple[Any, ...]]]:
    return {table: rows(db, table) for table in STORE_TABLES}


def count(db: peewee.Database, table: str) -> int:
    return int(execute_sql(db, f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])


def delta(db: peewee.Database, revision_id: int) -> list[str]:
    """The message ids a revision itself stores (its delta, not its history)."""
    sql = (
        "SELECT message_id FROM revision_messages WHERE revision_id = "
        f"{int(revision_id)} ORDER BY ordinal"
    )
    return [row[0] for row in execute_sql(db, sql).fetchall()]


def pending(cs: ConversationStore, round_id: str) -> list[str]:
    """The ids of the round's calls still waiting for a result, in index order."""
    record = cs.tool_round(round_id)
    assert record is not None
    return [c.call_id for c in record.calls if c.status is ToolCallStatus.PENDING]


def head_of(cs: ConversationStore, run_id: str) -> int:
    """The head of the run's conversation (the one copy of it while the run runs)."""
    run = cs.run(run_id)
    assert run is not None
    head = cs.head(run.conversation_id)
    assert head is not None
    return head


def started(cs: ConversationStore, conversation_id: str = "conv", run_id: str = "run-1") -> int:
    """A conversation with ``run_id`` claimed on its root; returns the root revision id."""
    root = cs.ensure_conversation(conversation_id)
    cs.claim_run(run_id, conversation_id, root)
    return root


def in_threads(threads: int, fn: Callable[[], Any], db: peewee.Database) -> list[Any]:
    """Run ``fn`` in ``threads`` threads released together; results, or re-raise the first error."""
    barrier = threading.Barrier(threads)
    results: list[Any] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker() -> None:
        try:
            db.connect(reuse_if_open=True)  # connect first, so the calls really overlap
            barrier.wait(timeout=10)
            value = fn()
            with lock:
                results.append(value)
        except BaseException as exc:
            with lock:
                errors.append(exc)
        finally:
            db.close()

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in workers)
    if errors:
        raise errors[0]
    return results


# --- conversations, lineage and digest ---------------------------------------------------------


def test_a_new_conversation_has_one_empty_root(cs: ConversationStore, opened: Store) -> None:
    root = cs.ensure_conversation("conv")
    assert cs.ensure_conversation("conv") == root
    assert cs.messages_at(root) == []
    record = cs.revision(root)
    assert record is not None
    assert record.parent_revision_id is None
    assert record.conversation_id == "conv"
    assert record.message_count == 0
    assert record.state_digest == hashlib.sha256(b"").digest() == EMPTY_STATE_DIGEST
    conversation = cs.conversation("conv")
    assert conversation is not None
    assert (conversation.current_revision_id, conversation.active_run_id) == (root, None)
    assert count(opened.database, "conversation_revisions") == 1
    assert cs.conversation("other") is None


def test_lineage_walks_the_parents_and_each_revision_stores_its_delta(
    cs: ConversationStore, opened: Store
) -> None:
    root = started(cs)
    a, b, c = runtime("r1"), assistant("m-b"), user("m-c")
    first = cs.append_messages("run-1", root, [a])
    second = cs.append_messages("run-1", first, [b, c])
    assert cs.messages_at(first) == [a]
    assert cs.messages_at(second) == [a, b, c]
    assert type(cs.messages_at(second)[0].payload) is bytes
    assert delta(opened.database, first) == [a.message_id]
    assert delta(opened.database, second) == [b.message_id, c.message_id]
    second_record = cs.revision(second)
    assert second_record is not None
    assert second_record.parent_revision_id == first
    assert second_record.message_count == 3
    # Chained: each message is SHA-256(previous digest, 8-byte big-endian length, payload).
    manual = EMPTY_STATE_DIGEST
    for payload in (a.payload, b.payload, c.payload):
        manual = hashlib.sha256(manual + len(payload).to_bytes(8, "big") + payload).digest()
    assert second_record.state_digest == manual == state_digest([a.payload, b.payload, c.payload])
    first_record = cs.revision(first)
    assert first_record is not None
    assert second_record.state_digest == extend_digest(
        first_record.state_digest, [b.payload, c.payload]
    )
    assert state_digest([b"ab"]) != state_digest([b"a", b"b"])
    assert state_digest([b"a", b"b"]) != state_digest([b"b", b"a"])
    run = cs.run("run-1")
    assert run is not None and run.base_revision_id == root
    # The run's row keeps its claim-time revision while it runs; the head is the conversation's.
    assert run.head_revision_id == root
    conversation = cs.conversation("conv")
    assert conversation is not None
    assert conversation.current_revision_id == second


def test_messages_at_is_one_query(cs: ConversationStore) -> None:
    head = started(cs)
    for i in range(5):
        head = cs.append_messages("run-1", head, [user(f"m{i}"), assistant(f"a{i}")])
    with count_queries() as counter:
        messages = cs.messages_at(head)
    assert counter.count == 1
    assert [m.message_id for m in messages] == [mid for i in range(5) for mid in (f"m{i}", f"a{i}")]


def test_messages_at_an_unknown_revision_is_refused(cs: ConversationStore) -> None:
    started(cs)
    with pytest.raises(RevisionNotFound):
        cs.messages_at(999_999)


def test_the_same_history_has_one_digest_however_it_was_split(cs: ConversationStore) -> None:
    """Chained digests depend on the payloads alone, not on how revisions group them."""
    a, b, c = user("a"), assistant("b"), user("c")
    root = started(cs)
    head = cs.append_messages("run-1", root, [a])
    head = cs.append_messages("run-1", head, [b])
    head = cs.append_messages("run-1", head, [c])
    at_once = cs.import_revision("other", [a, b, c])
    split, whole = cs.revision(head), cs.revision(at_once)
    assert split is not None
    assert whole is not None
    assert (split.parent_revision_id, whole.parent_revision_id) != (None, None)
    assert (
        split.state_digest == whole.state_digest == state_digest([a.payload, b.payload, c.payload])
    )
    assert whole.message_count == split.message_count == 3


def test_a_child_digest_is_computed_from_the_parent_row(
    cs: ConversationStore, opened: Store
) -> None:
    """An append reads its parent's stored digest instead of re-hashing the history: with the
    parent row's digest replaced, the child chains from the replacement."""
    root = started(cs)
    parent = cs.append_messages("run-1", root, [user("a"), assistant("b")])
    replaced = hashlib.sha256(b"another history").digest()
    p = opened.database.param
    execute_sql(
        opened.database,
        f"UPDATE conversation_revisions SET state_digest = {p} WHERE revision_id = {p}",
        (replaced, parent),
    )
    c = user("c")
    child = cs.revision(cs.append_messages("run-1", parent, [c]))
    assert child is not None
    assert child.state_digest == extend_digest(replaced, [c.payload])
    assert child.message_count == 3


def test_repeats_are_found_deep_in_a_long_lineage(cs: ConversationStore) -> None:
    """The lookup of an append's own ids walks the whole lineage: a message or runtime event
    of the first revision of a long chain is still "already in this history"."""
    root = started(cs)
    first = runtime("req-0")
    head = cs.append_once("run-1", root, first)[0]
    for i in range(60):
        head = cs.append_messages("run-1", head, [user(f"u{i}"), assistant(f"a{i}")])
    with pytest.raises(MessageConflict, match="message u0 is already in this history"):
        cs.append_messages("run-1", head, [user("new"), user("u0")])
    same_event = StoredMessage("other-id", "user", "runtime", b"{}", "run-request:req-0")
    with pytest.raises(MessageConflict, match="runtime event run-request:req-0 is already in"):
        cs.append_messages("run-1", head, [same_event])
    assert cs.append_once("run-1", head, first) == (head, False)
    with pytest.raises(MessageConflict, match="different content"):
        cs.append_once("run-1", head, runtime("req-0", "other bytes"))
    # Recorded on a branch, not in this history: the row is shared, not refused.
    cs.claim_run("run-2", "conv", root)
    branch = cs.append_messages("run-2", root, [user("u30"), assistant("a30")])
    assert cs.messages_at(branch) == [user("u30"), assistant("a30")]
    assert head_of(cs, "run-2") == branch


def vm_steps(db: peewee.Database, fn: Callable[[], object]) -> int:
    """How many instructions SQLite's VM runs for ``fn``: a measure of work that, unlike time,
    is the same on every run. Counted on the thread's connection and, where writes are
    group-committed, on the one they run on; each has read the schema first (a connection's
    first statement does, whatever the call)."""
    connections = [connection(db)]
    if isinstance(db, GroupCommit):
        connections.append(db.write_connection())
    for conn in connections:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    steps = 0

    def tick() -> int:
        nonlocal steps
        steps += 1
        return 0

    for conn in connections:
        conn.set_progress_handler(tick, 1)
    try:
        fn()
    finally:
        for conn in connections:
            conn.set_progress_handler(None, 1)
    return steps


def test_an_append_does_as_much_work_on_a_long_history_as_on_a_short_one(tmp_path: Path) -> None:
    """O(new messages): SQLite executes about the same instructions for appends, a runtime turn
    and a tool pair on a 400-message history as on a 4-message one (reading the history, as
    ``messages_at`` does, costs many times that)."""
    store = connect_store(f"sqlite://{tmp_path / 'steps.db'}")
    cs = ConversationStore(store.database)
    heads = {}
    for name, exchanges in (("long", 200), ("short", 2)):
        head = started(cs, name, f"run-{name}")
        for i in range(exchanges):
            head = cs.append_messages(f"run-{name}", head, [user(f"u{i}"), assistant(f"a{i}")])
        heads[name] = head
    work: dict[str, list[int]] = {}
    for name in ("long", "short"):
        run_id = f"run-{name}"
        call = ToolCallSpec(0, "call-1", f"{run_id}:0", "Read", "{}")

        def append(name: str = name, run_id: str = run_id) -> None:
            cs.append_messages(run_id, heads[name], [user("new")])

        def once(run_id: str = run_id) -> None:
            cs.append_once(run_id, head_of(cs, run_id), runtime(run_id))

        def pair(run_id: str = run_id, call: ToolCallSpec = call) -> None:
            cs.create_tool_round(run_id, f"{run_id}:r", head_of(cs, run_id), b"{}", [call])
            cs.commit_tool_result(
                run_id, f"{run_id}:r", "call-1", tool_pair(f"{run_id}:r", call, "x")
            )

        work[name] = [vm_steps(store.database, fn) for fn in (append, once, pair)]
    reading = vm_steps(store.database, lambda: cs.messages_at(heads["long"]))
    for long_steps, short_steps in zip(work["long"], work["short"], strict=True):
        assert long_steps <= short_steps * 1.2, (work, reading)
        assert reading > long_steps * 3, (work, reading)
    store.close()


def test_message_rows_are_never_updated_or_deleted(cs: ConversationStore, opened: Store) -> None:
    """Every history-bearing table refuses UPDATE and DELETE (a trigger); the whole life of a
    conversation (appends, rollback, import, tool round, conflicts) still works, and the bytes
    written first are the bytes read last."""
    db = opened.database
    immutable = ("conversation_messages", "revision_messages", "conversation_revisions")
    if isinstance(db, peewee.PostgresqlDatabase):
        execute_sql(
            db,
            "CREATE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'immutable table %%', TG_TABLE_NAME; END $$",
        )
        for table in immutable:
            execute_sql(
                db,
                f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION refuse_change()",
            )
    else:
        for table in immutable:
            for event in ("UPDATE", "DELETE"):
                execute_sql(
                    db,
                    f"CREATE TRIGGER {table}_no_{event.lower()} BEFORE {event} ON {table} "
                    "BEGIN SELECT RAISE(ABORT, 'immutable table'); END",
                )

    root = started(cs)
    a, b = runtime("r1"), assistant("m-b")
    first = cs.append_messages("run-1", root, [a])
    second = cs.append_messages("run-1", first, [b])
    written = rows(db, "conversation_messages")

    cs.claim_run("run-2", "conv", first)  # rollback: a new branch from `first`
    branch = cs.append_messages("run-2", first, [user("m-c")])
    cs.import_revision("conv", [user("x"), user("y")])
    call = ToolCallSpec(0, "call-1", "run-2:0", "Read", '{"path":"/a"}')
    cs.create_tool_round("run-2", "run-2:round:0", branch, b"{}", [call])
    cs.commit_tool_result(
        "run-2", "run-2:round:0", "call-1", tool_pair("run-2:round:0", call, "ok")
    )
    with pytest.raises(MessageConflict):
        cs.append_messages("run-2", head_of(cs, "run-2"), [assistant("m-b", "other")])

    assert cs.messages_at(second) == [a, b]
    after = rows(db, "conversation_messages")
    assert [r for r in after if r in written] == written
    assert count(db, "conversation_messages") == len(written) + 5


# --- exactly-once runtime turns ----------------------------------------------------------------


def test_runtime_turn_is_appended_once(cs: ConversationStore, opened: Store) -> None:
    root = started(cs)
    turn = runtime("req-1")
    head, inserted = cs.append_once("run-1", root, turn)
    assert inserted
    assert head != root
    assert cs.append_once("run-1", head, turn) == (head, False)
    assert cs.append_once("run-1", root, turn) == (head, False)  # stale expectation, same turn
    assert cs.messages_at(head) == [turn]
    assert count(opened.database, "conversation_messages") == 1
    assert count(opened.database, "conversation_revisions") == 2


def test_runtime_turn_is_appended_once_across_a_restart(db_url: str) -> None:
    first = connect_store(db_url)
    cs = ConversationStore(first.database)
    root = started(cs, run_id="req-1")
    turn = runtime("req-1")
    head, inserted = cs.append_once("req-1", root, turn)
    assert inserted
    first.close()  # the process dies with req-1 still running

    second = connect_store(db_url)
    cs = ConversationStore(second.database)
    assert cs.cancel_unfinished_runs("server restarted") == 1
    # A new run on the head replays the turn without appending it.
    cs.claim_run("req-2", "conv", head)
    assert cs.append_once("req-2", head, turn) == (head, False)
    # The client retries req-1 from its original base: the same history, the same revision.
    retried = cs.claim_run("req-1", "conv", root)
    assert retried.superseded_run_id == "req-2"
    moved, _ = cs.append_once("req-1", root, turn)
    assert moved == head
    assert cs.messages_at(moved) == [turn]
    assert count(second.database, "conversation_messages") == 1
    assert count(second.database, "conversation_revisions") == 2
    second.close()


def test_same_event_or_message_id_with_different_bytes_is_refused(
    cs: ConversationStore, opened: Store
) -> None:
    root = started(cs)
    head, _ = cs.append_once("run-1", root, runtime("req-1", "hello"))
    before = snapshot(opened.database)
    with pytest.raises(MessageConflict, match="different content"):
        cs.append_once("run-1", head, runtime("req-1", "HELLO"))
    other_id = StoredMessage("another-id", "user", "runtime", b"{}", "run-request:req-1")
    with pytest.raises(MessageConflict):
        cs.append_once("run-1", head, other_id)
    # Off the lineage too: a branch from the root may not record the event with other bytes.
    cs.claim_run("run-2", "conv", root)
    before = snapshot(opened.database)
    with pytest.raises(MessageConflict, match="already recorded"):
        cs.append_once("run-2", root, runtime("req-1", "HELLO"))
    with pytest.raises(MessageConflict, match="already recorded as message"):
        cs.append_messages("run-2", root, [other_id])
    with pytest.raises(MessageConflict, match="already recorded"):
        cs.append_messages("run-2", root, [assistant(runtime("req-1").message_id)])
    assert snapshot(opened.database) == before


def test_the_database_keeps_runtime_events_unique(opened: Store) -> None:
    """The partial unique index itself, not only the store's checks."""
    db = opened.database
    ConversationStore(db).ensure_conversation("conv")
    p = db.param
    sql = (
        "INSERT INTO conversation_messages (conversation_id, message_id, role, origin, payload, "
        f"runtime_event_id, created_at_ms) VALUES ({p}, {p}, 'user', 'runtime', {p}, {p}, 0)"
    )
    execute_sql(db, sql, ("conv", "a", b"a", None))
    execute_sql(db, sql, ("conv", "b", b"b", None))  # NULL events do not collide
    execute_sql(db, sql, ("conv", "c", b"c", "event"))
    with pytest.raises(peewee.IntegrityError), db.atomic():
        execute_sql(db, sql, ("conv", "d", b"d", "event"))
    assert count(db, "conversation_messages") == 3


def test_concurrent_append_once_inserts_once(cs: ConversationStore, opened: Store) -> None:
    """Eight threads append the same turn at once (five times over): one inserts it, the others
    see it; nobody gets an error."""
    for attempt in range(5):
        conversation_id, run_id = f"conv-{attempt}", f"run-{attempt}"
        root = started(cs, conversation_id, run_id)
        turn = runtime(run_id)
        results = in_threads(8, lambda: cs.append_once(run_id, root, turn), opened.database)  # noqa: B023
        heads = {head for head, _ in results}
        assert len(heads) == 1
        assert sorted(inserted for _, inserted in results) == [False] * 7 + [True]
        assert cs.messages_at(heads.pop()) == [turn]
    assert count(opened.database, "conversation_messages") == 5
    assert count(opened.database, "conversation_revisions") == 10


def test_a_message_already_in_the_history_is_not_appended_again(cs: ConversationStore) -> None:
    root = started(cs)
    head = cs.append_messages("run-1", root, [user("m1")])
    with pytest.raises(MessageConflict, match="already in this history"):
        cs.append_messages("run-1", head, [user("m1")])
    with pytest.raises(InvalidInput) as info:
        cs.append_messages("run-1", head, [user("m2"), user("m2")])
    assert isinstance(info.value, ValueError)
    with pytest.raises(InvalidInput):
        cs.append_messages("run-1", head, [])
    with pytest.raises(InvalidInput, match="unknown role"):
        cs.append_messages("run-1", head, [StoredMessage("m3", "robot", "user", b"{}")])
    with pytest.raises(InvalidInput, match="payload must be bytes"):
        cs.append_messages("run-1", head, [StoredMessage("m3", "user", "user", "text")])  # type: ignore[arg-type]  # wrong on purpose: refused
    assert cs.messages_at(head_of(cs, "run-1")) == [user("m1")]


# --- rollback and supersede --------------------------------------------------------------------


def test_claiming_an_old_revision_starts_a_branch(cs: ConversationStore, opened: Store) -> None:
    root = started(cs)
    a, b, c = user("a"), assistant("b"), user("c")
    rev_a = cs.append_messages("run-1", root, [a])
    rev_b = cs.append_messages("run-1", rev_a, [b])
    claimed = cs.claim_run("run-2", "conv", rev_a)
    assert claimed.superseded_run_id == "run-1"
    assert claimed.base_revision_id == rev_a
    conversation = cs.conversation("conv")
    assert conversation is not None
    assert (conversation.current_revision_id, conversation.active_run_id) == (rev_a, "run-2")

    rev_c = cs.append_messages("run-2", rev_a, [c])
    assert cs.messages_at(rev_c) == [a, c]
    assert cs.messages_at(rev_b) == [a, b]  # the old suffix stays readable from its revision
    record = cs.revision(rev_c)
    assert record is not None
    assert record.parent_revision_id == rev_a
    with pytest.raises(StaleRun):
        cs.append_messages("run-1", rev_b, [user("late")])
    assert cs.messages_at(rev_c) == [a, c]
    assert count(opened.database, "conversation_messages") == 3


def test_a_superseded_run_can_change_nothing(cs: ConversationStore, opened: Store) -> None:
    root = started(cs)
    head = cs.append_messages("run-1", root, [user("a")])
    assert cs.begin_provider_call("run-1") == 0
    call = ToolCallSpec(0, "call-1", "run-1:0", "Read", "{}")
    cs.create_tool_round("run-1", "run-1:round:0", head, b"{}", [call])

    claimed = cs.claim_run("run-2", "conv", head)
    assert claimed.superseded_run_id == "run-1"
    first = cs.run("run-1")
    assert first is not None
    assert first.status is RunStatus.CANCELLED
    assert first.failure_message == "superseded by run run-2"
    assert first.finished_at_ms is not None
    before = snapshot(opened.database)

    with pytest.raises(StaleRun, match="no longer owns"):
        cs.append_messages("run-1", head, [assistant("late")])
    with pytest.raises(StaleRun):
        cs.append_once("run-1", head, runtime("late"))
    with pytest.raises(StaleRun):
        cs.commit_tool_result(
            "run-1", "run-1:round:0", "call-1", tool_pair("run-1:round:0", call, "x")
        )
    with pytest.raises(StaleRun):
        cs.create_tool_round("run-1", "run-1:round:1", head, b"{}", [call])
    with pytest.raises(StaleRun):
        cs.begin_provider_call("run-1")
    assert cs.finish_run("run-1", RunStatus.COMPLETED, '{"output_tokens":1}') is False
    assert snapshot(opened.database) == before

    # The new owner is unaffected and the old one never regains the conversation.
    assert cs.begin_provider_call("run-2") == 0
    conversation = cs.conversation("conv")
    assert conversation is not None
    assert conversation.active_run_id == "run-2"


def test_appends_need_the_expected_head(cs: ConversationStore, opened: Store) -> None:
    root = started(cs)
    head = cs.append_messages("run-1", root, [user("a")])
    before = snapshot(opened.database)
    with pytest.raises(StaleRun, match="expected conversation conv at revision"):
        cs.append_messages("run-1", root, [user("b")])
    with pytest.raises(StaleRun):
        cs.append_once("run-1", root, user("b"))
    with pytest.raises(StaleRun):
        cs.create_tool_round("run-1", "round", root, b"{}", [ToolCallSpec(0, "c", "m", "n", "")])
    assert snapshot(opened.database) == before
    assert cs.append_messages("run-1", head, [user("b")]) != head


def test_claim_run_errors(cs: ConversationStore) -> None:
    root = cs.ensure_conversation("conv")
    other_root = cs.ensure_conversation("other")
    with pytest.raises(ConversationNotFound):
        cs.claim_run("run-1", "missing", root)
    with pytest.raises(RevisionNotFound, match="belongs to other"):
        cs.claim_run("run-1", "conv", other_root)
    with pytest.raises(RevisionNotFound):
        cs.claim_run("run-1", "conv", 999_999)
    assert cs.run("run-1") is None
    cs.claim_run("run-1", "conv", root)
    with pytest.raises(RunConflict, match="already running"):
        cs.claim_run("run-1", "conv", root)
    with pytest.raises(RunConflict, match="belongs to conversation conv"):
        cs.claim_run("run-1", "other", other_root)
    with pytest.raises(RunNotFound):
        cs.append_messages("nobody", root, [user("a")])


def test_a_finished_run_id_can_be_claimed_again(cs: ConversationStore) -> None:
    """A client retrying the same request id after a restart gets the run back; model call
    indexes keep counting so ``{run}:{index}`` never names two calls."""
    root = started(cs)
    assert cs.begin_provider_call("run-1") == 0
    assert cs.finish_run("run-1", RunStatus.FAILED, None, "provider", "boom")
    again = cs.claim_run("run-1", "conv", root)
    assert again.superseded_run_id is None
    run = cs.run("run-1")
    assert run is not None
    assert run.status is RunStatus.RUNNING
    assert (run.failure_category, run.failure_message, run.finished_at_ms) == (None, None, None)
    assert cs.begin_provider_call("run-1") == 1


# --- runs --------------------------------------------------------------------------------------


def test_provider_call_index_counts_from_zero_while_running(cs: ConversationStore) -> None:
    started(cs)
    run = cs.run("run-1")
    assert run is not None
    assert run.provider_call_index == -1
    assert [cs.begin_provider_call("run-1") for _ in range(3)] == [0, 1, 2]
    assert cs.finish_run("run-1", RunStatus.COMPLETED)
    with pytest.raises(StaleRun, match="completed"):
        cs.begin_provider_call("run-1")
    run = cs.run("run-1")
    assert run is not None
    assert run.provider_call_index == 2
    with pytest.raises(RunNotFound):
        cs.begin_provider_call("nobody")


def test_finish_run_once_and_release_the_conversation(cs: ConversationStore) -> None:
    root = started(cs)
    usage = '{"input_tokens":10,"output_tokens":2}'
    assert cs.finish_run("run-1", RunStatus.COMPLETED, usage) is True
    assert cs.finish_run("run-1", RunStatus.FAILED, None, "provider", "late") is False
    run = cs.run("run-1")
    assert run is not None
    assert (run.status, run.usage_json, run.failure_category) == (
        RunStatus.COMPLETED,
        usage,
        None,
    )
    assert run.finished_at_ms is not None
    assert run.finished_at_ms >= run.created_at_ms
    conversation = cs.conversation("conv")
    assert conversation is not None
    assert conversation.active_run_id is None
    with pytest.raises(StaleRun):
        cs.append_messages("run-1", root, [user("a")])
    with pytest.raises(InvalidInput):
        cs.finish_run("run-1", RunStatus.RUNNING)
    assert cs.claim_run("run-2", "conv", root).superseded_run_id is None


def test_a_run_records_the_revision_it_ended_on_however_it_ends(cs: ConversationStore) -> None:
    """While a run runs, only the conversation holds the head; the run's row gets the revision
    it stood on when it ends: finished, superseded, or cancelled at startup."""

    def ended_on(run_id: str) -> int:
        run = cs.run(run_id)
        assert run is not None and run.status is not RunStatus.RUNNING
        return run.head_revision_id

    root = started(cs, "a", "run-a")
    finished = cs.append_messages("run-a", root, [assistant("m-a")])
    assert cs.finish_run("run-a", RunStatus.COMPLETED)
    assert ended_on("run-a") == finished
    # Superseded: the new run claims an older revision, the old run keeps where it was.
    superseded = cs.append_messages(
        "run-b", cs.claim_run("run-b", "a", finished).base_revision_id, [assistant("m-b")]
    )
    cs.claim_run("run-c", "a", root)
    assert ended_on("run-b") == superseded and cs.head("a") == root
    # Cancelled at startup, after an append.
    crashed = cs.append_messages("run-c", root, [assistant("m-c")])
    assert cs.cancel_unfinished_runs("server restarted") == 1
    assert ended_on("run-c") == crashed
    # A run finished after it lost the conversation keeps its first end.
    assert cs.finish_run("run-b", RunStatus.FAILED) is False
    assert ended_on("run-b") == superseded


def test_cancel_unfinished_runs(cs: ConversationStore) -> None:
    started(cs, "a", "run-a")
    started(cs, "b", "run-b")
    started(cs, "c", "run-c")
    assert cs.finish_run("run-c", RunStatus.COMPLETED)
    assert cs.cancel_unfinished_runs("server restarted") == 2
    for run_id in ("run-a", "run-b"):
        run = cs.run(run_id)
        assert run is not None
        assert (run.status, run.failure_message) == (RunStatus.CANCELLED, "server restarted")
        with pytest.raises(StaleRun):
            cs.begin_provider_call(run_id)
    completed = cs.run("run-c")
    assert completed is not None
    assert completed.status is RunStatus.COMPLETED
    assert completed.failure_message is None
    for conversation_id in "abc":
        conversation = cs.conversation(conversation_id)
        assert conversation is not None
        assert conversation.active_run_id is None
    assert cs.cancel_unfinished_runs("again") == 0


# --- tool rounds -------------------------------------------------------------------------------


def test_tool_results_commit_as_pairs_in_arrival_order(
    cs: ConversationStore, opened: Store
) -> None:
    root = started(cs)
    head = cs.append_once("run-1", root, runtime("run-1"))[0]
    round_id = "run-1:round:0"
    calls = [
        ToolCallSpec(i, f"call-{name}", "run-1:0", "Read", f'{{"path":"/{name}"}}')
        for i, name in enumerate("abc")
    ]
    cs.create_tool_round("run-1", round_id, head, b'{"text":"prefix"}', calls, created_at_ms=5)
    record = cs.tool_round(round_id)
    assert record is not None
    assert (record.status, record.base_revision_id, record.created_at_ms) == (
        ToolRoundStatus.PENDING,
        head,
        5,
    )
    assert record.assistant_json == b'{"text":"prefix"}'
    assert pending(cs, round_id) == ["call-a", "call-b", "call-c"]

    committed = []
    for seq, call in enumerate(reversed(calls)):
        pair = tool_pair(round_id, call, f"content {call.call_id}", is_error=call.index == 1)
        result = cs.commit_tool_result("run-1", round_id, call.call_id, pair)
        assert result.completion_seq == seq
        assert result.settled is (seq == 2)
        revision = cs.revision(result.revision_id)
        assert revision is not None
        assert revision.parent_revision_id == head  # one revision per pair, on the run head
        assert delta(opened.database, result.revision_id) == [m.message_id for m in pair]
        head = result.revision_id
        committed.append(pair)
        if seq == 0:
            before = snapshot(opened.database)
            with pytest.raises(DuplicateToolResult):
                cs.commit_tool_result("run-1", round_id, call.call_id, pair)
            with pytest.raises(UnknownToolCall):
                cs.commit_tool_result("run-1", round_id, "call-x", pair)
            with pytest.raises(ToolRoundNotFound):
                cs.commit_tool_result("run-1", "no-round", call.call_id, pair)
            assert snapshot(opened.database) == before
            assert pending(cs, round_id) == ["call-a", "call-b"]

    assert cs.messages_at(head)[1:] == [m for pair in committed for m in pair]
    record = cs.tool_round(round_id)
    assert record is not None
    assert record.status is ToolRoundStatus.SETTLED
    assert record.next_completion_seq == 3
    by_id = {c.call_id: c for c in record.calls}
    assert [c.call_id for c in record.calls] == ["call-a", "call-b", "call-c"]
    assert [by_id[f"call-{n}"].completion_seq for n in "cba"] == [0, 1, 2]
    assert all(c.status is ToolCallStatus.COMPLETED for c in record.calls)
    # The result is the pair's tool message (its only copy, error flag included): the last
    # message of its revision.
    revision_a = by_id["call-a"].committed_revision_id
    revision_b = by_id["call-b"].committed_revision_id
    assert revision_a is not None and revision_b is not None  # completed: each committed
    pair_a = tool_pair(round_id, calls[0], "content call-a")
    assert cs.messages_at(revision_a)[-1] == pair_a[1]
    pair_b = tool_pair(round_id, calls[1], "content call-b", is_error=True)
    assert cs.messages_at(revision_b)[-1] == pair_b[1]
    assert by_id["call-a"].committed_revision_id == head
    assert by_id["call-a"].arguments == '{"path":"/a"}'
    assert by_id["call-a"].completed_at_ms is not None
    assert pending(cs, round_id) == []
    with pytest.raises(ToolRoundSettled):
        cs.commit_tool_result("run-1", round_id, "call-a", committed[-1])
    assert head_of(cs, "run-1") == head


def test_create_tool_round_validation(cs: ConversationStore, opened: Store) -> None:
    root = started(cs)
    call = ToolCallSpec(0, "c1", "run-1:0", "Read", "{}")
    with pytest.raises(InvalidInput, match="no calls"):
        cs.create_tool_round("run-1", "r", root, b"{}", [])
    with pytest.raises(InvalidInput, match="repeats a call id"):
        cs.create_tool_round("run-1", "r", root, b"{}", [call, ToolCallSpec(1, "c1", "m", "n", "")])
    with pytest.raises(InvalidInput, match="repeats a call index"):
        cs.create_tool_round("run-1", "r", root, b"{}", [call, ToolCallSpec(0, "c2", "m", "n", "")])
    assert cs.tool_round("r") is None
    cs.create_tool_round("run-1", "r", root, b"{}", [call])
    with pytest.raises(ToolRoundExists):
        cs.create_tool_round("run-1", "r", root, b"{}", [call])
    pair = tool_pair("r", call, "ok")
    with pytest.raises(InvalidInput, match="assistant message followed by a tool"):
        cs.commit_tool_result("run-1", "r", "c1", (pair[1], pair[0]))
    assert count(opened.database, "tool_round_calls") == 1


# --- imports -----------------------------------------------------------------------------------


def test_import_revision_reuses_extends_or_branches(cs: ConversationStore, opened: Store) -> None:
    root = started(cs)
    a, b, c = user("a"), assistant("b"), user("c")
    head = cs.append_messages("run-1", root, [a, b])

    child = cs.import_revision("conv", [a, b, c])  # the head is a prefix: only the suffix
    record = cs.revision(child)
    assert record is not None
    assert record.parent_revision_id == head
    assert delta(opened.database, child) == ["c"]
    assert cs.messages_at(child) == [a, b, c]

    assert cs.import_revision("conv", [a, b, c]) == child  # same digest: reused
    assert cs.import_revision("conv", [a, b]) == head
    assert cs.import_revision("conv", []) == root

    x, y = user("x"), user("y")
    branch = cs.import_revision("conv", [x, a, y])  # not an extension of the head: from the root
    record = cs.revision(branch)
    assert record is not None
    assert record.parent_revision_id == root
    assert delta(opened.database, branch) == ["x", "a", "y"]
    assert cs.messages_at(branch) == [x, a, y]

    conversation = cs.conversation("conv")
    assert conversation is not None
    assert conversation.current_revision_id == head  # importing never moves the head
    assert count(opened.database, "conversation_messages") == 5  # "a" is shared, not copied

    with pytest.raises(MessageConflict):
        cs.import_revision("conv", [user("a", "edited in place?")])
    with pytest.raises(InvalidInput):
        cs.import_revision("conv", [x, x])

    fresh = cs.import_revision("new-conv", [a])  # creates the conversation
    fresh_record = cs.revision(fresh)
    assert fresh_record is not None
    assert fresh_record.conversation_id == "new-conv"
    assert cs.messages_at(fresh) == [a]


# --- migration 4: chained digests --------------------------------------------------------------


def whole_history_digest(payloads: list[bytes]) -> bytes:
    """The digest migration 3 wrote: one SHA-256 over the full history."""
    digest = hashlib.sha256()
    for payload in payloads:
        digest.update(len(payload).to_bytes(8, "big") + payload)
    return digest.digest()


def revision_digests(db: peewee.Database) -> dict[int, bytes]:
    sql = "SELECT revision_id, state_digest FROM conversation_revisions"
    return {int(rid): bytes(digest) for rid, digest in execute_sql(db, sql).fetchall()}


def refuse_updates(db: peewee.Database, table: str) -> None:
    """A trigger that makes any UPDATE of ``table`` fail."""
    if isinstance(db, peewee.PostgresqlDatabase):
        execute_sql(
            db,
            "CREATE FUNCTION refuse_update() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'no update of %%', TG_TABLE_NAME; END $$",
        )
        execute_sql(
            db,
            f"CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION refuse_update()",
        )
    else:
        execute_sql(
            db,
            f"CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} "
            "BEGIN SELECT RAISE(ABORT, 'no update'); END",
        )


def test_migration_4_rechains_every_digest_parents_first(db_url: str) -> None:
    """A database written with the whole-history digests of migration 3 (appends, a rollback
    branch, an import, and a chain whose parents have larger ids than their children) gets the
    chained digest on every revision; afterwards the store dedupes against the migrated rows,
    and running the migration again writes nothing."""
    db = open_database(db_url)
    version_3 = registered_migrations()[:3]
    assert [v for v, _ in version_3] == [1, 2, 3]
    apply_migrations(db, version_3)
    assert not db.table_exists("checkpoint_states")
    cs = ConversationStore(db)
    a, b, c, d = runtime("req-1"), assistant("b"), user("c"), user("d")
    root = started(cs)
    rev_a = cs.append_once("run-1", root, a)[0]
    rev_b = cs.append_messages("run-1", rev_a, [b, c])
    cs.claim_run("run-2", "conv", rev_a)
    rev_d = cs.append_messages("run-2", rev_a, [d])
    imported = cs.import_revision("conv", [c, d])
    cs.ensure_conversation("empty")
    # Parents with larger ids than their children: the walk must not follow id order.
    p = db.param
    execute_sql(
        db,
        "INSERT INTO conversations (conversation_id, current_revision_id, active_run_id, "
        f"created_at_ms, updated_at_ms) VALUES ({p}, 9000, NULL, 0, 0)",
        ("reversed",),
    )
    x, y = user("x"), user("y")
    for revision_id, parent, count_ in ((9000, None, 0), (8000, 9000, 1)):
        execute_sql(
            db,
            "INSERT INTO conversation_revisions (revision_id, conversation_id, "
            "parent_revision_id, state_digest, message_count, created_at_ms) "
            f"VALUES ({p}, {p}, {p}, {p}, {p}, 0)",
            (revision_id, "reversed", parent, b"\0" * 32 if parent else EMPTY_STATE_DIGEST, count_),
        )
    execute_sql(
        db,
        "INSERT INTO conversation_revisions (revision_id, conversation_id, parent_revision_id, "
        f"state_digest, message_count, created_at_ms) VALUES (7000, {p}, 8000, {p}, 2, 0)",
        ("reversed", b"\1" * 32),
    )
    for revision_id, message in ((8000, x), (7000, y)):
        execute_sql(
            db,
            "INSERT INTO conversation_messages (conversation_id, message_id, role, origin, "
            f"payload, runtime_event_id, created_at_ms) VALUES ({p}, {p}, {p}, {p}, {p}, NULL, 0)",
            ("reversed", message.message_id, message.role, message.origin, message.payload),
        )
        execute_sql(
            db,
            "INSERT INTO revision_messages (revision_id, ordinal, conversation_id, message_id) "
            f"VALUES ({p}, 0, {p}, {p})",
            (revision_id, "reversed", message.message_id),
        )
    histories = {rid: cs.messages_at(rid) for rid in revision_digests(db)}
    for rid, history in histories.items():  # what migration 3 had written
        execute_sql(
            db,
            f"UPDATE conversation_revisions SET state_digest = {p} WHERE revision_id = {p}",
            (whole_history_digest([m.payload for m in history]), rid),
        )
    assert len(histories) == 9

    assert apply_migrations(db) == list(range(4, latest_version() + 1))
    migrated = revision_digests(db)
    for rid, history in histories.items():
        assert migrated[rid] == state_digest([m.payload for m in history]), rid
        if history:
            assert migrated[rid] != whole_history_digest([m.payload for m in history])
    assert migrated[7000] == state_digest([x.payload, y.payload])
    assert db.table_exists("checkpoint_states")

    # The store finds the migrated rows by digest: same histories, same revisions.
    assert cs.import_revision("conv", [a, b, c]) == rev_b
    assert cs.import_revision("conv", [a, d]) == rev_d
    assert cs.import_revision("conv", [c, d]) == imported
    assert cs.import_revision("reversed", [x, y]) == 7000
    cs.claim_run("run-3", "conv", root)
    assert cs.append_once("run-3", root, a) == (rev_a, True)  # lands on the existing revision
    before = snapshot(db)

    refuse_updates(db, "conversation_revisions")
    with db.atomic():
        chain_digests_and_checkpoint_states(db)
    assert revision_digests(db) == migrated
    assert snapshot(db) == before
    db.close()


def test_migration_4_refuses_a_revision_its_root_does_not_reach(db_url: str) -> None:
    """A revision whose parent is in another conversation cannot be rechained: the migration
    fails loudly and leaves version 3 in place."""
    db = open_database(db_url)
    apply_migrations(db, registered_migrations()[:3])
    cs = ConversationStore(db)
    cs.ensure_conversation("a")
    other_root = cs.ensure_conversation("b")
    p = db.param
    execute_sql(
        db,
        "INSERT INTO conversation_revisions (conversation_id, parent_revision_id, state_digest, "
        f"message_count, created_at_ms) VALUES ({p}, {p}, {p}, 0, 0)",
        ("a", other_root, b"\2" * 32),
    )
    with pytest.raises(MigrationError, match="1 revisions are not reachable"):
        apply_migrations(db)
    assert applied_versions(db) == [1, 2, 3]
    assert not db.table_exists("checkpoint_states")
    db.close()


# --- checkpoint states -------------------------------------------------------------------------


def blob(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest()


def test_roots_digest_is_sha256_of_the_concatenated_root_ids() -> None:
    roots = [blob("user"), blob("assistant"), blob("tool")]
    assert roots_digest(roots) == hashlib.sha256(b"".join(roots)).digest()
    assert roots_digest(tuple(roots)) == roots_digest(roots)
    assert roots_digest(roots) != roots_digest(list(reversed(roots)))
    assert roots_digest([]) == hashlib.sha256(b"").digest()
    for bad in ([blob("a")[:31]], [blob("a") + b"\0"], [blob("a").hex()], [bytearray(blob("a"))]):
        with pytest.raises(InvalidInput, match="32 raw bytes"):
            roots_digest(bad)  # type: ignore[arg-type]  # wrong on purpose: refused
    for not_a_sequence in (blob("a"), None, iter(roots)):
        with pytest.raises(InvalidInput, match="must be a sequence"):
            roots_digest(not_a_sequence)  # type: ignore[arg-type]  # wrong on purpose: refused


def test_a_checkpoint_maps_to_its_first_recorded_revision(
    cs: ConversationStore, opened: Store
) -> None:
    root = started(cs)
    head = cs.append_messages("run-1", root, [user("a")])
    state = roots_digest([blob("a")])
    assert cs.revision_for_checkpoint("conv", state) is None
    cs.record_checkpoint("conv", state, head)
    assert cs.revision_for_checkpoint("conv", state) == head
    cs.record_checkpoint("conv", state, head)  # the same triple again: a no-op
    cs.record_checkpoint("conv", state, root)  # another revision: the first mapping wins
    assert cs.revision_for_checkpoint("conv", state) == head
    assert count(opened.database, "checkpoint_states") == 1
    # Keyed per conversation: the same roots elsewhere are another checkpoint.
    other_root = cs.ensure_conversation("other")
    assert cs.revision_for_checkpoint("other", state) is None
    cs.record_checkpoint("other", state, other_root)
    assert cs.revision_for_checkpoint("other", state) == other_root
    assert cs.revision_for_checkpoint("conv", state) == head
    empty = roots_digest([])
    cs.record_checkpoint("conv", empty, root)
    assert cs.revision_for_checkpoint("conv", empty) == root
    assert rows(opened.database, "checkpoint_states") == sorted(
        [
            ("conv", state, head, rows(opened.database, "checkpoint_states")[0][3]),
            ("conv", empty, root, rows(opened.database, "checkpoint_states")[1][3]),
            ("other", state, other_root, rows(opened.database, "checkpoint_states")[2][3]),
        ],
        key=repr,
    )


def test_record_checkpoint_refuses_bad_input(cs: ConversationStore, opened: Store) -> None:
    root = started(cs)
    other_root = cs.ensure_conversation("other")
    state = roots_digest([blob("a")])
    before = snapshot(opened.database)
    for bad in (state[:31], state + b"\0", state.hex(), bytearray(state), None):
        with pytest.raises(InvalidInput, match="roots_digest must be 32 raw bytes"):
            cs.record_checkpoint("conv", bad, root)  # type: ignore[arg-type]  # wrong on purpose: refused
        with pytest.raises(InvalidInput):
            cs.revision_for_checkpoint("conv", bad)  # type: ignore[arg-type]  # wrong on purpose: refused
    with pytest.raises(RevisionNotFound, match="belongs to other"):
        cs.record_checkpoint("conv", state, other_root)
    with pytest.raises(RevisionNotFound):
        cs.record_checkpoint("conv", state, 999_999)
    with pytest.raises(InvalidInput, match="revision_id must be an integer"):
        cs.record_checkpoint("conv", state, str(root))  # type: ignore[arg-type]  # wrong on purpose: refused
    with pytest.raises(ConversationNotFound):
        cs.record_checkpoint("missing", state, root)
    with pytest.raises(InvalidInput):
        cs.record_checkpoint("", state, root)
    assert snapshot(opened.database) == before
    assert cs.revision_for_checkpoint("conv", state) is None


def test_the_database_keeps_checkpoint_states_well_formed(opened: Store) -> None:
    """The table's own constraints: one row per (conversation, digest), a 32-byte digest, an
    existing revision."""
    db = opened.database
    root = ConversationStore(db).ensure_conversation("conv")
    p = db.param
    sql = (
        "INSERT INTO checkpoint_states (conversation_id, roots_digest, revision_id, "
        f"created_at_ms) VALUES ({p}, {p}, {p}, 0)"
    )
    execute_sql(db, sql, ("conv", blob("a"), root))
    for bad in (
        ("conv", blob("a"), root),
        ("conv", blob("b")[:31], root),
        ("conv", blob("c"), 999),
    ):
        with pytest.raises(peewee.IntegrityError), db.atomic():
            execute_sql(db, sql, bad)
    assert count(db, "checkpoint_states") == 1


# --- resuming an interrupted tool round --------------------------------------------------------


def three_calls(run_id: str) -> list[ToolCallSpec]:
    return [
        ToolCallSpec(i, f"call-{name}", f"{run_id}:0", "Read", f'{{"path":"/{name}"}}')
        for i, name in enumerate("abc")
    ]


def test_an_interrupted_round_is_found_adopted_and_finished_by_the_next_run(
    cs: ConversationStore,
) -> None:
    """The client's stream drops after one of three results: the next run finds the round by
    its base and calls, stands on its head, adopts it and commits the other two; numbering and
    the chain of pairs continue, and the first run can no longer write."""
    root = started(cs)
    base = cs.append_once("run-1", root, runtime("run-1"))[0]
    round_id = "run-1:round:0"
    calls = three_calls("run-1")
    cs.create_tool_round("run-1", round_id, base, b'{"text":"t"}', calls)
    first = cs.commit_tool_result("run-1", round_id, "call-b", tool_pair(round_id, calls[1], "B"))

    found = cs.find_pending_round("conv", base, ["call-c", "call-a", "call-b"])
    assert found is not None
    assert found.round_id == round_id
    assert cs.round_head(found) == first.revision_id
    cs.claim_run("run-2", "conv", cs.round_head(found))
    adopted = cs.adopt_tool_round("run-2", round_id)
    assert adopted.run_id == "run-2"
    assert adopted == cs.tool_round(round_id)
    assert (adopted.status, adopted.base_revision_id, adopted.next_completion_seq) == (
        ToolRoundStatus.PENDING,
        base,
        1,
    )
    by_id = {c.call_id: c for c in adopted.calls}
    assert by_id["call-b"].status is ToolCallStatus.COMPLETED
    assert by_id["call-b"].committed_revision_id == first.revision_id
    assert pending(cs, round_id) == ["call-a", "call-c"]
    assert cs.adopt_tool_round("run-2", round_id) == adopted  # adopting again changes nothing

    with pytest.raises(StaleRun):
        cs.commit_tool_result("run-1", round_id, "call-a", tool_pair(round_id, calls[0], "A"))
    second = cs.commit_tool_result("run-2", round_id, "call-c", tool_pair(round_id, calls[2], "C"))
    third = cs.commit_tool_result("run-2", round_id, "call-a", tool_pair(round_id, calls[0], "A"))
    assert (second.completion_seq, second.settled) == (1, False)
    assert (third.completion_seq, third.settled) == (2, True)
    second_record = cs.revision(second.revision_id)
    assert second_record is not None
    assert second_record.parent_revision_id == first.revision_id
    assert cs.messages_at(third.revision_id) == [
        runtime("run-1"),
        *tool_pair(round_id, calls[1], "B"),
        *tool_pair(round_id, calls[2], "C"),
        *tool_pair(round_id, calls[0], "A"),
    ]
    settled = cs.tool_round(round_id)
    assert settled is not None
    assert settled.status is ToolRoundStatus.SETTLED
    assert cs.round_head(settled) == third.revision_id == head_of(cs, "run-2")
    assert cs.find_pending_round("conv", base, ["call-a", "call-b", "call-c"]) is None


def test_a_result_committed_between_a_resumes_read_and_its_claim_is_stood_on(
    cs: ConversationStore,
) -> None:
    """Found by the soak: the client answers a round's first exec, drops its stream and
    resumes at once. The resume reads the round (no result yet); the first run commits the
    result; then the resume claims. Claiming where the round stood when read would put the run
    behind the round's head and fail the adoption (``StaleRun``): ``claim_run_on_round`` reads
    the round again under the claim's lock and stands on its head as it is then."""
    root = started(cs)
    base = cs.append_once("run-1", root, runtime("run-1"))[0]
    round_id = "run-1:round:0"
    calls = three_calls("run-1")
    cs.create_tool_round("run-1", round_id, base, b'{"text":"t"}', calls)
    seen = cs.find_pending_round("conv", base, ["call-a", "call-b", "call-c"])
    assert seen is not None and cs.round_head(seen) == base  # what the resume read
    first = cs.commit_tool_result("run-1", round_id, "call-a", tool_pair(round_id, calls[0], "A"))

    claimed, record = cs.claim_run_on_round("run-2", "conv", seen.round_id)
    assert claimed.base_revision_id == first.revision_id
    assert cs.round_head(record) == first.revision_id
    adopted = cs.adopt_tool_round("run-2", round_id)  # no StaleRun
    assert pending(cs, round_id) == ["call-b", "call-c"]
    assert adopted.run_id == "run-2"
    # The first run can no longer write, so no later result can slip in between either.
    with pytest.raises(StaleRun):
        cs.commit_tool_result("run-1", round_id, "call-b", tool_pair(round_id, calls[1], "B"))


def test_find_pending_round_needs_the_exact_set_of_calls(cs: ConversationStore) -> None:
    root = started(cs)
    cs.create_tool_round("run-1", "r-root", root, b"{}", three_calls("run-1")[:1])
    cs.claim_run("run-2", "conv", root)
    head = cs.append_messages("run-2", root, [user("a")])
    cs.create_tool_round("run-2", "r-head", head, b"{}", three_calls("run-2"))
    assert cs.find_pending_round("conv", head, ["call-b", "call-c", "call-a"]) is not None
    found = cs.find_pending_round("conv", head, ("call-a", "call-b", "call-c"))
    assert found is not None
    assert found.round_id == "r-head"
    assert found == cs.tool_round("r-head")
    assert cs.find_pending_round("conv", head, ["call-a", "call-b"]) is None  # a subset
    assert cs.find_pending_round("conv", head, ["call-a", "call-b", "call-c", "call-d"]) is None
    assert cs.find_pending_round("conv", root, ["call-a", "call-b", "call-c"]) is None
    root_round = cs.find_pending_round("conv", root, ["call-a"])
    assert root_round is not None
    assert root_round.round_id == "r-root"  # a superseded run's round is still findable
    assert cs.find_pending_round("other", head, ["call-a", "call-b", "call-c"]) is None
    # The newest of two matching rounds.
    cs.claim_run("run-3", "conv", head)
    cs.create_tool_round("run-3", "r-newer", head, b"{}", three_calls("run-3"))
    newest = cs.find_pending_round("conv", head, ["call-a", "call-b", "call-c"])
    assert newest is not None
    assert newest.round_id == "r-newer"
    for bad in ([], ["call-a", "call-a"], "call-a", ["call-a", ""], [None], None):
        with pytest.raises(InvalidInput):
            cs.find_pending_round("conv", head, bad)  # type: ignore[arg-type]  # wrong on purpose: refused


def test_adopt_tool_round_refusals(cs: ConversationStore, opened: Store) -> None:
    root = started(cs)
    calls = three_calls("run-1")
    cs.create_tool_round("run-1", "r", root, b"{}", calls[:2])
    first = cs.commit_tool_result("run-1", "r", "call-a", tool_pair("r", calls[0], "A"))
    cs.create_tool_round("run-1", "done", first.revision_id, b"{}", calls[2:])
    done = cs.commit_tool_result("run-1", "done", "call-c", tool_pair("done", calls[2], "C"))
    assert done.settled
    other_root = started(cs, "other", "run-other")

    cs.claim_run("run-2", "conv", root)  # not on the round's head
    before = snapshot(opened.database)
    with pytest.raises(StaleRun, match=f"continues from revision {first.revision_id}"):
        cs.adopt_tool_round("run-2", "r")
    with pytest.raises(ToolRoundNotFound):
        cs.adopt_tool_round("run-2", "missing")
    with pytest.raises(ToolRoundSettled):
        cs.adopt_tool_round("run-2", "done")
    with pytest.raises(ToolRoundConversationMismatch, match="belongs to conversation conv"):
        cs.adopt_tool_round("run-other", "r")
    with pytest.raises(StaleRun, match="no longer owns"):
        cs.adopt_tool_round("run-1", "r")  # superseded by run-2
    with pytest.raises(RunNotFound):
        cs.adopt_tool_round("nobody", "r")
    assert snapshot(opened.database) == before
    assert issubclass(ToolRoundConversationMismatch, ConversationStoreError)
    assert other_root != root

    cs.claim_run("run-3", "conv", first.revision_id)
    assert cs.adopt_tool_round("run-3", "r").run_id == "run-3"
    assert cs.finish_run("run-3", RunStatus.FAILED)
    with pytest.raises(StaleRun):
        cs.adopt_tool_round("run-3", "r")


def test_round_head_is_the_last_committed_pair_or_the_base(cs: ConversationStore) -> None:
    root = started(cs)
    calls = three_calls("run-1")
    cs.create_tool_round("run-1", "r", root, b"{}", calls)
    record = cs.tool_round("r")
    assert record is not None
    assert cs.round_head(record) == root
    heads = []
    for call in (calls[2], calls[0]):
        committed = cs.commit_tool_result("run-1", "r", call.call_id, tool_pair("r", call, "x"))
        heads.append(committed.revision_id)
        record = cs.tool_round("r")
        assert record is not None
        assert ConversationStore.round_head(record) == committed.revision_id
    assert heads[0] != heads[1]


# --- a turn's start in one transaction ------------------------------------------------------


def test_start_turn_claims_appends_and_reserves_the_first_call(cs: ConversationStore) -> None:
    started = cs.start_turn("run-1", "conv-s", None, runtime("run-1"))
    assert started.inserted and started.call_index == 0
    assert started.claimed.superseded_run_id is None
    assert [m.message_id for m in cs.messages_at(started.head)] == ["runtime:run-request:run-1"]
    run = cs.run("run-1")
    assert run is not None and run.status == "running" and run.provider_call_index == 0
    cs.finish_run("run-1", RunStatus.FAILED, failure_category="unavailable")
    # The same request again (a retry from the same base): it lands on the revision the first
    # attempt made (no second copy of the message) and the next index is reserved.
    again = cs.start_turn("run-1", "conv-s", started.claimed.base_revision_id, runtime("run-1"))
    assert (again.head, again.call_index) == (started.head, 1)
    assert len(cs.messages_at(again.head)) == 1


def test_start_turn_is_all_or_nothing(cs: ConversationStore) -> None:
    first = cs.start_turn("run-1", "conv-s", None, runtime("run-1"))
    cs.finish_run("run-1", RunStatus.COMPLETED)
    # The same event id with other bytes is refused, and the claim is rolled back with it.
    with pytest.raises(MessageConflict):
        cs.start_turn("run-2", "conv-s", first.head, runtime("run-1", "other bytes"))
    assert cs.run("run-2") is None
    record = cs.conversation("conv-s")
    assert record is not None and record.current_revision_id == first.head


def test_the_last_result_of_a_round_reserves_the_next_call(cs: ConversationStore) -> None:
    started_turn = cs.start_turn("run-1", "conv-r", None, runtime("run-1"))
    assert started_turn.call_index == 0
    calls = [
        ToolCallSpec(0, "call-a", "run-1:0", "Read", "{}"),
        ToolCallSpec(1, "call-b", "run-1:0", "Read", "{}"),
    ]
    cs.create_tool_round("run-1", "run-1:round:0", started_turn.head, b"{}", calls)
    first = cs.commit_tool_result(
        "run-1",
        "run-1:round:0",
        "call-b",
        tool_pair("run-1:round:0", calls[1], "b"),
        reserve_call_when_settled=True,
    )
    assert (first.settled, first.call_index) == (False, None)
    run = cs.run("run-1")
    assert run is not None and run.provider_call_index == 0  # nothing reserved mid-round
    last = cs.commit_tool_result(
        "run-1",
        "run-1:round:0",
        "call-a",
        tool_pair("run-1:round:0", calls[0], "a"),
        reserve_call_when_settled=True,
    )
    assert (last.settled, last.call_index) == (True, 1)
    run = cs.run("run-1")
    assert run is not None and run.provider_call_index == 1


# --- migration 6: one copy of a tool result ----------------------------------------------------


def call_columns(db: peewee.Database) -> set[str]:
    return {column.name for column in db.get_columns("tool_round_calls")}


def test_migration_6_drops_the_result_copy_the_pair_already_holds(db_url: str) -> None:
    """A round half committed before migration 6 (its result also on the call row) loses the
    row's copy; the result is read from its pair's tool message, a second run of the migration
    changes nothing, and the round's other results commit as before."""
    db = open_database(db_url)
    try:
        apply_migrations(db, registered_migrations()[:5])
        cs = ConversationStore(db)
        base = started(cs)
        round_id = "run-1:round:0"
        calls = three_calls("run-1")
        cs.create_tool_round("run-1", round_id, base, b'{"text":"t"}', calls)
        pair_b = tool_pair(round_id, calls[1], "B")
        first = cs.commit_tool_result("run-1", round_id, "call-b", pair_b)
        execute_sql(
            db,  # what the server wrote before migration 6
            f"UPDATE tool_round_calls SET result_content = 'B' WHERE call_id = {db.param}",
            ("call-b",),
        )

        assert apply_migrations(db, registered_migrations()[:6]) == [6]
        assert "result_content" not in call_columns(db)
        before = snapshot(db)
        drop_tool_result_content(db)  # re-runnable
        assert snapshot(db) == before

        record = cs.tool_round(round_id)
        assert record is not None
        (done,) = [c for c in record.calls if c.status is ToolCallStatus.COMPLETED]
        assert (done.call_id, done.committed_revision_id) == ("call-b", first.revision_id)
        assert cs.messages_at(first.revision_id)[-1] == pair_b[1]
        for call in (calls[0], calls[2]):
            pair = tool_pair(round_id, call, call.call_id)
            cs.commit_tool_result("run-1", round_id, call.call_id, pair)
        settled = cs.tool_round(round_id)
        assert settled is not None and settled.status is ToolRoundStatus.SETTLED
    finally:
        db.close()


def test_migration_6_keeps_the_column_on_sqlite_before_3_35(tmp_path: Path) -> None:
    """``DROP COLUMN`` came with SQLite 3.35: an older one keeps the unused column and starts."""
    db = open_database(f"sqlite://{tmp_path / 'old.db'}")
    try:
        apply_migrations(db, registered_migrations()[:5])
        db.server_version = (3, 34, 1)
        assert apply_migrations(db, registered_migrations()[:6]) == [6]
        assert "result_content" in call_columns(db)
        cs = ConversationStore(db)
        base = started(cs)
        calls = three_calls("run-1")[:1]
        cs.create_tool_round("run-1", "r", base, b"{}", calls)
        committed = cs.commit_tool_result("run-1", "r", "call-a", tool_pair("r", calls[0], "A"))
        assert committed.settled
    finally:
        db.close()


# --- migration 7: no unread copies --------------------------------------------------------------


def test_migration_7_drops_the_error_flag_copy_and_the_unused_anchor_table(db_url: str) -> None:
    """A round half committed before migration 7 (its error flag also on the call row) keeps
    its committed pair, whose tool message says the result is an error; ``input_anchors`` goes;
    a second run changes nothing and the round's other results commit as before."""
    db = open_database(db_url)
    try:
        apply_migrations(db, registered_migrations()[:6])
        assert db.table_exists("input_anchors") and "result_is_error" in call_columns(db)
        cs = ConversationStore(db)
        base = started(cs)
        round_id = "run-1:round:0"
        calls = three_calls("run-1")
        cs.create_tool_round("run-1", round_id, base, b"{}", calls)
        failed = tool_pair(round_id, calls[1], "no such file", is_error=True)
        first = cs.commit_tool_result("run-1", round_id, "call-b", failed)
        execute_sql(
            db,  # what the server wrote before migration 7
            f"UPDATE tool_round_calls SET result_is_error = {db.param} WHERE call_id = {db.param}",
            (True, "call-b"),
        )

        assert apply_migrations(db, registered_migrations()[:7]) == [7]
        assert "result_is_error" not in call_columns(db)
        assert not db.table_exists("input_anchors")
        before = snapshot(db)
        drop_unread_copies(db)  # re-runnable
        assert snapshot(db) == before

        result = decode_message(cs.messages_at(first.revision_id)[-1].payload).content
        assert isinstance(result, ToolResultContent) and result.is_error
        for call in (calls[0], calls[2]):
            cs.commit_tool_result("run-1", round_id, call.call_id, tool_pair(round_id, call, "ok"))
        settled = cs.tool_round(round_id)
        assert settled is not None and settled.status is ToolRoundStatus.SETTLED
    finally:
        db.close()


def test_migration_7_keeps_the_column_on_sqlite_before_3_35(tmp_path: Path) -> None:
    db = open_database(f"sqlite://{tmp_path / 'old.db'}")
    try:
        apply_migrations(db, registered_migrations()[:6])
        db.server_version = (3, 34, 1)
        assert apply_migrations(db, registered_migrations()[:7]) == [7]
        assert "result_is_error" in call_columns(db)
        assert not db.table_exists("input_anchors")
        cs = ConversationStore(db)
        base = started(cs)
        (call,) = three_calls("run-1")[:1]
        cs.create_tool_round("run-1", "r", base, b"{}", [call])
        assert cs.commit_tool_result("run-1", "r", "call-a", tool_pair("r", call, "A")).settled
    finally:
        db.close()
