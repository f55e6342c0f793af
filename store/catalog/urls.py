"""Provider base-URL normalisation and the public model id derived from it.

Why normalise: the public model id Cursor sees is a hash of the provider's URL, so two spellings
of one endpoint (``HTTPS://Example.COM:443/v1/`` and ``https://example.com/v1``) must give the
same id, and the URL shown in the console and recorded with each call is the canonical one.
Endpoint paths (``/models``, ``/chat/completions`` …) are appended to the normalised URL, which
is why a query or fragment (even an empty ``?`` or ``#``) is refused rather than dropped: it
would end up in the middle of every request URL.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from urllib.parse import quote, urlsplit

ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
PUBLIC_ID_BYTES = 4  # the public id is the first 4 bytes of SHA-256, as 8 hex digits
# A DNS name or IPv4 address as typed (IPv6 goes in brackets and is checked by ipaddress).
_HOST_RE = re.compile(r"[a-z0-9](?:[a-z0-9.\-_]*[a-z0-9.])?")
# Path characters that are escaped (WHATWG's path percent-encode set, minus what we refuse).
_PATH_SAFE = "/%:@!$&'()*+,;=-._~[]|^"


class InvalidBaseUrl(ValueError):
    """The provider base URL cannot be used; the message says why (and never echoes userinfo)."""


class InvalidModelId(ValueError):
    """The model id is empty after trimming."""


def normalize_base_url(raw: str) -> str:
    """The canonical form of a provider base URL, or ``InvalidBaseUrl``.

    Lower-cases scheme and host, drops the default port, resolves ``.``/``..`` segments,
    percent-encodes non-ASCII path characters and strips trailing slashes. Refuses other
    schemes than http/https, a query or fragment (even empty), userinfo (credentials belong in
    the key or headers, never in a URL that is shown and recorded), whitespace and backslashes.
    """
    text = raw.strip()
    if not text:
        raise InvalidBaseUrl("provider base URL is empty")
    if "?" in text or "#" in text:
        raise InvalidBaseUrl("provider base URL cannot contain a query or fragment")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text) or "\\" in text:
        raise InvalidBaseUrl("provider base URL cannot contain spaces, control characters or \\")
    try:
        parts = urlsplit(text)
    except ValueError:  # e.g. an unbalanced IPv6 bracket
        raise InvalidBaseUrl("provider base URL cannot be parsed") from None
    if parts.scheme not in ALLOWED_SCHEMES or not text.lower().startswith(f"{parts.scheme}://"):
        raise InvalidBaseUrl("provider base URL must start with http:// or https://")
    if "@" in parts.netloc:
        raise InvalidBaseUrl("provider base URL cannot contain a user name or password")
    host = _normalize_host(parts.netloc)
    try:
        port = parts.port
    except ValueError:
        raise InvalidBaseUrl("provider base URL has an invalid port") from None
    netloc = host if port is None or port == DEFAULT_PORTS[parts.scheme] else f"{host}:{port}"
    path = quote(_remove_dot_segments(parts.path), safe=_PATH_SAFE).rstrip("/")
    return f"{parts.scheme}://{netloc}{path}"


def _normalize_host(netloc: str) -> str:
    """The lower-cased host of ``netloc`` (IPv6 compressed, in brackets)."""
    if netloc.startswith("["):
        literal, bracket, rest = netloc[1:].partition("]")
        try:
            valid = bracket and (not rest or rest.startswith(":"))
            address = ipaddress.IPv6Address(literal) if valid else None
        except ValueError:
            address = None
        if address is None:
            raise InvalidBaseUrl("provider base URL has an invalid IPv6 address")
        return f"[{address.compressed}]"
    host = netloc.rpartition(":")[0] if ":" in netloc else netloc
    host = host.lower()
    if not host:
        raise InvalidBaseUrl("provider base URL has no host")
    if not host.isascii() or not _HOST_RE.fullmatch(host):
        raise InvalidBaseUrl(
            "provider base URL has an invalid host (write international names as xn--…)"
        )
    return host


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 on a path: ``/a/./b/../c`` → ``/a/c`` (so both spellings hash alike)."""
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    return "/".join(output)


def public_model_id(base_url: str, provider_type: str, model_id: str) -> str:
    """The 8-hex id Cursor uses for a model: SHA-256(URL, NUL, type, NUL, model id)[:4].

    ``base_url`` is normalised and ``model_id`` trimmed first; the key and display name play no
    part, so renaming a model or rotating a key keeps its id.
    """
    trimmed = model_id.strip()
    if not trimmed:
        raise InvalidModelId("model id cannot be empty")
    material = b"\0".join(
        part.encode("utf-8") for part in (normalize_base_url(base_url), provider_type, trimmed)
    )
    return hashlib.sha256(material).digest()[:PUBLIC_ID_BYTES].hex()
