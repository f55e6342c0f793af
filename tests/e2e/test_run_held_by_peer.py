"""A client that retries a run on this server while the server that ran it may still be alive.

The run id is running on a peer whose lease has not expired: the retry ends ``unavailable``
(retry later), naming the peer, not ``internal``; nothing of it reaches the provider."""

from __future__ import annotations

from pathlib import Path

from store import Store, connect_store
from store.conversations import ConversationStore
from store.instances import Instances, bind_instance
from tests.conftest import StartServer
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider


async def test_a_run_a_live_peer_holds_ends_unavailable_naming_it(
    make_server: StartServer,
    fake: FakeProvider,
    public_id: str,
    server_store: Store,
    tmp_path: Path,
) -> None:
    peer = connect_store(f"sqlite:///{tmp_path}/test.db")  # the same database as the server
    try:
        Instances(peer.database).register("instance-peer", 60_000, host="another-host")
        bind_instance(peer.database, "instance-peer")
        conversations = ConversationStore(peer.database)
        root = conversations.ensure_conversation("conv-1")
        conversations.claim_run("run-held", "conv-1", root)
        server = await make_server()
        cursor = FakeCursor(f"http://{server.address}")
        try:
            log = await CursorSession(cursor, "run-held").run(user_turn_message("hi", public_id))
        finally:
            await cursor.aclose()
    finally:
        peer.close()
    assert log.end is not None
    error = log.end["error"]
    assert error["code"] == "unavailable", error
    assert "instance-peer" in error["message"] and "lease" in error["message"]
    assert fake.requests == []
    run = ConversationStore(server_store.database).run("run-held")
    assert run is not None and run.status.value == "running"  # still the peer's
