"""RunOwners: a new run takes a conversation over; releasing an old run keeps the new claim."""

from __future__ import annotations

import threading

from actors.run.owners import RunOwners


class Ref:
    def __init__(self) -> None:
        self.told: list[object] = []

    def tell(self, message: object) -> None:
        self.told.append(message)


def test_a_second_run_gets_the_first_runs_actor_back() -> None:
    owners = RunOwners()
    first, second = Ref(), Ref()
    assert owners.claim("conv", "run-1", first) is None
    assert owners.claim("conv", "run-2", second) is first
    assert owners.owner("conv") == "run-2"


def test_reclaiming_by_the_same_run_returns_nothing() -> None:
    owners = RunOwners()
    ref = Ref()
    owners.claim("conv", "run-1", ref)
    assert owners.claim("conv", "run-1", ref) is None


def test_releasing_a_replaced_run_keeps_the_new_owner() -> None:
    owners = RunOwners()
    owners.claim("conv", "run-1", Ref())
    owners.claim("conv", "run-2", Ref())
    assert owners.release("conv", "run-1") is False
    assert owners.owner("conv") == "run-2"
    assert owners.release("conv", "run-2") is True
    assert owners.owner("conv") is None


def test_concurrent_claims_leave_exactly_one_owner_and_hand_back_every_other() -> None:
    owners = RunOwners()
    refs = [Ref() for _ in range(16)]
    handed_back: list[object] = []
    lock = threading.Lock()

    def claim(i: int) -> None:
        previous = owners.claim("conv", f"run-{i}", refs[i])
        if previous is not None:
            with lock:
                handed_back.append(previous)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    winner = owners.owner("conv")
    assert winner is not None
    winner_ref = refs[int(winner.split("-")[1])]
    assert winner_ref not in handed_back
    assert sorted(map(id, handed_back)) == sorted(id(r) for r in refs if r is not winner_ref)
