"""The one place where actor threads cross into the asyncio loop.

Actors run on pykka threads; sockets live on the aiohttp loop. Going loop -> actor is always
``ActorRef.tell`` (a thread-safe queue put). Going actor -> loop is only through this module:
``LoopRunOutput`` schedules a run's frames with ``call_soon_threadsafe`` (which keeps one
actor's calls in order) and ``LoopTasks`` submits coroutines (provider HTTP streams) that the
actor can cancel without ever blocking its mailbox.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from wire.errors import ConnectError


class LoopRunOutput:
    """RunOutput for one run, delivering onto the loop that owns its outbound stream."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        send: Callable[[bytes], None],
        run_started: Callable[[], None],
        finish: Callable[[ConnectError | None], None],
    ) -> None:
        self._loop = loop
        self._send = send
        self._run_started = run_started
        self._finish = finish

    def send(self, frame: bytes) -> None:
        self._call(self._send, frame)

    def run_started(self) -> None:
        self._call(self._run_started)

    def finish(self, error: ConnectError | None) -> None:
        self._call(self._finish, error)

    def _call(self, fn: Callable[..., None], *args: object) -> None:
        # A closed loop means the server is gone, and every subscriber with it.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(fn, *args)


class LoopTasks:
    """Runs coroutines on the server's loop on behalf of actors."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def submit(self, coroutine: Coroutine[Any, Any, None]) -> concurrent.futures.Future[None]:
        """Start ``coroutine`` on the loop; ``cancel()`` on the result cancels the task there."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)
