"""The server's one wrong-token throttle (``wire.peer_throttle``) with its log lines and its
429 answer, shared by the console login, console bearer tokens and the agent token.

Logged once per burst, never per attempt: a WARNING when a peer becomes throttled and an INFO
with the count of requests refused unread once its bucket is full again. The token itself is
never logged, nor whether a refused one would have been right.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aiohttp import web

from wire.http.responses import json_error
from wire.log import log_event
from wire.peer_throttle import (
    BurstEnded,
    Engaged,
    PeerThrottle,
    Verdict,
    throttled_message,
    whole_seconds,
)

logger = logging.getLogger("cursor_server.edge.throttle")

THROTTLED_STATUS = 429
THROTTLED_CODE = "resource_exhausted"


class TokenThrottle:
    """``PeerThrottle.check`` plus the log lines of the bursts it starts and ends."""

    def __init__(self, throttle: PeerThrottle) -> None:
        self._throttle = throttle

    @property
    def peers(self) -> int:
        """How many peers are held (bounded by the throttle's ``max_peers``)."""
        return len(self._throttle)

    def check(self, peer: str | None, via: str, matches: Callable[[], bool]) -> Verdict:
        """``matches`` is called only when ``peer`` is not throttled; ``via`` names which
        token it was (``login``, ``bearer``, ``agent``) for the burst's warning."""
        verdict = self._throttle.check(peer, matches)
        for event in self._throttle.take_events():
            if isinstance(event, Engaged):
                log_event(
                    logger,
                    logging.WARNING,
                    "wrong tokens throttled",
                    peer=event.peer,
                    via=via,
                    failures=event.failures,
                    retry_after_s=whole_seconds(event.retry_after_s),
                )
            elif isinstance(event, BurstEnded):
                log_event(
                    logger,
                    logging.INFO,
                    "wrong tokens throttle ended",
                    peer=event.peer,
                    failures=event.failures,
                    refused=event.refused,
                    dropped=event.dropped or None,
                )
        return verdict


def retry_after_header(verdict: Verdict) -> str:
    """``Retry-After`` for a throttled verdict: whole seconds, rounded up."""
    assert verdict.retry_after_s is not None
    return str(whole_seconds(verdict.retry_after_s))


def throttled_body_message(verdict: Verdict) -> str:
    assert verdict.retry_after_s is not None
    return throttled_message(verdict.peer, verdict.retry_after_s)


def too_many_wrong_tokens(verdict: Verdict) -> web.Response:
    """429 ``resource_exhausted`` with ``Retry-After``; the same answer whatever the token."""
    response = json_error(THROTTLED_STATUS, THROTTLED_CODE, throttled_body_message(verdict))
    response.headers["Retry-After"] = retry_after_header(verdict)
    return response
