"""Composes and runs the HTTP server: the agent routes, the proxy fallback, shutdown order.

``run.py`` uses it for the real process and the tests use it in-process with short limits.
"""

from __future__ import annotations

import asyncio
import functools
import logging

import msgspec
import pykka
from aiohttp import web

import console.api
from actors.agent_run import AgentDeps
from actors.bridge import LoopTasks
from actors.model_selection import ModelResolver, StoreModelResolver
from actors.providers.actor import ProviderDeps
from actors.providers.recorder import start_call_recorder
from actors.providers.transport import CallLimits, new_provider_client
from actors.run_output import RunOutput
from actors.run_owners import RunOwners
from actors.session import SessionActor
from console.calls_api import register_calls_api
from prompt import load_prompt_assets
from store import Store
from store.catalog import enabled_models
from store.conversations import ConversationStore
from store.llm_calls import CallRecords
from wire.http.agent_routes import AgentRoutes
from wire.http.app import build_app
from wire.http.catalog_routes import CatalogRoutes
from wire.http.limits import EdgeLimits
from wire.http.proxy import ReverseProxy, new_upstream_client
from wire.http.registry import RunRegistry, SessionFactory
from wire.log import log_event

logger = logging.getLogger("cursor_server")

# Open connections (proxied streams included) get this long to finish after the runs are
# cancelled; the whole shutdown is bounded by SHUTDOWN_DEADLINE_S.
CONNECTION_DRAIN_S = 3.0
SHUTDOWN_DEADLINE_S = 10.0
ACTOR_STOP_TIMEOUT_S = 2.0


class ServerConfig(msgspec.Struct, frozen=True):
    """What the server needs to start; process settings are parsed in ``run.py``."""

    host: str
    port: int
    upstream_url: str
    limits: EdgeLimits = EdgeLimits()
    provider_limits: CallLimits = CallLimits()


class RunningServer:
    """A started server: its bound address and the way to stop it."""

    def __init__(
        self,
        runner: web.AppRunner,
        registry: RunRegistry,
        proxy: ReverseProxy,
        address: str,
        provider_deps: ProviderDeps | None,
    ) -> None:
        self.runner = runner
        self.registry = registry
        self.proxy = proxy
        self.address = address
        # What ProviderActors need (store, loop, client, limits); None without a database.
        self.provider_deps = provider_deps

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    async def stop(self) -> bool:
        """Stop accepting, cancel every run, drain connections; True if within the deadline."""
        try:
            await asyncio.wait_for(self._stop(), SHUTDOWN_DEADLINE_S)
            return True
        except TimeoutError:
            log_event(logger, logging.WARNING, "graceful shutdown timed out; forcing server close")
            return False
        finally:
            pykka.ActorRegistry.stop_all(block=False)

    async def _stop(self) -> None:
        # AppRunner.cleanup stops the listening sites first, then runs on_shutdown (which
        # cancels every run and closes each RunSSE with a canceled EndStream), then gives
        # open connections CONNECTION_DRAIN_S before cancelling their handlers.
        await self.runner.cleanup()
        # Actors stop while the loop still runs: a ProviderActor cancels its stream task on
        # the loop and records its call as cancelled.
        await asyncio.to_thread(
            functools.partial(
                pykka.ActorRegistry.stop_all, block=True, timeout=ACTOR_STOP_TIMEOUT_S
            )
        )
        await self.proxy.aclose()
        if self.provider_deps is not None:
            await self.provider_deps.client.aclose()


def start_session_actor(
    request_id: str,
    output: RunOutput,
    resolve_model: ModelResolver | None = None,
    deps: AgentDeps | None = None,
) -> pykka.ActorRef:
    """The production session factory: one SessionActor per request id."""
    return SessionActor.start(request_id, output, resolve_model, deps)


async def start_server(
    config: ServerConfig,
    start_session: SessionFactory | None = None,
    store: Store | None = None,
) -> RunningServer:
    """Build the app, bind the listener and return once it accepts connections.

    With a ``store`` the console API is served under ``/console/api/``, the model-list
    routes append the enabled user models, and runs resolve their model and run the agent.
    ``start_session`` defaults to :func:`start_session_actor` (tests pass scripted ones).
    """
    client = new_upstream_client()
    proxy = ReverseProxy(config.upstream_url, client)
    app = build_app(proxy)
    database = store.database if store is not None else None
    provider_deps: ProviderDeps | None = None
    agent_deps: AgentDeps | None = None
    if store is not None and database is not None:
        console.api.register(app, database)
        register_calls_api(app, database)
        load_models = functools.partial(enabled_models, database)
        CatalogRoutes(proxy.upstream_url, client, load_models, config.limits).register(app)
        stale = await asyncio.to_thread(
            CallRecords(database).cancel_unfinished, "the server stopped during the call"
        )
        if stale:
            log_event(logger, logging.WARNING, "unfinished call records cancelled", count=stale)
        stale_runs = await asyncio.to_thread(
            ConversationStore(database).cancel_unfinished_runs, "the server stopped during the run"
        )
        if stale_runs:
            log_event(logger, logging.WARNING, "unfinished runs cancelled", count=stale_runs)
        provider_deps = ProviderDeps(
            # Started before any call, so ``stop_all`` (last started, first stopped) stops it
            # after every ProviderActor has recorded its end.
            recorder=start_call_recorder(database),
            tasks=LoopTasks(asyncio.get_running_loop()),
            client=new_provider_client(),
            limits=config.provider_limits,
        )
        agent_deps = AgentDeps(
            store=store,
            prompts=load_prompt_assets(),
            provider=provider_deps,
            owners=RunOwners(),
            tasks=provider_deps.tasks,
        )
    if start_session is None:
        resolver = None if database is None else StoreModelResolver(database)
        start_session = functools.partial(
            start_session_actor, resolve_model=resolver, deps=agent_deps
        )
    registry = RunRegistry(config.limits, start_session)
    AgentRoutes(registry, config.limits).register(app)

    async def cancel_runs(_app: web.Application) -> None:
        registry.shutdown()

    app.on_shutdown.append(cancel_runs)
    runner = web.AppRunner(
        app,
        auto_decompress=False,  # the proxy forwards bodies as sent; the edge gunzips itself
        shutdown_timeout=CONNECTION_DRAIN_S,
        handle_signals=False,
        access_log=None,
    )
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port)
    await site.start()
    host, port = runner.addresses[0][:2]
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return RunningServer(runner, registry, proxy, address, provider_deps)
