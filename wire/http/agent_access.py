"""Who may use the agent RPCs when the server listens beyond loopback.

On a loopback listener only this machine can connect, and nothing here applies. Bound to any
other address, every request outside ``/console`` (RunSSE, BidiAppend, the model lists, the
upstream proxy, and any agent route added later) must come from a network in
``CURSOR_AGENT_ALLOW`` (unset: loopback only) and carry the console token in
``X-Cursor-Server-Token``. A refused client gets 403 ``{code, message}`` and a log line with
its address, and nothing it sent reaches Cursor's backend. ``/console`` keeps its own guard
(``console.auth``); ``GET /healthz`` needs neither, so a balancer's probe works from anywhere.

Why a header of our own: ``Authorization`` already carries the user's Cursor token, which the
proxy must pass upstream unchanged. Cursor cannot be told to add a header to its backend
requests, so beyond loopback the editor reaches the server through something that adds it (a
reverse proxy or tunnel on the editor's machine). The header is never forwarded upstream
(``wire.hop_by_hop``).

The decision is here; the gate (``wire.http.gate``) applies it to every request whose route
kind is an agent RPC or the proxy.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from wire.hop_by_hop import ACCESS_TOKEN_HEADER

ALLOW_VARIABLE = "CURSOR_AGENT_ALLOW"
TOKEN_HEADER = ACCESS_TOKEN_HEADER

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK_NETWORKS: tuple[Network, ...] = (
    ipaddress.IPv4Network("127.0.0.0/8"),
    ipaddress.IPv6Network("::1/128"),
)


def parse_allow_list(value: str) -> tuple[Network, ...]:
    """``CURSOR_AGENT_ALLOW``: networks in CIDR form (a bare address is one host), separated
    by commas or spaces; ``ValueError`` naming the entry that is not one."""
    entries = value.replace(",", " ").split()
    if not entries:
        raise ValueError("empty; list networks such as 10.0.0.0/8, or unset it (loopback only)")
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry, strict=True))
        except ValueError as exc:
            raise ValueError(f"{entry!r} is not a network in CIDR form: {exc}") from None
    return tuple(networks)


def peer_address(remote: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The peer's IP (an IPv4-mapped IPv6 peer as its IPv4 address), or None if it has none."""
    try:
        address = ipaddress.ip_address(remote or "")
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class AgentAccess:
    """The allow-list and the token check in front of every non-console route."""

    def __init__(self, networks: tuple[Network, ...], token_matches: Callable[[str], bool]) -> None:
        self._networks = networks
        self._token_matches = token_matches

    def refusal(self, remote: str | None, token: str | None) -> str | None:
        """Why a request from ``remote`` with ``token`` is refused, or None to let it in."""
        address = peer_address(remote)
        if address is None or not any(address in network for network in self._networks):
            return (
                f"agent requests from {remote or 'an unknown address'} are not accepted: "
                f"add its network to {ALLOW_VARIABLE}"
            )
        if token is None:
            return f"agent requests to this server need the console token in {TOKEN_HEADER}"
        if not self._token_matches(token.strip()):
            return f"the token in {TOKEN_HEADER} is not this server's console token"
        return None
