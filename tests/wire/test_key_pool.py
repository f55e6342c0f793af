"""The key pool's pure decisions (``wire.providers.key_pool``): how long a refused key cools,
which key an attempt sends, and when a refusal is tried again at once on another key."""

from __future__ import annotations

from wire.providers.key_pool import (
    KeyCooling,
    KeyRefusal,
    KeyState,
    cool_down_until_ms,
    has_other_healthy,
    is_cooling,
    pick_key,
    retry_on_another_key,
)
from wire.providers.retry import AttemptFailure, RetryPolicy

NOW = 1_700_000_000_000
COOLING = KeyCooling()


def cooling_until(until_ms: int) -> KeyState:
    return KeyState(until_ms, KeyRefusal("refused", 429, NOW))


def refused(status: int, *, reached: bool = False) -> AttemptFailure:
    return AttemptFailure(status, False, reached)


def test_a_429_cools_for_its_retry_after_and_a_401_for_its_default() -> None:
    assert cool_down_until_ms(COOLING, 429, "30", NOW) == NOW + 30_000
    assert cool_down_until_ms(COOLING, 429, None, NOW) == NOW + 60_000
    assert cool_down_until_ms(COOLING, 401, None, NOW) == NOW + 600_000
    assert cool_down_until_ms(COOLING, 401, "5", NOW) == NOW + 5_000


def test_a_retry_after_is_capped_and_may_be_a_date() -> None:
    assert cool_down_until_ms(COOLING, 429, "86400", NOW) == NOW + 900_000
    date = "Tue, 14 Nov 2023 22:14:20 GMT"  # NOW is 22:13:20 that day
    assert cool_down_until_ms(COOLING, 429, date, NOW) == NOW + 60_000
    assert cool_down_until_ms(COOLING, 429, "soon", NOW) == NOW + 60_000  # unreadable: default


def test_other_statuses_do_not_cool_a_key() -> None:
    for status in (400, 403, 404, 500, 502, 503, 529):
        assert cool_down_until_ms(COOLING, status, "30", NOW) is None


def test_a_key_cools_until_its_time_and_no_longer() -> None:
    state = cooling_until(NOW + 10)
    assert is_cooling(state, NOW + 9)
    assert not is_cooling(state, NOW + 10)
    assert not is_cooling(KeyState(), NOW)


def test_healthy_keys_take_turns_in_pool_order() -> None:
    keys = [0, 5, 9]
    assert [pick_key(keys, {}, NOW, turn) for turn in range(6)] == [0, 1, 2, 0, 1, 2]


def test_a_cooling_key_passes_its_turn_to_the_next_healthy_one() -> None:
    keys = [0, 5, 9]
    states = {5: cooling_until(NOW + 1000)}
    assert [pick_key(keys, states, NOW, turn) for turn in range(3)] == [0, 2, 2]
    assert pick_key(keys, {0: cooling_until(NOW + 1), 5: cooling_until(NOW + 1)}, NOW, 0) == 2


def test_with_every_key_cooling_the_one_whose_cool_down_ends_first_is_sent() -> None:
    keys = [0, 5, 9]
    states = {
        0: cooling_until(NOW + 3000),
        5: cooling_until(NOW + 1000),
        9: cooling_until(NOW + 2000),
    }
    assert {pick_key(keys, states, NOW, turn) for turn in range(3)} == {1}


def test_a_single_key_is_always_sent() -> None:
    assert pick_key([0], {0: cooling_until(NOW + 5000)}, NOW, 7) == 0
    assert pick_key([0], {}, NOW, 3) == 0


def test_another_healthy_key_is_one_other_than_the_current_not_cooling() -> None:
    states = {0: cooling_until(NOW + 10), 1: cooling_until(NOW + 10)}
    assert not has_other_healthy([0, 1], states, NOW, 0)
    assert has_other_healthy([0, 1, 2], states, NOW, 0)
    assert not has_other_healthy([0], {}, NOW, 0)


def test_a_429_or_401_is_tried_again_on_another_key_within_the_budget() -> None:
    policy = RetryPolicy(max_attempts=3, budget_s=30)

    def again(failure: AttemptFailure, attempts: int = 1, elapsed: float = 0.1) -> bool:
        return retry_on_another_key(
            policy, failure, attempts_made=attempts, elapsed_s=elapsed, another_healthy=True
        )

    assert again(refused(429)) and again(refused(401)) and again(refused(401), attempts=2)
    assert not again(refused(401), attempts=3)  # the policy's attempts are spent
    assert not again(refused(429), elapsed=31)  # past the time budget
    assert not again(refused(500))  # not a key's fault: the usual retry decides
    assert not again(refused(403))
    assert not again(refused(429, reached=True))  # something was shown: never again
    assert not retry_on_another_key(
        policy, refused(429), attempts_made=1, elapsed_s=0, another_healthy=False
    )
