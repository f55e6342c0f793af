"""The timer port actors use for deadlines: a callback later, cancellable from any thread.

Actors never sleep in their mailbox; a deadline is a timer whose callback tells the actor a
message. The server's implementation is ``actors.loop.bridge.LoopTasks.call_later`` (timers on the
loop's heap, no thread per deadline); tests may pass any object with the same shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    """A scheduled callback."""

    def cancel(self) -> None:
        """Stop it if it has not started; safe from any thread, a no-op when already done."""


class Timers(Protocol):
    """Schedules callbacks; the callback runs on a foreign thread and must only ``tell``."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` once, ``delay`` seconds from now, unless cancelled first."""
        ...
