"""How a client's address is named wherever it is counted or checked: the allow-list, the
wrong-token throttle, the connection and stream budgets. An IPv4-mapped IPv6 peer is its IPv4
address, so a dual-stack listener cannot make one client two peers."""

from __future__ import annotations

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def peer_address(remote: str | None) -> Address | None:
    """The peer's IP (an IPv4-mapped IPv6 peer as its IPv4 address), or None if it has none."""
    try:
        address = ipaddress.ip_address(remote or "")
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def peer_key(remote: str | None) -> str:
    """The name a peer is counted under: its address as ``peer_address`` reads it, else what
    the socket said, else ``unknown``."""
    address = peer_address(remote)
    if address is not None:
        return str(address)
    return remote or "unknown"
