"""A full database during a turn (SQLite limited with ``PRAGMA max_page_count`` on every
connection the run opens): the run ends ``unavailable`` with a message, nothing committed is
lost, and once there is space again the next turn works. Which database failures count as
"unavailable" is a pure check of the error."""

from __future__ import annotations

import sqlite3

import peewee
import pytest

from store import Store
from store.base.typed_peewee import execute_sql
from store.conversations import ConversationStore
from store.database import ReusingSqliteDatabase, is_unavailable
from store.llm_calls import CallFilter, CallRecords
from tests.conftest import StartServer
from tests.support.connections import set_sqlite_pragmas, sqlite_pragmas
from tests.support.fake_cursor import CursorSession, FakeCursor, final_text, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events

# An answer far larger than the room left: its commit needs many new pages.
BIG_ANSWER = ["y" * 8192] * 64


def wrapped(error: Exception) -> peewee.OperationalError:
    """As peewee raises a driver error: its own class, the driver's error as the cause."""
    try:
        raise peewee.OperationalError(*error.args) from error
    except peewee.OperationalError as exc:
        return exc


def rollback_after(error: Exception) -> peewee.OperationalError:
    """SQLite rolled the transaction back itself; peewee's own rollback then fails."""
    try:
        try:
            raise wrapped(error)
        except peewee.OperationalError:
            raise peewee.OperationalError("cannot rollback - no transaction is active") from None
    except peewee.OperationalError as exc:
        return exc


class PgError(Exception):
    def __init__(self, message: str, pgcode: str) -> None:
        super().__init__(message)
        self.pgcode = pgcode


@pytest.mark.parametrize(
    ("error", "unavailable"),
    [
        (wrapped(sqlite3.OperationalError("database is locked")), True),
        (wrapped(sqlite3.OperationalError("database or disk is full")), True),
        (wrapped(sqlite3.OperationalError("disk I/O error")), True),
        (wrapped(sqlite3.OperationalError("no such table: models")), False),
        (wrapped(PgError("could not extend file: No space left on device", "53100")), True),
        (wrapped(PgError("terminating connection due to administrator command", "57P01")), True),
        (wrapped(PgError("relation does not exist", "42P01")), False),
        (peewee.IntegrityError("UNIQUE constraint failed"), False),
        (rollback_after(sqlite3.OperationalError("database or disk is full")), True),
        (rollback_after(sqlite3.OperationalError("no such table: x")), False),
    ],
)
def test_which_database_failures_are_unavailable(error: Exception, unavailable: bool) -> None:
    assert is_unavailable(error) is unavailable


async def test_a_full_database_ends_the_turn_unavailable_and_the_next_turn_works(
    fake: FakeProvider, public_id: str, make_server: StartServer, server_store: Store
) -> None:
    server = await make_server()
    cursor = FakeCursor(f"http://{server.address}")
    fake.enqueue(Script.sse(chat_events(text=["first answer"])))
    first = await CursorSession(cursor, "turn-before").run(user_turn_message("one", public_id))
    assert first.end == {}

    # Every connection opened from now on (the run's threads) may grow the file by 40 pages.
    database = server_store.database
    assert isinstance(database, ReusingSqliteDatabase)  # the server's store is a SQLite file
    saved = sqlite_pragmas(database)
    pages = execute_sql(database, "PRAGMA page_count").fetchone()[0]
    set_sqlite_pragmas(database, [*saved, ("max_page_count", pages + 40)])
    database.close_idle()
    try:
        fake.enqueue(Script.sse(chat_events(text=BIG_ANSWER)))
        full = await CursorSession(cursor, "turn-full").run(
            user_turn_message("two", public_id, message_id="msg-2")
        )
    finally:
        set_sqlite_pragmas(database, saved)
        database.close_idle()
    assert full.end is not None
    error = full.end["error"]
    assert error["code"] == "unavailable", error
    assert "database or disk is full" in error["message"]
    assert "what was saved before is kept" in error["message"]
    assert "turn_ended" not in full.kinds()

    conversations = ConversationStore(server_store.database)
    head = conversations.ensure_conversation("conv-1")
    # The first turn and the second's user message were committed; the answer was not.
    assert [m.origin for m in conversations.messages_at(head)] == [
        "runtime",
        "assistant",
        "runtime",
    ]
    rows = CallRecords(server_store.database).list(10, only=CallFilter(run_id="turn-full"))
    assert [r.status for r in rows] == ["completed"]

    fake.enqueue(Script.sse(chat_events(text=["third answer"])))
    third = await CursorSession(cursor, "turn-after").run(
        user_turn_message("three", public_id, message_id="msg-3")
    )
    await cursor.aclose()
    assert third.end == {} and final_text(third) == "third answer"
    head = conversations.ensure_conversation("conv-1")
    assert [m.origin for m in conversations.messages_at(head)] == [
        "runtime",
        "assistant",
        "runtime",
        "runtime",
        "assistant",
    ]
