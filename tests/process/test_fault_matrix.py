"""Faults at process level: the server as ``python run.py``, the fake provider and the fake
Cursor client on real loopback sockets. Each case asserts what the user sees (frames, the
EndStream's code and message) and what is stored afterwards (every committed message kept and
none twice, every ``llm_calls`` row of the run ended)."""

from __future__ import annotations

import asyncio
import resource
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest

from store import Store
from store.conversations import ConversationStore
from store.llm_calls import CallFilter, CallRecords, CallSummary
from tests.conftest import add_fake_model
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    final_text,
    heartbeat_message,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, Script, chat_events
from tests.support.process import (
    REPO,
    SHARED_KEY_ENV,
    ServerProcess,
    connect_shared_store,
    server_env,
)

IDLE_S = "1"
GAP_S = "0.3"


@dataclass
class Served:
    """The running server process, its database file and the client pointed at it."""

    process: ServerProcess
    db_url: str
    cursor: FakeCursor
    public_id: str

    def store(self) -> Store:
        return connect_shared_store(self.db_url)


@pytest.fixture
async def served(tmp_path: Path, fake: FakeProvider) -> AsyncIterator[Served]:
    db_url = f"sqlite:///{tmp_path / 'server.db'}"
    seeded = connect_shared_store(db_url)
    public_id = add_fake_model(seeded, fake)
    seeded.close()
    env = server_env(
        tmp_path,
        CURSOR_PROVIDER_IDLE_SECONDS=IDLE_S,
        CURSOR_APPEND_GAP_SECONDS=GAP_S,
        **SHARED_KEY_ENV,
    )
    process = ServerProcess(env)
    try:
        address = await asyncio.to_thread(process.wait_for_address)
        cursor = FakeCursor(f"http://{address}")
        yield Served(process, db_url, cursor, public_id)
        await cursor.aclose()
    finally:
        process.stop()
        # Shown by pytest for a failing test only: the server's side of what went wrong.
        print(process.log, file=sys.stderr)


@pytest.fixture
def stored(served: Served) -> Iterator[Store]:
    store = served.store()
    yield store
    store.close()


def calls_of(store: Store, run_id: str) -> list[CallSummary]:
    return list(reversed(CallRecords(store.database).list(100, only=CallFilter(run_id=run_id))))


def origins(store: Store) -> list[str]:
    conversations = ConversationStore(store.database)
    return [
        m.origin for m in conversations.messages_at(conversations.ensure_conversation("conv-1"))
    ]


class TurnResult(TypedDict):
    """A finished turn: its EndStream's JSON, the text of its last model call, its log."""

    end: dict[str, Any]
    text: str
    log: TurnLog


async def turn(served: Served, request_id: str) -> TurnResult:
    log = await CursorSession(served.cursor, request_id).run(
        user_turn_message("hello", served.public_id, message_id=f"msg-{request_id}"),
        timeout=15.0,
    )
    assert log.end is not None
    return {"end": log.end, "text": final_text(log), "log": log}


OVERLOADED = {"error": {"message": "Overloaded", "type": "overloaded_error"}}


@pytest.mark.parametrize(
    ("case", "scripts"),
    [
        ("500", [Script.error(500, {"error": {"message": "internal oops"}})]),
        ("429", [Script.error(429, {"error": {"message": "rate limited"}}, retry_after="1")]),
        ("no headers in time", [Script.sse(chat_events(text=["late"])).delayed(30.0)]),
    ],
)
async def test_a_transient_failure_before_the_first_token_is_retried_and_shown_once(
    served: Served, fake: FakeProvider, stored: Store, case: str, scripts: list[Script]
) -> None:
    fake.enqueue(*scripts, Script.sse(chat_events(text=["Hel", "lo"])))
    result = await turn(served, f"run-{case}")
    assert result["end"] == {}
    assert result["text"] == "Hello"
    assert len(fake.requests) == 2
    if case == "429":
        assert fake.request_times[1] - fake.request_times[0] >= 0.95  # its Retry-After
    rows = calls_of(stored, f"run-{case}")
    assert [r.status for r in rows] == ["failed", "completed"]
    assert all(r.ended_at_ms is not None for r in rows)
    assert origins(stored) == ["runtime", "assistant"]


async def test_529_three_times_gives_up_unavailable_with_the_providers_message(
    served: Served, fake: FakeProvider, stored: Store
) -> None:
    fake.enqueue(*[Script.error(529, OVERLOADED) for _ in range(3)])
    result = await turn(served, "run-529")
    error = result["end"]["error"]
    assert error["code"] == "unavailable" and "Overloaded" in error["message"]
    assert "529" in error["message"]
    assert len(fake.requests) == 3
    rows = calls_of(stored, "run-529")
    assert [(r.status, r.http_status) for r in rows] == [("failed", 529)] * 3
    assert all(r.ended_at_ms is not None for r in rows)
    assert origins(stored) == ["runtime"]
    run = ConversationStore(stored.database).run("run-529")
    assert run is not None and run.status == "failed"


@pytest.mark.parametrize(
    ("case", "script", "code", "words"),
    [
        (
            "stall mid-body",
            Script.stall(after_events=2, events=chat_events(text=["Hal", "f"])),
            "unavailable",
            f"the provider sent nothing for {IDLE_S} s",
        ),
        (
            "cut mid-stream",
            Script.cut(2, chat_events(text=["Hal", "f"])),
            "unavailable",
            "provider error",
        ),
        (
            "malformed event",
            Script.raw([chat_events(text=["Hal"])[0].encode(), b"data: {not json\n\n"]),
            "invalid_argument",
            "protocol error",
        ),
    ],
)
async def test_a_failure_after_the_first_event_is_not_retried_and_ends_clearly(
    served: Served,
    fake: FakeProvider,
    stored: Store,
    case: str,
    script: Script,
    code: str,
    words: str,
) -> None:
    fake.enqueue(script, Script.sse(chat_events(text=["never shown"])))
    result = await turn(served, f"run-{case}")
    error = result["end"]["error"]
    assert error["code"] == code and words in error["message"], error
    assert "never shown" not in str(result["text"])
    assert len(fake.requests) == 1 and fake.pending_scripts == 1
    rows = calls_of(stored, f"run-{case}")
    assert [r.status for r in rows] == ["failed"]
    assert all(r.ended_at_ms is not None for r in rows)
    assert origins(stored) == ["runtime"]


async def test_a_seqno_gap_that_does_not_fill_ends_the_run_naming_it(
    served: Served, fake: FakeProvider, stored: Store
) -> None:
    fake.enqueue(Script.hang_before_headers())
    cursor = served.cursor
    stream = await cursor.open_run_sse("run-gap")
    first = user_turn_message("hello", served.public_id)
    assert (await cursor.append("run-gap", 0, first)).status_code == 200
    await fake.wait_for_request(1)
    assert (await cursor.append("run-gap", 2, heartbeat_message())).status_code == 200
    result = await stream.read_to_end(timeout=10)
    assert result.end == {
        "error": {
            "code": "invalid_argument",
            "message": f"protocol error: append_seqno 1 did not arrive within {GAP_S} s",
        }
    }
    await asyncio.wait_for(fake.disconnected(0).wait(), 5)
    await asyncio.sleep(0.3)  # the recorder writes the cancelled call's end
    rows = calls_of(stored, "run-gap")
    assert [r.status for r in rows] == ["cancelled"]
    assert all(r.ended_at_ms is not None for r in rows)
    assert origins(stored) == ["runtime"]  # the committed user turn is kept


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CURSOR_PROVIDER_IDLE_SECONDS", "0"),
        ("CURSOR_PROVIDER_ATTEMPTS", "0"),
        ("CURSOR_PROVIDER_ATTEMPTS", "two"),
        ("CURSOR_APPEND_GAP_SECONDS", "-1"),
    ],
)
def test_a_bad_fault_setting_exits_2_naming_it(tmp_path: Path, variable: str, value: str) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "run.py")],
        env=server_env(tmp_path, **{variable: value}),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().startswith(f"{variable}: "), result.stderr


async def test_a_locked_database_ends_the_turn_unavailable_and_the_next_turn_works(
    served: Served, fake: FakeProvider, stored: Store, tmp_path: Path
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["first"])))
    assert (await turn(served, "run-before-lock"))["end"] == {}
    blocker = sqlite3.connect(tmp_path / "server.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock past busy_timeout
    try:
        result = await turn(served, "run-locked")
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    error = result["end"]["error"]
    assert error["code"] == "unavailable", error
    assert "database is locked" in error["message"]
    assert fake.pending_scripts == 0 and len(fake.requests) == 1  # no model call was made

    fake.enqueue(Script.sse(chat_events(text=["after the lock"])))
    after = await turn(served, "run-after-lock")
    assert after["end"] == {} and after["text"] == "after the lock"
    assert origins(stored) == ["runtime", "assistant", "runtime", "assistant"]
    assert all(r.ended_at_ms is not None for r in calls_of(stored, "run-after-lock"))


async def test_a_full_disk_ends_the_turn_unavailable_and_the_next_turn_works_once_space_is_back(
    served: Served, fake: FakeProvider, stored: Store, tmp_path: Path
) -> None:
    """The server's files may not grow past their size now (RLIMIT_FSIZE, set on the running
    process as a full disk would): the answer's commit fails; raised again, the next turn
    works."""
    fake.enqueue(Script.sse(chat_events(text=["first"])))
    assert (await turn(served, "run-before-full"))["end"] == {}
    pid = served.process.proc.pid
    files = [tmp_path / name for name in ("server.db", "server.db-wal")]
    room = max(path.stat().st_size for path in files if path.exists()) + 256 * 1024
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (room, resource.RLIM_INFINITY))
    try:
        fake.enqueue(Script.sse(chat_events(text=["z" * 65536] * (room // 65536 + 16))))
        result = await turn(served, "run-full")
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
    error = result["end"]["error"]
    assert error["code"] == "unavailable", error
    assert "what was saved before is kept" in error["message"]
    assert "Traceback" not in served.process.log
    assert "turn_ended" not in result["log"].kinds()
    # The user turn before the answer is committed and kept; the answer is not.
    assert origins(stored) == ["runtime", "assistant", "runtime"]
    assert all(r.ended_at_ms is not None for r in calls_of(stored, "run-full"))

    fake.enqueue(Script.sse(chat_events(text=["space again"])))
    after = await turn(served, "run-after-full")
    assert after["end"] == {} and after["text"] == "space again"
    assert origins(stored) == ["runtime", "assistant", "runtime", "runtime", "assistant"]
