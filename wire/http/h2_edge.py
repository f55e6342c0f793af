"""Which handler an HTTP/2 stream gets, and what is refused before any: the HTTP/2 listener's
side of the gate (``wire.http.gate``), with the same rules (``wire.edge_rules``).

``Run`` is ours; every other path goes through the relay to the main app, whose gate decides
its kind on the route it matches and applies the browser rules against this listener. Here,
first: a target not every reader reads alike is 400 (so no ``:path`` such as
``@host:port/x`` ever reaches the relay); a balancer's ``GET /healthz`` passes, where the app
has that route (it exists only with a store; without it the path would reach the proxy
fallback unchecked); beyond loopback the allow-list and token come next, on the client's own
address (the relay's hop must not stand in for it), a peer throttled for wrong tokens getting
429 with ``retry-after``; ``Run`` then meets the browser rules.
"""

from __future__ import annotations

import functools
import logging

from wire.burst_log import RefusalLog
from wire.edge_rules import RouteKind, browser_refusal, target_refusal
from wire.errors import http_error_json
from wire.hop_by_hop import ACCESS_TOKEN_HEADER
from wire.http.agent_access import AccessRefusal, AgentAccess
from wire.http.agent_run import RUN_PATH
from wire.http.h2_server import H2Stream, StreamHandler
from wire.http.health_routes import HEALTH_PATH

logger = logging.getLogger("cursor_server.h2")


class H2Edge:
    """The route function of one HTTP/2 listener (``H2Server.route``)."""

    def __init__(
        self,
        run: StreamHandler,
        relay: StreamHandler,
        access: AgentAccess | None,
        *,
        health_route: bool,
        loopback_listener: bool,
    ) -> None:
        self._run = run
        self._relay = relay
        self._access = access
        self._health_route = health_route
        self._loopback_listener = loopback_listener
        # Refusals are logged once per burst from a peer (``wire.burst_log``).
        self._refusals = RefusalLog(logger)

    def route(self, stream: H2Stream) -> StreamHandler:
        target = target_refusal(stream.path)
        if target is not None:
            return functools.partial(
                _refuse, 400, "invalid_argument", "edge", target, self._refusals
            )
        if self._health_route and _is_health_probe(stream):
            return self._relay
        if self._access is not None:
            denied = self._access.refusal(stream.peer, stream.header(ACCESS_TOKEN_HEADER.lower()))
            if denied is not None:
                return functools.partial(_deny, denied, self._refusals)
        if stream.path != RUN_PATH or stream.method != "POST":
            return self._relay
        refusal = browser_refusal(
            RouteKind.AGENT,
            loopback_listener=self._loopback_listener,
            host=stream.header(":authority") or stream.header("host") or "",
            origin=stream.header("origin"),
            content_type=stream.header("content-type"),
            method=stream.method,
        )
        if refusal is not None:
            return functools.partial(
                _refuse, refusal.status, refusal.code, "edge", refusal.message, self._refusals
            )
        return self._run


def _is_health_probe(stream: H2Stream) -> bool:
    return stream.method in ("GET", "HEAD") and stream.path.split("?", 1)[0] == HEALTH_PATH


async def _deny(denied: AccessRefusal, refusals: RefusalLog, stream: H2Stream) -> None:
    """The access check's answer; a throttled or burst attempt was logged by the throttle."""
    headers: tuple[tuple[str, str], ...] = ()
    if denied.retry_after_s is not None:
        headers = (("retry-after", str(denied.retry_after_s)),)
    await _refuse(
        denied.status,
        denied.code,
        "agent",
        denied.message,
        refusals,
        stream,
        headers,
        log=not denied.quiet,
    )


async def _refuse(
    status: int,
    code: str,
    what: str,
    reason: str,
    refusals: RefusalLog,
    stream: H2Stream,
    headers: tuple[tuple[str, str], ...] = (),
    *,
    log: bool = True,
) -> None:
    if log:
        refusals(what, status, stream.peer, path=stream.path, reason=reason)
    stream.respond(status, (("content-type", "application/json"), *headers))
    await stream.write(http_error_json(code, reason))
    stream.end()
