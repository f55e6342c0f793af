"""The soak (tests/bench/soak.py) in short: a few conversations, a few turns each, fault rates
high enough that every fault kind happens (provider 500, 429, cut mid-stream; RunSSE dropped and
resumed; one SIGTERM restart), a fixed seed. Counts, not times: every turn ends as its fault
calls for, nothing stored is lost or twice, every call record ends. The accounting's own rules
are checked on hand-made turns, so a soak that cannot see a mismatch fails here too."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

from tests.bench.soak_accounting import RunSummary, TurnRecord, check_turn
from tests.bench.soak_faults import expected_end, provider_fault
from tests.support.process import REPO

SHORT = ["--conversations", "4", "--turns", "6", "--provider-faults", "0.3", "--drops", "0.25"]
SHORT += ["--seed", "11", "--delay", "0.02"]


def line(out: str, prefix: str) -> str:
    (found,) = [text for text in out.splitlines() if text.startswith(prefix)]
    return found.removeprefix(prefix).strip()


def test_the_short_soak_meets_every_fault_and_balances() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench.soak", *SHORT],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    faults = ast.literal_eval(line(out, "provider requests:").split("faults:")[1].strip())
    assert all(faults.get(kind, 0) >= 1 for kind in ("500", "429", "cut")), faults
    by_fault = dict(
        (name, int(count))
        for name, count in re.findall(r"([\w+]+) (\d+)", line(out, "turns by fault:").split(";")[0])
    )
    assert by_fault.get("drop", 0) >= 1 and by_fault.get("restart", 0) >= 1, by_fault
    assert line(out, "turns ending as their fault calls for:") == "24/24"
    assert line(out, "cuts:").endswith("do not hold byte for byte: 0"), out
    codes = ast.literal_eval(line(out, "turns by end code:"))
    assert codes.get("unavailable", 0) >= 1 and set(codes) <= {"ok", "unavailable", "answered"}
    assert "lost or duplicated: 0 " in out
    assert line(out, "llm_calls rows:").endswith("not ended: 0")
    assert out.count("server life") == 2 and "warm RSS" in out
    assert out.rstrip().endswith("soak passed")


def turn(codes: list[str], *, drop: bool = False) -> TurnRecord:
    record = TurnRecord(0, "c0t0", "text", drop)
    record.runs = [RunSummary(code, "", float(i), float(i) + 0.5) for i, code in enumerate(codes)]
    return record


def test_a_turn_is_judged_by_what_its_faults_call_for() -> None:
    retried = [(0.0, "500"), (0.1, "ok")]
    assert check_turn(turn(["ok"]), retried, None) == ("500", None)
    # A cut stream must end the turn unavailable; ok is a mismatch, and so is an extra run.
    assert check_turn(turn(["ok"]), [(0.0, "cut")], None)[1] is not None
    assert check_turn(turn(["unavailable"]), [(0.0, "cut")], None) == ("cut", None)
    assert check_turn(turn(["dropped", "ok"]), [], None)[1] is not None
    # A planned drop resumes once; a restart may interrupt any run, judged after it.
    assert check_turn(turn(["dropped", "ok"], drop=True), [], None) == ("drop", None)
    window = (0.2, 0.4)
    after_restart = [(0.1, "cut"), (0.6, "ok")]
    assert check_turn(turn(["canceled", "ok"]), after_restart, window) == ("restart", None)
    assert check_turn(turn(["canceled", "canceled"]), after_restart, window)[1] is not None


def test_three_transient_answers_in_a_row_give_up_and_the_plan_is_seeded() -> None:
    assert expected_end(["429", "500", "ok"]) == "ok"
    assert expected_end(["429", "500", "429"]) == "unavailable"
    plan = [provider_fault(7, 0.5, 0.0, f"c0t{i}", 0) for i in range(40)]
    assert plan == [provider_fault(7, 0.5, 0.0, f"c0t{i}", 0) for i in range(40)]
    assert {"ok", "500", "429", "cut"} <= set(plan)
    # A turn whose client drops its stream gets no provider fault.
    assert {provider_fault(7, 1.0, 1.0, f"c0t{i}", 0) for i in range(40)} == {"ok"}
