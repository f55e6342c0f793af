"""The pool key one provider attempt sends, and what its refusal means for the next attempt.

A ProviderActor holds one ``AttemptKey`` per call: each attempt asks it for its route with a
key of the pool (the process's ``KeyHealth`` picks a healthy one in turn), and tells it how the
attempt ended: an answer clears the key's cool-down, a 429 or 401 cools it and, with another
key healthy and the retry budget not spent, asks for another attempt at once
(``wire.providers.key_pool``). A route without a pool sends its own key and is never moved.
"""

from __future__ import annotations

import msgspec

from actors.conversation.request import ModelRoute, RouteKey
from actors.providers.key_health import KeyHealth
from store.base.clock import now_ms
from wire.providers.key_pool import retry_on_another_key
from wire.providers.retry import AttemptFailure, RetryPolicy


class AttemptKey:
    """The current attempt's key (None: its route has no pool)."""

    def __init__(self, health: KeyHealth) -> None:
        self._health = health
        self._route: ModelRoute | None = None
        self.key: RouteKey | None = None

    @property
    def label(self) -> str | None:
        return None if self.key is None else self.key.label

    def route_for_attempt(self, route: ModelRoute) -> ModelRoute:
        """``route`` sending this attempt's key: one of the pool's, healthy keys in turn."""
        self._route, self.key = route, None
        if not route.keys:
            return route
        self.key = self._health.choose(route.provider_id, route.keys, now_ms())
        return msgspec.structs.replace(route, api_key=self.key.secret)

    def answered(self) -> None:
        """The attempt's key was answered with a success status."""
        if self.key is not None and self._route is not None:
            self._health.answered(self._route.provider_id, self.key.key_id)

    def refused(
        self,
        message: str,
        failure: AttemptFailure,
        policy: RetryPolicy,
        *,
        attempts_made: int,
        elapsed_s: float,
    ) -> bool:
        """Note a refusal against the attempt's key (a 429 or 401 cools it); whether to try
        again at once on another key of the pool."""
        key, route = self.key, self._route
        if key is None or route is None or failure.http_status is None:
            return False
        now = now_ms()
        cooled = self._health.refused(
            route.provider_id, key.key_id, failure.http_status, message, failure.retry_after, now
        )
        if not cooled:
            return False
        return retry_on_another_key(
            policy,
            failure,
            attempts_made=attempts_made,
            elapsed_s=elapsed_s,
            another_healthy=self._health.another_healthy(
                route.provider_id, route.keys, key.key_id, now
            ),
        )
