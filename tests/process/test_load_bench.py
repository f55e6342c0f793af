"""The load benchmark (tests/bench/load.py) runs end to end and prints every figure.

Tiny N and turn counts, a short provider delay: what is checked is that every part starts, every
turn ends well and every line is printed, not how fast anything is.
"""

from __future__ import annotations

import subprocess
import sys

from tests.support.process import REPO

FIGURES = (
    "first delta +p50",
    "tool round p50",
    "server CPU/turn",
    "client CPU/turn",
    "turns/s",
    "transactions/turn",
    "fsyncs/turn",
    "server before:",
    "server after warm-up:",
    "server at the end:",
)


def test_the_load_benchmark_completes_and_prints_every_figure() -> None:
    argv = [sys.executable, "-m", "tests.bench.load", "--concurrency", "1,3", "--rounds", "1"]
    argv += ["--min-turns", "3", "--warmup", "2", "--delay", "0.005", "--clients", "2"]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    for figure in FIGURES:
        assert figure in out, (figure, out)
    phases = [line for line in out.splitlines() if line.startswith("N=")]
    assert [line.split()[:2] for line in phases] == [
        ["N=10", "text"],
        ["N=1", "text"],
        ["N=1", "tools"],
        ["N=3", "text"],
        ["N=3", "tools"],
    ]
    assert out.count("failed 0") == len(phases), out
