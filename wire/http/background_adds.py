"""Adding one process's counts to a record every instance shares, in the background.

The Connect page's activity and the protocol drift are counted on the event loop per request
and added to the database a moment later, in one transaction, never on a request's path. An
owner marks that something was counted (``counted``); ``flush_after_s`` later ``flush`` runs:
under the owner's ``turn`` (the lock its reads of the shared record take too) it takes what was
counted (``take``), adds it in a thread (``write``) and, when that fails, gives it back
(``keep``) for the next addition, so nothing is counted twice or lost. A failed addition is
logged and tried again after another wait; ``stop`` cancels the loop only between additions
(one cancelled while its thread writes could still commit, and what it took would then be added
twice) and makes the last addition. Without a shared record (no ``write``) nothing is added.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Generic, TypeVar

from wire.log import log_event

T = TypeVar("T")


class BackgroundAdds(Generic[T]):
    """The background additions of one owner; used on the event loop only."""

    def __init__(
        self,
        take: Callable[[], T | None],
        write: Callable[[T], None] | None,
        keep: Callable[[T], None],
        turn: asyncio.Lock,
        flush_after_s: float,
        what: str,
        logger: logging.Logger,
    ) -> None:
        """``take`` hands over what was counted and starts counting afresh (None: nothing
        was); ``write`` adds that to the shared record (synchronous, run in a thread; raising
        the store's error), or is None without a shared record; ``keep`` takes back what a
        failed ``write`` did not add. ``what`` names the record in the owner's ``logger`` line
        of a failed addition."""
        self._take = take
        self._write = write
        self._keep = keep
        self._turn = turn
        self._flush_after_s = flush_after_s
        self._what = what
        self._logger = logger
        self._counted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def counted(self) -> None:
        """Something is waiting to be added."""
        self._counted.set()

    def start(self) -> None:
        """Begin the additions (on the running loop); without a shared record, nothing."""
        if self._write is not None and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._add_when_counted())

    async def stop(self) -> None:
        """Stop the additions and make the last one."""
        if self._task is not None:
            async with self._turn:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
            self._task = None
        await self._add_logged()

    async def flush(self) -> None:
        """Add what was counted to the shared record now; on failure it is kept for the next
        one and the store's error raised."""
        if self._write is None:
            return
        async with self._turn:
            counted = self._take()
            if counted is None:
                return
            try:
                await asyncio.to_thread(self._write, counted)
            except Exception:
                self._keep(counted)
                raise

    async def _add_when_counted(self) -> None:
        while True:
            await self._counted.wait()
            await asyncio.sleep(self._flush_after_s)
            self._counted.clear()
            if not await self._add_logged():
                self._counted.set()  # tried again after another wait

    async def _add_logged(self) -> bool:
        try:
            await self.flush()
        except Exception as exc:
            log_event(
                self._logger,
                logging.WARNING,
                f"{self._what} not added to the shared record",
                error=str(exc),
            )
            return False
        return True
