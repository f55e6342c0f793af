"""The composition root: the one module that knows every package. It builds the actor system,
the routes and the app from the store (``start_server``); ``run.py`` calls it with the
process settings, and the tests start the same server in-process with short limits.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import httpx
import msgspec
import peewee
import pykka
from aiohttp import web

from actors.conversation.secret import Secret
from actors.loop.bridge import LoopTasks
from actors.pool import release_here
from actors.protocols.mailbox import ActorHandle
from actors.protocols.run_output import RunOutput
from actors.protocols.session import SessionMessage
from actors.providers.actor import ProviderDeps
from actors.providers.recorder import start_call_recorder
from actors.providers.transport import CallLimits, new_provider_client
from actors.run.budget_counters import BUDGET_REFRESH_S, BudgetCounters, BudgetRefresh
from actors.run.children import AgentDeps
from actors.run.model_selection import (
    ModelResolver,
    StoreModelResolver,
    routed_model,
    stored_routing,
)
from actors.run.owners import RunOwners
from actors.run.session import SessionActor
from actors.run.subagent_links import SharedSubagentLinks
from actors.run_events import FLUSH_AFTER_S as RUN_EVENTS_FLUSH_AFTER_S
from actors.run_events import start_run_event_recorder
from actors.server.metrics import CONTENT_TYPE, ServerMetrics, store_cost, store_people
from actors.server.peers import Peers
from actors.services.handlers import server_work_handlers
from actors.services.instance_lease import INSTANCE_LEASE_S, InstanceLease
from actors.services.server_work import LoopServerWorkers
from actors.services.web_search import PUBLIC_ENDPOINTS, SearchEndpoints
from actors.tracing import TraceSettings
from console.api import ConsoleRoutes
from console.auth import TOKEN_VARIABLE, ConsoleAuth, is_loopback_host
from console.login_sessions import LoginSessions, SharedSessions
from console.model_check_api import MODEL_CHECK_TIMEOUT_S, ModelCheckDeps
from prompt import load_prompt_assets
from store import Store
from store.agent_activity import ActivityRows
from store.base import waits
from store.base.clock import now_ms
from store.catalog import ModelRecord, enabled_models
from store.catalog.url_targets import NO_OWN_ADDRESSES, OwnAddresses, own_addresses
from store.console_sessions import ConsoleSessionRows
from store.group_commit import GroupCommit
from store.instances import ping
from store.protocol_drift import DriftRows
from store.subagent_links import SubagentLinkRows
from wire.h2_connection import H2Limits
from wire.http.agent_access import (
    LOOPBACK_NETWORKS,
    AgentAccess,
    Network,
)
from wire.http.agent_activity import AgentActivity
from wire.http.agent_routes import AgentRoutes
from wire.http.agent_run import AgentRunRoute
from wire.http.app import build_app
from wire.http.catalog_routes import CatalogRoutes
from wire.http.default_model_routes import DefaultModelRoutes
from wire.http.gate import EdgeGate
from wire.http.h2_edge import H2Edge
from wire.http.h2_relay import H2Relay
from wire.http.h2_server import H2Server, H2Stream, tls_context
from wire.http.health_routes import HealthRoutes
from wire.http.limits import EdgeLimits
from wire.http.listener import (
    ConnectionGuard,
    GuardedRunner,
    local_addresses,
)
from wire.http.metrics_routes import MetricsAccess, MetricsRoutes
from wire.http.protocol_drift import ProtocolDrift
from wire.http.proxy import ReverseProxy, new_upstream_client
from wire.http.registry import RunRegistry, SessionFactory
from wire.http.relay_socket import RelaySocket
from wire.http.token_throttle import TokenThrottle
from wire.http.upstream_run import Upstream
from wire.log import log_event
from wire.model_routing import RELAY, AutoTarget
from wire.peer_throttle import PeerThrottle
from wire.providers.retry import RetryPolicy
from wire.server_config import SERVER_CONFIG_ROUTES, server_config_addition

if TYPE_CHECKING:  # the SDK is loaded only with tracing on
    from actors.tracing.exporter import Tracing

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
    # When a failed provider attempt is tried again (``wire/providers/retry.py``).
    provider_retry: RetryPolicy = RetryPolicy()
    # One provider call of a console model check (Test, Tools and reasoning).
    model_check_timeout_s: float = MODEL_CHECK_TIMEOUT_S
    # The console API's token; without one the server must listen on loopback.
    console_token: Secret | None = None
    # Where the keyed web search backends answer (their public APIs unless a test says).
    search_endpoints: SearchEndpoints = PUBLIC_ENDPOINTS
    # The HTTP/2 listener (``Run`` and everything else): off unless an address is given.
    h2_listen: tuple[str, int] | None = None
    tls: tuple[str, str] | None = None  # (certificate, key): TLS with ALPN h2, else h2c
    h2_limits: H2Limits = H2Limits()
    # Beyond loopback: the networks whose agent requests are accepted (with the token).
    agent_allow: tuple[Network, ...] = LOOPBACK_NETWORKS
    # Who may scrape GET /metrics without the token, beside loopback (CURSOR_METRICS_ALLOW).
    metrics_allow: tuple[Network, ...] = ()
    # How long a dead server's runs and calls stay running before a peer's sweep closes them.
    instance_lease_s: float = INSTANCE_LEASE_S
    # Where peers on the same database forward the requests of runs held here (with a store
    # only; None: no peers, every run is held here) and the URL they reach it by (None: the
    # bound address).
    peer_listen: tuple[str, int] | None = None
    peer_url: str | None = None
    # SO_REUSEPORT on the main and HTTP/2 listeners: a worker shares its ports with its
    # siblings (``actors.server.workers``), the kernel spreading new connections over them.
    reuse_port: bool = False
    # Where GetServerConfig sends the editor's agent RPCs (a balancer's address, serving the
    # protocol the answer names); None: this server's own address for them.
    public_url: str | None = None
    # Where the run and provider-call spans go (OTLP over HTTP); None: no tracing, no cost.
    traces: TraceSettings | None = None
    # How often each user's spend and the budget settings are re-read (with a store): how late
    # a budget may see calls recorded by another instance.
    budget_refresh_s: float = BUDGET_REFRESH_S


class RunningServer:
    """A started server: its bound address and the way to stop it."""

    def __init__(
        self,
        runner: web.AppRunner,
        registry: RunRegistry,
        proxy: ReverseProxy,
        address: str,
        provider_deps: ProviderDeps | None,
        h2: H2Server | None = None,
        relay_client: httpx.AsyncClient | None = None,
        lease: InstanceLease | None = None,
        relay_socket: RelaySocket | None = None,
        peers: Peers | None = None,
        activity: AgentActivity | None = None,
        metrics: ServerMetrics | None = None,
        commits: GroupCommit | None = None,
        drift: ProtocolDrift | None = None,
        tracing: Tracing | None = None,
        budgets: BudgetRefresh | None = None,
    ) -> None:
        # Each user's counts for the budget check, re-read in the background; None: no store.
        self.budgets = budgets
        self.tracing = tracing
        # This server's metrics (``GET /metrics``), and the database that tells them its commits.
        self.metrics = metrics
        self._commits = commits
        self.peers = peers
        self.activity = activity
        # What Cursor sent that is not known here; ``drift.snapshot()`` is this process's.
        self.drift = drift
        self.relay_socket = relay_socket
        self.h2 = h2
        self.lease = lease
        self.relay_client = relay_client
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
        # HTTP/2 first: no new connections, GOAWAY on each; the runs' canceled EndStreams
        # still reach their Run streams before the connections are cut.
        if self.h2 is not None:
            self.h2.stop_accepting()
        # AppRunner.cleanup stops the listening sites first, then runs on_shutdown (which
        # cancels every run and closes each RunSSE with a canceled EndStream), then gives
        # open connections CONNECTION_DRAIN_S before cancelling their handlers.
        await self.runner.cleanup()
        if self.peers is not None:
            await self.peers.stop()
        if self.h2 is not None:
            await self.h2.close(CONNECTION_DRAIN_S)
        if self.relay_client is not None:
            await self.relay_client.aclose()
        if self.relay_socket is not None:
            self.relay_socket.remove()
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
        # No agent request arrives any more: what was counted goes to the shared record.
        if self.activity is not None:
            await self.activity.stop()
        if self._commits is not None and self.metrics is not None:
            self._commits.stop_observing(self.metrics.commit_observed)
        if self.drift is not None:
            await self.drift.stop()
        if self.budgets is not None:
            await self.budgets.stop()
        # The recorders have stopped: the last spans are queued; export them (on the SDK's
        # thread, waited for off the loop).
        if self.tracing is not None:
            await asyncio.to_thread(self.tracing.shutdown)
        # Last: every run and call of this process has recorded its end.
        if self.lease is not None:
            await self.lease.stop()


def serves_model(database: peewee.Database, asked: str) -> bool:
    """Whether a run asking for model id ``asked`` is ours to serve (the routing decision the
    run's resolver makes too). A store that cannot say keeps the run here, where resolving
    its model reports the store's error instead of relaying it."""
    try:
        return routed_model(database, asked) is not RELAY  # NO_MODEL: refused here
    except peewee.DatabaseError:
        return True


def default_choice(database: peewee.Database) -> tuple[list[ModelRecord], AutoTarget]:
    """What the default-model routes answer from: the enabled models and where Auto goes."""
    return enabled_models(database), stored_routing(database).auto


def start_session_actor(
    request_id: str,
    output: RunOutput,
    resolve_model: ModelResolver | None = None,
    deps: AgentDeps | None = None,
) -> ActorHandle[SessionMessage]:
    """The production session factory: one SessionActor per request id."""
    return SessionActor.start(request_id, output, resolve_model, deps)


async def start_server(
    config: ServerConfig,
    start_session: SessionFactory | None = None,
    store: Store | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RunningServer:
    """Build the app, bind the listener and return once it accepts connections.

    With a ``store`` the console API is served under ``/console/api/``, the model-list
    routes append the enabled user models, and runs resolve their model and run the agent.
    ``start_session`` defaults to :func:`start_session_actor` (tests pass scripted ones).
    ``clock`` (monotonic seconds) drives the wrong-token throttle, and without a store the
    login sessions' expiry, so tests can move time. With a store the login sessions, the
    Connect page's record and the subagent links are in the database, shared with every
    instance on it; their expiries are on the wall clock.
    """
    for listen_host in (config.host, *(config.h2_listen or ())[:1]):
        if config.console_token is None and not is_loopback_host(str(listen_host)):
            raise ValueError(f"{TOKEN_VARIABLE} is required to listen on {listen_host}")
    database = store.database if store is not None else None
    # An actor's handler waiting on a commit first hands the actors kept on its worker to others.
    waits.before_waiting(release_here)
    # Recorded on every agent request, added to the shared record in the background.
    activity = AgentActivity(now_ms, None if database is None else ActivityRows(database))
    # Counted per client message and relayed path, added to the shared record in the background.
    drift = ProtocolDrift(now_ms, None if database is None else DriftRows(database))
    client = new_upstream_client()
    proxy = ReverseProxy(config.upstream_url, client, drift)
    # One throttle for every comparison of a token from outside: the console login, bearer
    # tokens, and the agent token on both listeners (through ``check_token``).
    throttle = TokenThrottle(PeerThrottle(clock))
    sessions: LoginSessions | None = None
    if database is not None:
        sessions = SharedSessions(ConsoleSessionRows(database))
    console_auth = ConsoleAuth(
        config.console_token, clock=clock, throttle=throttle, sessions=sessions
    )
    agent_token = functools.partial(console_auth.check_token, via="agent")
    loopback = is_loopback_host(config.host)
    relay_socket = RelaySocket() if config.h2_listen is not None else None
    gate = EdgeGate(
        loopback_listener=loopback,
        access=None if loopback else AgentAccess(config.agent_allow, agent_token),
        relay=relay_socket,
        relay_loopback=config.h2_listen is None or is_loopback_host(config.h2_listen[0]),
    )
    app = build_app(proxy, gate)
    provider_deps: ProviderDeps | None = None
    agent_deps: AgentDeps | None = None
    # One registry per server; with a store its recorders and its commits feed it.
    metrics = ServerMetrics(
        None if database is None else store_cost(database),
        drift.snapshot,
        None if database is None else store_people(database),
    )
    commits = database if isinstance(database, GroupCommit) else None
    if commits is not None:
        commits.observe_commits(metrics.commit_observed)
    metrics_token = functools.partial(console_auth.check_token, via="metrics")
    MetricsRoutes(
        metrics.render,
        CONTENT_TYPE,
        MetricsAccess(config.metrics_allow, metrics_token if console_auth.required else None),
    ).register(app)
    # One count of connections over both listeners.
    connections = ConnectionGuard(config.limits)
    h2 = _h2_server(config, connections)
    server_config = functools.partial(_server_config_addition, h2, config.public_url)
    load_models = None if database is None else functools.partial(enabled_models, database)
    CatalogRoutes(
        proxy.upstream_url,
        client,
        load_models,
        config.limits,
        extra=dict.fromkeys(SERVER_CONFIG_ROUTES, server_config),
    ).register(app)
    lease = None
    budget_refresh: BudgetRefresh | None = None
    tracing: Tracing | None = None  # with a store and an endpoint only: spans come from runs
    peers: Peers | None = None
    # This server's listeners, once bound: no provider or search URL may point at them.
    own: list[OwnAddresses] = [NO_OWN_ADDRESSES]
    if store is not None and database is not None:
        assert load_models is not None
        DefaultModelRoutes(functools.partial(default_choice, database), proxy.forward).register(app)
        # Before any store is built on the database: every row it opens names this instance.
        # The first sweep closes what dead instances (this database's last process) left.
        lease = InstanceLease(database, config.instance_lease_s)
        await lease.start()
        if config.traces is not None:
            from actors.tracing.exporter import start_tracing

            instance = {"service.instance.id": str(lease.instance_id)}
            tracing = start_tracing(config.traces, instance)
        HealthRoutes(functools.partial(asyncio.to_thread, ping, database)).register(app)
        tasks = LoopTasks(asyncio.get_running_loop())
        if config.peer_listen is not None:
            peers = Peers(database, lease.instance_id, config.limits, tasks)
        provider_deps = ProviderDeps(
            # Started before any call, so ``stop_all`` (last started, first stopped) stops it
            # after every ProviderActor has recorded its end.
            recorder=start_call_recorder(database, metrics, tracing),
            tasks=tasks,
            client=new_provider_client(),
            limits=config.provider_limits,
            retry=config.provider_retry,
        )
        checks = ModelCheckDeps(provider_deps, config.model_check_timeout_s)
        # Read once before the first run, then in the background: no run's start queries them.
        budget_refresh = budgets = BudgetRefresh(BudgetCounters(database), config.budget_refresh_s)
        await budgets.start()
        ConsoleRoutes(
            database,
            model_checks=checks,
            auth=console_auth,
            activity=activity,
            drift=drift,
            listen_host=config.host,
            own_addresses=lambda: own[0],
            key_health=provider_deps.keys,
            budgets_saved=budgets.refresh,
        ).register(app)
        agent_deps = AgentDeps(
            store=store,
            prompts=load_prompt_assets(),
            provider=provider_deps,
            owners=RunOwners(),
            tasks=provider_deps.tasks,
            # Before any run, so ``stop_all`` stops it after every run has told it its end.
            run_events=start_run_event_recorder(
                database, provider_deps.tasks, RUN_EVENTS_FLUSH_AFTER_S, metrics, tracing
            ),
            # One handler per kind of work a tool asks the server for.
            server_work=LoopServerWorkers(
                provider_deps.tasks,
                server_work_handlers(database, provider_deps.client, config.search_endpoints),
            ),
            # A child run may run on another instance than its parent.
            subagents=SharedSubagentLinks(SubagentLinkRows(database)),
            exec_answer_timeout_s=config.limits.exec_answer_timeout_s,
            silent_model_keepalive_s=config.limits.silent_model_keepalive_s,
            remote_runs=None if peers is None else peers.canceller,
            budgets=budgets.counters,
        )
    if start_session is None:
        resolver = None if database is None else StoreModelResolver(database)
        start_session = functools.partial(
            start_session_actor, resolve_model=resolver, deps=agent_deps
        )
    # With a store, a run of a model that is not the user's is relayed to Cursor's backend.
    upstream = None if database is None else Upstream(proxy.upstream_url, client)
    registry = RunRegistry(config.limits, start_session, upstream)
    serves_run = None if database is None else functools.partial(serves_model, database)
    agent_routes = AgentRoutes(
        registry,
        config.limits,
        activity,
        serves_run,
        None if peers is None else peers.forwarder,
        drift,
    )
    agent_routes.register(app)
    if peers is not None and lease is not None and config.peer_listen is not None:
        # Named in the lease before the public listener takes the first request to claim.
        peer_url = await peers.start(
            agent_routes, registry.disconnect, config.peer_listen, config.peer_url
        )
        await lease.advertise(peer_url)

    async def cancel_runs(_app: web.Application) -> None:
        registry.shutdown()

    app.on_shutdown.append(cancel_runs)
    runner = GuardedRunner(
        app,
        connections,
        auto_decompress=False,  # the proxy forwards bodies as sent; the edge gunzips itself
        shutdown_timeout=CONNECTION_DRAIN_S,
        access_log=None,
    )
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port, reuse_port=config.reuse_port)
    await site.start()
    host, port = runner.addresses[0][:2]
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    # Only a listener bound to every address answers on the machine's other addresses.
    wildcard = {host, *(config.h2_listen or ())[:1]} & {"0.0.0.0", "::", ""}
    local = await asyncio.to_thread(local_addresses) if wildcard else []
    own[0] = own_addresses([(host, port)], local)
    relay_client = None
    if h2 is not None and config.h2_listen is not None and relay_socket is not None:
        await relay_socket.start(runner)
        relay_client = relay_socket.client()
        relay = H2Relay(relay_client)
        run_route = AgentRunRoute(registry, config.limits, activity, serves_run, drift)
        h2_loopback = is_loopback_host(config.h2_listen[0])
        edge = H2Edge(
            run_route.handle,
            relay.handle,
            None if h2_loopback else AgentAccess(config.agent_allow, agent_token),
            health_route=lease is not None,
            loopback_listener=h2_loopback,
        )
        h2.route = edge.route
        try:
            await h2.start(*config.h2_listen, reuse_port=config.reuse_port)
        except OSError as exc:
            await runner.cleanup()
            await relay_client.aclose()
            relay_socket.remove()
            if tracing is not None:
                await asyncio.to_thread(tracing.shutdown)
            raise H2ListenError(exc.errno, exc.strerror) from exc
        h2_host, _, h2_port = h2.address.rpartition(":")
        own[0] = own_addresses([(host, port), (h2_host.strip("[]"), int(h2_port))], local)
    activity.start()  # what the routes counted before this is added with the first flush
    drift.start()
    return RunningServer(
        runner,
        registry,
        proxy,
        address,
        provider_deps,
        h2,
        relay_client,
        lease,
        relay_socket,
        peers,
        activity,
        metrics,
        commits,
        drift,
        tracing,
        budget_refresh,
    )


class H2ListenError(OSError):
    """The HTTP/2 listener could not bind (the main one did)."""


def _h2_server(config: ServerConfig, connections: ConnectionGuard) -> H2Server | None:
    """The HTTP/2 listener, not yet bound (its routes are set once the app's address is)."""
    if config.h2_listen is None:
        return None
    tls = None if config.tls is None else tls_context(*config.tls)
    return H2Server(lambda stream: _unrouted, config.h2_limits, tls, connections)


async def _unrouted(stream: H2Stream) -> None:
    stream.reset()


async def _server_config_addition(
    h2: H2Server | None, public_url: str | None, request: web.Request
) -> bytes:
    """Where the editor's agent RPCs go, over HTTP/2 when the listener is on, else over
    HTTP/1.1: the public URL when one is set (a balancer's frontend for that protocol), else
    the HTTP/2 listener, or this HTTP/1.1 one by the address the editor used."""
    if public_url is not None:
        agent_url = public_url
    elif h2 is None:
        agent_url = f"http://{request.host}"
    else:
        agent_url = _reachable(h2, request)
    return server_config_addition(agent_url, http2_listener=h2 is not None)


def _reachable(h2: H2Server, request: web.Request) -> str:
    """The listener's URL; a wildcard bind is named by the host the editor used for us."""
    host, _, port = h2.address.rpartition(":")
    if host in ("0.0.0.0", "[::]"):
        name = request.url.host or "127.0.0.1"
        host = f"[{name}]" if ":" in name else name
    scheme = "https" if h2.tls is not None else "http"
    return f"{scheme}://{host}:{port}"
