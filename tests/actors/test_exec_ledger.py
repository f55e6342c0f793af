"""The tool runtime's wire-id bookkeeping, without an actor: ids, what each answer's id names,
tombstones until the round settles, released execs, background requests."""

from __future__ import annotations

from dataclasses import dataclass

from actors.exec_ledger import MAX_WIRE_ID, ExecAnswer, ExecLedger


@dataclass(frozen=True)
class Call:
    round_id: str
    name: str = "call"


def test_ids_start_at_one_and_are_never_reused() -> None:
    ledger: ExecLedger[Call] = ExecLedger()
    assert [ledger.new_id() for _ in range(3)] == [1, 2, 3]


def test_the_id_space_ends_at_the_uint32_limit() -> None:
    ledger: ExecLedger[Call] = ExecLedger(first_id=MAX_WIRE_ID)
    assert ledger.new_id() == MAX_WIRE_ID
    assert ledger.new_id() is None
    assert ledger.new_id() is None


def test_an_exec_answer_is_pending_then_a_duplicate_until_its_round_settles() -> None:
    ledger: ExecLedger[Call] = ExecLedger()
    call = Call("r1")
    ledger.exec_sent(1, call)
    assert ledger.exec_answer(1) is ExecAnswer.PENDING
    assert ledger.exec_answer(2) is ExecAnswer.UNKNOWN
    assert ledger.take_exec(1) is call
    assert ledger.exec_answer(1) is ExecAnswer.DUPLICATE
    ledger.settle("r0")  # another round's settling leaves it
    assert ledger.exec_answer(1) is ExecAnswer.DUPLICATE
    ledger.settle("r1")
    assert ledger.exec_answer(1) is ExecAnswer.UNKNOWN


def test_a_tombstone_counts_only_on_its_own_channel() -> None:
    ledger: ExecLedger[Call] = ExecLedger()
    ledger.query_sent(1, Call("r1"))
    assert ledger.take_query(1) == Call("r1")
    assert ledger.take_query(1) is None
    assert ledger.query_answered_before(1)
    # An exec answer for an id only ever asked as a query was never asked: unknown.
    assert ledger.exec_answer(1) is ExecAnswer.UNKNOWN
    assert not ledger.query_answered_before(2)


def test_a_released_exec_drops_what_still_comes_for_it() -> None:
    ledger: ExecLedger[Call] = ExecLedger()
    ledger.exec_sent(1, Call("r1"))
    assert ledger.release_exec(1) == Call("r1")
    assert ledger.exec_answer(1) is ExecAnswer.RELEASED
    assert ledger.release_exec(1) is None  # not pending any more
    assert ledger.pending_count == 0


def test_a_background_request_is_answered_once() -> None:
    ledger: ExecLedger[Call] = ExecLedger()
    call = Call("r1")
    ledger.force_sent(5, call, "force_background_shell_result")
    assert ledger.exec_answer(5) is ExecAnswer.FORCED
    assert ledger.take_forced(5) == (call, "force_background_shell_result")
    assert ledger.exec_answer(5) is ExecAnswer.DUPLICATE
    ledger.force_sent(6, call, "force_background_subagent_result")
    assert ledger.drop_forced(6)
    assert not ledger.drop_forced(6)
    assert ledger.exec_answer(6) is ExecAnswer.UNKNOWN


def test_pending_requests_are_listed_in_id_order_and_an_abort_clears_them() -> None:
    ledger: ExecLedger[Call] = ExecLedger()
    for wire_id in (3, 1, 2):
        ledger.exec_sent(wire_id, Call("r1", f"e{wire_id}"))
    ledger.query_sent(7, Call("r1", "q"))
    ledger.query_sent(4, Call("r1", "p"))
    ledger.force_sent(9, Call("r1"), "x")
    ledger.force_sent(8, Call("r1"), "y")
    assert [wire_id for wire_id, _ in ledger.execs()] == [1, 2, 3]
    assert [wire_id for wire_id, _ in ledger.queries()] == [4, 7]
    assert ledger.forced_ids() == [8, 9]
    ledger.take_exec(1)
    ledger.release_exec(2)
    ledger.dispatch("call-1")
    ledger.clear()
    assert list(ledger.execs()) == [] and list(ledger.queries()) == []
    assert ledger.forced_ids() == []
    assert ledger.exec_answer(1) is ExecAnswer.UNKNOWN  # no tombstone after an abort
    assert ledger.exec_answer(2) is ExecAnswer.RELEASED  # still dropped if it comes late
    assert ledger.dispatched("call-1")
