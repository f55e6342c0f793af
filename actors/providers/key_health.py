"""The health of every provider key this process has sent: shared by its ProviderActors and
read by the console's key list.

Kept in memory, per process (each server instance keeps its own and learns on its own), keyed
by provider id and key id; every access holds one lock, since the ProviderActors of many calls
run on many threads. The decisions are pure (``wire.providers.key_pool``); this object only
holds their state: each key's cool-down and last refusal, and each provider's round-robin turn.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from actors.conversation.request import RouteKey
from wire.providers.key_pool import (
    HEALTHY,
    KeyCooling,
    KeyRefusal,
    KeyState,
    cool_down_until_ms,
    has_other_healthy,
    pick_key,
)


class KeyHealth:
    """(provider id, key id) -> its ``KeyState``, and provider id -> its next turn."""

    def __init__(self, cooling: KeyCooling | None = None) -> None:
        self._lock = threading.Lock()
        self._cooling = cooling if cooling is not None else KeyCooling()
        self._states: dict[tuple[int, int], KeyState] = {}
        self._turns: dict[int, int] = {}

    def _of(self, provider_id: int, keys: Sequence[RouteKey]) -> dict[int, KeyState]:
        return {k.key_id: self._states.get((provider_id, k.key_id), HEALTHY) for k in keys}

    def choose(self, provider_id: int, keys: Sequence[RouteKey], now_ms: int) -> RouteKey:
        """The key the next attempt to ``provider_id`` sends (its turn moves on)."""
        with self._lock:
            turn = self._turns.get(provider_id, 0)
            self._turns[provider_id] = turn + 1
            index = pick_key([k.key_id for k in keys], self._of(provider_id, keys), now_ms, turn)
        return keys[index]

    def another_healthy(
        self, provider_id: int, keys: Sequence[RouteKey], key_id: int, now_ms: int
    ) -> bool:
        """Whether a key of the pool other than ``key_id`` is not cooling."""
        with self._lock:
            states = self._of(provider_id, keys)
        return has_other_healthy([k.key_id for k in keys], states, now_ms, key_id)

    def refused(
        self,
        provider_id: int,
        key_id: int,
        status: int,
        message: str,
        retry_after: str | None,
        now_ms: int,
    ) -> bool:
        """Note a refusal; a 429 or 401 cools the key and is kept as its last error (returns
        True), anything else leaves it as it was (False). ``message`` must be scrubbed."""
        until = cool_down_until_ms(self._cooling, status, retry_after, now_ms)
        if until is None:
            return False
        with self._lock:
            self._states[(provider_id, key_id)] = KeyState(
                cooling_until_ms=until, last_error=KeyRefusal(message, status, now_ms)
            )
        return True

    def answered(self, provider_id: int, key_id: int) -> None:
        """A key answered: it cools no more (its last error stays to be read)."""
        with self._lock:
            state = self._states.get((provider_id, key_id))
            if state is not None and state.cooling_until_ms is not None:
                self._states[(provider_id, key_id)] = KeyState(None, state.last_error)

    def forget(self, provider_id: int, key_id: int | None = None) -> None:
        """Drop what is known of one key (replaced or deleted: a new key starts healthy), or
        of every key of a provider (deleted: its id may be reused)."""
        with self._lock:
            for known in [k for k in self._states if k[0] == provider_id]:
                if key_id is None or known[1] == key_id:
                    del self._states[known]
            if key_id is None:
                self._turns.pop(provider_id, None)

    def states(self, provider_id: int) -> dict[int, KeyState]:
        """key id -> state, for the keys of ``provider_id`` this process has noted."""
        with self._lock:
            return {key: s for (pid, key), s in self._states.items() if pid == provider_id}
