"""The one place where actor threads cross into the asyncio loop.

``LoopRunOutput`` implements ``actors.run_output.RunOutput`` by scheduling each call on the
loop with ``call_soon_threadsafe``, which keeps the calls of one actor in order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

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
