"""Console login sessions in the database (``console.login_sessions.SharedSessions``) as two
server instances on one database see them, on injected clocks (no waiting): a login on one is
live on the other, a logout on one ends it on the other once the short live cache has run out,
expiry is on the wall clock, and the cap ends the oldest; SQLite and PostgreSQL alike. A
database that does not answer makes a console request 503, not a crash."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import peewee
import pytest

from actors.conversation.secret import Secret
from console.auth import MAX_SESSIONS, SESSION_LIFETIME_S, ConsoleAuth
from console.login_sessions import LIVE_CACHE_S, SessionsUnavailable, SharedSessions
from store import Store, connect_store
from store.base.typed_peewee import execute_sql
from store.console_sessions import ConsoleSessionRows
from tests.conftest import StartServer

TOKEN = "console-TOKEN-0123456789abcdef"


class Clocks:
    """The wall clock (ms) and the monotonic one (s) both instances read, moved by the test."""

    def __init__(self) -> None:
        self.wall_ms = 1_700_000_000_000
        self.mono_s = 100.0

    def move(self, seconds: float) -> None:
        self.wall_ms += round(seconds * 1000)
        self.mono_s += seconds


@pytest.fixture
def stores(db_url: str) -> Iterator[tuple[Store, Store]]:
    a = connect_store(db_url)
    b = connect_store(db_url)
    yield a, b
    b.close()
    a.close()


def instance(store: Store, clocks: Clocks) -> ConsoleAuth:
    sessions = SharedSessions(
        ConsoleSessionRows(store.database),
        wall_ms=lambda: clocks.wall_ms,
        monotonic=lambda: clocks.mono_s,
    )
    return ConsoleAuth(Secret(TOKEN), sessions=sessions)


async def test_a_login_on_one_instance_is_live_on_the_other_until_a_logout_there(
    stores: tuple[Store, Store],
) -> None:
    clocks = Clocks()
    a, b = instance(stores[0], clocks), instance(stores[1], clocks)
    session = await a.start_session()
    assert await b.session_is_live(session)
    await b.end_session(session)
    assert not await b.session_is_live(session)  # at once where the logout was


async def test_a_logout_elsewhere_is_seen_once_the_live_cache_runs_out(
    stores: tuple[Store, Store],
) -> None:
    clocks = Clocks()
    a, b = instance(stores[0], clocks), instance(stores[1], clocks)
    session = await a.start_session()
    assert await a.session_is_live(session)
    await b.end_session(session)
    clocks.move(LIVE_CACHE_S / 2)
    assert await a.session_is_live(session)  # still believed: read less than the cache ago
    clocks.move(LIVE_CACHE_S / 2)
    assert not await a.session_is_live(session)
    assert LIVE_CACHE_S <= 1.0


async def test_a_session_expires_on_the_wall_clock_even_while_cached(
    stores: tuple[Store, Store],
) -> None:
    clocks = Clocks()
    a, b = instance(stores[0], clocks), instance(stores[1], clocks)
    session = await a.start_session()
    clocks.wall_ms += SESSION_LIFETIME_S * 1000 - 1
    assert await a.session_is_live(session)
    assert await b.session_is_live(session)
    clocks.wall_ms += 1  # the monotonic clock stands: the cache alone would still say live
    assert not await a.session_is_live(session)
    assert not await b.session_is_live(session)


async def test_beyond_the_cap_the_oldest_session_ends_on_every_instance(
    stores: tuple[Store, Store],
) -> None:
    clocks = Clocks()
    a, b = instance(stores[0], clocks), instance(stores[1], clocks)
    sessions = []
    for i in range(MAX_SESSIONS + 1):
        sessions.append(await (a if i % 2 else b).start_session())
        clocks.wall_ms += 1
    clocks.move(LIVE_CACHE_S)
    assert not await a.session_is_live(sessions[0])
    assert all([await a.session_is_live(s) for s in sessions[1:]])
    assert not await b.session_is_live(TOKEN)


async def test_a_database_that_does_not_answer_is_sessions_unavailable(
    stores: tuple[Store, Store],
) -> None:
    clocks = Clocks()
    a = instance(stores[0], clocks)
    execute_sql(stores[1].database, 'DROP TABLE "console_sessions"')
    with pytest.raises(SessionsUnavailable):
        await a.session_is_live("any-session")
    with pytest.raises(SessionsUnavailable) as info:
        await a.start_session()
    assert isinstance(info.value.__cause__, peewee.DatabaseError)


async def test_a_console_request_is_503_when_the_sessions_database_does_not_answer(
    make_server: StartServer, server_store: Store
) -> None:
    server = await make_server(console_token=TOKEN)
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as console:
        login = await console.post("/console/api/login", json={"token": TOKEN})
        cookie = {"cookie": f"cursor_console_session={login.cookies['cursor_console_session']}"}
        execute_sql(server_store.database, 'DROP TABLE "console_sessions"')
        await asyncio.sleep(LIVE_CACHE_S)
        answer = await console.get("/console/api/providers", headers=cookie)
        assert answer.status_code == 503, answer.text
        assert answer.json()["code"] == "unavailable"
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert (await console.get("/console/api/providers", headers=bearer)).status_code == 200
