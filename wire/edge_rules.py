"""What every request at either listener must be before any route, guard or the proxy sees
it: pure decisions over the request target and a few headers, shared by the HTTP/1.1 gate
(``wire.http.gate``) and the HTTP/2 edge.

Why the target is checked before routing: the router, the guards and the proxy each read the
path in their own way (aiohttp routes on the path with ``%2F`` kept encoded, the guards read
it fully decoded, the proxy sends it raw). Where those readings can disagree, one of them can
be fooled: ``/console%2F..%2F..%2Fx`` is the console to a guard and nothing to the router, so
it went upstream. Every such target is refused with 400 instead: an encoded ``/`` or ``\\``,
a ``.`` or ``..`` segment (however encoded), a control character (raw or encoded), a
backslash, or a target that is not a path (``@host/...``, ``http://…``, ``*``). What is left
reads the same to all three, up to the decoding of ordinary characters.

The request's kind (agent RPC, console, health, proxy) then comes from the route the router
matched, never from a second reading of the path; see ``RouteKind``.

On a loopback listener (no token, no allow-list) a web page the user visits is the attacker
to keep out: by DNS rebinding it reaches us under its own host name, and any page can send a
blind cross-origin request. So there the agent RPCs and the proxy answer only requests
addressed to a loopback name; everywhere, a request that carries a web page's ``Origin``
(http or https, or ``null``) other than our own is refused, and our Connect RPCs need a
Connect content type (a browser cannot send one cross-origin without asking first).
"""

from __future__ import annotations

import enum
import functools
import ipaddress
import re
from urllib.parse import unquote, urlsplit

# Connect's content types (unary and streaming, binary and JSON): what our RPCs accept.
CONNECT_CONTENT_TYPES = frozenset(
    {
        "application/proto",
        "application/connect+proto",
        "application/json",
        "application/connect+json",
    }
)
# Origins a web page can have; anything else (an editor's ``vscode-file:``) is not a page.
_WEB_SCHEMES = ("http", "https")
_ENCODED_SEPARATORS = ("%2f", "%5c")
# Searched in C: a loop over the characters in Python was most of the gate's time per request.
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_DOT_SEGMENT = re.compile(r"(?:^|/)\.{1,2}(?:/|$)")
# Host names told apart at once: a client sends the same few on every request.
_HOSTS_REMEMBERED = 256

CONSOLE_PREFIX = "/console"
# What a browser asks of any page's site: the console answers it, so it never goes upstream.
FAVICON_PATH = "/favicon.ico"


class RouteKind(enum.Enum):
    """Which part of the server a request is for, from the route it matched."""

    AGENT = "agent"  # our Connect RPCs: RunSSE, BidiAppend, the model lists, server config
    CONSOLE = "console"  # everything under /console: its own guard, never proxied
    HEALTH = "health"  # a balancer's GET /healthz
    METRICS = "metrics"  # a scraper's GET /metrics: its own access rule
    PROXY = "proxy"  # no local route: streamed to Cursor's backend


def target_refusal(target: str) -> str | None:
    """Why a request target (path and query, as sent) is refused, or None when it is a plain
    path that every reader of it reads alike."""
    if not target.startswith("/"):
        return "the request target must be a path starting with /"
    path = target.partition("?")[0]
    if not target.isascii():
        return "the request target holds a character that is not ASCII (percent-encode it)"
    if _CONTROL.search(target):
        return "the request target holds a control character"
    if "\\" in path:
        return "the request path holds a backslash"
    lowered = path.lower()
    if any(separator in lowered for separator in _ENCODED_SEPARATORS):
        return "the request path holds an encoded / or \\"
    decoded = unquote(path, errors="surrogateescape")
    if _CONTROL.search(decoded):
        return "the request path holds an encoded control character"
    if _DOT_SEGMENT.search(decoded):
        return "the request path holds a . or .. segment"
    return None


def is_console_path(decoded_path: str) -> bool:
    """Under ``/console``, or the site's icon (``/favicon.ico``, served by the console)."""
    return decoded_path in (CONSOLE_PREFIX, FAVICON_PATH) or decoded_path.startswith(
        CONSOLE_PREFIX + "/"
    )


def route_kind(
    decoded_path: str, matched: str | None, health_path: str, metrics_path: str | None = None
) -> RouteKind:
    """The kind of a request whose route's canonical path is ``matched`` (None: no local
    route). A path under /console is the console's even when nothing matched it, so it is
    answered there (404) and never proxied."""
    if matched is None:
        return RouteKind.CONSOLE if is_console_path(decoded_path) else RouteKind.PROXY
    if is_console_path(matched):
        return RouteKind.CONSOLE
    if matched == health_path:
        return RouteKind.HEALTH
    if matched == metrics_path:
        return RouteKind.METRICS
    return RouteKind.AGENT


@functools.lru_cache(maxsize=_HOSTS_REMEMBERED)
def hostname_of(host_header: str) -> str | None:
    """The host name of a ``Host`` (or ``:authority``) value, lower-cased; None if unparsable."""
    try:
        return urlsplit("//" + host_header).hostname
    except ValueError:
        return None


@functools.lru_cache(maxsize=_HOSTS_REMEMBERED)
def is_loopback_name(hostname: str | None) -> bool:
    """``localhost``, an address in 127.0.0.0/8, or ``::1``."""
    if hostname is None:
        return False
    if hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def is_same_origin(origin: str, host_header: str) -> bool:
    """``Origin`` names the host (and port) the request was sent to. Either scheme counts: a
    TLS-terminating proxy in front makes our side plain HTTP while the browser's is HTTPS."""
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return (
        parts.scheme in _WEB_SCHEMES
        and parts.path in ("", "/")
        and not parts.query
        and parts.netloc.lower() == host_header.lower()
    )


def is_foreign_origin(origin: str | None, host_header: str) -> bool:
    """A web page's ``Origin`` other than our own: ``null`` (a sandboxed or file page) or an
    http(s) origin naming another host. No ``Origin`` (the editor, the CLI) is not foreign,
    nor an application's own scheme (``vscode-file://…``), which no web page can claim."""
    if origin is None:
        return False
    value = origin.strip()
    if value.lower() == "null":
        return True
    scheme = value.partition(":")[0].lower()
    return scheme in _WEB_SCHEMES and not is_same_origin(value, host_header)


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` value, lower-cased, without parameters."""
    return (content_type or "").partition(";")[0].strip().lower()


class Refusal(Exception):
    """A request refused at the edge: the HTTP status, a Connect code and a message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def browser_refusal(
    kind: RouteKind,
    *,
    loopback_listener: bool,
    host: str,
    origin: str | None,
    content_type: str | None,
    method: str,
) -> Refusal | None:
    """The refusal a request of ``kind`` gets for what a browser would send, or None.

    The console applies its own rules (``console.auth``), and so does a scrape
    (``wire.http.metrics_routes``); a health probe carries no secret."""
    if kind in (RouteKind.CONSOLE, RouteKind.HEALTH, RouteKind.METRICS):
        return None
    if loopback_listener and not is_loopback_name(hostname_of(host)):
        return Refusal(
            403,
            "permission_denied",
            "this server listens on loopback and answers only requests addressed to "
            "localhost, 127.0.0.1 or [::1]",
        )
    if is_foreign_origin(origin, host):
        return Refusal(403, "permission_denied", "a request from a web page of another origin")
    if (
        kind is RouteKind.AGENT
        and method == "POST"
        and media_type(content_type) not in CONNECT_CONTENT_TYPES
    ):
        return Refusal(
            415,
            "invalid_argument",
            "agent RPCs need a Connect content type: application/proto, "
            "application/connect+proto, application/json or application/connect+json",
        )
    return None
