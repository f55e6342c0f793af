"""The one place where actor threads cross into the asyncio loop.

Actors run on pykka threads; sockets live on the aiohttp loop. Going loop -> actor is always
``ActorRef.tell`` (a thread-safe queue put). Going actor -> loop is only through this module,
and every call it makes there goes through one queue per loop (``LoopCalls``): in the order the
calls were made, with one ``call_soon_threadsafe`` (one wake-up of the loop, a write to its
self-pipe) per burst rather than per call. ``LoopRunOutput`` schedules a run's frames,
``LoopTasks`` submits coroutines (provider HTTP streams) that the
actor can cancel without ever blocking its mailbox, and keeps timers (``call_later``) on the
loop's timer heap, so a deadline costs no thread of its own, and ``LoopMailbox`` is a listener
actors ``tell`` whose messages a coroutine on the loop awaits (the console's model checks).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from wire.errors import ConnectError

Call = tuple[Callable[..., object], tuple[object, ...]]


class LoopCalls:
    """Calls made from any thread, run on one loop in the order they were made.

    A call that finds none waiting wakes the loop once (``call_soon_threadsafe``); the calls
    that follow before the loop runs them join that wake-up. A run's checkpoint is several KV
    SETs, their deadlines and the checkpoint frame, told within microseconds: one wake-up
    instead of one each. An exception in a call goes to the loop's exception handler, as
    ``call_soon_threadsafe``'s would, and the calls after it still run. After the loop closes,
    calls are dropped: the server is gone.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._pending: list[Call] = []
        self._scheduled = False
        # Wake-ups of the loop from other threads: this queue's (one per burst of calls) and
        # the coroutines ``LoopTasks`` submits (one each).
        self.wakeups = 0

    def call(self, fn: Callable[..., object], *args: object) -> None:
        with self._lock:
            self._pending.append((fn, args))
            if self._scheduled:
                return
            self._scheduled = True
            self.wakeups += 1
        try:
            self._loop.call_soon_threadsafe(self._run_pending)
        except RuntimeError:  # the loop is closed
            with self._lock:
                self._pending.clear()
                self._scheduled = False

    def count_wakeup(self) -> None:
        """Another wake-up of the loop (a coroutine submitted on it)."""
        with self._lock:
            self.wakeups += 1

    def _run_pending(self) -> None:
        with self._lock:
            calls, self._pending = self._pending, []
            self._scheduled = False
        for fn, args in calls:
            try:
                fn(*args)
            except Exception as exc:
                self._loop.call_exception_handler(
                    {"message": f"Exception in callback {fn!r}", "exception": exc}
                )


_CALLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopCalls] = (
    weakref.WeakKeyDictionary()
)
_CALLS_LOCK = threading.Lock()


def loop_wakeups() -> int:
    """The wake-ups of every loop of this process by other threads so far."""
    return sum(calls.wakeups for calls in list(_CALLS.values()))


def loop_calls(loop: asyncio.AbstractEventLoop) -> LoopCalls:
    """The one call queue of ``loop``."""
    calls = _CALLS.get(loop)
    if calls is None:
        with _CALLS_LOCK:
            calls = _CALLS.get(loop)
            if calls is None:
                calls = _CALLS[loop] = LoopCalls(loop)
    return calls


class LoopRunOutput:
    """RunOutput for one run, delivering onto the loop that owns its outbound stream."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        send: Callable[[bytes], None],
        run_started: Callable[[], None],
        finish: Callable[[ConnectError | None], None],
    ) -> None:
        self._calls = loop_calls(loop)
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
        self._calls.call(fn, *args)


M = TypeVar("M")


class LoopMailbox(Generic[M]):
    """A thread-safe ``tell`` whose messages a coroutine on ``loop`` awaits with ``get``.

    Actors tell it from their threads; each message is put on an ``asyncio.Queue`` by
    the loop's ``LoopCalls``, so messages from one thread arrive in the order told and the
    awaiting handler never blocks the loop. Messages told after the loop closed are dropped:
    the server is gone, and whoever awaited them with it.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._calls = loop_calls(loop)
        self._queue: asyncio.Queue[M] = asyncio.Queue()

    def tell(self, message: M) -> None:
        self._calls.call(self._queue.put_nowait, message)

    async def get(self) -> M:
        """The next message told (only on the mailbox's loop)."""
        return await self._queue.get()


class LoopTasks:
    """Runs coroutines on the server's loop on behalf of actors."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._calls = loop_calls(loop)

    def submit(self, coroutine: Coroutine[Any, Any, None]) -> concurrent.futures.Future[None]:
        """Start ``coroutine`` on the loop; ``cancel()`` on the result cancels the task there."""
        self._calls.count_wakeup()
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def call_later(self, delay: float, callback: Callable[[], None]) -> LoopTimer:
        """Run ``callback`` on the loop ``delay`` seconds from now (not from when the loop sees it).

        ``callback`` runs on the loop thread, so it must be quick and non-blocking (an
        ``ActorRef.tell``). If the loop is already closed the timer never fires: the server is
        gone, and every run with it.
        """
        return LoopTimer(self._loop, self._loop.time() + delay, callback)


def _nothing() -> None:
    """A cancelled timer's callback."""


class LoopTimer:
    """One pending callback on the loop; ``cancel()`` is safe from any thread.

    After ``cancel()`` returns the callback will not start (the flag is checked under the same
    lock the firing side takes). A cancel that races with a firing callback cannot stop it, so
    the receiver must still ignore a deadline for work that is already done.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, when: float, callback: Callable[[], None]
    ) -> None:
        self._loop = loop
        self._callback = callback
        self._lock = threading.Lock()
        self._done = False  # fired or cancelled
        loop_calls(loop).call(self._schedule, when)

    def _schedule(self, when: float) -> None:
        with self._lock:
            if not self._done:
                self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        self._callback()

    def cancel(self) -> None:
        """Stop the callback from running; a no-op once it fired or was cancelled.

        Only the flag changes: the loop's handle stays until its time and then fires as a
        no-op. Cancelling it on the loop would cost a cross-thread wake-up per timer, and the
        BlobSyncActor cancels one per acknowledged blob (deadlines are seconds away, so few
        handles wait at once). The callback is dropped now, so what it holds is not kept
        until then."""
        with self._lock:
            self._done = True
            self._callback = _nothing
