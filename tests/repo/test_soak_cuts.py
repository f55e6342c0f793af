"""The soak's check of its cuts (``tests/bench/soak_accounting.check_cuts``): a cut is judged
by what the server's call record received, byte for byte, so events lost between the socket
and the turn show up even when the turn's end code happens to fit."""

from __future__ import annotations

from tests.bench.soak_accounting import RunSummary, TurnRecord, check_cuts, of_soak


def turn(tag: str, started: float = 0.0) -> TurnRecord:
    record = TurnRecord(0, tag, "text", False)
    record.runs = [RunSummary("unavailable", "", started, started + 0.5)]
    return record


def test_a_cut_the_server_received_whole_balances_a_short_or_missing_one_does_not() -> None:
    turns = [turn("c0t0"), turn("c0t1"), turn("c0t2")]
    cuts = {"c0t0": [182], "c0t1": [182, 272], "c0t2": [182]}
    whole = {"c0t0": [182], "c0t1": [272, 182], "c0t2": [182]}
    assert check_cuts(cuts, whole, turns, None) == []
    # The role chunk arrived, the event after it was lost: the record holds fewer bytes.
    short = {**whole, "c0t1": [182, 90]}
    (problem,) = check_cuts(cuts, short, turns, None)
    assert problem.startswith("turn c0t1:") and "[90, 182]" in problem
    # A failed attempt after a 200 with no cut behind it, and a cut with no record.
    assert len(check_cuts(cuts, {**whole, "c1t0": [5]}, [*turns, turn("c1t0")], None)) == 1
    assert len(check_cuts(cuts, {"c0t0": [182], "c0t1": [182, 272]}, turns, None)) == 1


def test_a_turn_the_restart_cut_is_left_out_and_only_the_soaks_rows_are_read() -> None:
    turns = [turn("c0t0", started=1.0)]
    assert check_cuts({"c0t0": [182]}, {}, turns, (0.9, 1.2)) == []
    assert len(check_cuts({"c0t0": [182]}, {}, turns, (5.0, 6.0))) == 1
    assert of_soak("%s") == "run_id LIKE %s"
