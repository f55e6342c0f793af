"""The fault matrix at the process level: ``python run.py`` killed or stopped mid-turn.

Each test runs the server as its own process on a real socket, with the fake provider and the
fake Cursor client in the test, on a SQLite file and (when configured) on PostgreSQL. A round
of a Write (answered and committed) and a Shell (held by the client, so the kill lands while
it runs) is cut by SIGKILL; the server is started again, on the same database or after the
database was deleted, and the client resumes with what the editor keeps: its last checkpoint
and its blobs. Each test checks what the user sees (the execs sent again, the frames, the
EndStream) and what is stored afterwards (no committed message lost, no tool result twice,
every ``llm_calls`` row ended).
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from actors.conversation.model import ToolResultContent, decode_message
from store import Store
from store.base.typed_peewee import execute_sql
from store.conversations import ConversationStore
from store.database import open_database
from store.llm_calls import CallRecords
from tests.conftest import add_fake_model
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    resume_message,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from tests.support.process import SHARED_KEY_ENV, ServerProcess, connect_shared_store, server_env
from wire.proto import agent_v1_pb2 as agent

WRITE = FakeToolCall("call_w", "Write", ('{"path": "/out.txt", "contents": "written once\\n"}',))
READ = FakeToolCall("call_r", "Read", ('{"path": "/in.txt"}',))
SHELL = FakeToolCall("call_sh", "Shell", ('{"command": "echo shell-ran"}',))
WAIT_S = 15.0


@dataclass
class Database:
    """The server's database and how to lose it (``lose``: everything gone but the key)."""

    url: str
    lose: Callable[[], None]


def lose_the_sqlite_file(path: Path) -> None:
    """Delete the database file and its WAL and shared-memory files (not the key file)."""
    for each in path.parent.glob(f"{path.name}*"):
        if each.suffix != ".key":
            each.unlink()
    assert not path.exists()


def lose_the_schema(url: str) -> None:
    """Drop the test's PostgreSQL schema with everything in it and make it again, empty."""
    match = re.search(r"search_path%3D(\w+)", url)
    assert match is not None, url
    admin = open_database(url)
    execute_sql(admin, f'DROP SCHEMA "{match.group(1)}" CASCADE')
    execute_sql(admin, f'CREATE SCHEMA "{match.group(1)}"')
    admin.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    """Each test on a SQLite file and (when configured) on PostgreSQL."""
    if request.param == "postgres":
        url = str(request.getfixturevalue("pg_url"))
        return Database(url, lambda: lose_the_schema(url))
    path = tmp_path / "server.db"
    return Database(f"sqlite:///{path}", lambda: lose_the_sqlite_file(path))


@dataclass
class Server:
    """One ``run.py`` process on ``db`` and a client of it."""

    process: ServerProcess
    cursor: FakeCursor

    async def stop(self) -> None:
        await self.cursor.aclose()
        self.process.stop()


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[Callable[[Database], Awaitable[Server]]]:
    """Start ``run.py`` processes on a database file; all are stopped at teardown."""
    started: list[Server] = []

    async def start(db: Database) -> Server:
        env = server_env(tmp_path, CURSOR_DATABASE_URL=db.url, **SHARED_KEY_ENV)
        process = ServerProcess(env)
        address = await asyncio.to_thread(process.wait_for_address)
        server = Server(process, FakeCursor(f"http://{address}"))
        started.append(server)
        return server

    yield start
    for server in started:
        await server.stop()


def configured(db: Database, fake: FakeProvider) -> str:
    """A database with the fake provider's model; its public id (the same for every
    database, as it depends only on the provider's URL and the model id)."""
    store = connect_shared_store(db.url)
    try:
        return add_fake_model(store, fake)
    finally:
        store.close()


def exec_variants(log: TurnLog) -> list[tuple[str, str]]:
    """Every exec the server sent: (its call id, the args variant)."""
    return [
        (m.exec_server_message.exec_id, m.exec_server_message.WhichOneof("message") or "")
        for m in log.messages
        if m.HasField("exec_server_message")
    ]


def streamed_text(log: TurnLog) -> str:
    return "".join(m.interaction_update.text_delta.text for m in log.messages)


def completed_cards(log: TurnLog) -> list[str]:
    return [
        m.interaction_update.tool_call_completed.call_id
        for m in log.messages
        if m.interaction_update.HasField("tool_call_completed")
    ]


def write_done_shell_running(log: TurnLog) -> bool:
    """Mid-round, as a kill there needs it: the Write's result committed (its card shown),
    the round staged with the Shell pending, and the Shell sent to the editor."""
    staged = [c for c in log.checkpoints() if "call_sh" in "".join(c.pending_tool_calls)]
    running = ("call_sh", "shell_stream_args") in exec_variants(log)
    return bool(staged) and running and "call_w" in completed_cards(log)


async def until(condition: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(WAIT_S):
        while not condition():
            await asyncio.sleep(0.01)
    assert condition(), what


def proves(state: agent.ConversationStateStructure, call_id: str) -> bool:
    """The state's pending entries hold ``call_id``'s result after the staged assistant."""
    return any(
        json.loads(entry)["role"] == "tool" and json.loads(entry)["id"] == call_id
        for entry in state.pending_tool_calls[1:]
    )


async def killed_mid_round(
    server: Server,
    fake: FakeProvider,
    public_id: str,
    workspace: Path,
    *,
    read_first: bool,
    staged_seen: bool = True,
    proof_seen: bool | None = None,
) -> tuple[TurnLog, agent.ConversationStateStructure]:
    """Run a turn whose round is a Write and a Shell (after a round of one Read, settled, when
    ``read_first``); once the Write is committed (its card completed), the Shell has started
    and that round's staged checkpoint is in, SIGKILL the server. Without ``staged_seen`` the
    client acknowledges no blob after its first checkpoint, so it never gets the staged one.
    With ``proof_seen`` the kill waits for the checkpoint staged again after the Write, which
    proves it completed; with ``proof_seen=False`` the client acknowledges nothing after the
    round's first staged checkpoint, so it never gets that proof. Returns what the client saw
    and its last checkpoint."""
    if read_first:
        fake.enqueue(Script.sse(chat_events(text=["Reading first."], tools=[READ])))
    fake.enqueue(Script.sse(chat_events(text=["Writing, then running."], tools=[WRITE, SHELL])))
    gate = asyncio.Event()  # never set: the Shell still runs when the server dies
    session = CursorSession(server.cursor, "run-killed", workspace=workspace, shell_gate=gate)
    message = user_turn_message("write it and run it", public_id, message_id="m-kill")
    log = session.log

    def staged() -> list[agent.ConversationStateStructure]:
        return [c for c in log.checkpoints() if "call_sh" in "".join(c.pending_tool_calls)]

    def held(_kv_id: int) -> bool:
        if not staged_seen:
            return bool(log.checkpoints())
        return proof_seen is False and bool(staged())

    run = asyncio.create_task(session.run(message, hold_ack=held, total_timeout=WAIT_S))

    def mid_round() -> bool:
        shell_started = ("call_sh", "shell_stream_args") in exec_variants(log)
        proof = not proof_seen or any(proves(c, "call_w") for c in staged())
        return (
            (bool(staged()) or not staged_seen)
            and shell_started
            and "call_w" in completed_cards(log)
            and proof
        )

    await until(mid_round, "the Write committed and the Shell running")
    server.process.proc.send_signal(signal.SIGKILL)
    await asyncio.to_thread(server.process.proc.wait, WAIT_S)
    log = await run
    assert log.dropped and log.end is None
    assert (workspace / "out.txt").read_text() == "written once\n"
    state = log.checkpoints()[-1]
    assert bool(state.pending_tool_calls) == staged_seen
    if proof_seen is not None:
        assert proves(state, "call_w") == proof_seen
    return log, state


def stored_history(db: Database) -> tuple[Store, ConversationStore]:
    store = connect_shared_store(db.url)
    return store, ConversationStore(store.database)


def tool_results(db: Database) -> list[tuple[str, str]]:
    """(call id, result text) of every tool message on the conversation's head."""
    store, conversations = stored_history(db)
    try:
        head = conversations.conversation("conv-1")
        assert head is not None
        out = []
        for stored in conversations.messages_at(head.current_revision_id):
            content = decode_message(stored.payload).content
            if isinstance(content, ToolResultContent):
                out.append((content.call_id, content.content))
        return out
    finally:
        store.close()


def llm_calls(db: Database) -> list[tuple[str, str | None]]:
    """(status, error message) of every call record, oldest first."""
    store = connect_shared_store(db.url)
    try:
        records = CallRecords(store.database).list(limit=100)
        return [(r.status, r.error_message) for r in reversed(records)]
    finally:
        store.close()


def llm_call_statuses(db: Database) -> list[str]:
    return [status for status, _ in llm_calls(db)]


def run_status(db: Database, run_id: str) -> str:
    store, conversations = stored_history(db)
    try:
        run = conversations.run(run_id)
        assert run is not None
        return run.status.value
    finally:
        store.close()


def head_origins(db: Database) -> list[str]:
    store, conversations = stored_history(db)
    try:
        head = conversations.conversation("conv-1")
        assert head is not None
        return [m.origin for m in conversations.messages_at(head.current_revision_id)]
    finally:
        store.close()


def model_saw(fake: FakeProvider) -> tuple[list[str], dict[str, list[str]]]:
    """The last request's assistant tool calls (ids, in order) and each call's results."""
    messages = fake.requests[-1].json["messages"]
    calls = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    results: dict[str, list[str]] = {}
    for m in messages:
        if m["role"] == "tool":
            results.setdefault(m["tool_call_id"], []).append(m["content"])
    return calls, results


def turn_tool_steps(log: TurnLog, state: agent.ConversationStateStructure) -> list[str]:
    """The call ids of the ToolCall steps of the state's last turn (blobs from the client)."""
    wrapper = agent.ConversationTurnStructure.FromString(log.blobs[state.turns[-1]])
    ids = []
    for step_id in wrapper.agent_conversation_turn.steps:
        step = agent.ConversationStep.FromString(log.blobs[step_id])
        if step.HasField("tool_call"):
            ids.append(step.tool_call.tool_call_id)
    return ids


@pytest.mark.parametrize(
    ("staged_seen", "proof_seen"),
    [(True, False), (True, True), (False, None)],
    ids=["staged", "staged-with-the-write-proven", "staged-never-seen"],
)
async def test_sigkill_mid_round_then_restart_on_the_same_database(
    db: Database,
    fake: FakeProvider,
    servers: Callable[[Database], Awaitable[Server]],
    tmp_path: Path,
    staged_seen: bool,
    proof_seen: bool | None,
) -> None:
    """The client resumes with its last checkpoint: the round's staged one (before or after
    it was staged again with the Write's result and step), or (when it never got that) the
    one before the round. Either way the store's record of the round is continued: the
    committed Write is not run again, the Shell is, once, and the turn shows each call's step
    once."""
    public_id = configured(db, fake)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = await servers(db)
    killed, state = await killed_mid_round(
        first,
        fake,
        public_id,
        workspace,
        read_first=False,
        staged_seen=staged_seen,
        proof_seen=proof_seen,
    )
    # The Write's pair was committed before the kill.
    assert [call_id for call_id, _ in tool_results(db)] == ["call_w"]

    second = await servers(db)
    fake.enqueue(Script.sse(chat_events(text=["Both done."])))
    session = CursorSession(second.cursor, "run-resumed", workspace=workspace, blobs=killed.blobs)
    log = await session.run(
        resume_message(public_id, conversation_id="conv-1", conversation_state=state)
    )
    assert log.end == {}, log.end
    # The committed Write is not dispatched again; the Shell is, once.
    assert exec_variants(log) == [("call_sh", "shell_stream_args")]
    # The model sees each call once, with its result.
    calls, results = model_saw(fake)
    assert calls == ["call_w", "call_sh"]
    assert sorted(results) == ["call_sh", "call_w"] and all(len(r) == 1 for r in results.values())
    assert "shell-ran" in results["call_sh"][0]
    # The settled checkpoints carry both calls' steps: the Write's rebuilt from its stored card.
    final = log.checkpoints()[-1]
    assert not final.pending_tool_calls
    assert turn_tool_steps(log, final) == ["call_w", "call_sh"]
    await second.stop()
    # Stored: both results once, the killed run cancelled at startup, every call record ended.
    assert [call_id for call_id, _ in tool_results(db)] == ["call_w", "call_sh"]
    store, conversations = stored_history(db)
    try:
        killed_run, resumed_run = conversations.run("run-killed"), conversations.run("run-resumed")
        assert killed_run is not None and killed_run.status.value == "cancelled"
        assert resumed_run is not None and resumed_run.status.value == "completed"
    finally:
        store.close()
    assert llm_call_statuses(db) == ["completed", "completed"]


@pytest.mark.parametrize("proof_seen", [True, False], ids=["write-proven", "write-unproven"])
async def test_sigkill_mid_round_then_restart_without_the_database(
    db: Database,
    fake: FakeProvider,
    servers: Callable[[Database], Awaitable[Server]],
    tmp_path: Path,
    proof_seen: bool,
) -> None:
    """Only the client's checkpoint and blobs are left: the database is deleted before the
    restart. The checkpoint holds the settled Read round and the staged Write+Shell round.
    Staged again after the Write committed, it also holds the Write's result (its tool
    message after the staged assistant) and the Write's step in its turn: then the Write is
    not sent again and only the Shell runs. Without that proof (the client never got the
    checkpoint staged again) the Write runs again, under this run's wire ids. Either way the
    Read is not run again and the model sees each call once, with its result."""
    public_id = configured(db, fake)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "in.txt").write_text("input lines\n")
    first = await servers(db)
    killed, state = await killed_mid_round(
        first, fake, public_id, workspace, read_first=True, proof_seen=proof_seen
    )
    assert ("call_r", "read_args") in exec_variants(killed)
    if proof_seen:
        assert turn_tool_steps(killed, state) == ["call_r", "call_w"]
    calls_before = llm_call_statuses(db)

    db.lose()
    assert configured(db, fake) == public_id
    second = await servers(db)
    fake.enqueue(Script.sse(chat_events(text=["All done."])))
    session = CursorSession(second.cursor, "run-resumed", workspace=workspace, blobs=killed.blobs)
    message = resume_message(public_id, conversation_id="conv-1", conversation_state=state)
    log = await session.run(message)
    assert log.end == {}, log.end
    sent = exec_variants(log)
    if proof_seen:
        # What the checkpoint proves completed (the Read, the Write) is not run again.
        assert sent == [("call_sh", "shell_stream_args")]
    else:
        # The Write (its hidden Read, then the Write) and the Shell run.
        assert sorted(sent) == [
            ("call_sh", "shell_stream_args"),
            ("call_w", "read_args"),
            ("call_w", "write_args"),
        ]
    assert (workspace / "out.txt").read_text() == "written once\n"
    calls, results = model_saw(fake)
    assert calls == ["call_r", "call_w", "call_sh"]
    assert sorted(results) == ["call_r", "call_sh", "call_w"]
    assert all(len(r) == 1 for r in results.values())
    assert "input lines" in results["call_r"][0] and "shell-ran" in results["call_sh"][0]
    assert "/out.txt" in results["call_w"][0]
    # The model's one message for the round holds both calls (the round is one assistant).
    assistants = [m for m in fake.requests[-1].json["messages"] if m.get("tool_calls")]
    assert [[c["id"] for c in m["tool_calls"]] for m in assistants] == [
        ["call_r"],
        ["call_w", "call_sh"],
    ]
    final = log.checkpoints()[-1]
    assert not final.pending_tool_calls
    assert turn_tool_steps(log, final) == ["call_r", "call_w", "call_sh"]
    await second.stop()
    # The restored history and the round: each result once; every call record ended.
    assert [call_id for call_id, _ in tool_results(db)] == ["call_r", "call_w", "call_sh"]
    assert llm_call_statuses(db) == ["completed"]
    assert set(calls_before) == {"completed"}


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
async def test_stopped_after_the_round_settled_before_the_client_saw_it(
    db: Database,
    fake: FakeProvider,
    servers: Callable[[Database], Awaitable[Server]],
    tmp_path: Path,
    stop: signal.Signals,
) -> None:
    """A Read round: the client has its staged checkpoint, the Read's result is committed and
    the round settled, the next model call is streaming, and the settled checkpoint has not
    reached the client (its ACKs are held) when the server stops. SIGTERM: the client sees
    EndStream ``canceled`` and the process itself ends the call's record and the run; SIGKILL:
    the stream just breaks and the next start ends both. Either way nothing committed is lost
    and no partial answer is stored; the client resumes from its staged checkpoint: the Read
    is not run again, the settled state shows its step, and the model is asked once more."""
    public_id = configured(db, fake)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "in.txt").write_text("input lines\n")
    first = await servers(db)
    fake.enqueue(Script.sse(chat_events(text=["Reading first."], tools=[READ])))
    fake.enqueue(Script.stall(events=chat_events(text=["half an ans"])[:2]))
    session = CursorSession(first.cursor, "run-stopped", workspace=workspace)

    def result_root(kv_id: int) -> bool:
        """The SET of the Read result's root: only the settled checkpoint holds it."""
        (kv,) = [
            m.kv_server_message
            for m in session.log.messages
            if m.kv_server_message.HasField("set_blob_args") and m.kv_server_message.id == kv_id
        ]
        return kv.set_blob_args.blob_data.startswith(b'{"role":"tool"')

    message = user_turn_message("read it", public_id, message_id="m-stop")
    run = asyncio.create_task(session.run(message, hold_ack=result_root, total_timeout=WAIT_S))
    await asyncio.wait_for(fake.wait_for_request(2), WAIT_S)  # sent once the round settled
    await until(lambda: bool(session.log.checkpoints()[-1].pending_tool_calls), "the staged one")
    first.process.proc.send_signal(stop)
    code = await asyncio.to_thread(first.process.proc.wait, WAIT_S)
    log = await run
    state = log.checkpoints()[-1]
    assert "call_r" in "".join(state.pending_tool_calls)  # the staged one: the last it saw
    assert "call_r" in completed_cards(log)
    if stop is signal.SIGTERM:
        assert code == 0, first.process.log
        assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
        # Ended by the process itself, before it exited.
        assert llm_call_statuses(db) == ["completed", "cancelled"]
        assert run_status(db, "run-stopped") == "cancelled"
    else:
        assert log.dropped and log.end is None
    assert head_origins(db) == ["runtime", "assistant", "tool"]

    second = await servers(db)
    calls = llm_calls(db)
    if stop is signal.SIGKILL:
        # The record of the streaming call was closed at the next start; a kill that lands
        # before the recorder wrote its start leaves none (the request never waits for it).
        assert calls in (
            [("completed", None)],
            [("completed", None), ("cancelled", "the server stopped during the call")],
        )
    else:
        assert [status for status, _ in calls] == ["completed", "cancelled"]
    before = [status for status, _ in calls]
    assert run_status(db, "run-stopped") == "cancelled"
    fake.enqueue(Script.sse(chat_events(text=["The file says input lines."])))
    resumed = CursorSession(second.cursor, "run-resumed", workspace=workspace, blobs=log.blobs)
    message = resume_message(public_id, conversation_id="conv-1", conversation_state=state)
    after = await resumed.run(message)
    assert after.end == {}, after.end
    assert exec_variants(after) == []  # the Read is not run again
    calls_seen, results = model_saw(fake)
    assert calls_seen == ["call_r"] and list(results) == ["call_r"]
    assert len(results["call_r"]) == 1 and "input lines" in results["call_r"][0]
    settled = after.checkpoints()[0]
    assert not settled.pending_tool_calls
    assert turn_tool_steps(after, settled) == ["call_r"]
    await second.stop()
    assert head_origins(db) == ["runtime", "assistant", "tool", "assistant"]
    assert llm_call_statuses(db) == [*before, "completed"]
