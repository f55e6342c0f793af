"""At most ``max_live_runs`` request ids are held at once: a new id beyond it first ends the
oldest finished run's retention, and with none finished it is refused; the bytes of appends
that waited out of order go back to the pool when their run ends."""

from __future__ import annotations

import msgspec

from tests.conftest import TEST_LIMITS, StartServer
from tests.e2e.test_finished_retention import finish_run, replayable
from tests.support.fake_cursor import FakeCursor, heartbeat_message
from tests.support.scripted_session import scripted_factory


async def test_beyond_the_live_ids_a_new_one_is_refused_until_one_finishes(
    make_server: StartServer,
) -> None:
    limits = msgspec.structs.replace(TEST_LIMITS, max_live_runs=3, finished_retention_s=30.0)
    server = await make_server(limits=limits, start_session=scripted_factory(first_frames=1))
    cursor = FakeCursor(f"http://{server.address}")
    try:
        # Three ids held by one out-of-order append each (no RunRequest yet).
        for name in ("w1", "w2", "w3"):
            assert (await cursor.append(name, 1, heartbeat_message())).status_code == 200
        refused = await cursor.append("w4", 1, heartbeat_message())
        assert refused.status_code == 413
        assert refused.json()["code"] == "resource_exhausted"
        assert "3 live runs" in refused.json()["message"]
        stream = await cursor.open_run_sse("w4")
        assert stream.response.status_code == 413
        await stream.aclose()
        assert server.registry.live_count == 3
    finally:
        await cursor.aclose()


async def test_a_new_id_ends_the_oldest_finished_run_early(make_server: StartServer) -> None:
    limits = msgspec.structs.replace(TEST_LIMITS, max_live_runs=2, finished_retention_s=30.0)
    server = await make_server(limits=limits, start_session=scripted_factory(first_frames=1))
    cursor = FakeCursor(f"http://{server.address}")
    try:
        await finish_run(cursor, "old")
        await finish_run(cursor, "newer")
        assert server.registry.live_count == 2
        assert (await cursor.append("fresh", 1, heartbeat_message())).status_code == 200
        assert server.registry.live_count == 2
        assert not await replayable(cursor, "old")  # its retention ended: 404
        assert await replayable(cursor, "newer")
    finally:
        await cursor.aclose()


async def test_appends_waiting_behind_a_gap_give_their_bytes_back_when_the_run_ends(
    make_server: StartServer,
) -> None:
    server = await make_server(start_session=scripted_factory(first_frames=1))
    cursor = FakeCursor(f"http://{server.address}")
    try:
        assert (await cursor.append("gapped", 5, heartbeat_message())).status_code == 200
        assert server.registry.buffered_append_bytes > 0
        # Nothing ever comes for 0..4: the RunRequest deadline ends the run.
        stream = await cursor.open_run_sse("gapped")
        assert (await stream.read_to_end(timeout=5)).end is not None
        assert server.registry.buffered_append_bytes == 0
    finally:
        await cursor.aclose()
