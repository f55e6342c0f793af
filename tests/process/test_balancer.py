"""Three ``python run.py`` instances on one PostgreSQL schema behind HAProxy, round robin.

The active/active deployment of docs/operations.md, with its HAProxy configuration
(``tests/support/haproxy.cfg.template``): every instance listens beyond loopback on both
listeners with the same database, secret key and console token, lets in only the balancer's
address (``CURSOR_AGENT_ALLOW``) and names the balancer's HTTP/2 frontend as its public URL;
HAProxy adds the token to every request and sends each request to the next instance. Checked
here, from HAProxy's own request log: every request, also on one kept-alive connection or one
HTTP/2 connection, goes to the next instance; a whole turn with a tool over ``Run`` works
through the balancer (the stream stays on the instance it reached, both ways at once), on each
instance in turn; ``GetServerConfig``, whichever instance answers, names the public URL; and
an instance killed before its health check fails costs no request. Turns over the HTTP/1.1
RunSSE and BidiAppend pair, whose requests the instances forward to the run's holder, are
``test_balancer_pair.py``'s.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from store.conversations import ConversationStore
from tests.conftest import add_fake_model
from tests.support.fake_cursor import CursorSession, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from tests.support.h2_client import RUN, H2Client, H2Cursor
from tests.support.h2_servers import OFFICIAL_CONFIG, upstream_config
from tests.support.haproxy import (
    Backend,
    Balancer,
    MakeBalancer,
    haproxy_config,
    make_balancer,
    start_balancer,
)
from tests.support.process import SHARED_KEY_ENV, ServerProcess, connect_shared_store, server_env
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver
from wire.server_config import SERVER_CONFIG_ROUTES

__all__ = ["make_balancer", "start_balancer", "upstream_config"]  # fixtures used by name

TOKEN = "balancer-test-token-0123456789"
NAMES = ("a", "b", "c")
HTTP2_LINE = re.compile(r"http2=http://(\S+)")
PROTO = {"content-type": "application/proto", "connect-protocol-version": "1"}
CONTEXT = agent.RequestContext()  # the editor's context, sent in the RunRequest


@dataclass
class Instance:
    name: str
    process: ServerProcess
    backend: Backend  # its listeners as the balancer reaches them (127.0.0.1)


@dataclass
class Cluster:
    instances: list[Instance]
    balancer: Balancer
    public_id: str  # the fake provider's model, seeded in the shared database
    database_url: str


def loopback(address: str) -> str:
    """``0.0.0.0:port`` (a wildcard bind, as the startup line names it) as reached here."""
    return f"127.0.0.1:{address.rpartition(':')[2]}"


@pytest.fixture
async def cluster(
    tmp_path: Path,
    pg_url: str,
    upstream_config: str,
    fake: FakeProvider,
    make_balancer: MakeBalancer,
) -> AsyncIterator[Cluster]:
    """Three instances on the test's schema, the fake provider's model seeded, and HAProxy in
    front of them (its HTTP/2 frontend their public URL); all stopped at teardown."""
    store = connect_shared_store(pg_url)
    try:
        public_id = add_fake_model(store, fake)
    finally:
        store.close()
    balancer = make_balancer(token=TOKEN, h2=True)
    processes = []
    for name in NAMES:
        folder = tmp_path / name
        folder.mkdir()
        env = server_env(
            folder,
            CURSOR_DATABASE_URL=pg_url,
            CURSOR_LISTEN_ADDR="0.0.0.0:0",
            CURSOR_H2_LISTEN_ADDR="0.0.0.0:0",
            CURSOR_CONSOLE_TOKEN=TOKEN,
            CURSOR_AGENT_ALLOW="127.0.0.1/32",
            CURSOR_PUBLIC_URL=balancer.h2_url,
            CURSOR_UPSTREAM_URL=upstream_config,
            **SHARED_KEY_ENV,
        )
        processes.append((name, ServerProcess(env)))
    instances = []
    try:
        for name, process in processes:
            address = await asyncio.to_thread(process.wait_for_address)
            h2 = HTTP2_LINE.search(process.log)
            assert h2 is not None, process.log
            backend = Backend(name, loopback(address), loopback(h2.group(1)))
            instances.append(Instance(name, process, backend))
        await balancer.serve([instance.backend for instance in instances])
        yield Cluster(instances, balancer, public_id, pg_url)
    finally:
        for _, process in processes:
            process.stop()


def in_turn(servers: list[str]) -> None:
    """Each request went to the next instance: every three in a row are the three."""
    assert len(servers) >= len(NAMES), servers
    for start in range(len(servers) - len(NAMES) + 1):
        assert sorted(servers[start : start + len(NAMES)]) == sorted(NAMES), servers


async def test_healthz_reaches_every_instance_in_turn_on_one_connection(cluster: Cluster) -> None:
    """Six probes on one kept-alive HTTP/1.1 connection, then six streams on one HTTP/2
    connection: HAProxy's log shows one client connection each and the three instances in
    turn, twice; its stats count each instance's answers."""
    balancer = cluster.balancer
    host, _, port = balancer.http1_address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as kept_alive:
        for _ in range(6):
            kept_alive.sendall(b"GET /healthz HTTP/1.1\r\nHost: cursor-server\r\n\r\n")
            answer = b""
            while not answer.endswith(b"}"):
                chunk = kept_alive.recv(4096)
                assert chunk, answer  # the balancer kept the connection open
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200 ") and b'{"status": "ok"}' in answer
    over_http1 = await balancer.logged(6, "/healthz")
    assert len({logged.client for logged in over_http1}) == 1
    assert {logged.frontend for logged in over_http1} == {"cursor_http1"}
    in_turn([logged.server for logged in over_http1])

    assert balancer.h2_address is not None
    client = await H2Client.connect(balancer.h2_address)
    try:
        for _ in range(6):
            stream = client.open("/healthz", method="GET", end=True)
            assert (await stream.headers())[":status"] == "200"
            assert json.loads(await stream.body()) == {"status": "ok"}
    finally:
        await client.aclose()
    over_h2 = (await balancer.logged(12, "/healthz"))[6:]
    assert len({logged.client for logged in over_h2}) == 1
    assert {logged.frontend for logged in over_h2} == {"cursor_h2"}
    in_turn([logged.server for logged in over_h2])
    # HAProxy's counters agree: two answers from each instance on each backend (health
    # checks are not counted there).
    for backend in ("cursor_http1", "cursor_h2"):
        answered = {name: row["hrsp_2xx"] for name, row in balancer.server_stats(backend).items()}
        assert answered == dict.fromkeys(NAMES, "2"), (backend, answered)


def read_turn(fake: FakeProvider, workspace: Path, turn: int) -> str:
    """The provider's script of a turn that reads a file of the workspace; the file's text."""
    text = f"notes of turn {turn}"
    (workspace / f"notes-{turn}.txt").write_text(text + "\n")
    path = str(workspace / f"notes-{turn}.txt")
    call = FakeToolCall(f"call_read_{turn}", "Read", (json.dumps({"path": path}),))
    fake.enqueue(Script.sse(chat_events(text=["Reading."], tools=[call])))
    fake.enqueue(Script.sse(chat_events(text=[f"Turn {turn} read."])))
    return text


def run_status(database_url: str, run_id: str) -> str | None:
    store = connect_shared_store(database_url)
    try:
        run = ConversationStore(store.database).run(run_id)
        return None if run is None else run.status.value
    finally:
        store.close()


async def test_tool_turns_over_run_through_the_balancer(
    cluster: Cluster, fake: FakeProvider, tmp_path: Path
) -> None:
    """Three turns, one after another, each a ``Run`` stream on one HTTP/2 connection to the
    balancer: each stream stays on the instance it reached while the model's Read goes to
    the editor and its result comes back on the same stream; the three land on the three
    instances, and each turn completes there."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert cluster.balancer.h2_address is not None
    cursor = H2Cursor(await H2Client.connect(cluster.balancer.h2_address))
    try:
        for turn in range(3):
            expected = read_turn(fake, workspace, turn)
            session = CursorSession(cursor, f"run-{turn}", workspace=workspace)
            log = await session.run(
                user_turn_message(
                    "what do my notes say?",
                    cluster.public_id,
                    conversation_id=f"conv-{turn}",
                    request_context=CONTEXT,
                )
            )
            assert log.end == {}, log.end
            assert "turn_ended" in log.kinds()
            # The Read's result went up the stream the question came down.
            results = [m for m in fake.requests[-1].json["messages"] if m["role"] == "tool"]
            assert expected in results[0]["content"]
    finally:
        await cursor.aclose()
    runs = await cluster.balancer.logged(3, RUN)
    assert len({logged.client for logged in runs}) == 1
    assert all(logged.status == 200 for logged in runs)
    in_turn([logged.server for logged in runs])
    for turn in range(3):
        assert await asyncio.to_thread(run_status, cluster.database_url, f"run-{turn}") == (
            "completed"
        )


async def test_get_server_config_through_the_balancer_names_the_public_url(
    cluster: Cluster,
) -> None:
    """Asked three times through the HTTP/1.1 frontend (each instance answers once) and once
    through the HTTP/2 one: the agent URLs are the balancer's HTTP/2 frontend and the
    transport HTTP/2. Without the balancer's token an instance refuses the same request."""
    balancer = cluster.balancer
    answers = []
    async with httpx.AsyncClient(base_url=balancer.http1_url) as client:
        for _ in range(3):
            response = await client.post(SERVER_CONFIG_ROUTES[0], headers=PROTO)
            assert response.status_code == 200, response.text
            answers.append(response.content)
    assert balancer.h2_address is not None
    h2_client = await H2Client.connect(balancer.h2_address)
    try:
        stream = h2_client.open(SERVER_CONFIG_ROUTES[1], PROTO, end=True)
        assert (await stream.headers())[":status"] == "200"
        answers.append(await stream.body())
    finally:
        await h2_client.aclose()
    for answer in answers:
        assert answer.startswith(OFFICIAL_CONFIG)
        config = aiserver.GetServerConfigResponse.FromString(answer)
        assert config.http2_config == aiserver.HTTP2_CONFIG_UNSPECIFIED
        assert config.agent_url_config.agent_url == balancer.h2_url
        assert config.agent_url_config.agentn_url == balancer.h2_url
    in_turn([logged.server for logged in await balancer.logged(3, SERVER_CONFIG_ROUTES[0])])

    direct = cluster.instances[0].backend.http1
    async with httpx.AsyncClient(base_url=f"http://{direct}") as client:
        refused = await client.post(SERVER_CONFIG_ROUTES[0], headers=PROTO)
    assert refused.status_code == 403
    assert "X-Cursor-Server-Token" in refused.text


async def test_a_killed_instance_costs_no_request_before_its_health_check_fails(
    cluster: Cluster,
) -> None:
    """Right after one instance is SIGKILLed, before a health check could mark it down, no
    request fails on either frontend: the connection it refuses is retried on the next
    instance (``retries`` with ``option redispatch``), as HAProxy's log shows."""
    balancer = cluster.balancer
    killed = cluster.instances[1]
    killed.process.proc.send_signal(signal.SIGKILL)
    await asyncio.to_thread(killed.process.proc.wait, 10)
    async with httpx.AsyncClient(base_url=balancer.http1_url) as client:
        for _ in range(6):
            assert (await client.get("/healthz")).status_code == 200
    assert balancer.h2_address is not None
    h2_client = await H2Client.connect(balancer.h2_address)
    try:
        for _ in range(6):
            stream = h2_client.open("/healthz", method="GET", end=True)
            assert (await stream.headers())[":status"] == "200"
            await stream.body()
    finally:
        await h2_client.aclose()
    answered = await balancer.logged(12, "/healthz")
    assert [each.frontend for each in answered] == ["cursor_http1"] * 6 + ["cursor_h2"] * 6
    assert killed.name not in {each.server for each in answered}
    assert {each.status for each in answered} == {200}
    # The first ones, sent at once, came well within the two failed checks (2 s apart) that
    # mark an instance down: round robin still gave the killed one its turns, and each such
    # request went on to another instance.
    assert any(each.retries.startswith("+") for each in answered[:6]), answered


def test_the_template_fills_in_without_http2_or_a_token() -> None:
    """For servers on loopback with no HTTP/2 listener: no HTTP/2 part, no token line, and
    the comments that name the placeholders kept."""
    text = haproxy_config(
        [Backend("a", "127.0.0.1:3001"), Backend("b", "127.0.0.1:3002")],
        http1_bind="127.0.0.1:3000",
        h2_bind=None,
        stats_socket="/tmp/stats.sock",
        token=False,
    )
    body = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert "    server a 127.0.0.1:3001" in body and "    server b 127.0.0.1:3002" in body
    assert not any("cursor_h2" in line or "X-Cursor-Server-Token" in line for line in body)
    assert "<HTTP1_SERVERS>" in text  # in the comment that explains it
