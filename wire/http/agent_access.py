"""Who may use the agent RPCs when the server listens beyond loopback.

On a loopback listener only this machine can connect, and nothing here applies. Bound to any
other address, every request outside ``/console`` (RunSSE, BidiAppend, the model lists, the
upstream proxy, and any agent route added later) must come from a network in
``CURSOR_AGENT_ALLOW`` (unset: loopback only) and carry the console token in
``X-Cursor-Server-Token``. A refused client gets 403 ``{code, message}`` and a log line with
its address, and nothing it sent reaches Cursor's backend. The token is compared through the
server's one wrong-token throttle (``wire.peer_throttle``): a peer that sent too many wrong
ones gets 429 with ``Retry-After``, its token unread, and no log line per attempt.
``/console`` keeps its own guard (``console.auth``); ``GET /healthz`` needs neither, so a
balancer's probe works from anywhere.

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

import msgspec

from wire.hop_by_hop import ACCESS_TOKEN_HEADER
from wire.http.token_throttle import THROTTLED_CODE, THROTTLED_STATUS, throttled_body_message
from wire.peer_throttle import Verdict, whole_seconds
from wire.peers import peer_address

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


# The server's throttled token comparison (``ConsoleAuth.check_token``, bound to "agent").
TokenCheck = Callable[[str | None, str], Verdict]


class AccessRefusal(msgspec.Struct, frozen=True):
    """A refused request's answer. ``retry_after_s``: whole seconds for ``Retry-After`` (a
    throttled peer); ``quiet``: the throttle already logged this peer's burst, so the
    attempt gets no line of its own."""

    status: int
    code: str
    message: str
    retry_after_s: int | None = None
    quiet: bool = False


def throttled_refusal(verdict: Verdict) -> AccessRefusal:
    """The answer to a peer the token throttle holds back (429 with ``Retry-After``; the
    throttle logged its burst already)."""
    assert verdict.retry_after_s is not None
    return AccessRefusal(
        THROTTLED_STATUS,
        THROTTLED_CODE,
        throttled_body_message(verdict),
        retry_after_s=whole_seconds(verdict.retry_after_s),
        quiet=True,
    )


def _forbidden(message: str, *, quiet: bool = False) -> AccessRefusal:
    return AccessRefusal(403, "permission_denied", message, quiet=quiet)


class AgentAccess:
    """The allow-list and the token check in front of every non-console route."""

    def __init__(self, networks: tuple[Network, ...], check_token: TokenCheck) -> None:
        self._networks = networks
        self._check_token = check_token

    def refusal(self, remote: str | None, token: str | None) -> AccessRefusal | None:
        """Why a request from ``remote`` with ``token`` is refused, or None to let it in.
        Only a peer on an allowed network that sends a token has it compared (and counted
        when wrong): a missing token is no guess."""
        address = peer_address(remote)
        if address is None or not any(address in network for network in self._networks):
            return _forbidden(
                f"agent requests from {remote or 'an unknown address'} are not accepted: "
                f"add its network to {ALLOW_VARIABLE}"
            )
        if token is None:
            return _forbidden(
                f"agent requests to this server need the console token in {TOKEN_HEADER}"
            )
        verdict = self._check_token(remote, token.strip())
        if verdict.retry_after_s is not None:
            return throttled_refusal(verdict)
        if not verdict.matched:
            return _forbidden(
                f"the token in {TOKEN_HEADER} is not this server's console token",
                quiet=verdict.quiet,
            )
        return None
