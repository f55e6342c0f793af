"""The per-peer and total counts behind the connection and stream limits."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from wire.peer_budget import PeerBudget
from wire.peers import peer_key


def test_a_peer_gets_at_most_its_share_and_others_still_get_theirs() -> None:
    budget = PeerBudget("streams", per_peer=2, total=5)
    assert budget.admit("10.0.0.1") is None
    assert budget.admit("10.0.0.1") is None
    refusal = budget.admit("10.0.0.1")
    assert refusal == "10.0.0.1 holds 2 open streams, its limit"
    assert budget.admit("10.0.0.2") is None
    assert budget.held == 3 and budget.holding("10.0.0.1") == 2
    budget.release("10.0.0.1")
    assert budget.admit("10.0.0.1") is None


def test_all_peers_together_get_at_most_the_total() -> None:
    budget = PeerBudget("connections", per_peer=10, total=3)
    for peer in ("a", "b", "c"):
        assert budget.admit(peer) is None
    assert budget.admit("d") == "this server holds 3 open connections, its limit over all clients"
    budget.release("b")
    assert budget.admit("d") is None


def test_an_ipv4_mapped_peer_is_its_ipv4_address() -> None:
    assert peer_key("::ffff:127.0.0.1") == "127.0.0.1"
    assert peer_key("::1") == "::1"
    assert peer_key(None) == "unknown"
    budget = PeerBudget("streams", per_peer=1, total=10)
    assert budget.admit("127.0.0.1") is None
    assert budget.admit("::ffff:127.0.0.1") is not None


@given(st.lists(st.tuples(st.booleans(), st.sampled_from(["a", "b", "c"])), max_size=200))
def test_counts_never_pass_either_cap_and_return_to_zero(ops: list[tuple[bool, str]]) -> None:
    budget = PeerBudget("streams", per_peer=3, total=5)
    held: list[str] = []
    for opening, peer in ops:
        if opening:
            if budget.admit(peer) is None:
                held.append(peer)
        elif peer in held:
            held.remove(peer)
            budget.release(peer)
        assert budget.held == len(held) <= 5
        assert all(budget.holding(p) == held.count(p) <= 3 for p in "abc")
    for peer in held:
        budget.release(peer)
    assert budget.held == 0 and all(budget.holding(p) == 0 for p in "abc")
