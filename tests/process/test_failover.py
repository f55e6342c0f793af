"""The fault matrix's failover row: two ``python run.py`` processes on one PostgreSQL.

Server A serves a turn; server B starts while A's round runs (its startup sweep must leave A's
live run alone); A is SIGKILLed mid-turn; B's next sweep finds A's process gone and closes what
A left running; the client reconnects to B with ``resume_action`` and its last checkpoint, and
the turn completes there. Checked: what the user sees (the execs sent again, the frames, the
EndStream) and what is stored (no committed message lost, no tool result twice, every
``llm_calls`` row ended, the killed run closed by B's sweep, not by the resume).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from actors.conversation.model import ToolResultContent, decode_message
from actors.services.instance_lease import CALL_REASON, RUN_REASON
from store.conversations import ConversationStore
from store.instances import Instances
from store.llm_calls import CallRecords
from tests.conftest import add_fake_model
from tests.process.test_crash_recovery import (
    READ,
    SHELL,
    WAIT_S,
    WRITE,
    Server,
    exec_variants,
    model_saw,
    turn_tool_steps,
    until,
    write_done_shell_running,
)
from tests.support.fake_cursor import CursorSession, FakeCursor, resume_message, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events
from tests.support.process import SHARED_KEY_ENV, ServerProcess, connect_shared_store, server_env

T = TypeVar("T")
LEASE_S = "1.5"  # heartbeat and sweep every 0.5 s


@pytest.fixture
async def servers(tmp_path: Path, pg_url: str) -> AsyncIterator[Callable[[], Awaitable[Server]]]:
    """Start ``run.py`` processes on the test's PostgreSQL schema; all stopped at teardown."""
    started: list[Server] = []

    async def start() -> Server:
        env = server_env(
            tmp_path,
            CURSOR_DATABASE_URL=pg_url,
            CURSOR_INSTANCE_LEASE_SECONDS=LEASE_S,
            **SHARED_KEY_ENV,
        )
        process = ServerProcess(env)
        address = await asyncio.to_thread(process.wait_for_address)
        server = Server(process, FakeCursor(f"http://{address}"))
        started.append(server)
        return server

    yield start
    for server in started:
        await server.stop()


class Stored:
    """Reads of the shared database, each on a fresh connection."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _read(self, read: Callable[[ConversationStore, CallRecords, Instances], T]) -> T:
        store = connect_shared_store(self.url)
        try:
            db = store.database
            return read(ConversationStore(db), CallRecords(db), Instances(db))
        finally:
            store.close()

    def run(self, run_id: str) -> tuple[str, str | None]:
        def read(cs: ConversationStore, _c: CallRecords, _i: Instances) -> tuple[str, str | None]:
            run = cs.run(run_id)
            assert run is not None
            return run.status.value, run.failure_message

        return self._read(read)

    def calls(self) -> list[tuple[str, str | None]]:
        def read(
            _s: ConversationStore, calls: CallRecords, _i: Instances
        ) -> list[tuple[str, str | None]]:
            return [(r.status, r.error_message) for r in reversed(calls.list(limit=100))]

        return self._read(read)

    def live_instances(self) -> int:
        return self._read(lambda _s, _c, instances: len(instances.live()))

    def tool_results(self) -> list[str]:
        """The call id of every tool message on the conversation's head, in order."""

        def read(cs: ConversationStore, _c: CallRecords, _i: Instances) -> list[str]:
            head = cs.conversation("conv-1")
            assert head is not None
            out = []
            for stored in cs.messages_at(head.current_revision_id):
                content = decode_message(stored.payload).content
                if isinstance(content, ToolResultContent):
                    out.append(content.call_id)
            return out

        return self._read(read)

    def origins(self) -> list[str]:
        def read(cs: ConversationStore, _c: CallRecords, _i: Instances) -> list[str]:
            head = cs.conversation("conv-1")
            assert head is not None
            return [m.origin for m in cs.messages_at(head.current_revision_id)]

        return self._read(read)


async def closed_by_the_sweep(stored: Stored, run_id: str) -> None:
    """Wait for B's sweep to close the killed run (no client has touched it since)."""

    def closed() -> bool:
        return stored.run(run_id) == ("cancelled", RUN_REASON)

    async with asyncio.timeout(WAIT_S):
        while not await asyncio.to_thread(closed):
            await asyncio.sleep(0.1)


def seeded(url: str, fake: FakeProvider) -> str:
    """The shared database with the fake provider's model; its public id."""
    store = connect_shared_store(url)
    try:
        return add_fake_model(store, fake)
    finally:
        store.close()


async def stays_running(stored: Stored, run_id: str) -> None:
    """A's run is untouched by B's startup sweep and by B's next sweeps (A's lease is live)."""
    await asyncio.sleep(float(LEASE_S))  # three of B's heartbeats and sweeps
    assert await asyncio.to_thread(stored.run, run_id) == ("running", None)
    assert await asyncio.to_thread(stored.live_instances) == 2


async def test_failover_mid_round_to_the_other_server(
    fake: FakeProvider, servers: Callable[[], Awaitable[Server]], pg_url: str, tmp_path: Path
) -> None:
    """A is killed while the round's Shell runs (the Write committed, the staged checkpoint
    with the client). B, started mid-round, leaves A's run alone while A lives and closes it
    once A is gone; the resumed turn on B runs only the Shell, once, and the model sees each
    call once with its result."""
    stored = Stored(pg_url)
    public_id = seeded(pg_url, fake)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    a = await servers()
    fake.enqueue(Script.sse(chat_events(text=["Writing, then running."], tools=[WRITE, SHELL])))
    gate = asyncio.Event()  # never set: the Shell still runs when A dies
    session = CursorSession(a.cursor, "run-killed", workspace=workspace, shell_gate=gate)
    run = asyncio.create_task(
        session.run(user_turn_message("write it and run it", public_id), total_timeout=WAIT_S)
    )
    log = session.log

    await until(lambda: write_done_shell_running(log), "the Write committed and the Shell running")
    b = await servers()
    await stays_running(stored, "run-killed")
    a.process.proc.send_signal(signal.SIGKILL)
    await asyncio.to_thread(a.process.proc.wait, WAIT_S)
    killed = await run
    # The user sees the stream break (no EndStream); the Write happened once.
    assert killed.dropped and killed.end is None
    assert (workspace / "out.txt").read_text() == "written once\n"
    state = killed.checkpoints()[-1]
    assert "call_sh" in "".join(state.pending_tool_calls)
    await closed_by_the_sweep(stored, "run-killed")
    assert await asyncio.to_thread(stored.live_instances) == 1
    assert await asyncio.to_thread(stored.tool_results) == ["call_w"]

    fake.enqueue(Script.sse(chat_events(text=["Both done."])))
    resumed = CursorSession(b.cursor, "run-resumed", workspace=workspace, blobs=killed.blobs)
    after = await resumed.run(
        resume_message(public_id, conversation_id="conv-1", conversation_state=state)
    )
    assert after.end == {}, after.end
    assert exec_variants(after) == [("call_sh", "shell_stream_args")]  # the Write is not rerun
    assert "Both done." in "".join(m.interaction_update.text_delta.text for m in after.messages)
    calls, results = model_saw(fake)
    assert calls == ["call_w", "call_sh"]
    assert sorted(results) == ["call_sh", "call_w"] and all(len(r) == 1 for r in results.values())
    final = after.checkpoints()[-1]
    assert not final.pending_tool_calls
    assert turn_tool_steps(after, final) == ["call_w", "call_sh"]
    # Stored: each result once, the committed messages kept, every call record ended.
    assert await asyncio.to_thread(stored.tool_results) == ["call_w", "call_sh"]
    assert await asyncio.to_thread(stored.origins) == [
        "runtime", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert await asyncio.to_thread(stored.run, "run-resumed") == ("completed", None)
    assert await asyncio.to_thread(stored.calls) == [("completed", None), ("completed", None)]


async def test_failover_mid_call_to_the_other_server(
    fake: FakeProvider, servers: Callable[[], Awaitable[Server]], pg_url: str, tmp_path: Path
) -> None:
    """A is killed while the model call after a settled Read round streams: B's sweep ends
    A's call record and run (its own rows untouched), and the resumed turn on B asks the
    model again without running the Read again; no partial answer is stored."""
    stored = Stored(pg_url)
    public_id = seeded(pg_url, fake)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "in.txt").write_text("input lines\n")
    a = await servers()
    b = await servers()
    fake.enqueue(Script.sse(chat_events(text=["Reading first."], tools=[READ])))
    fake.enqueue(Script.stall(events=chat_events(text=["half an ans"])[:2]))
    session = CursorSession(a.cursor, "run-killed", workspace=workspace)
    run = asyncio.create_task(
        session.run(user_turn_message("read it", public_id), total_timeout=WAIT_S)
    )
    await asyncio.wait_for(fake.wait_for_request(2), WAIT_S)  # the round settled
    await until(lambda: len(stored.calls()) == 2, "the second call recorded")
    await stays_running(stored, "run-killed")
    assert await asyncio.to_thread(stored.calls) == [("completed", None), ("running", None)]
    a.process.proc.send_signal(signal.SIGKILL)
    await asyncio.to_thread(a.process.proc.wait, WAIT_S)
    killed = await run
    assert killed.dropped and killed.end is None
    await closed_by_the_sweep(stored, "run-killed")
    assert await asyncio.to_thread(stored.calls) == [
        ("completed", None), ("cancelled", CALL_REASON),
    ]  # fmt: skip
    assert await asyncio.to_thread(stored.origins) == ["runtime", "assistant", "tool"]

    state = killed.checkpoints()[-1]
    fake.enqueue(Script.sse(chat_events(text=["The file says input lines."])))
    resumed = CursorSession(b.cursor, "run-resumed", workspace=workspace, blobs=killed.blobs)
    after = await resumed.run(
        resume_message(public_id, conversation_id="conv-1", conversation_state=state)
    )
    assert after.end == {}, after.end
    assert exec_variants(after) == []  # the Read is not run again
    calls, results = model_saw(fake)
    assert calls == ["call_r"] and len(results["call_r"]) == 1
    assert await asyncio.to_thread(stored.origins) == ["runtime", "assistant", "tool", "assistant"]
    assert await asyncio.to_thread(stored.tool_results) == ["call_r"]
    assert [status for status, _ in await asyncio.to_thread(stored.calls)] == [
        "completed", "cancelled", "completed",
    ]  # fmt: skip
