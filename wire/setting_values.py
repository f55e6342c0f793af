"""The environment's setting values parsed, sans-IO: each takes the text of a variable and
returns its typed value or raises ``ValueError`` saying what was expected (``run.py`` names the
variable)."""

from __future__ import annotations

import ipaddress
from urllib.parse import unquote, urlsplit

LOG_LEVELS = ("debug", "info", "warning", "error")


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


def parse_public_url(value: str) -> str:
    """Where the editor's agent RPCs go (a balancer's address): an http(s) URL with a host
    and nothing after it (the editor adds the RPC's path); a trailing ``/`` removed."""
    text = value.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry a user or password")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("must not have a path, query or fragment: the editor adds the RPC's path")
    port = parts.port  # not a number from 0 to 65535: ValueError
    if port == 0:
        raise ValueError("port 0 is no port a client can reach")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + ("" if port is None else f":{port}")


def parse_timeout(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"expected a number of seconds, got {value!r}") from None
    if not 0 < seconds < float("inf"):
        raise ValueError(f"must be a positive number of seconds, got {value!r}")
    return seconds


def parse_attempts(value: str) -> int:
    if not value.strip().isdigit() or not 1 <= int(value) <= 10:
        raise ValueError(f"expected a whole number from 1 to 10, got {value!r}")
    return int(value)


def parse_count(value: str) -> int:
    """A whole number from 1 to a million."""
    if not value.strip().isdigit() or not 1 <= int(value) <= 1_000_000:
        raise ValueError(f"expected a whole number from 1 to 1000000, got {value!r}")
    return int(value)


def parse_log_level(value: str) -> str:
    level = value.strip().lower()
    if level not in LOG_LEVELS:
        raise ValueError(f"expected one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return level


def parse_otlp_endpoint(value: str) -> str:
    """The OTLP/HTTP traces URL (a collector's ``http://host:4318/v1/traces``): http(s) with a
    host and a path, no user or password (credentials go in the headers, which are secrets),
    no fragment."""
    text = value.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry a user or password: put credentials in the headers")
    if parts.fragment:
        raise ValueError("must not have a fragment")
    if parts.path in ("", "/"):
        raise ValueError("needs the traces path, as in http://collector:4318/v1/traces")
    _ = parts.port  # not a number from 0 to 65535: ValueError
    return text


# A header name: RFC 9110's token characters.
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def parse_otlp_headers(value: str) -> tuple[tuple[str, str], ...]:
    """``name=value`` pairs separated by commas, values percent-encoded (the format of
    OTEL_EXPORTER_OTLP_HEADERS). A bad pair is named by its name only: values are secrets."""
    pairs: list[tuple[str, str]] = []
    for item in value.split(","):
        if not item.strip():
            continue
        name, equals, raw = item.partition("=")
        name = name.strip()
        if not equals or not name or not set(name) <= _TOKEN:
            shown = name if name and set(name) <= _TOKEN else "a header"
            raise ValueError(f"{shown}: expected name=value pairs separated by commas")
        text = unquote(raw.strip())
        if any(ch in text for ch in "\r\n\0"):
            raise ValueError(f"{name}: the value has a line break or NUL")
        pairs.append((name.lower(), text))
    return tuple(pairs)
