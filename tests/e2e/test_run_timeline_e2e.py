"""A run's timeline and the conversations list end to end: whole agent turns through the fake
Cursor client against the fake provider, then the console API over a real socket.

The run tells the RunEventRecorderActor its events and never waits for it, so a test reads the
timeline once the recorder has written the run's end (polled, bounded)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from actors.protocols.edge import EdgeMessage
from actors.protocols.mailbox import Mailbox
from actors.protocols.run_output import RunOutput
from actors.run.children import AgentDeps
from actors.run.model_selection import StoreModelResolver
from actors.run.owners import RunOwners
from actors.run_events import start_run_event_recorder
from actors.server.compose import RunningServer, start_session_actor
from prompt import load_prompt_assets
from store import Store, connect_store
from store.run_events import EventKind, RunEvents
from tests.conftest import StartServer
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    cancel_message,
    kv_ack,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events, chat_usage


async def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
    """Poll ``predicate`` (sync or async) until it gives something truthy; fail naming ``what``."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                value = predicate()
                if asyncio.iscoroutine(value):
                    value = await value
                if value:
                    return value
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def get(server: RunningServer, path: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://{server.address}") as client:
        return await client.get(path)


async def ended_timeline(server: RunningServer, run_id: str) -> dict[str, Any]:
    """The run's timeline once its end is recorded."""

    async def ended() -> dict[str, Any] | None:
        answer = await get(server, f"/console/api/runs/{run_id}/timeline")
        if answer.status_code != 200:
            return None
        timeline: dict[str, Any] = answer.json()
        runs = timeline["lanes"]["run"]
        return timeline if runs and runs[-1]["code"] is not None else None

    result: dict[str, Any] = await wait_until(ended, f"the end of {run_id} in its timeline")
    return result


# ---- the turns ----


async def tool_turn(
    fake: FakeProvider, cursor: FakeCursor, public_id: str, workspace: Path, run_id: str
) -> None:
    """Read, then an answer: two provider calls and one tool round."""
    (workspace / "a.txt").write_text("alpha contents\n")
    read = FakeToolCall("call_a", "Read", ('{"path": ', '"/a.txt"}'))
    fake.enqueue(Script.sse(chat_events(text=["Reading."], tools=[read], usage=chat_usage(10, 5))))
    fake.enqueue(Script.sse(chat_events(text=["It says alpha."], usage=chat_usage(30, 3))))
    session = CursorSession(cursor, run_id, workspace=workspace)
    log = await session.run(user_turn_message("what is in a.txt?", public_id))
    assert log.end == {}


async def cancelled_turn(fake: FakeProvider, cursor: FakeCursor, public_id: str) -> None:
    """A Read the editor never answers, then the user's cancel."""
    read = FakeToolCall("call_x", "Read", ('{"path": "/x"}',))
    fake.enqueue(Script.sse(chat_events(tools=[read])))
    session = CursorSession(cursor, "turn-cancel")  # no workspace: the exec stays pending
    message = user_turn_message("read x", public_id, conversation_id="conv-2")
    task = asyncio.create_task(session.run(message))
    await wait_until(
        lambda: any(m.HasField("exec_server_message") for m in session.log.messages), "the exec"
    )
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end is not None and log.end["error"]["code"] == "canceled"


async def failed_turn(fake: FakeProvider, cursor: FakeCursor, public_id: str) -> None:
    """The provider answers 500: the run ends ``unavailable``."""
    fake.enqueue(Script.error(500, {"error": {"message": "provider failed"}}))
    message = user_turn_message("again", public_id, message_id="msg-2")
    log = await CursorSession(cursor, "turn-error").run(message)
    assert log.end is not None and log.end["error"]["code"] == "unavailable"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


# ---- the timeline ----


async def test_a_tool_round_then_an_answer_fills_every_lane(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server: RunningServer, workspace: Path
) -> None:
    await tool_turn(fake, cursor, public_id, workspace, "turn-tools")
    timeline = await ended_timeline(server, "turn-tools")
    assert timeline["conversation_id"] == "conv-1"
    lanes = timeline["lanes"]
    (run,) = lanes["run"]
    assert (run["code"], run["message"], run["model"], run["resumed"]) == (
        "ok",
        None,
        public_id,
        False,
    )
    assert run["text"] == "what is in a.txt?"
    first, second = lanes["provider"]
    assert [c["model_call_id"] for c in (first, second)] == ["turn-tools:0", "turn-tools:1"]
    assert [c["status"] for c in (first, second)] == ["completed", "completed"]
    assert [(c["input_tokens"], c["output_tokens"]) for c in (first, second)] == [(10, 5), (30, 3)]
    for provider_call in (first, second):
        assert provider_call["ttfb_ms"] is not None and provider_call["ttft_ms"] is not None
        assert provider_call["first_byte_at_ms"] >= provider_call["started_at_ms"]
    (tool,) = lanes["tools"]
    assert (tool["call_id"], tool["tool"], tool["wire_ids"], tool["outcome"]) == (
        "call_a",
        "Read",
        [1],
        "success",
    )
    assert run["started_at_ms"] <= tool["started_at_ms"] <= tool["ended_at_ms"]
    assert tool["ended_at_ms"] <= run["ended_at_ms"]
    checkpoints = lanes["checkpoints"]
    # The turn's first settled state, the round staged, the round settled, the final tail.
    assert [(c["job_id"], c["kind"]) for c in checkpoints] == [
        (2, "settled"),
        (3, "staged"),
        (4, "settled"),
        (5, "final"),
    ]
    for checkpoint in checkpoints:
        assert checkpoint["outcome"] == "published"
        assert checkpoint["submitted_at_ms"] <= checkpoint["published_at_ms"]
        assert run["started_at_ms"] <= checkpoint["submitted_at_ms"]
        assert checkpoint["published_at_ms"] <= run["ended_at_ms"]


async def test_a_run_cancelled_mid_tool_has_its_exec_aborted(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server: RunningServer
) -> None:
    await cancelled_turn(fake, cursor, public_id)
    lanes = (await ended_timeline(server, "turn-cancel"))["lanes"]
    (run,) = lanes["run"]
    assert (run["code"], run["message"]) == ("canceled", "run was cancelled")
    (tool,) = lanes["tools"]
    assert (tool["call_id"], tool["wire_ids"], tool["outcome"]) == ("call_x", [1], "aborted")
    assert tool["ended_at_ms"] <= run["ended_at_ms"]
    assert [c["kind"] for c in lanes["checkpoints"]] == ["settled", "staged"]


async def test_a_provider_error_ends_the_run_unavailable_on_its_timeline(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server: RunningServer
) -> None:
    await failed_turn(fake, cursor, public_id)
    lanes = (await ended_timeline(server, "turn-error"))["lanes"]
    (run,) = lanes["run"]
    assert run["code"] == "unavailable" and "provider failed" in run["message"]
    (provider_call,) = lanes["provider"]
    assert (provider_call["status"], provider_call["http_status"]) == ("failed", 500)
    assert lanes["tools"] == []
    assert [(c["kind"], c["outcome"]) for c in lanes["checkpoints"]] == [("settled", "published")]


async def test_a_stalled_turn_shows_the_checkpoint_it_waits_for(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server: RunningServer
) -> None:
    """The client withholds one ACK of the final checkpoint: while it does, the timeline shows
    the run open and that job submitted but not published; the ACK ends both."""
    fake.enqueue(Script.sse(chat_events(text=["ok"])))
    session = CursorSession(cursor, "turn-stalled")
    held: list[int] = []

    def hold_the_final_checkpoints_first_blob(kv_id: int) -> bool:
        if not held and any(
            m.interaction_update.HasField("text_delta") for m in session.log.messages
        ):
            held.append(kv_id)
            return True
        return False

    message = user_turn_message("hi", public_id)
    task = asyncio.create_task(session.run(message, hold_ack=hold_the_final_checkpoints_first_blob))

    async def stalled() -> dict[str, Any] | None:
        answer = await get(server, "/console/api/runs/turn-stalled/timeline")
        if answer.status_code != 200:
            return None
        lanes: dict[str, Any] = answer.json()["lanes"]
        finals = [c for c in lanes["checkpoints"] if c["kind"] == "final"]
        # The job is on the timeline once submitted, which can be before its blob's KV SET has
        # reached the client: wait for the client to hold that ACK too.
        return lanes if finals and held else None

    lanes = await wait_until(stalled, "the final checkpoint's job on the timeline")
    (run,) = lanes["run"]
    assert (run["ended_at_ms"], run["code"]) == (None, None)
    assert [(c["kind"], c["outcome"]) for c in lanes["checkpoints"]] == [
        ("settled", "published"),
        ("final", None),  # submitted, its ACK withheld: this is what the turn waits for
    ]
    assert lanes["checkpoints"][-1]["published_at_ms"] is None
    assert "turn_ended" not in session.log.kinds()
    await session.send(kv_ack(held[0]))
    assert (await asyncio.wait_for(task, 10)).end == {}
    lanes = (await ended_timeline(server, "turn-stalled"))["lanes"]
    assert lanes["run"][0]["code"] == "ok"
    assert [c["outcome"] for c in lanes["checkpoints"]] == ["published", "published"]


# ---- the conversations ----


async def test_conversations_list_and_detail_over_the_runs(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server: RunningServer, workspace: Path
) -> None:
    await tool_turn(fake, cursor, public_id, workspace, "turn-tools")
    await ended_timeline(server, "turn-tools")
    await failed_turn(fake, cursor, public_id)  # conv-1's second run
    await ended_timeline(server, "turn-error")
    await cancelled_turn(fake, cursor, public_id)  # conv-2, the latest
    await ended_timeline(server, "turn-cancel")

    answer = await get(server, "/console/api/conversations")
    assert answer.status_code == 200
    page = answer.json()
    assert page["next_before"] is None
    listed = [
        (c["conversation_id"], c["title"], c["run_count"], c["input_tokens"], c["output_tokens"])
        for c in page["conversations"]
    ]
    # conv-2's cancelled call reported no usage; conv-1's error call neither.
    assert listed == [
        ("conv-2", "read x", 1, None, None),
        ("conv-1", "what is in a.txt?", 2, 40, 8),
    ]
    newer, older = page["conversations"]
    assert newer["last_activity_ms"] >= older["last_activity_ms"]

    # One per page: the cursor leads from the first page to the second, then to none.
    first = (await get(server, "/console/api/conversations?limit=1")).json()
    assert [c["conversation_id"] for c in first["conversations"]] == ["conv-2"]
    assert first["next_before"] is not None
    second = (
        await get(server, f"/console/api/conversations?limit=1&before={first['next_before']}")
    ).json()
    assert [c["conversation_id"] for c in second["conversations"]] == ["conv-1"]
    last = (
        await get(server, f"/console/api/conversations?limit=1&before={second['next_before']}")
    ).json()
    assert last == {"conversations": [], "next_before": None}

    detail = (await get(server, "/console/api/conversations/conv-1")).json()
    assert detail["title"] == "what is in a.txt?"
    assert [
        (r["run_id"], r["status"], r["code"], r["model"], r["resumed"]) for r in detail["runs"]
    ] == [
        ("turn-error", "failed", "unavailable", public_id, False),
        ("turn-tools", "completed", "ok", public_id, False),
    ]
    assert "provider failed" in detail["runs"][0]["message"]
    for run in detail["runs"]:
        assert run["started_at_ms"] <= run["ended_at_ms"]
    cancelled = (await get(server, "/console/api/conversations/conv-2")).json()
    assert [(r["run_id"], r["status"], r["code"]) for r in cancelled["runs"]] == [
        ("turn-cancel", "cancelled", "canceled")
    ]


async def test_unknown_ids_are_404_and_bad_paging_400(server: RunningServer) -> None:
    for path, message in (
        ("/console/api/runs/nobody/timeline", "run not found: nobody"),
        ("/console/api/conversations/nowhere", "conversation not found: nowhere"),
    ):
        answer = await get(server, path)
        assert answer.status_code == 404
        assert answer.json() == {"code": "not_found", "message": message}
    for query in ("limit=0", "limit=501", "limit=ten", "limit=-1", "before=123", "before=x:c"):
        answer = await get(server, f"/console/api/conversations?{query}")
        assert answer.status_code == 400, query
        body = answer.json()
        assert body["code"] == "invalid_argument" and body["message"], query
    assert (await get(server, "/console/api/conversations")).json() == {
        "conversations": [],
        "next_before": None,
    }


async def test_retention_keeps_the_events_of_the_newest_runs_only(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server: RunningServer
) -> None:
    async with httpx.AsyncClient(base_url=f"http://{server.address}") as client:
        saved = await client.put("/console/api/settings/observability", json={"retained_calls": 1})
    assert saved.status_code == 200, saved.text
    for run_id, conversation_id in (("turn-old", "conv-old"), ("turn-new", "conv-new")):
        fake.enqueue(Script.sse(chat_events(text=["ok"])))
        message = user_turn_message("hi", public_id, conversation_id=conversation_id)
        assert (await CursorSession(cursor, run_id).run(message)).end == {}
        await ended_timeline(server, run_id)

    async def old_pruned() -> bool:
        return (await get(server, "/console/api/runs/turn-old/timeline")).status_code == 404

    # Its events went with the next run's end, its call record with the next call's.
    await wait_until(old_pruned, "the oldest run's events and calls to be pruned")
    listed = (await get(server, "/console/api/conversations")).json()["conversations"]
    assert [c["conversation_id"] for c in listed] == ["conv-new"]


# ---- the run never waits for the recorder ----


async def test_a_turn_completes_while_the_recorders_database_is_locked(
    fake: FakeProvider,
    public_id: str,
    make_server: StartServer,
    server_store: Store,
    tmp_path: Path,
    workspace: Path,
) -> None:
    """The runs' recorder writes to its own database here, whose write lock another
    connection holds: a whole turn with a tool round still completes, and its events are
    written once the lock is released."""
    events_store = connect_store(f"sqlite:///{tmp_path}/events.db")
    recorder = start_run_event_recorder(events_store.database)
    deps: list[AgentDeps] = []

    def start_session(request_id: str, output: RunOutput) -> Mailbox[EdgeMessage]:
        resolver = StoreModelResolver(server_store.database)
        return start_session_actor(request_id, output, resolver, deps[0])

    server = await make_server(start_session=start_session)
    provider = server.provider_deps
    assert provider is not None
    deps.append(
        AgentDeps(
            store=server_store,
            prompts=load_prompt_assets(),
            provider=provider,
            owners=RunOwners(),
            tasks=provider.tasks,
            run_events=recorder,
        )
    )
    events = RunEvents(events_store.database)
    blocker = sqlite3.connect(tmp_path / "events.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the write lock: every insert now waits
    cursor = FakeCursor(f"http://{server.address}")
    try:
        await tool_turn(fake, cursor, public_id, workspace, "turn-locked")
        assert events.events_of("turn-locked") == []  # nothing could be written yet
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        await cursor.aclose()

    def recorded() -> list[Any]:
        rows = events.events_of("turn-locked")
        ended = any(e.kind is EventKind.RUN and e.ended_at_ms is not None for e in rows)
        return rows if ended else []

    rows = await wait_until(recorded, "the events written after the lock was released")
    assert {e.kind for e in rows} == {EventKind.RUN, EventKind.CHECKPOINT, EventKind.TOOL}
    recorder.stop()
    events_store.close()
