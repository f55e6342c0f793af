"""Start cursor-server: read process settings, open the store, serve until SIGINT/SIGTERM.

Only process settings come from the environment. Providers, keys and models live in the
database and are edited through the console; they are never read from the environment.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping
from typing import TypeVar
from urllib.parse import urlsplit

import msgspec
import peewee

from actors.providers.transport import CallLimits
from prompt import PromptAssetError, load_prompt_assets
from store import DatabaseDriverMissing, Store, connect_store
from wire.http.server import ServerConfig, start_server
from wire.log import log_event

logger = logging.getLogger("cursor_server")

T = TypeVar("T")

EXIT_BAD_SETTING = 2
LOG_LEVELS = ("debug", "info", "warning", "error")


class Settings(msgspec.Struct, frozen=True):
    """The process settings, parsed and checked."""

    host: str
    port: int
    database_url: str
    upstream_url: str
    provider_timeout_s: float
    log_level: str


class SettingError(Exception):
    """A bad environment variable: startup stops with one line naming it."""

    def __init__(self, variable: str, reason: str) -> None:
        super().__init__(f"{variable}: {reason}")
        self.variable = variable
        self.reason = reason


def parse_listen_addr(value: str) -> tuple[str, int]:
    """``IPv4:port`` or ``[IPv6]:port`` -> (host, port)."""
    host, sep, port_text = value.rpartition(":")
    if not sep or not host:
        raise ValueError("expected IPv4:port or [IPv6]:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        if ipaddress.ip_address(host).version != 6:
            raise ValueError("only IPv6 addresses go in brackets")
    elif ipaddress.ip_address(host).version != 4:
        raise ValueError("an IPv6 address needs brackets: [addr]:port")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"port must be a number from 0 to 65535, got {port_text!r}")
    return host, int(port_text)


def parse_upstream_url(value: str) -> str:
    """An http(s) URL with a host and no query or fragment; trailing ``/`` removed."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an http:// or https:// URL with a host")
    if parts.query or parts.fragment:
        raise ValueError("must not have a query or fragment")
    return value.rstrip("/")


def parse_timeout(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"expected a number of seconds, got {value!r}") from None
    if not 0 < seconds < float("inf"):
        raise ValueError(f"must be a positive number of seconds, got {value!r}")
    return seconds


def parse_log_level(value: str) -> str:
    level = value.strip().lower()
    if level not in LOG_LEVELS:
        raise ValueError(f"expected one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return level


def load_settings(environ: Mapping[str, str]) -> Settings:
    """Parse the process settings; a bad value raises ``SettingError`` naming the variable."""

    def read(variable: str, default: str, parse: Callable[[str], T]) -> T:
        try:
            return parse(environ.get(variable, default))
        except ValueError as exc:
            raise SettingError(variable, str(exc)) from None

    host, port = read("CURSOR_LISTEN_ADDR", "127.0.0.1:3000", parse_listen_addr)
    database_url = read("CURSOR_DATABASE_URL", "sqlite://cursor-server.db", str)
    return Settings(
        host=host,
        port=port,
        database_url=database_url,
        upstream_url=read("CURSOR_UPSTREAM_URL", "https://api2.cursor.sh", parse_upstream_url),
        provider_timeout_s=read("CURSOR_PROVIDER_TIMEOUT_SECONDS", "300", parse_timeout),
        log_level=read("CURSOR_LOG_LEVEL", "info", parse_log_level),
    )


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    # Third-party request logs would repeat (and could leak) what our own lines say; peewee's
    # debug lines carry SQL parameters, provider keys included.
    for noisy in ("httpx", "httpcore", "aiohttp.access", "peewee"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


async def serve(settings: Settings, store: Store) -> int:
    """Run until SIGINT or SIGTERM, then shut down within the deadline."""
    config = ServerConfig(
        host=settings.host,
        port=settings.port,
        upstream_url=settings.upstream_url,
        provider_limits=CallLimits(total_s=settings.provider_timeout_s),
    )
    try:
        server = await start_server(config, store=store)
    except OSError as exc:
        print(
            f"CURSOR_LISTEN_ADDR: cannot listen on {settings.host}:{settings.port}: "
            f"{exc.strerror or exc}",
            file=sys.stderr,
        )
        return EXIT_BAD_SETTING
    log_event(logger, logging.INFO, "cursor server listening", address=server.address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log_event(logger, logging.INFO, "shutdown signal received; cancelling active runs")
    await server.stop()
    log_event(logger, logging.INFO, "cursor server stopped")
    return 0


def main() -> int:
    try:
        settings = load_settings(os.environ)
    except SettingError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_SETTING
    configure_logging(settings.log_level)
    try:
        load_prompt_assets()
    except PromptAssetError as exc:
        print(f"prompt assets: {exc}", file=sys.stderr)
        return EXIT_BAD_SETTING
    try:
        store = connect_store(settings.database_url)
    except (ValueError, DatabaseDriverMissing, peewee.OperationalError) as exc:
        print(f"CURSOR_DATABASE_URL: {exc}", file=sys.stderr)
        return EXIT_BAD_SETTING
    try:
        return asyncio.run(serve(settings, store))
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
