"""This process's lease on its instance id, and the sweep of dead peers' rows, on the loop.

Why a lease: two servers share one database (``store.instances``). Each keeps its lease alive
by a heartbeat every third of the lease, and every beat also sweeps: the running runs and call
records of an instance whose lease expired are closed, so a peer that died mid-turn has its
rows ended by whichever server sweeps next, while a live peer's rows are never touched; the
sweep also forgets the run routes (``store.run_routes``) of instances no lease covers.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging

import peewee

from store.conversations import ConversationStore
from store.instances import Instances, bind_instance, new_instance_id
from store.llm_calls import CallRecords
from store.run_routes import RunRoutes
from wire.log import log_event

logger = logging.getLogger("cursor_server.instance_lease")

# How long a dead process's runs and calls stay running before a peer's sweep closes them; a
# live process renews its lease every third of it.
INSTANCE_LEASE_S = 30.0
CALL_REASON = "the server stopped during the call"
RUN_REASON = "the server stopped during the run"


def sweep(database: peewee.Database) -> tuple[int, int]:
    """Close the running runs and calls no live lease covers (this host's dead processes
    give theirs up first): (runs, calls) closed."""
    Instances(database).drop_gone_local()
    runs = ConversationStore(database).cancel_unfinished_runs(RUN_REASON)
    calls = CallRecords(database).cancel_unfinished(CALL_REASON)
    RunRoutes(database).forget_stale()
    Instances(database).forget_expired()
    return runs, calls


class InstanceLease:
    """Registers the instance, beats and sweeps until ``stop``, then gives the lease back."""

    def __init__(self, database: peewee.Database, lease_s: float) -> None:
        self._db = database
        self._lease_ms = max(1, round(lease_s * 1000))
        self._interval_s = lease_s / 3
        self.instance_id = new_instance_id()
        self._internal_url: str | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Take the lease and bind it (before any store is built on the database), sweep once,
        then beat in the background."""
        await asyncio.to_thread(Instances(self._db).register, self.instance_id, self._lease_ms)
        bind_instance(self._db, self.instance_id)
        await self._sweep()
        self._task = asyncio.get_running_loop().create_task(self._beat())

    async def advertise(self, internal_url: str) -> None:
        """Name where peers forward this instance's requests (its peer listener, once bound)."""
        self._internal_url = internal_url
        await asyncio.to_thread(Instances(self._db).advertise, self.instance_id, internal_url)

    async def _sweep(self) -> None:
        runs, calls = await asyncio.to_thread(sweep, self._db)
        if runs or calls:
            log_event(
                logger,
                logging.WARNING,
                "unfinished rows of dead instances closed",
                runs=runs,
                calls=calls,
            )

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                kept = await asyncio.to_thread(
                    Instances(self._db).heartbeat, self.instance_id, self._lease_ms
                )
                if not kept:
                    # A peer swept this process as dead; its runs are fenced off by now.
                    log_event(
                        logger, logging.ERROR, "instance lease lost", instance=self.instance_id
                    )
                    await asyncio.to_thread(
                        functools.partial(
                            Instances(self._db).register,
                            self.instance_id,
                            self._lease_ms,
                            internal_url=self._internal_url,
                        )
                    )
                await self._sweep()
            except peewee.DatabaseError as exc:
                log_event(logger, logging.WARNING, "instance heartbeat failed", error=str(exc))

    async def stop(self) -> None:
        """After the process ended its own rows: stop beating and give the lease back."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        try:
            await asyncio.to_thread(Instances(self._db).release, self.instance_id)
        except peewee.DatabaseError as exc:
            # The shutdown goes on: the lease expires by itself, a peer's sweep just waits
            # for that (this process's rows were ended before).
            log_event(logger, logging.WARNING, "instance lease not released", error=str(exc))
