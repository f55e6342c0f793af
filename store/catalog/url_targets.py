"""Which addresses the server must never send a request to: the pure decision for the URLs the
console stores (a provider's ``base_url``, a SearXNG instance's URL).

Why: every provider call carries the user's key, and the server sends it wherever the stored
URL points. Pointed at a cloud metadata service (``169.254.169.254``, ``fd00:ec2::254``) or
anything else link-local, a request hands the key to, or reads credentials from, a service
that was never meant to be reached from an application; pointed at the server's own
listeners, a provider call loops back into the server and sends the key upstream with the
request it makes of itself. Private and loopback addresses stay allowed: a local model server
(Ollama, LM Studio, vLLM) is one of the main uses, and only the server's own port on them is
refused.

An address is judged in every spelling a resolver or HTTP client accepts for it: the dotted
quad, and the forms ``inet_aton`` takes (one to four parts, each decimal, ``0x`` hex or
``0``-led octal, the last filling the remaining bytes: ``2852039166``, ``0xa9fea9fe``,
``0251.0376.0251.0376``, ``169.254.43518``), a trailing dot, percent-escapes, and IPv6 with
an IPv4 address inside (``::ffff:169.254.169.254``, ``::ffff:a9fe:a9fe``, IPv4-compatible,
NAT64 ``64:ff9b::/96``, 6to4). Host names are not resolved (a name whose DNS answer is a
metadata address is not caught), except the metadata services' own names and ``localhost``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = {"http": 80, "https": 443}
_LINK_LOCAL_V4 = ipaddress.IPv4Network("169.254.0.0/16")
_THIS_NETWORK_V4 = ipaddress.IPv4Network("0.0.0.0/8")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# Metadata services outside the link-local ranges: AWS's IPv6 endpoint, Alibaba Cloud's.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    {ipaddress.IPv6Address("fd00:ec2::254"), ipaddress.IPv4Address("100.100.100.200")}
)
METADATA_HOSTNAMES = frozenset({"metadata.google.internal", "metadata.goog"})


class OwnAddresses(NamedTuple):
    """Where this server listens: each listener's bound (address, port), and the machine's
    own addresses, which a listener bound to ``0.0.0.0`` or ``::`` answers on as well."""

    listeners: tuple[tuple[IPAddress, int], ...] = ()
    local: frozenset[IPAddress] = frozenset()


NO_OWN_ADDRESSES = OwnAddresses()


def own_addresses(listeners: Iterable[tuple[str, int]], local: Iterable[str] = ()) -> OwnAddresses:
    """``OwnAddresses`` from bound hosts and ports as sockets give them (text)."""
    bound = tuple((ipaddress.ip_address(host.split("%")[0]), port) for host, port in listeners)
    return OwnAddresses(bound, frozenset(ipaddress.ip_address(a.split("%")[0]) for a in local))


def refused_target(url: str, own: OwnAddresses = NO_OWN_ADDRESSES) -> str | None:
    """Why the server must not send requests to ``url``, or None when it may. ``url`` is an
    http(s) URL whose shape was checked already; a host that cannot be read is left to
    that check."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    if not host:
        return None
    name = unquote(host).lower().removesuffix(".")
    if name in METADATA_HOSTNAMES:
        return f"{name} is a cloud metadata service"
    address = host_address(name)
    if address is not None:
        reason = refused_address(address)
        if reason is not None:
            return reason
    if port is not None and _is_own(name, address, port, own):
        return f"{name} port {port} is this server's own listener (a request would loop back)"
    return None


def host_address(host: str) -> IPAddress | None:
    """The IP address a URL's host names, in any spelling a client connects to; None for a
    host name."""
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.split("%")[0])
        except ValueError:
            return None
    return _inet_aton(host.removesuffix("."))


def _inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """IPv4 as ``inet_aton`` (and so ``getaddrinfo``) reads it, or None."""
    pieces = text.split(".")
    if not 1 <= len(pieces) <= 4:
        return None
    numbers = []
    for piece in pieces:
        value = _number(piece)
        if value is None:
            return None
        numbers.append(value)
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for index, number in enumerate(leading):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _number(piece: str) -> int | None:
    if piece[:2] in ("0x", "0X"):
        digits, base = piece[2:], 16
        if not digits:
            return 0
    elif len(piece) > 1 and piece.startswith("0"):
        digits, base = piece[1:], 8
    else:
        digits, base = piece, 10
    if not digits or not digits.isascii() or not digits.isalnum():
        return None
    try:
        return int(digits, base)
    except ValueError:
        return None


def refused_address(address: IPAddress) -> str | None:
    """Why no request may go to ``address`` (link-local, metadata, unspecified), or None."""
    v4 = _embedded_v4(address) if isinstance(address, ipaddress.IPv6Address) else address
    if v4 is not None:
        if v4 in _LINK_LOCAL_V4:
            return f"{address} is link-local (where cloud metadata services answer)"
        if v4 in _THIS_NETWORK_V4:
            return f"{address} is the unspecified address (it reaches this machine)"
        if v4 in METADATA_ADDRESSES:
            return f"{address} is a cloud metadata service"
    if address in METADATA_ADDRESSES:
        return f"{address} is a cloud metadata service"
    if isinstance(address, ipaddress.IPv6Address):
        if address.is_link_local:
            return f"{address} is link-local (fe80::/10)"
        if address.is_unspecified:
            return f"{address} is the unspecified address (it reaches this machine)"
    return None


def _embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    value = int(address)
    if address in _NAT64 or (value >> 32 == 0 and value > 1):
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def _is_loopback(name: str, address: IPAddress | None) -> bool:
    if address is None:
        return name == "localhost" or name.endswith(".localhost")
    mapped = _embedded_v4(address) if isinstance(address, ipaddress.IPv6Address) else None
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _plain(address: IPAddress) -> IPAddress:
    """An IPv4-mapped IPv6 address as the IPv4 address it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_own(name: str, address: IPAddress | None, port: int, own: OwnAddresses) -> bool:
    """Whether ``name``/``address`` on ``port`` is one of this server's listeners: loopback on
    a listener's port counts as itself, and a wildcard listener owns every local address."""
    for bound, bound_port in own.listeners:
        if port != bound_port:
            continue
        if _is_loopback(name, address):
            return True
        if address is None:
            continue
        target = _plain(address)
        if bound.is_unspecified:
            if target in own.local or target.is_unspecified:
                return True
        elif target == _plain(bound):
            return True
    return False
