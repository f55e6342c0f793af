"""Instances on one PostgreSQL serving as one: who holds each run, the listener peers forward
to, and the cancel a newer run sends to the instance holding the run it superseded.

The edge's ``PeerForwarder`` asks ``StoreRouteBook`` (the ``run_routes`` rows, off the loop)
who holds a request id; ``PeerListener`` takes what peers forward; ``PeerRunCanceller`` is the
SessionActor's way to stop a run held elsewhere (``actors.run.start.took_over``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

import aiohttp
import msgspec
import peewee

from actors.loop.bridge import LoopTasks
from store.base.secrets import secret_box
from store.instances import Instances
from store.run_routes import RunRoute, RunRoutes
from wire.errors import Code, ConnectError
from wire.hop_by_hop import PEER_TOKEN_HEADER
from wire.http.agent_routes import AgentRoutes
from wire.http.limits import EdgeLimits
from wire.http.peer_forwarding import PeerForwarder, new_peer_session
from wire.http.peer_listener import CANCEL_RUN_PATH, CancelRunRequest, PeerListener
from wire.log import log_event

logger = logging.getLogger("cursor_server.peers")

PEER_TOKEN_PURPOSE: Final = "peer forwarding"
# Take-overs raced by other instances before one route read settles who holds an id.
_MAX_ROUTE_READS: Final = 4


class StoreRouteBook:
    """``RouteBook`` over ``store.run_routes`` for the instance ``instance_id``."""

    def __init__(self, database: peewee.Database, instance_id: str) -> None:
        self._routes = RunRoutes(database)
        self._instances = Instances(database)
        self._me = instance_id

    async def holder(self, request_id: str) -> str | None:
        try:
            return await self._holder(request_id)
        except peewee.DatabaseError as exc:
            raise _unavailable(request_id, f"the database did not answer: {exc}") from None

    async def unreachable(self, request_id: str, url: str) -> str | None:
        try:
            return await self._unreachable(request_id, url)
        except peewee.DatabaseError as exc:
            raise _unavailable(request_id, f"the database did not answer: {exc}") from None

    async def _holder(self, request_id: str) -> str | None:
        for _ in range(_MAX_ROUTE_READS):
            route = await asyncio.to_thread(self._routes.claim, request_id, self._me)
            if route.owner == self._me:
                return None
            if route.live:
                return self._url_of(route, request_id)
            if await self._take_over(request_id, route):
                return None
        raise _unavailable(request_id, "its holder keeps changing")

    async def _unreachable(self, request_id: str, url: str) -> str | None:
        # A dead process of this host gives up its lease at once; elsewhere, when it expires.
        await asyncio.to_thread(self._instances.drop_gone_local)
        route = await asyncio.to_thread(self._routes.claim, request_id, self._me)
        if route.owner == self._me:
            return None
        if route.live and route.internal_url != url:
            return self._url_of(route, request_id)
        if route.live:
            raise _unavailable(request_id, "the instance holding it does not answer")
        if await self._take_over(request_id, route):
            return None
        return await self._holder(request_id)

    async def _take_over(self, request_id: str, route: RunRoute) -> bool:
        moved = await asyncio.to_thread(self._routes.take_over, request_id, route.owner, self._me)
        if moved:
            log_event(
                logger,
                logging.WARNING,
                "run route taken over from a dead instance",
                request_id=request_id,
                dead_instance=route.owner,
            )
        return moved

    @staticmethod
    def _url_of(route: RunRoute, request_id: str) -> str:
        if route.internal_url is None:
            raise _unavailable(request_id, "the instance holding it takes no forwarded requests")
        return route.internal_url


def _unavailable(request_id: str, why: str) -> ConnectError:
    return ConnectError(Code.UNAVAILABLE, f"run {request_id}: {why}; retry shortly")


class PeerRunCanceller:
    """Stops a run another instance holds (a newer run took its conversation over); called
    from actor threads, done on the loop, never waited for."""

    def __init__(
        self,
        database: peewee.Database,
        instance_id: str,
        session: aiohttp.ClientSession,
        token: str,
        tasks: LoopTasks,
    ) -> None:
        self._routes = RunRoutes(database)
        self._me = instance_id
        self._session = session
        self._token = token
        self._tasks = tasks

    def cancel(self, run_id: str, reason: str) -> None:
        self._tasks.submit(self._cancel(run_id, reason))

    async def _cancel(self, run_id: str, reason: str) -> None:
        try:
            route = await asyncio.to_thread(self._routes.run_owner, run_id)
            if route is None or route.owner == self._me or not route.live:
                return  # here (its actor had ended), or dead: the store fences it either way
            if route.internal_url is None:
                return
            body = msgspec.json.encode(CancelRunRequest(run_id, reason))
            async with self._session.post(
                route.internal_url + CANCEL_RUN_PATH,
                data=body,
                headers={PEER_TOKEN_HEADER: self._token, "Content-Type": "application/json"},
            ) as answer:
                if answer.status != 200:
                    raise aiohttp.ClientResponseError(
                        answer.request_info, answer.history, status=answer.status
                    )
        except (aiohttp.ClientError, TimeoutError, peewee.DatabaseError) as exc:
            # The store already refuses the superseded run's writes; it stops at its next one.
            log_event(
                logger,
                logging.WARNING,
                "superseded run on a peer not cancelled",
                request_id=run_id,
                error=str(exc),
            )


class Peers:
    """This instance's part in a fleet: the forwarder the edge asks, the canceller the runs
    use, the listener peers reach; ``start`` binds the listener, ``stop`` closes both ends."""

    def __init__(
        self,
        database: peewee.Database,
        instance_id: str,
        limits: EdgeLimits,
        tasks: LoopTasks,
    ) -> None:
        self.token = secret_box(database).token_for(PEER_TOKEN_PURPOSE)
        self.session = new_peer_session()
        self.forwarder = PeerForwarder(
            StoreRouteBook(database, instance_id), self.session, self.token, limits
        )
        self.canceller = PeerRunCanceller(database, instance_id, self.session, self.token, tasks)
        self._max_body_bytes = limits.max_body_bytes
        self.listener: PeerListener | None = None
        self.url = ""  # where peers reach this instance, once ``start`` bound it

    async def start(
        self,
        routes: AgentRoutes,
        cancel_run: Callable[[str, str], None],
        listen: tuple[str, int],
        url: str | None,
    ) -> str:
        """Listen for peers at ``listen``; the URL they reach it by (``url`` if given)."""
        self.listener = PeerListener(self.token, routes, cancel_run, self._max_body_bytes)
        address = await self.listener.start(*listen)
        self.url = url or f"http://{address}"
        return self.url

    async def stop(self) -> None:
        if self.listener is not None:
            await self.listener.stop()
        await self.forwarder.aclose()
        await self.session.close()
