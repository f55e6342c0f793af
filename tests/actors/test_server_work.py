"""Server work on the loop (``actors.services.server_work``): the handler registered for a request's
type answers; a missing handler or one that raises answers ``ServerWorkFailed`` with a message
that holds nothing of the exception (it may carry a key); ``cancel`` stops the work."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec
import pytest

from actors.loop.bridge import LoopTasks
from actors.services.server_work import LoopServerWorkers, ServerWorkHandler
from wire.tools.base import ServerWorkFailed


class Echo(msgspec.Struct, frozen=True):
    text: str


class Slow(msgspec.Struct, frozen=True):
    pass


class Broken(msgspec.Struct, frozen=True):
    pass


async def echo(request: Echo) -> str:
    await asyncio.sleep(0)
    return request.text.upper()


async def slow(request: Slow) -> str:
    await asyncio.sleep(60)
    return "never"


async def broken(request: Broken) -> str:
    raise RuntimeError("GET https://search.example/?key=sk-secret-123 failed")


async def workers_and_answers() -> tuple[LoopServerWorkers, asyncio.Queue[Any]]:
    loop = asyncio.get_running_loop()
    answers: asyncio.Queue[Any] = asyncio.Queue()
    handlers: dict[type, ServerWorkHandler] = {Echo: echo, Slow: slow, Broken: broken}
    workers = LoopServerWorkers(LoopTasks(loop), handlers)
    return workers, answers


async def test_the_handler_for_the_requests_type_answers() -> None:
    workers, answers = await workers_and_answers()
    workers.start(Echo("hello"), answers.put_nowait)
    assert await asyncio.wait_for(answers.get(), 5) == "HELLO"


async def test_a_request_no_handler_takes_is_a_failure_naming_its_kind() -> None:
    workers, answers = await workers_and_answers()
    workers.start(ServerWorkFailed("not a request"), answers.put_nowait)
    assert await asyncio.wait_for(answers.get(), 5) == ServerWorkFailed(
        "this server cannot do ServerWorkFailed work"
    )


async def test_a_handler_that_raises_answers_a_failure_that_leaks_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    workers, answers = await workers_and_answers()
    with caplog.at_level(logging.DEBUG):
        workers.start(Broken(), answers.put_nowait)
        answer = await asyncio.wait_for(answers.get(), 5)
    assert answer == ServerWorkFailed("Broken failed on the server")
    assert "sk-secret-123" not in caplog.text
    assert "RuntimeError" in caplog.text


async def test_cancel_stops_the_work_and_nothing_answers() -> None:
    workers, answers = await workers_and_answers()
    handle = workers.start(Slow(), answers.put_nowait)
    await asyncio.sleep(0.05)
    assert handle.cancel()
    await asyncio.sleep(0.05)
    assert answers.empty()
