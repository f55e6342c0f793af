"""The HTTP/1.1 RunSSE and BidiAppend pair behind HAProxy, round robin per request, in front of
three ``python run.py`` on one PostgreSQL (the cluster of ``test_balancer``): a run's requests
reach every instance, and the instance that heard of the run first holds it while the others
forward to it (``wire/http/peer_forwarding.py``). Checked: a whole tool turn, its RunSSE
replayed from another instance, a late append's 404, a cancel, a newer run on another instance
interrupting the held one, a console login used on another instance, a provider saved through
one instance serving the next turn, and the holder SIGKILLed mid-round, its turn resumed
through the balancer with no completed tool run twice."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path

import httpx
import pytest

from store.conversations import ConversationStore
from tests.process.test_balancer import TOKEN, Cluster, Instance, cluster, read_turn, run_status
from tests.process.test_crash_recovery import exec_variants, until, write_done_shell_running
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    cancel_message,
    final_text,
    resume_message,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from tests.support.h2_servers import upstream_config
from tests.support.haproxy import make_balancer
from tests.support.process import connect_shared_store, holder_pid
from wire.http.agent_routes import BIDI_APPEND_PATH, RUN_SSE_PATH

__all__ = ["cluster", "make_balancer", "upstream_config"]  # fixtures, used by name

pytestmark = pytest.mark.haproxy

WAIT_S = 30.0


def balanced(cluster: Cluster) -> FakeCursor:
    """The editor, pointed at the balancer (which adds the token)."""
    return FakeCursor(cluster.balancer.http1_url)


def direct(instance: Instance) -> FakeCursor:
    """A client of one instance, past the balancer: it sends the token itself."""
    return FakeCursor(f"http://{instance.backend.http1}", headers={"X-Cursor-Server-Token": TOKEN})


def holder(cluster: Cluster, request_id: str) -> Instance:
    """The instance that holds ``request_id``: its route's instance, by process id."""
    pid = holder_pid(cluster.database_url, request_id)
    return next(i for i in cluster.instances if i.process.proc.pid == pid)


async def test_a_tool_turn_over_the_pair_whose_requests_go_round_robin(
    cluster: Cluster, fake: FakeProvider, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    expected = read_turn(fake, workspace, 0)
    cursor = balanced(cluster)
    try:
        session = CursorSession(cursor, "pair-0", workspace=workspace)
        log = await session.run(
            user_turn_message("what do my notes say?", cluster.public_id, conversation_id="p0")
        )
        assert log.end == {}, log.end
        results = [m for m in fake.requests[-1].json["messages"] if m["role"] == "tool"]
        assert expected in results[0]["content"]
        appends = [r for r in cluster.balancer.requests() if r.path == BIDI_APPEND_PATH]
        assert {r.server for r in appends} == {"a", "b", "c"}  # the run's appends, everywhere
        assert {r.status for r in appends} == {200}
        assert await asyncio.to_thread(run_status, cluster.database_url, "pair-0") == "completed"

        # The editor reconnects its RunSSE: whichever instance it reaches, every frame again.
        replay = await (await cursor.open_run_sse("pair-0")).read_to_end()
        assert [m.SerializeToString() for m in replay.messages] == [
            m.SerializeToString() for m in log.messages
        ]
        sse = await cluster.balancer.logged(2, RUN_SSE_PATH)
        assert len({r.server for r in sse}) == 2  # the two RunSSEs reached two instances
        # Late appends, one per instance: each 404, none starts a run.
        for seqno in range(3):
            late = await cursor.append("pair-0", 100 + seqno, cancel_message())
            assert late.status_code == 404, late.text
    finally:
        await cursor.aclose()


async def test_a_cancel_through_the_balancer_stops_the_run(
    cluster: Cluster, fake: FakeProvider
) -> None:
    fake.enqueue(Script.hang_before_headers())
    cursor = balanced(cluster)
    try:
        stream = await cursor.open_run_sse("pair-cancel")
        first = await cursor.append(
            "pair-cancel", 0, user_turn_message("wait", cluster.public_id, conversation_id="pc")
        )
        assert first.status_code == 200, first.text
        await fake.wait_for_request(1, timeout=WAIT_S)
        started = time.monotonic()
        stop = await cursor.append("pair-cancel", 1, cancel_message())
        assert stop.status_code == 200, stop.text
        result = await stream.read_to_end(timeout=10)
        assert result.end is not None and result.end["error"]["code"] == "canceled"
        assert time.monotonic() - started < 5
    finally:
        await cursor.aclose()
    assert await asyncio.to_thread(run_status, cluster.database_url, "pair-cancel") == "cancelled"


async def test_a_new_run_on_another_instance_interrupts_the_held_one(
    cluster: Cluster, fake: FakeProvider
) -> None:
    """Run 1 goes through the balancer and waits on its model; the user's next message on the
    same conversation starts run 2 on an instance that does not hold run 1: run 1 ends
    ``canceled`` at once, told by run 2's instance."""
    fake.enqueue(Script.hang_before_headers(), Script.sse(chat_events(text=["second"])))
    cursor = balanced(cluster)
    first = CursorSession(cursor, "pair-one")
    one = asyncio.create_task(
        first.run(user_turn_message("one", cluster.public_id, conversation_id="pi"))
    )
    try:
        await fake.wait_for_request(1, timeout=WAIT_S)
        held_by = await asyncio.to_thread(holder, cluster, "pair-one")
        other = next(i for i in cluster.instances if i is not held_by)
        started = time.monotonic()
        elsewhere = direct(other)
        try:
            second = CursorSession(elsewhere, "pair-two")
            log = await second.run(
                user_turn_message("two", cluster.public_id, conversation_id="pi")
            )
        finally:
            await elsewhere.aclose()
        assert log.end == {}, log.end
        assert (await asyncio.to_thread(holder, cluster, "pair-two")) is other
        superseded = await asyncio.wait_for(one, 10)
        assert superseded.end is not None and superseded.end["error"]["code"] == "canceled"
        assert time.monotonic() - started < 5
    finally:
        one.cancel()
        await cursor.aclose()


async def test_a_console_login_on_one_instance_is_accepted_on_the_others(
    cluster: Cluster,
) -> None:
    async with httpx.AsyncClient(base_url=cluster.balancer.http1_url) as console:
        refused = await console.get("/console/api/providers")
        assert refused.status_code == 401, refused.text
        login = await console.post("/console/api/login", json={"token": TOKEN})
        assert login.status_code == 200, login.text
        for _ in range(3):  # the next three requests: the three instances
            listed = await console.get("/console/api/providers")
            assert listed.status_code == 200, listed.text
        logout = await console.post("/console/api/logout", json={})
        assert logout.status_code in (200, 204), logout.text
        await asyncio.sleep(1.0)  # another instance may trust a live session for 0.5 s
        for _ in range(3):
            assert (await console.get("/console/api/providers")).status_code == 401
    logged = [r for r in cluster.balancer.requests() if r.path == "/console/api/providers"]
    assert {r.server for r in logged[1:4]} == {"a", "b", "c"}


async def test_a_provider_saved_through_one_instance_serves_the_next_turn(
    cluster: Cluster, fake: FakeProvider
) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=cluster.balancer.http1_url, headers=bearer) as console:
        body = {"name": "Second", "type": "openai-chat", "base_url": fake.base_url, "api_key": "k"}
        created = await console.post("/console/api/providers", json=body)
        assert created.status_code == 201, created.text
        models = {"models": [{"model_id": "second-model", "display_name": "Second model"}]}
        saved = await console.post(
            f"/console/api/providers/{created.json()['id']}/models", json=models
        )
        assert saved.status_code == 201, saved.text
        public_id = saved.json()[0]["public_id"]
        for _ in range(3):  # every instance lists it at once
            listed = await console.get("/console/api/models")
            assert public_id in [m["public_id"] for m in listed.json()]
    fake.enqueue(Script.sse(chat_events(text=["the second provider answers"])))
    cursor = balanced(cluster)
    try:
        log = await CursorSession(cursor, "pair-new-model").run(
            user_turn_message("hi", public_id, conversation_id="pm")
        )
    finally:
        await cursor.aclose()
    assert log.end == {}, log.end
    assert "the second provider answers" in final_text(log)


async def test_the_holder_killed_mid_round_its_turn_resumed_through_the_balancer(
    cluster: Cluster, fake: FakeProvider, tmp_path: Path
) -> None:
    """The instance holding the run is SIGKILLed while the round's Shell runs (the Write
    done): the editor's stream breaks; resumed through the balancer under a new run id, the
    turn runs the Shell only, on the instances still alive."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write = FakeToolCall(
        "call_w", "Write", (json.dumps({"path": "/out.txt", "contents": "once\n"}),)
    )
    shell = FakeToolCall("call_sh", "Shell", ('{"command": "echo ran"}',))
    fake.enqueue(Script.sse(chat_events(text=["Writing, then running."], tools=[write, shell])))
    cursor = balanced(cluster)
    gate = asyncio.Event()  # never set: the Shell still runs when the holder dies
    session = CursorSession(cursor, "pair-killed", workspace=workspace, shell_gate=gate)
    run = asyncio.create_task(
        session.run(user_turn_message("write it, run it", cluster.public_id), total_timeout=WAIT_S)
    )
    log = session.log

    try:
        await until(
            lambda: write_done_shell_running(log), "the Write committed and the Shell running"
        )
        killed = await asyncio.to_thread(holder, cluster, "pair-killed")
        killed.process.proc.send_signal(signal.SIGKILL)
        await asyncio.to_thread(killed.process.proc.wait, WAIT_S)
        broken = await run
        assert broken.dropped and broken.end is None
        assert (workspace / "out.txt").read_text() == "once\n"
        state = broken.checkpoints()[-1]
        fake.enqueue(Script.sse(chat_events(text=["Both done."])))
        resumed = CursorSession(cursor, "pair-resumed", workspace=workspace, blobs=broken.blobs)
        after = await resumed.run(
            resume_message(cluster.public_id, conversation_id="conv-1", conversation_state=state),
            total_timeout=WAIT_S,
        )
    finally:
        run.cancel()
        await cursor.aclose()
    assert after.end == {}, after.end
    assert exec_variants(after) == [("call_sh", "shell_stream_args")]  # the Write not again
    assert (await asyncio.to_thread(holder, cluster, "pair-resumed")) is not killed
    store = connect_shared_store(cluster.database_url)
    try:
        resumed_run = ConversationStore(store.database).run("pair-resumed")
    finally:
        store.close()
    assert resumed_run is not None and resumed_run.status.value == "completed"
