"""Subagent links in the database (``SharedSubagentLinks``): a cancel received by the parent's
run on one instance finds the Task call a child run on another instance linked, and a store
that fails never reaches the run (the cancel then names only the subagent); SQLite and
PostgreSQL alike."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from actors.run.subagent_links import SharedSubagentLinks, read_call_action
from store import Store, connect_store
from store.base.typed_peewee import execute_sql
from store.subagent_links import SubagentLinkRows
from wire.proto import agent_v1_pb2 as agent

CANCEL = agent.ConversationAction(
    cancel_subagent_action=agent.CancelSubagentAction(subagent_id="agent-1")
)


@pytest.fixture
def two(db_url: str) -> Iterator[tuple[SharedSubagentLinks, SharedSubagentLinks, Store]]:
    a, b = connect_store(db_url), connect_store(db_url)
    yield (
        SharedSubagentLinks(SubagentLinkRows(a.database)),
        SharedSubagentLinks(SubagentLinkRows(b.database)),
        a,
    )
    b.close()
    a.close()


def test_a_cancel_on_the_parents_instance_names_the_task_the_child_linked_elsewhere(
    two: tuple[SharedSubagentLinks, SharedSubagentLinks, Store],
) -> None:
    parent_side, child_side, _ = two
    child_side.link("parent-req", "agent-1", "call_task")
    assert read_call_action(CANCEL, parent_side, "parent-req").call_ids == ("agent-1", "call_task")
    assert read_call_action(CANCEL, parent_side, "other-req").call_ids == ("agent-1",)
    child_side.unlink("parent-req", "agent-1")
    assert read_call_action(CANCEL, parent_side, "parent-req").call_ids == ("agent-1",)


def test_a_store_that_fails_is_logged_and_never_reaches_the_run(
    two: tuple[SharedSubagentLinks, SharedSubagentLinks, Store], caplog: pytest.LogCaptureFixture
) -> None:
    links, _, store = two
    execute_sql(store.database, 'DROP TABLE "subagent_links"')
    with caplog.at_level(logging.WARNING, logger="cursor_server.subagent_links"):
        links.link("parent-req", "agent-1", "call_task")
        assert read_call_action(CANCEL, links, "parent-req").call_ids == ("agent-1",)
        links.unlink("parent-req", "agent-1")
    messages = [r.getMessage() for r in caplog.records if r.name == "cursor_server.subagent_links"]
    assert messages == [
        "subagent link of parent-req not written",
        "subagent link of parent-req not read",
        "subagent link of parent-req not removed",
    ]
