"""The store side of continuing a round after a crash: each completion's card kept with its
result (migration 10), a settled round found from the client's staged state, and the round a
state names no pending entry for. On SQLite and (when configured) PostgreSQL."""

from __future__ import annotations

import peewee
import pytest

from store import Store, apply_migrations, open_database
from store.conversations import ConversationStore, InvalidInput, ToolRoundStatus
from store.migrations import latest_version, registered_migrations, tool_call_cards
from tests.store.test_conversation_store import runtime, started, three_calls, tool_pair
from wire.proto import agent_v1_pb2 as agent


@pytest.fixture
def cs(opened: Store) -> ConversationStore:
    return ConversationStore(opened.database)


def card(call_id: str) -> bytes:
    return agent.ToolCall(
        tool_call_id=call_id, started_at_ms=1, completed_at_ms=2
    ).SerializeToString()


def test_each_completion_keeps_its_card_and_a_cardless_one_has_none(cs: ConversationStore) -> None:
    root = started(cs)
    base = cs.append_once("run-1", root, runtime("run-1"))[0]
    a, b, c = three_calls("run-1")
    cs.create_tool_round("run-1", "r", base, b"{}", [a, b, c])
    assert cs.tool_call_cards("r") == {}  # nothing completed yet
    cs.commit_tool_result("run-1", "r", "call-b", tool_pair("r", b, "B"), tool_call=card("call-b"))
    cs.commit_tool_result("run-1", "r", "call-a", tool_pair("r", a, "A"))  # no card
    assert cs.tool_call_cards("r") == {"call-b": card("call-b")}
    with pytest.raises(InvalidInput, match="tool_call must be bytes"):
        cs.commit_tool_result(
            "run-1",
            "r",
            "call-c",
            tool_pair("r", c, "C"),
            tool_call="x",  # type: ignore[arg-type]  # wrong on purpose: refused
        )


def test_a_settled_round_is_found_only_when_asked_for(cs: ConversationStore) -> None:
    """A round whose last result committed after the client's staged checkpoint: a resume
    finds it (``settled_too``), the pending-only lookup a new message uses does not."""
    root = started(cs)
    base = cs.append_once("run-1", root, runtime("run-1"))[0]
    (a,) = three_calls("run-1")[:1]
    cs.create_tool_round("run-1", "r", base, b"{}", [a])
    assert cs.commit_tool_result("run-1", "r", "call-a", tool_pair("r", a, "A")).settled
    assert cs.find_pending_round("conv", base, ["call-a"]) is None
    found = cs.find_pending_round("conv", base, ["call-a"], settled_too=True)
    assert found is not None and found.status is ToolRoundStatus.SETTLED
    assert cs.round_head(found) != base  # where a resume stands: after the committed pair


def test_the_newest_round_on_a_revision_is_the_one_started_from_it(cs: ConversationStore) -> None:
    """For a state that names no round: the round a run started from that state's revision,
    pending or settled, newest first; none on another revision or conversation."""
    root = started(cs)
    base = cs.append_once("run-1", root, runtime("run-1"))[0]
    assert cs.newest_round_on("conv", base) is None
    a, b, _ = three_calls("run-1")
    cs.create_tool_round("run-1", "old", base, b"{}", [a], created_at_ms=1)
    cs.create_tool_round("run-1", "new", base, b"{}", [b], created_at_ms=2)
    newest = cs.newest_round_on("conv", base)
    assert newest is not None and newest.round_id == "new"
    assert cs.newest_round_on("conv", root) is None
    assert cs.newest_round_on("other", base) is None


def test_migration_10_adds_the_card_column_re_runnably_and_keeps_rounds(db_url: str) -> None:
    """A database at version 9 with a half-committed round: migration 10 adds the column (an
    earlier completion has no card), a second run changes nothing, and the round goes on."""
    db = open_database(db_url)
    try:
        apply_migrations(db, registered_migrations()[:9])
        cs = ConversationStore(db)
        base = started(cs)
        a, b, _ = three_calls("run-1")
        cs.create_tool_round("run-1", "r", base, b"{}", [a, b])
        cs.commit_tool_result("run-1", "r", "call-a", tool_pair("r", a, "A"))
        columns = {column.name for column in db.get_columns("tool_round_calls")}
        assert "tool_call" not in columns
        assert apply_migrations(db) == list(range(10, latest_version() + 1))
        assert "tool_call" in {column.name for column in db.get_columns("tool_round_calls")}
        tool_call_cards(db)  # re-runnable
        assert cs.tool_call_cards("r") == {}
        cs.commit_tool_result(
            "run-1", "r", "call-b", tool_pair("r", b, "B"), tool_call=card("call-b")
        )
        assert cs.tool_call_cards("r") == {"call-b": card("call-b")}
    finally:
        db.close()


def test_without_migration_10_a_completion_without_a_card_still_commits(
    db_url: str,
) -> None:
    """The card's column is written only with a card: the pre-10 statement is unchanged."""
    db = open_database(db_url)
    try:
        apply_migrations(db, registered_migrations()[:9])
        cs = ConversationStore(db)
        base = started(cs)
        (a,) = three_calls("run-1")[:1]
        cs.create_tool_round("run-1", "r", base, b"{}", [a])
        assert cs.commit_tool_result("run-1", "r", "call-a", tool_pair("r", a, "A")).settled
        with pytest.raises(peewee.DatabaseError):
            cs.tool_call_cards("r")
    finally:
        db.close()
