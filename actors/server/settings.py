"""The process settings: read from the environment, checked, each bad one named.

Only process settings come from the environment. Providers, keys and models live in the
database and are edited through the console; they are never read from the environment.
"""

from __future__ import annotations

import logging
import os
import ssl
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar
from urllib.parse import urlsplit

import msgspec

from actors.conversation.secret import Secret
from actors.providers.transport import CallLimits
from actors.services.instance_lease import INSTANCE_LEASE_S
from actors.tracing import TraceSettings
from console.auth import TOKEN_VARIABLE, check_console_token, is_loopback_host
from store.base.secrets import SECRET_KEY_VARIABLE, SecretKeyInvalid, parse_secret_key
from store.database import POSTGRES_SCHEMES, StoreKey, resolve_store_key
from wire.http.agent_access import (
    ALLOW_VARIABLE,
    LOOPBACK_NETWORKS,
    Network,
    parse_allow_list,
)
from wire.http.h2_server import tls_context
from wire.http.limits import MIB, EdgeLimits
from wire.http.listener import (
    default_max_connections,
)
from wire.http.metrics_routes import METRICS_ALLOW_VARIABLE
from wire.providers.retry import RetryPolicy
from wire.setting_values import (
    parse_attempts,
    parse_count,
    parse_listen_addr,
    parse_log_level,
    parse_otlp_endpoint,
    parse_otlp_headers,
    parse_public_url,
    parse_timeout,
    parse_upstream_url,
)

logger = logging.getLogger("cursor_server")

T = TypeVar("T")


class Settings(msgspec.Struct, frozen=True):
    """The process settings, parsed and checked."""

    host: str
    port: int
    database_url: str
    upstream_url: str
    provider_timeout_s: float
    log_level: str
    console_token: Secret | None  # a Secret: never shown by a repr or a log line
    h2_listen: tuple[str, int] | None = None  # CURSOR_H2_LISTEN_ADDR; None: no HTTP/2
    tls: tuple[str, str] | None = None  # (certificate, key) paths for the HTTP/2 listener
    # CURSOR_SECRET_KEY as given (checked: 32 bytes of base64); None: the key file.
    secret_key: Secret | None = None
    # Who may use the agent RPCs when listening beyond loopback (CURSOR_AGENT_ALLOW).
    agent_allow: tuple[Network, ...] = LOOPBACK_NETWORKS
    # Who may scrape GET /metrics without the token (CURSOR_METRICS_ALLOW; loopback always).
    metrics_allow: tuple[Network, ...] = ()
    # Provider stalls and retries (CURSOR_PROVIDER_IDLE_SECONDS, CURSOR_PROVIDER_ATTEMPTS).
    provider_idle_s: float = CallLimits().idle_s
    provider_attempts: int = RetryPolicy().max_attempts
    # How long an append_seqno gap may stay open (CURSOR_APPEND_GAP_SECONDS).
    append_gap_s: float = EdgeLimits().append_gap_timeout_s
    # This process's lease on its instance (CURSOR_INSTANCE_LEASE_SECONDS).
    instance_lease_s: float = INSTANCE_LEASE_S
    # The edge's budgets a deployment may need to move (behind a balancer every client is
    # one peer): CURSOR_MAX_CONNECTIONS(_PER_PEER), CURSOR_MAX_RUN_STREAMS_PER_PEER,
    # CURSOR_HEADER_TIMEOUT_SECONDS, CURSOR_APPEND_BUFFER_MIB.
    max_connections: int = EdgeLimits().max_connections
    max_connections_per_peer: int = EdgeLimits().max_connections_per_peer
    max_run_streams_per_peer: int = EdgeLimits().max_run_streams_per_peer
    header_timeout_s: float = EdgeLimits().header_timeout_s
    append_buffer_mib: int = EdgeLimits().append_buffer_bytes // MIB
    # How long an exec the editor answers on its own may wait (CURSOR_EXEC_TIMEOUT_SECONDS).
    exec_timeout_s: float = EdgeLimits().exec_answer_timeout_s
    # Where peers on the same PostgreSQL forward requests of runs held here
    # (CURSOR_PEER_LISTEN_ADDR) and the URL they use (CURSOR_PEER_URL); None with SQLite.
    peer_listen: tuple[str, int] | None = None
    peer_url: str | None = None
    # Server processes on the one port (``run.py --workers N``, else CURSOR_WORKERS); above 1
    # a supervisor starts them (``actors.server.workers``), on PostgreSQL only.
    workers: int = 1
    # Where GetServerConfig sends the editor's agent RPCs (CURSOR_PUBLIC_URL: a balancer's
    # address); None: the address the editor used, or the HTTP/2 listener's.
    public_url: str | None = None
    # Where the traces go (CURSOR_OTLP_ENDPOINT, CURSOR_OTLP_HEADERS); None: no tracing.
    traces: TraceSettings | None = None


class SettingError(Exception):
    """A bad environment variable: startup stops with one line naming it."""

    def __init__(self, variable: str, reason: str) -> None:
        super().__init__(f"{variable}: {reason}")
        self.variable = variable
        self.reason = reason


def parse_secret_key_setting(value: str) -> Secret:
    """``CURSOR_SECRET_KEY`` checked (32 bytes of base64) and kept as a ``Secret``."""
    try:
        parse_secret_key(value)
    except SecretKeyInvalid as exc:
        raise ValueError(str(exc)) from None
    return Secret(value)


WORKERS_VARIABLE = "CURSOR_WORKERS"
WORKERS_FLAG = "--workers"
# One process per core is the point; past this many a machine is better served by more hosts
# (each worker holds its own database connections).
MAX_WORKERS = 64


def parse_workers(value: str) -> int:
    """A count of server processes: a whole number from 1 to ``MAX_WORKERS``."""
    text = value.strip()
    if not text.isdigit() or not 1 <= int(text) <= MAX_WORKERS:
        raise ValueError(f"expected a whole number from 1 to {MAX_WORKERS}, got {value!r}")
    return int(text)


def workers_flag(argv: Sequence[str]) -> int | None:
    """``run.py``'s one argument, ``--workers N`` (or ``--workers=N``); None without it."""
    args = list(argv)
    found: int | None = None
    while args:
        arg = args.pop(0)
        name, equals, value = arg.partition("=")
        if name != WORKERS_FLAG:
            raise SettingError(
                "run.py", f"unknown argument {arg!r}: the one argument is --workers N"
            )
        if not equals:
            if not args:
                raise SettingError(WORKERS_FLAG, "needs a count: --workers N")
            value = args.pop(0)
        try:
            found = parse_workers(value)
        except ValueError as exc:
            raise SettingError(WORKERS_FLAG, str(exc)) from None
    return found


def load_settings(environ: Mapping[str, str], workers: int | None = None) -> Settings:
    """Parse the process settings; a bad value raises ``SettingError`` naming the variable.
    ``workers``: the ``--workers`` flag, which wins over ``CURSOR_WORKERS``."""

    def read(variable: str, default: str, parse: Callable[[str], T]) -> T:
        try:
            return parse(environ.get(variable, default))
        except ValueError as exc:
            raise SettingError(variable, str(exc)) from None

    defaults = EdgeLimits()
    max_connections = read("CURSOR_MAX_CONNECTIONS", str(default_max_connections()), parse_count)
    host, port = read("CURSOR_LISTEN_ADDR", "127.0.0.1:3000", parse_listen_addr)
    database_url = read("CURSOR_DATABASE_URL", "sqlite://cursor-server.db", str)
    try:
        console_token = check_console_token(environ.get(TOKEN_VARIABLE), host)
    except ValueError as exc:
        raise SettingError(TOKEN_VARIABLE, str(exc)) from None
    h2_text = environ.get("CURSOR_H2_LISTEN_ADDR", "").strip()
    h2_listen = read("CURSOR_H2_LISTEN_ADDR", h2_text, parse_listen_addr) if h2_text else None
    tls = read_tls(environ)
    if tls is not None and h2_listen is None:
        # The main listener is HTTP/1.1 only; a certificate nothing would use is a mistake.
        raise SettingError(
            TLS_CERT_VARIABLE, "is for the HTTP/2 listener: set CURSOR_H2_LISTEN_ADDR"
        )
    if h2_listen is not None and console_token is None and not is_loopback_host(h2_listen[0]):
        raise SettingError(
            TOKEN_VARIABLE, f"is required for CURSOR_H2_LISTEN_ADDR on {h2_listen[0]}"
        )
    peer_listen, peer_url = read_peers(environ, database_url)
    worker_count = read_workers(environ, workers, database_url)
    if worker_count > 1 and (peer_url is not None or (peer_listen and peer_listen[1] != 0)):
        # Each worker has a peer listener of its own: one port or one URL cannot name them all.
        raise SettingError(
            PEER_URL_VARIABLE if peer_url is not None else PEER_LISTEN_VARIABLE,
            f"names one address, and {worker_count} workers each listen for peers: "
            "leave the port 0 and the URL unset (each worker's bound address is used)",
        )
    return Settings(
        peer_listen=peer_listen,
        peer_url=peer_url,
        h2_listen=h2_listen,
        tls=tls,
        host=host,
        port=port,
        database_url=database_url,
        upstream_url=read("CURSOR_UPSTREAM_URL", "https://api2.cursor.sh", parse_upstream_url),
        provider_timeout_s=read("CURSOR_PROVIDER_TIMEOUT_SECONDS", "300", parse_timeout),
        log_level=read("CURSOR_LOG_LEVEL", "info", parse_log_level),
        console_token=console_token,
        secret_key=(
            read(SECRET_KEY_VARIABLE, "", parse_secret_key_setting)
            if SECRET_KEY_VARIABLE in environ
            else None
        ),
        agent_allow=(
            read(ALLOW_VARIABLE, "", parse_allow_list)
            if ALLOW_VARIABLE in environ
            else LOOPBACK_NETWORKS
        ),
        metrics_allow=(
            read(METRICS_ALLOW_VARIABLE, "", parse_allow_list)
            if METRICS_ALLOW_VARIABLE in environ
            else ()
        ),
        provider_idle_s=read("CURSOR_PROVIDER_IDLE_SECONDS", "120", parse_timeout),
        provider_attempts=read("CURSOR_PROVIDER_ATTEMPTS", "3", parse_attempts),
        append_gap_s=read("CURSOR_APPEND_GAP_SECONDS", "30", parse_timeout),
        instance_lease_s=read(
            "CURSOR_INSTANCE_LEASE_SECONDS", f"{INSTANCE_LEASE_S:g}", parse_timeout
        ),
        max_connections=max_connections,
        max_connections_per_peer=read(
            "CURSOR_MAX_CONNECTIONS_PER_PEER",
            # One peer never takes every connection unless told to.
            str(min(defaults.max_connections_per_peer, max_connections)),
            parse_count,
        ),
        max_run_streams_per_peer=read(
            "CURSOR_MAX_RUN_STREAMS_PER_PEER", str(defaults.max_run_streams_per_peer), parse_count
        ),
        header_timeout_s=read(
            "CURSOR_HEADER_TIMEOUT_SECONDS", f"{defaults.header_timeout_s:g}", parse_timeout
        ),
        append_buffer_mib=read(
            "CURSOR_APPEND_BUFFER_MIB", str(defaults.append_buffer_bytes // MIB), parse_count
        ),
        exec_timeout_s=read(
            "CURSOR_EXEC_TIMEOUT_SECONDS", f"{defaults.exec_answer_timeout_s:g}", parse_timeout
        ),
        workers=worker_count,
        traces=read_traces(environ),
        public_url=(
            read(PUBLIC_URL_VARIABLE, "", parse_public_url)
            if environ.get(PUBLIC_URL_VARIABLE, "").strip()
            else None
        ),
    )


PEER_LISTEN_VARIABLE = "CURSOR_PEER_LISTEN_ADDR"
PEER_URL_VARIABLE = "CURSOR_PEER_URL"
# Peers on one host reach each other on loopback; across hosts, set an address they reach.
DEFAULT_PEER_LISTEN = "127.0.0.1:0"


def read_peers(
    environ: Mapping[str, str], database_url: str
) -> tuple[tuple[str, int] | None, str | None]:
    """The peer listener's address and URL: on by default with PostgreSQL (instances may
    share it), refused with SQLite (one process's file: there are no peers)."""
    shared = urlsplit(database_url).scheme in POSTGRES_SCHEMES
    given = {v: environ[v] for v in (PEER_LISTEN_VARIABLE, PEER_URL_VARIABLE) if environ.get(v)}
    if not shared:
        for variable in given:
            raise SettingError(variable, "needs a PostgreSQL CURSOR_DATABASE_URL (no peers)")
        return None, None
    try:
        listen = parse_listen_addr(given.get(PEER_LISTEN_VARIABLE, DEFAULT_PEER_LISTEN))
    except ValueError as exc:
        raise SettingError(PEER_LISTEN_VARIABLE, str(exc)) from None
    url = None
    if PEER_URL_VARIABLE in given:
        try:
            url = parse_upstream_url(given[PEER_URL_VARIABLE])
        except ValueError as exc:
            raise SettingError(PEER_URL_VARIABLE, str(exc)) from None
    elif listen[0] in ("0.0.0.0", "::", ""):
        raise SettingError(
            PEER_URL_VARIABLE,
            f"is required with {PEER_LISTEN_VARIABLE} {listen[0]}:{listen[1]}: "
            "name the URL the other instances reach this one by",
        )
    return listen, url


def read_workers(environ: Mapping[str, str], flag: int | None, database_url: str) -> int:
    """The flag's count, else ``CURSOR_WORKERS``'s; more than one needs PostgreSQL."""
    variable = WORKERS_VARIABLE if flag is None else WORKERS_FLAG
    if flag is None:
        try:
            count = parse_workers(environ.get(WORKERS_VARIABLE, "1"))
        except ValueError as exc:
            raise SettingError(WORKERS_VARIABLE, str(exc)) from None
    else:
        count = flag
    if count > 1 and database_url.partition("://")[0] == "sqlite":
        raise SettingError(
            variable,
            f"{count} workers need PostgreSQL (CURSOR_DATABASE_URL is SQLite, one machine's "
            "file that one process writes)",
        )
    return count


def resolve_secret_key(settings: Settings) -> StoreKey:
    """``CURSOR_SECRET_KEY``, else the key file next to the database (made at first start),
    found by the store's own rule (``resolve_store_key``), which every other opener of the
    database follows too. ``KeyFileError`` when the file cannot be used."""
    given = None if settings.secret_key is None else settings.secret_key.reveal()
    return resolve_store_key(settings.database_url, given)


OTLP_ENDPOINT_VARIABLE = "CURSOR_OTLP_ENDPOINT"
OTLP_HEADERS_VARIABLE = "CURSOR_OTLP_HEADERS"


def read_traces(environ: Mapping[str, str]) -> TraceSettings | None:
    """Tracing is on with an endpoint only; headers without one are a mistake. The header
    values are kept as Secrets (a collector's token)."""
    endpoint = environ.get(OTLP_ENDPOINT_VARIABLE, "").strip()
    headers_text = environ.get(OTLP_HEADERS_VARIABLE, "").strip()
    if not endpoint:
        if headers_text:
            raise SettingError(OTLP_HEADERS_VARIABLE, f"needs {OTLP_ENDPOINT_VARIABLE}")
        return None
    try:
        url = parse_otlp_endpoint(endpoint)
    except ValueError as exc:
        raise SettingError(OTLP_ENDPOINT_VARIABLE, str(exc)) from None
    try:
        headers = parse_otlp_headers(headers_text)
    except ValueError as exc:
        raise SettingError(OTLP_HEADERS_VARIABLE, str(exc)) from None
    return TraceSettings(url, tuple((name, Secret(value)) for name, value in headers))


PUBLIC_URL_VARIABLE = "CURSOR_PUBLIC_URL"
TLS_CERT_VARIABLE = "CURSOR_TLS_CERT"
TLS_KEY_VARIABLE = "CURSOR_TLS_KEY"


def read_tls(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """Both TLS paths or neither; each must name a readable file, the certificate PEM and
    the key its match (checked by loading them once, so startup names the bad one)."""
    cert = environ.get(TLS_CERT_VARIABLE) or None
    key = environ.get(TLS_KEY_VARIABLE) or None
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        missing = TLS_CERT_VARIABLE if cert is None else TLS_KEY_VARIABLE
        raise SettingError(missing, "set both CURSOR_TLS_CERT and CURSOR_TLS_KEY, or neither")
    for variable, path in ((TLS_CERT_VARIABLE, cert), (TLS_KEY_VARIABLE, key)):
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            raise SettingError(variable, f"not a readable file: {path}")
    try:
        with open(cert, encoding="ascii") as handle:
            ssl.PEM_cert_to_DER_cert(handle.read())
    except (ValueError, UnicodeDecodeError) as exc:
        raise SettingError(TLS_CERT_VARIABLE, f"not a PEM certificate: {exc}") from None
    try:
        tls_context(cert, key)
    except (ssl.SSLError, OSError) as exc:
        raise SettingError(TLS_KEY_VARIABLE, f"not the certificate's private key: {exc}") from None
    return cert, key
