"""The Connect page's recorder with a shared record (``wire.http.agent_activity``): a request
costs no write, what was counted is added in the background after ``flush_after_s`` and at
``stop``, the console's read is the shared record plus what is not added yet, and a failed
addition is kept for the next one, never counted twice."""

from __future__ import annotations

import asyncio
import threading

import pytest

from wire.http.agent_activity import AgentActivity, AgentActivitySnapshot


class FakeShared:
    """The shared record as the store keeps it (``store.agent_activity``), in memory; every
    addition is kept, and ``fail`` makes the next ones raise."""

    def __init__(self) -> None:
        self.added: list[tuple[int, int, str | None, int | None]] = []
        self.fail = False
        self.threads: set[int] = set()
        self.row: tuple[int | None, str | None, int] = (None, None, 0)

    def add(
        self,
        requests: int,
        last_request_ms: int,
        client_version: str | None,
        version_ms: int | None,
    ) -> None:
        self.threads.add(threading.get_ident())
        if self.fail:
            raise OSError("the database did not answer")
        self.added.append((requests, last_request_ms, client_version, version_ms))
        last, version, total = self.row
        if client_version is not None and (last is None or (version_ms or 0) >= last):
            version = client_version
        self.row = (max(last or 0, last_request_ms), version, total + requests)

    def read(self) -> tuple[int | None, str | None, int]:
        self.threads.add(threading.get_ident())
        return self.row


class Clock:
    def __init__(self) -> None:
        self.now = 1000

    def __call__(self) -> int:
        self.now += 1
        return self.now


async def test_requests_are_added_once_in_the_background_not_one_write_each() -> None:
    shared, clock = FakeShared(), Clock()
    activity = AgentActivity(clock, shared, flush_after_s=0.05)
    activity.start()
    try:
        for version in ("1.0", None, "1.1"):
            activity.record(version)
        assert shared.added == []  # recording writes nothing
        await asyncio.sleep(0.3)
        assert shared.added == [(3, 1003, "1.1", 1003)]
        assert threading.get_ident() not in shared.threads  # the loop never waits on the store
    finally:
        await activity.stop()
    assert shared.added == [(3, 1003, "1.1", 1003)]  # nothing left: stop adds nothing more


async def test_the_console_reads_the_shared_record_plus_what_is_not_added_yet() -> None:
    shared, clock = FakeShared(), Clock()
    shared.row = (900, "other-instance", 7)
    activity = AgentActivity(clock, shared, flush_after_s=60)
    activity.record(None)
    assert await activity.current() == AgentActivitySnapshot(1001, "other-instance", 8)
    activity.record("mine")
    assert await activity.current() == AgentActivitySnapshot(1002, "mine", 9)
    assert activity.snapshot() == AgentActivitySnapshot(1002, "mine", 2)  # this process's
    await activity.flush()
    assert await activity.current() == AgentActivitySnapshot(1002, "mine", 9)


async def test_stop_adds_what_is_left() -> None:
    shared = FakeShared()
    activity = AgentActivity(Clock(), shared, flush_after_s=60)
    activity.start()
    activity.record("1.0")
    activity.record(None)
    await activity.stop()
    assert shared.added == [(2, 1002, "1.0", 1001)]


async def test_a_failed_addition_is_kept_for_the_next_and_never_counted_twice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    shared = FakeShared()
    activity = AgentActivity(Clock(), shared, flush_after_s=0.05)
    activity.start()
    try:
        shared.fail = True
        activity.record("1.0")
        await asyncio.sleep(0.2)
        assert "agent activity not added to the shared record" in caplog.text
        activity.record(None)
        assert (await activity.current()).requests == 2
        shared.fail = False
        await asyncio.sleep(0.3)  # tried again without a new request
        assert shared.added == [(2, 1002, "1.0", 1001)]
        assert await activity.current() == AgentActivitySnapshot(1002, "1.0", 2)
    finally:
        await activity.stop()
    assert shared.row[2] == 2


async def test_without_a_shared_record_the_console_reads_this_process() -> None:
    activity = AgentActivity(Clock())
    activity.start()
    activity.record("1.0")
    assert await activity.current() == activity.snapshot() == AgentActivitySnapshot(1001, "1.0", 1)
    await activity.stop()
