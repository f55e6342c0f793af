"""``run.py --workers 3`` on one PostgreSQL, with no balancer: the editor's requests, each on a
new connection, reach whichever worker the kernel gives it, so a run's RunSSE and BidiAppends
land on different workers, and the others forward to the one that holds the run. Checked: tool
turns (at least one request forwarded, by a worker that does not hold the run), the RunSSE
replayed, a cancel, a console login, a newer run on another worker interrupting the held one, a
provider saved through one worker serving a turn on any, a discovery's listing prices used by
adds that reach the other workers, and the holding worker SIGKILLed
mid-round: the supervisor starts it again and the editor's resume completes the turn without
repeating the Write."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import add_fake_model
from tests.process.test_crash_recovery import (
    SHELL,
    WRITE,
    exec_variants,
    until,
    write_done_shell_running,
)
from tests.process.test_workers import WORKER_LINE, started
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    cancel_message,
    final_text,
    resume_message,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from tests.support.process import (
    SHARED_KEY_ENV,
    ServerProcess,
    connect_shared_store,
    holder_pid,
    server_env,
)

pytestmark = pytest.mark.process

WAIT_S = 60.0
TOKEN = "workers-pair-token-0123456789"
FORWARDED = re.compile(r"request forwarded to its run's holder request_id=(\S+)")


@dataclass
class Workers:
    process: ServerProcess
    base_url: str
    database_url: str
    public_id: str

    def cursor(self) -> FakeCursor:
        """The editor, with a new connection for every request (none kept alive), so the
        kernel spreads its requests over the workers."""
        cursor = FakeCursor(self.base_url)
        cursor.client = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=10.0,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        return cursor

    def holder(self, request_id: str) -> str:
        """The worker holding ``request_id``, by its route's instance's pid."""
        names = {pid: name for name, pid in started(self.process.lines).items()}
        return names[holder_pid(self.database_url, request_id)]

    def forwarders(self, request_id: str) -> set[str]:
        """The workers that forwarded a request of ``request_id`` to its holder."""
        return {
            m.group(1)
            for line in self.process.lines
            if (f := FORWARDED.search(line)) and f.group(1) == request_id
            if (m := WORKER_LINE.match(line))
        }


@pytest.fixture
async def workers(tmp_path: Path, pg_url: str, fake: FakeProvider) -> AsyncIterator[Workers]:
    store = connect_shared_store(pg_url)
    try:
        public_id = add_fake_model(store, fake)
    finally:
        store.close()
    env = server_env(
        tmp_path,
        CURSOR_DATABASE_URL=pg_url,
        CURSOR_CONSOLE_TOKEN=TOKEN,
        CURSOR_LOG_LEVEL="debug",
        **SHARED_KEY_ENV,
    )
    process = ServerProcess(env, args=("--workers", "3"))
    try:
        address = await asyncio.to_thread(process.wait_for_address, WAIT_S)
        yield Workers(process, f"http://{address}", pg_url, public_id)
    finally:
        process.proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(process.proc.wait, 30)


async def test_tool_turns_whose_requests_reach_several_workers(
    workers: Workers, fake: FakeProvider, tmp_path: Path
) -> None:
    """Turns until one of them had a request forwarded (each is likely to: a turn makes
    several requests, each on a connection the kernel gives any of three workers)."""
    (tmp_path / "in.txt").write_text("input lines\n")
    cursor = workers.cursor()
    try:
        for turn in range(6):
            request_id = f"workers-{turn}"
            read = FakeToolCall("call_r", "Read", ('{"path": "/in.txt"}',))
            fake.enqueue(Script.sse(chat_events(tools=[read])))
            fake.enqueue(Script.sse(chat_events(text=[f"turn {turn} read it"])))
            session = CursorSession(cursor, request_id, workspace=tmp_path)
            log = await session.run(
                user_turn_message("read it", workers.public_id, conversation_id=f"w{turn}")
            )
            assert log.end == {}, log.end
            assert f"turn {turn} read it" in final_text(log)
            assert "input lines" in fake.requests[-1].body.decode()
            holder = await asyncio.to_thread(workers.holder, request_id)
            forwarders = workers.forwarders(request_id)
            assert holder not in forwarders
            if forwarders:
                break
        else:
            pytest.fail("six turns and no request reached a worker that did not hold its run")
        replay = await (await cursor.open_run_sse(request_id)).read_to_end()
        assert [m.SerializeToString() for m in replay.messages] == [
            m.SerializeToString() for m in log.messages
        ]
        late = await cursor.append(request_id, 99, cancel_message())
        assert late.status_code == 404, late.text
    finally:
        await cursor.aclose()


async def test_a_cancel_and_a_console_login_across_workers(
    workers: Workers, fake: FakeProvider
) -> None:
    fake.enqueue(Script.hang_before_headers())
    cursor = workers.cursor()
    try:
        stream = await cursor.open_run_sse("workers-cancel")
        first = await cursor.append(
            "workers-cancel", 0, user_turn_message("wait", workers.public_id)
        )
        assert first.status_code == 200, first.text
        await fake.wait_for_request(1, timeout=WAIT_S)
        stop = await cursor.append("workers-cancel", 1, cancel_message())
        assert stop.status_code == 200, stop.text
        result = await stream.read_to_end(timeout=10)
        assert result.end is not None and result.end["error"]["code"] == "canceled"
    finally:
        await cursor.aclose()
    limits = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=workers.base_url, limits=limits) as console:
        login = await console.post("/console/api/login", json={"token": TOKEN})
        assert login.status_code == 200, login.text
        for _ in range(12):  # new connections: several workers, each knows the login
            assert (await console.get("/console/api/providers")).status_code == 200


async def test_the_holding_worker_killed_mid_round_is_restarted_and_the_turn_resumed(
    workers: Workers, fake: FakeProvider, tmp_path: Path
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["Writing, then running."], tools=[WRITE, SHELL])))
    cursor = workers.cursor()
    gate = asyncio.Event()  # never set: the Shell still runs when its worker dies
    session = CursorSession(cursor, "workers-killed", workspace=tmp_path, shell_gate=gate)
    run = asyncio.create_task(
        session.run(user_turn_message("write it, run it", workers.public_id), total_timeout=WAIT_S)
    )
    log = session.log

    try:
        await until(
            lambda: write_done_shell_running(log), "the Write committed and the Shell running"
        )
        name = await asyncio.to_thread(workers.holder, "workers-killed")
        pid = started(workers.process.lines)[name]
        signal_sent = asyncio.get_running_loop().time()
        os.kill(pid, signal.SIGKILL)
        broken = await run
        assert broken.dropped and broken.end is None
        assert (tmp_path / "out.txt").read_text() == "written once\n"
        await until(lambda: started(workers.process.lines)[name] != pid, f"{name} restarted")
        assert asyncio.get_running_loop().time() - signal_sent < WAIT_S
        state = broken.checkpoints()[-1]
        fake.enqueue(Script.sse(chat_events(text=["Both done."])))
        resumed = CursorSession(cursor, "workers-resumed", workspace=tmp_path, blobs=broken.blobs)
        after = await resumed.run(
            resume_message(workers.public_id, conversation_id="conv-1", conversation_state=state),
            total_timeout=WAIT_S,
        )
    finally:
        run.cancel()
        await cursor.aclose()
    assert after.end == {}, after.end
    assert exec_variants(after) == [("call_sh", "shell_stream_args")]  # the Write is not rerun


async def test_a_new_run_on_another_worker_interrupts_the_held_one(
    workers: Workers, fake: FakeProvider
) -> None:
    """Run 1 waits on its model; the user's next message on the same conversation starts run
    2, on whichever worker its connection reaches: run 1 ends ``canceled`` at once. Repeated
    on new conversations until run 2 was held by another worker than run 1 at least once."""
    cursor = workers.cursor()
    crossed = False
    try:
        for attempt in range(8):
            fake.enqueue(Script.hang_before_headers(), Script.sse(chat_events(text=["second"])))
            conversation = f"wi{attempt}"
            first = CursorSession(cursor, f"workers-one-{attempt}")
            one = asyncio.create_task(
                first.run(user_turn_message("one", workers.public_id, conversation_id=conversation))
            )
            await fake.wait_for_request(len(fake.requests) + 1, timeout=WAIT_S)
            second = CursorSession(cursor, f"workers-two-{attempt}")
            log = await second.run(
                user_turn_message("two", workers.public_id, conversation_id=conversation)
            )
            assert log.end == {}, log.end
            superseded = await asyncio.wait_for(one, 10)
            assert superseded.end is not None and superseded.end["error"]["code"] == "canceled"
            holders = {
                await asyncio.to_thread(workers.holder, f"workers-{n}-{attempt}")
                for n in ("one", "two")
            }
            if len(holders) == 2:
                crossed = True
                break
    finally:
        await cursor.aclose()
    assert crossed, "run 2 never landed on another worker than run 1"


async def test_a_provider_saved_on_one_worker_serves_a_turn_on_any(
    workers: Workers, fake: FakeProvider
) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(
        base_url=workers.base_url, headers=bearer, limits=limits
    ) as console:
        body = {"name": "Other", "type": "openai-chat", "base_url": fake.base_url, "api_key": "k"}
        created = await console.post("/console/api/providers", json=body)
        assert created.status_code == 201, created.text
        models = {"models": [{"model_id": "other-model", "display_name": "Other"}]}
        saved = await console.post(
            f"/console/api/providers/{created.json()['id']}/models", json=models
        )
        assert saved.status_code == 201, saved.text
        public_id = saved.json()[0]["public_id"]
        for _ in range(6):  # new connections, so several workers: each lists it at once
            listed = await console.get("/console/api/models")
            assert public_id in [m["public_id"] for m in listed.json()]
    fake.enqueue(Script.sse(chat_events(text=["the other model"])))
    cursor = workers.cursor()
    try:
        log = await CursorSession(cursor, "workers-model").run(
            user_turn_message("hi", public_id, conversation_id="wm")
        )
    finally:
        await cursor.aclose()
    assert log.end == {}, log.end
    assert "the other model" in final_text(log)


async def test_a_discoverys_listing_prices_reach_adds_on_every_worker(
    workers: Workers, fake: FakeProvider
) -> None:
    """The discovery reaches one worker; six adds, each on a new connection, reach whichever
    worker the kernel gives them (all six on the discovery's own worker: one time in 729), and
    each gets the listing's prices marked ``provider``."""
    ids = [f"acme/house-{n}" for n in range(6)]
    fake.models = ids
    fake.listing_extra = {
        i: {"pricing": {"prompt": "0.0000005", "completion": "0.0000015"}} for i in ids
    }
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(
        base_url=workers.base_url, headers=bearer, limits=limits, timeout=10.0
    ) as console:
        body = {"name": "Router", "type": "openai-chat", "base_url": fake.base_url, "api_key": "k"}
        created = await console.post("/console/api/providers", json=body)
        assert created.status_code == 201, created.text
        pid = created.json()["id"]
        found = await console.post(f"/console/api/providers/{pid}/models/discover", json={})
        assert found.status_code == 200, found.text
        assert {m["price_source"] for m in found.json()["models"]} == {"provider"}
        for model_id in ids:
            models = {"models": [{"model_id": model_id, "display_name": model_id}]}
            added = await console.post(f"/console/api/providers/{pid}/models", json=models)
            assert added.status_code == 201, added.text
            record = added.json()[0]
            priced = (record["price_input_per_mtok"], record["price_output_per_mtok"])
            assert (record["price_source"], priced) == ("provider", (0.5, 1.5)), model_id
