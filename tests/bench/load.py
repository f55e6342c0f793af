"""Load benchmark: N conversations at once (run by hand: python -m tests.bench.load).

Everything on loopback, each part in its own process: the server as ``python run.py`` (through
``load_server``, which only adds a commit counter), the provider (``load_provider``: headers at
once, its first event after ``--delay``), and the clients (``--clients`` processes, each an
aiohttp session without a connection cap, acknowledging every blob at once). For every N of
``--concurrency`` it runs ``max(N * --rounds, --min-turns)`` text turns, then as many turns with
one two-tool round (two Reads), N at a time, and prints:

- added time to the first text delta of a text turn, p50/p99: RunRequest sent -> first
  text_delta at the client, minus what reading the provider directly takes (delay included);
- tool-round overhead, p50/p99: the last exec result leaving the client -> the next provider
  request arriving at the provider;
- server CPU per turn (utime + stime from ``/proc``), the clients' CPU per turn, turns per
  second and turns per server CPU-second (what the servers could do with their CPU alone,
  whatever the clients took of the machine);
- database transactions (the servers' commit count) and fsyncs (``perf stat`` on the server's
  ``fsync``/``fdatasync`` calls; on PostgreSQL, ``pg_stat_wal``'s syncs, which the database
  server makes, every client of that server's included) per turn;
- the server's RSS and open descriptors before, after a warm-up, and at the end.

Every turn starts a new conversation. ``--turn`` says what its first message carries
(``editor_turn``): ``editor`` (the default), the RunRequest the editor sends, with its request
context (environment, git status, project layout, and the workspace's rules and skills as
blobs by id, which the server fetches by KV GET the first time and has in its CAS after), the
open files and a new conversation's state; ``editor-cold``, the same with the blobs new to
the server on every turn (a KV GET each, every turn); ``light``, a text and a model alone.

``--transport`` says how a turn reaches the server: ``pair`` (the default), Cursor's HTTP/1.1
pair, a RunSSE stream and a BidiAppend request per client message (aiohttp); ``h2``, the
HTTP/2 ``Run`` RPC the editor uses when HTTP/2 is on (the server started with its HTTP/2
listener): one bidi stream per turn, every client message a frame of its body, each client
process keeping one HTTP/2 connection per server for all its turns (the tests' ``h2`` client).
The turns' messages and the figures are the same.

``--floor`` runs the text turns against ``floor_server`` instead: the same edge and client,
runs that only SET four blobs and send a checkpoint and a text once they are acknowledged,
so its CPU per turn is what the edge and the protocol cost before any work of ours.

``--traces`` turns the servers' tracing on (``CURSOR_OTLP_ENDPOINT``), exporting to a sink
process on loopback (``otlp_sink``) that decodes every request and says at the end how many
spans it took: the difference in server CPU per turn is what tracing costs.

``--postgres URL`` runs the same against PostgreSQL (the database is shared, so every
conversation id carries this run's prefix).

Scale-out (PostgreSQL only): ``--instances K`` starts K servers on the database
(``load_fleet``: each with its own commit counter; CPU, commits, RSS and descriptors are
summed over them, and each phase says how the CPU split and how many of a turn's requests were
forwarded), and ``--spread`` says how a turn's requests reach them (``load_phase``): ``one``,
all to the first; ``client``, each turn pinned to one, the next turn to the next; ``request``
(the default), every request to the next, so the appends that reach a server not holding the
run are forwarded to the one that does. ``--compare`` runs, at each N and kind back to back,
1 instance, then K (2 unless ``--instances`` says more) pinned, then K with each request to the
next, and ends with the ratios of this run: K instances / 1 in turns per second and per server
CPU-second, and the server CPU a cross-instance turn adds to a pinned one (per forwarded
append too). With K >= 2 it also measures one forwarded append's server CPU on its own
(``load_forward``; ``--probe-appends``, 0 to skip).

``--workers N`` runs one ``run.py --workers N`` instead (a supervisor and N workers on one
port; its server CPU, RSS and descriptors are its whole process tree's; no commit count: the
workers are plain ``run.py``), the kernel spreading the clients' connections over the workers.
``--haproxy`` puts the instances behind HAProxy (``tests/support/haproxy.py``, round robin per
request; its own CPU per turn printed apart). With ``--compare`` each is one more
configuration compared with 1 instance.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp

from tests.bench.load_fleet import OTLP_VARIABLE, Fleet, FleetSpec, seed_model, start_fleets
from tests.bench.load_forward import ForwardCost, probe_forwarding
from tests.bench.load_phase import (
    SPREADS,
    TRANSPORTS,
    TURNS,
    PhaseResult,
    Setup,
    phase_text,
    run_phase,
)
from tests.bench.load_provider import LoadProviderProcess
from tests.bench.otlp_sink import OtlpSinkProcess
from tests.bench.stats import percentile
from tests.support.haproxy import HAPROXY

TIMES = "\N{MULTIPLICATION SIGN}"
TRANSPORT_NAMES = {"pair": "HTTP/1.1 pair", "h2": "HTTP/2 Run"}


async def direct_first_text(base_url: str, samples: int = 10) -> float:
    """Median seconds from request to first text event reading the provider directly."""
    times: list[float] = []
    body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with aiohttp.ClientSession() as session:
        for _ in range(samples):
            started = time.perf_counter()
            async with session.post(f"{base_url}/chat/completions", json=body) as response:
                async for line in response.content:
                    if b'"content":"H' in line:
                        times.append(time.perf_counter() - started)
                        break
    return percentile(times, 0.5)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", default="1,10,50,100", help="comma-separated N")
    parser.add_argument("--rounds", type=int, default=4, help="turns per conversation slot")
    parser.add_argument("--min-turns", type=int, default=40, help="at least this many per N")
    parser.add_argument("--delay", type=float, default=0.1, help="provider first-token delay, s")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up turns (10 at a time)")
    parser.add_argument("--postgres", metavar="URL", help="run against this PostgreSQL")
    parser.add_argument(
        "--turn",
        choices=TURNS,
        default="editor",
        help="each turn's first message: a new conversation's RunRequest as the editor sends "
        "it, with its request context (rules and skills by blob), open files and state "
        "(editor); the same with the blobs new to the server on every turn, so it GETs them "
        "(editor-cold); or a text and a model alone (light)",
    )
    parser.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default="pair",
        help="how a turn reaches the server: the HTTP/1.1 RunSSE + BidiAppend pair, or the "
        "HTTP/2 Run RPC (a bidi stream per turn on one connection per client process)",
    )
    parser.add_argument(
        "--traces",
        action="store_true",
        help="the servers export OTLP traces to a sink process on loopback (tests.bench."
        "otlp_sink): what tracing adds to a turn's server CPU",
    )
    parser.add_argument(
        "--kinds", help="comma-separated turn kinds: text, tools (default both; --floor: text)"
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="text turns against tests.bench.floor_server (the edge and four KV round trips, "
        "no model, no store): what any turn costs at least",
    )
    parser.add_argument(
        "--instances", type=int, default=1, help="server processes on the database (--postgres)"
    )
    parser.add_argument(
        "--spread",
        choices=SPREADS,
        default="request",
        help="with --instances above 1: every request to the first (one), each turn to the "
        "next instance (client), or every request to the next (request)",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="at each N: 1 instance, then K pinned (client), then K with each request to the "
        "next (K: --instances, at least 2); ends with the ratios measured",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="one run.py --workers N (a supervisor and N workers on one port, its whole process "
        "tree measured) instead of --instances; with --compare, one more configuration",
    )
    parser.add_argument(
        "--haproxy",
        action="store_true",
        help="the instances behind HAProxy (round robin per request; its CPU reported apart); "
        "with --compare, one more configuration",
    )
    parser.add_argument(
        "--probe-appends",
        type=int,
        default=1000,
        help="with 2 instances or more: heartbeats each way to measure one forwarded append "
        "(0: skip)",
    )
    return parser.parse_args()


Config = tuple[FleetSpec, str]  # a fleet and how the clients spread their requests over it


def configurations(args: argparse.Namespace) -> list[Config]:
    """What each N runs, in order; with ``--compare`` the first is the one the others are
    compared with."""
    size = args.instances
    extra: list[Config] = []
    if args.haproxy:
        extra.append((FleetSpec("haproxy", max(2, size) if args.compare else size), "one"))
    if args.workers:
        extra.append((FleetSpec("workers", args.workers), "one"))
    if args.compare:
        many = FleetSpec("instances", max(2, size))
        return [(FleetSpec("instances", 1), "one"), (many, "client"), (many, "request"), *extra]
    return extra or [(FleetSpec("instances", size), args.spread if size > 1 else "one")]


def check_args(args: argparse.Namespace, kinds: list[str]) -> None:
    if not kinds or set(kinds) - {"text", "tools"} or (args.floor and kinds != ["text"]):
        raise SystemExit("--kinds takes text and tools (--floor: text only)")
    if not 1 <= args.instances <= 64 or not 0 <= args.workers <= 64:
        raise SystemExit("--instances takes 1 to 64, --workers 2 to 64")
    if args.workers and args.instances > 1 and not args.compare:
        raise SystemExit("--workers is one fleet and --instances another: one, or --compare")
    several = args.instances > 1 or args.compare or args.workers or args.haproxy
    if several and not args.postgres:
        raise SystemExit("more than one instance needs --postgres (they share its database)")
    if several and args.floor:
        raise SystemExit("--floor runs one instance (the floor server has no store, no peers)")
    if args.transport == "h2" and (
        args.floor
        or args.compare
        or args.workers
        or args.haproxy
        or (args.instances > 1 and args.spread == "request")
    ):
        raise SystemExit(
            "--transport h2 runs instances each reached directly (--spread one or client): "
            "a Run stream stays on its server; no --floor, --compare, --workers or --haproxy"
        )
    if args.haproxy and not HAPROXY.exists():
        raise SystemExit(f"--haproxy: {HAPROXY} not found (apt-get install -y haproxy)")


def comparison(
    results: list[PhaseResult], configs: list[Config], forward: ForwardCost | None
) -> list[str]:
    """Each configuration against the first at each (N, kind), and what a turn whose requests
    cross instances adds to one pinned to an instance of the same fleet."""
    by = {(r.n, r.kind, r.fleet, r.spread): r for r in results}
    base = (configs[0][0].name, configs[0][1])
    lines = [f"comparison with {base[0]}, measured back to back in this run:"]
    for one in [r for r in results if (r.fleet, r.spread) == base]:
        at = f"{one.kind} turns/s at N={one.n}"
        for spec, spread in configs[1:]:
            fleet = spec.name
            r = by[(one.n, one.kind, fleet, spread)]
            how = f" ({r.spread_name})" if r.spread_name else ""
            lines.append(
                f"  {fleet} / 1{how}: {r.turns_per_s / one.turns_per_s:.2f}{TIMES} {at};"
                f" {r.turns_per_cpu_s / one.turns_per_cpu_s:.2f}{TIMES} per server CPU-second"
            )
        for fleet in dict.fromkeys(spec.name for spec, _ in configs):
            pinned = by.get((one.n, one.kind, fleet, "client"))
            rotated = by.get((one.n, one.kind, fleet, "request"))
            if pinned is None or rotated is None:
                continue
            extra = rotated.cpu_per_turn_ms - pinned.cpu_per_turn_ms
            crossed = rotated.crossed_per_turn
            each = f", {extra / crossed:+.2f} ms each" if crossed else ""
            lines.append(
                f"  cross-instance turn: {extra:+.1f} ms server CPU vs pinned ({one.kind},"
                f" N={one.n}, {fleet}: {pinned.cpu_per_turn_ms:.1f} ->"
                f" {rotated.cpu_per_turn_ms:.1f} ms; {crossed:.1f} forwarded appends/turn{each})"
            )
        failed = sum(len(r.failed) for r in results if (r.n, r.kind) == (one.n, one.kind))
        if failed:
            lines.append(f"  ({failed} turns failed at N={one.n}, {one.kind})")
    if forward is not None:
        lines.append(
            f"  forwarded append, isolated: {forward.extra_ms:+.2f} ms server CPU"
            f" ({forward.direct.cpu_ms():.2f} -> {forward.forwarded.cpu_ms():.2f} ms)"
        )
    lines.append(
        f"  (targets: 2 instances >= 1.60{TIMES} text turns/s of 1 at N=100; a cross-instance"
        " turn <= +1.0 ms server CPU)"
    )
    return lines


def main() -> None:
    args = parse_args()
    levels = [int(n) for n in args.concurrency.split(",")]
    default_kinds = "text" if args.floor else "text,tools"
    kinds = [kind for kind in (args.kinds or default_kinds).split(",") if kind]
    check_args(args, kinds)
    configs = configurations(args)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # inherited by every process
    prefix = uuid.uuid4().hex[:8]
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(OtlpSinkProcess()) if args.traces else None
        if sink is not None:
            os.environ[OTLP_VARIABLE] = sink.url  # read by the fleets as they start
        measure(args, kinds, configs, levels, prefix)
    if sink is not None:
        print(sink.received, flush=True)


def measure(
    args: argparse.Namespace,
    kinds: list[str],
    configs: list[Config],
    levels: list[int],
    prefix: str,
) -> None:
    """Start the provider and the fleets, then run every phase."""
    with (
        tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp,
        LoadProviderProcess(args.delay) as provider,
    ):
        url = args.postgres or f"sqlite:///{Path(tmp) / 'load.db'}"
        public_id = seed_model(url, provider.base_url, prefix)
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        (workspace / "a.txt").write_text("first file\n")
        (workspace / "b.txt").write_text("second file\n")
        module = "tests.bench.floor_server" if args.floor else "tests.bench.load_server"
        specs = list(dict.fromkeys(spec for spec, _ in configs))
        fleets = start_fleets(specs, Path(tmp), url, module, h2=args.transport == "h2")
        try:
            direct = asyncio.run(direct_first_text(provider.base_url))
            setup = Setup(
                public_id,
                prefix,
                workspace,
                args.clients,
                direct,
                args.postgres,
                args.turn,
                args.transport,
            )
            run(args, setup, fleets, configs, levels, kinds, provider)
        finally:
            for fleet in fleets.values():
                fleet.stop()


def run(
    args: argparse.Namespace,
    setup: Setup,
    fleets: dict[str, Fleet],
    configs: list[Config],
    levels: list[int],
    kinds: list[str],
    provider: LoadProviderProcess,
) -> None:
    """Warm every fleet up, run every phase, then the probe and the comparison."""
    database = "PostgreSQL" if args.postgres else "SQLite"
    if args.floor:
        database = "the protocol floor (no store, no model)"
    print(
        f"load on loopback, {os.cpu_count()} CPUs, {database}, provider first token "
        f"{args.delay * 1000:.0f} ms (read directly: {setup.direct_s * 1000:.1f} ms), "
        f"{args.clients} client processes, {args.turn} turn, {TRANSPORT_NAMES[args.transport]}",
        flush=True,
    )
    labelled = len(fleets) > 1 or any(fleet.size > 1 for fleet in fleets.values())

    def named(fleet: Fleet) -> str:
        return f"[{fleet.name}] " if len(fleets) > 1 else ""

    for fleet in fleets.values():
        if fleet.balancer is not None:
            print(f"balancer:             [{fleet.name}] {fleet.balancer.http1_url}", flush=True)
        print(f"server before:        {named(fleet)}{fleet.resources()}", flush=True)
        warm_spread = "request" if fleet.spreads else "one"  # every instance and its peers warm
        warm = run_phase(setup, fleet, warm_spread, "text", 10, args.warmup, provider)
        print(phase_text(warm, labelled=labelled), flush=True)
        print(f"server after warm-up: {named(fleet)}{fleet.resources()}", flush=True)
    results: list[PhaseResult] = []
    for n in levels:
        turns = max(n * args.rounds, args.min_turns)
        for kind in kinds:
            for spec, spread in configs:
                fleet = fleets[spec.name]
                result = run_phase(setup, fleet, spread, kind, n, turns, provider)
                results.append(result)
                print(phase_text(result, labelled=labelled), flush=True)
                print(f"       server now: {fleet.resources()}", flush=True)
    for fleet in fleets.values():
        print(f"server at the end:    {named(fleet)}{fleet.resources()}", flush=True)
    probed = [f for f in fleets.values() if f.size >= 2 and f.front is None]
    forward = None
    if probed and args.probe_appends > 0:
        forward = asyncio.run(probe_forwarding(probed[-1], setup, provider, args.probe_appends))
        print(forward.text(), flush=True)
    if args.compare:
        print("\n".join(comparison(results, configs, forward)), flush=True)


if __name__ == "__main__":
    main()
