"""Two servers on one database: leases, attribution and the sweep (``store.instances``).

Each "server" here is its own connection to one database (SQLite file and PostgreSQL) with its
own instance bound, as two ``run.py`` processes have. A sweep closes the running runs and call
records of an instance whose lease expired, or whose process on this host is gone, and never a
live peer's; a run id a dead peer held may be claimed again, and the dead peer's late writes
with it are refused.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from actors.server.settings import SettingError, load_settings
from actors.services.instance_lease import CALL_REASON, INSTANCE_LEASE_S, RUN_REASON, sweep
from store import Store, connect_store
from store.conversations import ConversationStore
from store.conversations.errors import RunHeldByPeer, StaleRun
from store.instances import Instances, bind_instance
from store.llm_calls import CallRecords, NewCall
from tests.store.test_conversation_store import runtime

LEASE_MS = 60_000
ELSEWHERE = "another-host"


def call(run_id: str) -> NewCall:
    return NewCall(run_id, f"{run_id}:0", 1, "p", "openai-chat", "u", "m1", "m", "M", False)


class Server:
    """One connection to the shared database with an instance bound and its lease taken."""

    def __init__(self, url: str, instance_id: str, host: str | None, lease_ms: int) -> None:
        self.store: Store = connect_store(url)
        self.instance_id = instance_id
        Instances(self.store.database).register(instance_id, lease_ms, host=host)
        bind_instance(self.store.database, instance_id)
        self.conversations = ConversationStore(self.store.database)
        self.calls = CallRecords(self.store.database)

    def start_run(self, conversation_id: str, run_id: str) -> int:
        """Claim ``run_id`` on a new conversation and start one provider call in it."""
        root = self.conversations.ensure_conversation(conversation_id)
        self.conversations.claim_run(run_id, conversation_id, root)
        return self.calls.start(call(run_id))


@pytest.fixture
def two(db_url: str) -> Iterator[tuple[Server, Server]]:
    """A live server ``a`` on this host and a peer ``b`` on another host (its process
    cannot be checked from here), both with a minute's lease."""
    a = Server(db_url, "instance-a", None, LEASE_MS)
    b = Server(db_url, "instance-b", ELSEWHERE, LEASE_MS)
    yield a, b
    a.store.close()
    b.store.close()


def statuses(server: Server, run_id: str, call_id: int) -> tuple[str, str]:
    run = server.conversations.run(run_id)
    record = server.calls.get(call_id)
    assert run is not None and record is not None
    return run.status.value, record.call.status


def test_a_live_peers_rows_are_untouched_by_a_sweep(two: tuple[Server, Server]) -> None:
    """B's run and call are running under a live lease: A's sweep (its startup's, its
    heartbeat's) leaves them running, and B goes on writing."""
    a, b = two
    b_call = b.start_run("conv-b", "run-b")
    a_call = a.start_run("conv-a", "run-a")
    assert sweep(a.store.database) == (0, 0)
    assert statuses(a, "run-b", b_call) == ("running", "running")
    assert statuses(a, "run-a", a_call) == ("running", "running")
    head = b.conversations.conversation("conv-b")
    assert head is not None
    b.conversations.append_once("run-b", head.current_revision_id, runtime("req-b"))


def test_a_dead_peers_rows_are_closed_once_its_lease_expired(db_url: str) -> None:
    """B (on another host) stops beating; until its lease expires A's sweep leaves its rows,
    then closes them, releases the conversation and forgets the lease; A's own rows stay."""
    a = Server(db_url, "instance-a", None, LEASE_MS)
    b = Server(db_url, "instance-b", ELSEWHERE, 300)
    try:
        b_call = b.start_run("conv-b", "run-b")
        a_call = a.start_run("conv-a", "run-a")
        assert sweep(a.store.database) == (0, 0)
        time.sleep(0.4)
        assert sweep(a.store.database) == (1, 1)
        assert statuses(a, "run-b", b_call) == ("cancelled", "cancelled")
        assert statuses(a, "run-a", a_call) == ("running", "running")
        run = a.conversations.run("run-b")
        record = a.calls.get(b_call)
        assert run is not None and run.failure_message == RUN_REASON
        assert record is not None and record.call.error_message == CALL_REASON
        conversation = a.conversations.conversation("conv-b")
        assert conversation is not None and conversation.active_run_id is None
        assert Instances(a.store.database).live() == ["instance-a"]
        # B's late writes are refused: its run no longer owns the conversation.
        with pytest.raises(StaleRun):
            b.conversations.begin_provider_call("run-b")
    finally:
        a.store.close()
        b.store.close()


def test_a_peer_on_this_host_whose_process_is_gone_is_dead_at_once(db_url: str) -> None:
    """A lease of this host whose pid names no process is given up by the next sweep, well
    before it expires: a restart on one machine closes what the killed process left."""
    a = Server(db_url, "instance-a", None, LEASE_MS)
    b = Server(db_url, "instance-b", None, LEASE_MS)
    try:
        b_call = b.start_run("conv-b", "run-b")
        assert sweep(a.store.database) == (0, 0)  # b's pid (this process) is alive
        gone = Instances(a.store.database).drop_gone_local(alive=lambda pid: False)
        assert sorted(gone) == ["instance-a", "instance-b"]
        Instances(a.store.database).register("instance-a2", LEASE_MS)
        bind_instance(a.store.database, "instance-a2")
        assert sweep(a.store.database) == (1, 1)
        assert statuses(a, "run-b", b_call) == ("cancelled", "cancelled")
    finally:
        a.store.close()
        b.store.close()


def test_a_dead_peers_run_id_is_claimed_again_and_the_peer_fenced_off(db_url: str) -> None:
    """The client retries the same request id on A: while B's lease is live the id is
    running elsewhere (``RunHeldByPeer``, a run end ``unavailable``: retry later); once it
    expired A takes the run over, and B's late writes under that id are refused though the
    run is running again."""
    a = Server(db_url, "instance-a", None, LEASE_MS)
    b = Server(db_url, "instance-b", ELSEWHERE, 300)
    try:
        b.start_run("conv-1", "run-1")
        assert b.conversations.begin_provider_call("run-1") == 0
        root = a.conversations.ensure_conversation("conv-1")
        with pytest.raises(RunHeldByPeer, match="instance instance-b, whose lease"):
            a.conversations.claim_run("run-1", "conv-1", root)
        time.sleep(0.4)
        a.conversations.claim_run("run-1", "conv-1", root)
        assert a.conversations.begin_provider_call("run-1") == 1  # the index is kept
        with pytest.raises(StaleRun, match="instance instance-a"):
            b.conversations.append_once("run-1", root, runtime("req-1"))
        a.conversations.append_once("run-1", root, runtime("req-1"))
    finally:
        a.store.close()
        b.store.close()


def test_a_clean_shutdown_gives_the_lease_back(opened: Store) -> None:
    instances = Instances(opened.database)
    instances.register("instance-x", LEASE_MS)
    assert instances.heartbeat("instance-x", LEASE_MS)
    assert instances.live() == ["instance-x"]
    instances.release("instance-x")
    assert instances.live() == []
    assert not instances.heartbeat("instance-x", LEASE_MS)  # gone: the process re-registers


def test_the_lease_time_is_a_process_setting() -> None:
    """``CURSOR_INSTANCE_LEASE_SECONDS``: 30 s unless set; a non-positive one stops startup."""
    assert load_settings({}).instance_lease_s == INSTANCE_LEASE_S == 30.0
    assert load_settings({"CURSOR_INSTANCE_LEASE_SECONDS": "2.5"}).instance_lease_s == 2.5
    with pytest.raises(SettingError, match="CURSOR_INSTANCE_LEASE_SECONDS"):
        load_settings({"CURSOR_INSTANCE_LEASE_SECONDS": "0"})
