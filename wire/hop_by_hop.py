"""Which headers a proxy must not forward: the hop-by-hop set, as pure functions.

Headers are ``(name, value)`` byte pairs, exactly as they came off the wire (aiohttp's
``raw_headers``, httpx's ``headers.raw``), so order, case and repeated fields survive; only the
fields that describe one connection (RFC 9110 section 7.6.1) are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

Header = tuple[bytes, bytes]

# Always hop-by-hop, whatever ``Connection`` says. Lower-case, compared case-insensitively.
HOP_BY_HOP: Final[frozenset[bytes]] = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)

# The header that carries our console token beyond loopback (``wire.http.agent_access``): it is
# for this server alone, so it is dropped from everything forwarded, like a hop-by-hop field.
ACCESS_TOKEN_HEADER: Final = "X-Cursor-Server-Token"
# The HTTP/2 client's address, added by our relay (``wire.http.h2_relay``) and believed only on
# the relay's own socket (``wire.http.gate``); dropped from everything forwarded too.
RELAY_PEER_HEADER: Final = "X-Cursor-Server-Peer"
# The token one instance shows another when it forwards a request to the run's owner
# (``wire.http.peer_forwarding``): between instances only, never forwarded further.
PEER_TOKEN_HEADER: Final = "X-Cursor-Server-Peer-Token"
_OURS: Final[frozenset[bytes]] = frozenset(
    name.lower().encode("ascii")
    for name in (ACCESS_TOKEN_HEADER, RELAY_PEER_HEADER, PEER_TOKEN_HEADER)
)


def connection_listed(headers: Iterable[Header]) -> frozenset[bytes]:
    """The lower-cased names a sender listed in ``Connection``; they are hop-by-hop too."""
    names: set[bytes] = set()
    for name, value in headers:
        if name.strip().lower() == b"connection":
            names.update(token.strip().lower() for token in value.split(b","))
    names.discard(b"")
    return frozenset(names)


def strip_hop_by_hop(headers: Iterable[Header], drop: Iterable[bytes] = ()) -> list[Header]:
    """``headers`` without the hop-by-hop set, the names ``Connection`` lists, our own token
    header, and ``drop``.

    Everything else keeps its order, case and repetitions. ``drop`` names are compared
    case-insensitively. A message that carried both ``Transfer-Encoding`` and
    ``Content-Length`` was framed by the former, so its ``Content-Length`` is a lie and is
    dropped too (RFC 9112 section 6.3 requires this of a forwarding intermediary).
    """
    pairs = list(headers)
    dropped = HOP_BY_HOP | _OURS | connection_listed(pairs) | {name.lower() for name in drop}
    if any(name.strip().lower() == b"transfer-encoding" for name, _ in pairs):
        dropped |= {b"content-length"}
    return [(name, value) for name, value in pairs if name.strip().lower() not in dropped]


def request_headers(headers: Iterable[Header]) -> list[Header]:
    """Client request headers to send upstream: ``Host`` goes too (the upstream's is used)."""
    return strip_hop_by_hop(headers, drop=(b"host",))


def response_headers(headers: Iterable[Header]) -> list[Header]:
    """Upstream response headers to send back to the client."""
    return strip_hop_by_hop(headers)
