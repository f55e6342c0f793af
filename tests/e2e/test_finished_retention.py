"""Finished runs keep their frames for reconnects within a time and a byte budget."""

from __future__ import annotations

import msgspec

from actors.server.compose import RunningServer
from tests.conftest import TEST_LIMITS, StartServer
from tests.support.fake_cursor import FakeCursor, heartbeat_message, run_request_message
from tests.support.scripted_session import scripted_factory


async def finish_run(cursor: FakeCursor, request_id: str) -> None:
    """One scripted run to its end."""
    stream = await cursor.open_run_sse(request_id)
    await cursor.append(request_id, 0, run_request_message())
    first = await stream.next_envelope()
    assert first is not None and not first.is_end_stream
    await cursor.append(request_id, 1, heartbeat_message())
    assert (await stream.read_to_end()).end == {}


async def replayable(cursor: FakeCursor, request_id: str) -> bool:
    """Whether a reopened RunSSE gets the finished run's frames (404 once it is removed)."""
    stream = await cursor.open_run_sse(request_id)
    try:
        if stream.response.status_code == 404:
            return False
        return (await stream.read_to_end()).end == {}
    finally:
        await stream.aclose()


async def start(make_server: StartServer, budget: int) -> tuple[RunningServer, FakeCursor]:
    limits = msgspec.structs.replace(
        TEST_LIMITS, finished_retention_s=30.0, finished_retention_bytes=budget
    )
    server = await make_server(limits=limits, start_session=scripted_factory(first_frames=1))
    return server, FakeCursor(f"http://{server.address}")


async def test_finished_runs_within_the_byte_budget_are_all_kept(
    make_server: StartServer,
) -> None:
    server, cursor = await start(make_server, budget=1 << 20)
    try:
        for name in ("a", "b", "c"):
            await finish_run(cursor, name)
        assert server.registry.live_count == 3
        for name in ("a", "b", "c"):
            assert await replayable(cursor, name)
    finally:
        await cursor.aclose()


async def test_past_the_byte_budget_the_oldest_finished_runs_go_first(
    make_server: StartServer,
) -> None:
    # A budget smaller than one run's frames: only the newest finished run is kept.
    server, cursor = await start(make_server, budget=1)
    try:
        await finish_run(cursor, "a")
        assert server.registry.live_count == 1
        assert await replayable(cursor, "a")
        await finish_run(cursor, "b")
        await finish_run(cursor, "c")
        assert server.registry.live_count == 1
        assert await replayable(cursor, "c")
        # Removed early, and as after its time: 404, never a fresh run.
        assert not await replayable(cursor, "a")
        assert not await replayable(cursor, "b")
        assert server.registry.live_count == 1
    finally:
        await cursor.aclose()
