"""The load benchmark (tests/bench/load.py) runs end to end and prints every figure.

Tiny N and turn counts, a short provider delay: what is checked is that every part starts, every
turn ends well and every line is printed, not how fast anything is. On PostgreSQL (the test's own
schema) it also runs two instances with every request sent to the next, so the appends that
reach the instance not holding the run are forwarded, and the comparison of 1 and 2 instances.
"""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support.haproxy import haproxy_or_skip
from tests.support.process import REPO

FIGURES = (
    "first delta +p50",
    "tool round p50",
    "server CPU/turn",
    "client CPU/turn",
    "turns/s",
    "turns/server CPU-s",
    "transactions/turn",
    "fsyncs/turn",
    "server before:",
    "server after warm-up:",
    "server at the end:",
)
SHORT = ["--rounds", "1", "--min-turns", "3", "--warmup", "2", "--delay", "0.005"]
SHORT += ["--clients", "2"]


def load(*args: str) -> str:
    argv = [sys.executable, "-m", "tests.bench.load", *SHORT, *args]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


def phases(out: str) -> list[list[str]]:
    return [line.split()[:2] for line in out.splitlines() if line.startswith("N=")]


def test_the_load_benchmark_completes_and_prints_every_figure() -> None:
    out = load("--concurrency", "1,3")
    for figure in FIGURES:
        assert figure in out, (figure, out)
    assert phases(out) == [
        ["N=10", "text"],
        ["N=1", "text"],
        ["N=1", "tools"],
        ["N=3", "text"],
        ["N=3", "tools"],
    ]
    assert out.count("failed 0") == len(phases(out)), out
    assert "forwarded" not in out  # one instance: nothing to forward to
    assert "client processes, editor turn" in out, out


def test_the_light_and_the_cold_editor_turns() -> None:
    for turn in ("light", "editor-cold"):
        out = load("--concurrency", "1", "--kinds", "text", "--turn", turn)
        assert f"client processes, {turn} turn" in out, out
        assert phases(out) == [["N=10", "text"], ["N=1", "text"]], out
        assert out.count("failed 0") == 2, out


def test_the_turns_over_the_http2_run_rpc() -> None:
    out = load("--concurrency", "1,2", "--transport", "h2")
    for figure in FIGURES:
        assert figure in out, (figure, out)
    assert "client processes, editor turn, HTTP/2 Run" in out, out
    assert phases(out) == [
        ["N=10", "text"],
        ["N=1", "text"],
        ["N=1", "tools"],
        ["N=2", "text"],
        ["N=2", "tools"],
    ], out
    assert out.count("failed 0") == len(phases(out)), out


def test_two_instances_with_every_request_to_the_next(pg_url: str) -> None:
    out = load(
        "--postgres", pg_url, "--instances", "2", "--spread", "request",
        "--concurrency", "2", "--probe-appends", "20",
    )  # fmt: skip
    for figure in FIGURES:
        assert figure in out, (figure, out)
    assert phases(out) == [["N=10", "text"], ["N=2", "text"], ["N=2", "tools"]]
    assert out.count("[2 instances, each request to the next]") == 3, out
    assert out.count("failed 0") == 3, out
    forwarded = [float(f) for f in re.findall(r"forwarded/turn +([\d.]+)", out)]
    assert len(forwarded) == 3 and all(f >= 1 for f in forwarded), out
    assert "server CPU by instance" in out and "descriptors" in out
    assert re.search(r"forwarding: [+-][\d.]+ ms server CPU per append", out), out


def test_the_comparison_of_one_instance_with_two_pinned_spread_balanced_and_workers(
    pg_url: str,
) -> None:
    haproxy_or_skip()
    out = load(
        "--postgres", pg_url, "--compare", "--workers", "2", "--haproxy", "--kinds", "text",
        "--concurrency", "2", "--probe-appends", "20",
    )  # fmt: skip
    labels = re.findall(r"^N=2 .*\[(.*)\]$", out, re.MULTILINE)
    assert labels == [
        "1 instance",
        "2 instances, each turn pinned to one",
        "2 instances, each request to the next",
        "2 instances behind HAProxy",
        "2 workers",
    ], out
    assert out.count("failed 0") == 9, out  # four warm-ups, five phases
    assert "balancer CPU/turn" in out and "(3 processes)" in out  # the supervisor and two
    times = "\N{MULTIPLICATION SIGN}"
    for config in (
        "2 instances / 1 (each turn pinned to one)",
        "2 instances / 1 (each request to the next)",
        "2 instances behind HAProxy / 1",
        "2 workers / 1",
    ):
        ratio = rf"{re.escape(config)}: [\d.]+{times} text turns/s at N=2;"
        assert re.search(ratio, out), (config, out)
    assert re.search(r"cross-instance turn: [+-][\d.]+ ms server CPU vs pinned", out), out
    assert "forwarded append, isolated:" in out
