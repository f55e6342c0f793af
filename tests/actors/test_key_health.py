"""The process's key health (``actors.providers.key_health``): one turn per provider shared by
every caller, refusals that cool a key and keep its last error, an answer that ends a cool-down,
and no turn lost or repeated when many threads choose at once."""

from __future__ import annotations

import threading
from collections import Counter

from actors.conversation.request import RouteKey
from actors.conversation.secret import Secret
from actors.providers.key_health import KeyHealth
from wire.providers.key_pool import KeyCooling, KeyRefusal, KeyState

NOW = 1_700_000_000_000
POOL = (RouteKey(0, "main", Secret("k0")), RouteKey(7, "b", Secret("k7")))


def test_turns_are_per_provider() -> None:
    health = KeyHealth()
    assert [health.choose(1, POOL, NOW).label for _ in range(3)] == ["main", "b", "main"]
    assert health.choose(2, POOL, NOW).label == "main"  # provider 2's own first turn


def test_a_refusal_cools_the_key_and_an_answer_ends_it() -> None:
    health = KeyHealth(KeyCooling(rate_limited_s=5))
    assert health.refused(1, 0, 429, "rate limited", None, NOW)
    assert not health.refused(1, 7, 500, "oops", None, NOW)  # not a key's fault
    state = health.states(1)[0]
    assert state.cooling_until_ms == NOW + 5000
    assert state.last_error == KeyRefusal("rate limited", 429, NOW)
    assert 7 not in health.states(1) and health.states(2) == {}
    assert [health.choose(1, POOL, NOW + 1).label for _ in range(2)] == ["b", "b"]
    assert not health.another_healthy(1, POOL, 7, NOW + 1)
    assert health.another_healthy(1, POOL, 7, NOW + 5000)  # cooled down
    health.answered(1, 0)
    assert health.states(1)[0] == KeyState(None, state.last_error)
    assert health.another_healthy(1, POOL, 7, NOW + 1)


def test_concurrent_choices_share_the_turns_fairly() -> None:
    health = KeyHealth()
    chosen: list[str] = []
    lock = threading.Lock()

    def choose() -> None:
        labels = [health.choose(1, POOL, NOW).label for _ in range(500)]
        with lock:
            chosen.extend(labels)

    threads = [threading.Thread(target=choose) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert Counter(chosen) == {"main": 2000, "b": 2000}
