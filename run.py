"""Start cursor-server: read process settings, open the store, serve until SIGINT/SIGTERM.

The server itself is assembled by ``actors.server.compose``; the settings are read by
``actors.server.settings``. This module is the process around them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

import peewee

from actors.providers.transport import CallLimits
from actors.server.compose import H2ListenError, ServerConfig, start_server
from actors.server.settings import (
    SettingError,
    Settings,
    load_settings,
    resolve_secret_key,
    workers_flag,
)
from actors.server.workers import WorkerLink, supervise
from console.auth import is_loopback_host
from prompt import PromptAssetError, load_prompt_assets
from store import DatabaseDriverMissing, Store, connect_store
from store.base.secrets import SECRET_KEY_VARIABLE, KeyFileError
from store.database import IN_MEMORY_KEY_SOURCE, StoreKey
from wire.http.limits import MIB, EdgeLimits
from wire.http.listener import raise_file_limit
from wire.log import configure_logging, log_event
from wire.providers.retry import RetryPolicy

logger = logging.getLogger("cursor_server")

EXIT_BAD_SETTING = 2


def edge_limits(settings: Settings) -> EdgeLimits:
    """The edge's limits: the defaults, with what the environment moved."""
    per_run = EdgeLimits().append_buffer_bytes_per_run
    pooled = settings.append_buffer_mib * MIB
    return EdgeLimits(
        append_gap_timeout_s=settings.append_gap_s,
        max_connections=settings.max_connections,
        max_connections_per_peer=settings.max_connections_per_peer,
        max_run_streams_per_peer=settings.max_run_streams_per_peer,
        header_timeout_s=settings.header_timeout_s,
        append_buffer_bytes=pooled,
        # One request never holds more than all of them may.
        append_buffer_bytes_per_run=min(per_run, pooled),
        exec_answer_timeout_s=settings.exec_timeout_s,
    )


async def serve(
    settings: Settings,
    store: Store,
    key: StoreKey | None = None,
    link: WorkerLink | None = None,
) -> int:
    """Run until SIGINT or SIGTERM, then shut down within the deadline. ``link``: this process
    is one of a supervisor's workers (``actors.server.workers``), sharing its ports."""
    config = ServerConfig(
        h2_listen=settings.h2_listen,
        tls=settings.tls,
        host=settings.host,
        port=settings.port,
        upstream_url=settings.upstream_url,
        limits=edge_limits(settings),
        provider_limits=CallLimits(
            total_s=settings.provider_timeout_s, idle_s=settings.provider_idle_s
        ),
        provider_retry=RetryPolicy(max_attempts=settings.provider_attempts),
        console_token=settings.console_token,
        agent_allow=settings.agent_allow,
        metrics_allow=settings.metrics_allow,
        instance_lease_s=settings.instance_lease_s,
        peer_listen=settings.peer_listen,
        peer_url=settings.peer_url,
        reuse_port=link is not None,
        public_url=settings.public_url,
        traces=settings.traces,
    )
    try:
        server = await start_server(config, store=store)
    except OSError as exc:
        variable = "CURSOR_H2_LISTEN_ADDR" if isinstance(exc, H2ListenError) else None
        if variable is not None:
            print(f"{variable}: cannot listen: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_BAD_SETTING
        print(
            f"CURSOR_LISTEN_ADDR: cannot listen on {settings.host}:{settings.port}: "
            f"{exc.strerror or exc}",
            file=sys.stderr,
        )
        return EXIT_BAD_SETTING
    log_event(
        logger,
        logging.INFO,
        "cursor server listening" if link is None else "worker listening",
        address=server.address,
        http2=server.h2.url if server.h2 is not None else "off",
        peers=server.peers.url if server.peers is not None else "off",
        public_url=settings.public_url,
        traces=settings.traces.endpoint if settings.traces is not None else "off",
        console_login="token" if settings.console_token is not None else "off",
        secret_key=key.source if key is not None else IN_MEMORY_KEY_SOURCE,
        key_file_created=None if key is None or key.created_file is None else "true",
        agent_allow=(
            "loopback listener"
            if is_loopback_host(settings.host)
            else ",".join(str(network) for network in settings.agent_allow)
        ),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if link is not None:
        link.ready()
        link.watch(stop.set)  # a worker whose supervisor is gone stops too
    await stop.wait()
    log_event(logger, logging.INFO, "shutdown signal received; cancelling active runs")
    await server.stop()
    log_event(logger, logging.INFO, "cursor server stopped" if link is None else "worker stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The process; ``argv``: its arguments (``sys.argv[1:]`` by default)."""
    raise_file_limit()
    try:
        link = WorkerLink.from_environ(os.environ)
        settings = load_settings(os.environ, workers_flag(sys.argv[1:] if argv is None else argv))
    except SettingError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_SETTING
    configure_logging(settings.log_level, None if link is None else link.name)
    try:
        load_prompt_assets()
    except PromptAssetError as exc:
        print(f"prompt assets: {exc}", file=sys.stderr)
        return EXIT_BAD_SETTING
    try:
        key = resolve_secret_key(settings)
        store = connect_store(settings.database_url, key.key)
    except (ValueError, DatabaseDriverMissing, peewee.OperationalError) as exc:
        print(f"CURSOR_DATABASE_URL: {exc}", file=sys.stderr)
        return EXIT_BAD_SETTING
    except KeyFileError as exc:
        print(f"{SECRET_KEY_VARIABLE}: unset, and {exc}", file=sys.stderr)
        return EXIT_BAD_SETTING
    if link is None and settings.workers > 1:
        # The key is resolved (its file made) and the store migrated once, before any worker.
        store.close()
        return supervise(settings, key, os.path.abspath(__file__), os.environ)
    try:
        return asyncio.run(serve(settings, store, key, link))
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
