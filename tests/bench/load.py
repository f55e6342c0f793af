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
- server CPU per turn (utime + stime from ``/proc``), and the clients' CPU per turn;
- turns per second; database transactions (the server's commit count) and fsyncs (``perf
  stat`` on the server's ``fsync``/``fdatasync`` calls; on PostgreSQL, ``pg_stat_wal``'s
  syncs, which the database server makes) per turn;
- the server's RSS and open descriptors before, after a warm-up, and at the end.

``--floor`` runs the text turns against ``floor_server`` instead: the same edge and client,
runs that only SET four blobs and send a checkpoint and a text once they are acknowledged,
so its CPU per turn is what the edge and the protocol cost before any work of ours.

``--postgres URL`` runs the same against PostgreSQL (the database is shared, so every
conversation id carries this run's prefix).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from tests.bench.fast_cursor import AiohttpCursor, TimedSession
from tests.bench.load_provider import TOOLS_MARK, LoadProviderProcess
from tests.bench.stats import percentile
from tests.support.fake_cursor import TurnLog, user_turn_message
from tests.support.process import (
    SHARED_KEY_ENV,
    ServerProcess,
    connect_shared_store,
    server_env,
)

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Job:
    """One turn a client runs: ``kind`` is ``text`` or ``tools``."""

    tag: str
    kind: str


@dataclass(frozen=True)
class Outcome:
    """What the client saw of one turn (``time.perf_counter`` stamps)."""

    tag: str
    kind: str
    started: float
    first_text: float
    last_result_sent: float
    error: str


def first_text_at(log: TurnLog) -> float:
    for message, at in zip(log.messages, log.received_at, strict=True):
        if message.interaction_update.HasField("text_delta"):
            return at
    return 0.0


async def run_turn(
    cursor: AiohttpCursor, job: Job, public_id: str, prefix: str, workspace: Path
) -> Outcome:
    session = TimedSession(cursor, f"{prefix}-{job.tag}", workspace=workspace, batch_size=2)
    sent_at = session.sent_at
    mark = f" {TOOLS_MARK}" if job.kind == "tools" else ""
    text = f"hi{mark} load-tag-{job.tag}"
    first = user_turn_message(text, public_id, conversation_id=f"{prefix}-c-{job.tag}")
    started = time.perf_counter()
    try:
        log = await session.run(first, timeout=60, total_timeout=120)
    except Exception as exc:  # counted and printed: a load run reports failures, not stops
        return Outcome(job.tag, job.kind, started, 0.0, 0.0, repr(exc)[:200])
    error = "" if log.end == {} else f"end {log.end}"
    last = max(sent_at) if sent_at else 0.0
    return Outcome(job.tag, job.kind, started, first_text_at(log), last, error)


async def client_main(
    base_url: str, public_id: str, prefix: str, workspace: str, jobs: list[Job], concurrency: int
) -> tuple[list[Outcome], float]:
    cursor = AiohttpCursor(base_url)
    await cursor.session.close()
    cursor.session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=None)
    )
    queue = list(reversed(jobs))
    outcomes: list[Outcome] = []

    async def worker() -> None:
        while queue:
            job = queue.pop()
            outcomes.append(await run_turn(cursor, job, public_id, prefix, Path(workspace)))

    cpu = time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu = time.process_time() - cpu
    await cursor.aclose()
    return outcomes, cpu


def client_process(args: tuple[Any, ...]) -> tuple[list[Outcome], float]:
    return asyncio.run(client_main(*args))


@dataclass
class ServerProbe:
    """What ``/proc`` says about the server process."""

    pid: int

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def resources(self) -> str:
        return f"RSS {self.rss_mb():6.1f} MB, {self.fds()} open descriptors"


class Commits:
    """The server's commit count, which ``load_server`` writes when asked with SIGUSR1."""

    def __init__(self, path: Path, pid: int) -> None:
        self.path = path
        self.pid = pid
        self.asked = 0

    def read(self) -> int:
        self.asked += 1
        os.kill(self.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                stats = json.loads(self.path.read_text())
            except (FileNotFoundError, ValueError):
                stats = {"asked": 0}
            if stats["asked"] >= self.asked:
                count: int = stats["commits"]
                return count
            time.sleep(0.01)
        raise AssertionError("the server did not publish its commit count")


@contextmanager
def fsyncs_of(pid: int, postgres_url: str | None) -> Iterator[dict[str, int | None]]:
    """Counts the fsyncs made for the server while the block runs (None: cannot count)."""
    result: dict[str, int | None] = {"fsyncs": None}
    if postgres_url is not None:
        before = pg_wal_syncs(postgres_url)
        yield result
        after = pg_wal_syncs(postgres_url)
        result["fsyncs"] = None if before is None or after is None else after - before
        return
    perf = shutil.which("perf")
    if perf is None:
        yield result
        return
    events = "syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync"
    proc = subprocess.Popen(
        [perf, "stat", "-x,", "-e", events, "-p", str(pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.3)
    try:
        yield result
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
        counts = [line.split(",")[0] for line in err.splitlines() if "sys_enter_" in line]
        if counts and all(c.isdigit() for c in counts):
            result["fsyncs"] = sum(int(c) for c in counts)


def pg_wal_syncs(url: str) -> int | None:
    """PostgreSQL's WAL syncs since its statistics were reset (PostgreSQL 14+), or None."""
    import psycopg2

    try:
        with psycopg2.connect(url) as conn, conn.cursor() as cur:
            cur.execute("SELECT wal_sync FROM pg_stat_wal")
            row = cur.fetchone()
    except psycopg2.Error:
        return None
    return None if row is None else int(row[0])


def milliseconds(values: list[float]) -> str:
    if not values:
        return "p50     n/a      p99     n/a   "
    p50, p99 = percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000
    return f"p50 {p50:7.1f} ms   p99 {p99:7.1f} ms"


@dataclass(frozen=True)
class Setup:
    base_url: str
    public_id: str
    prefix: str
    workspace: Path
    clients: int
    direct_s: float


def run_phase(
    setup: Setup,
    kind: str,
    n: int,
    turns: int,
    probe: ServerProbe,
    commits: Commits,
    postgres: str | None,
    provider: LoadProviderProcess,
) -> None:
    """Run ``turns`` turns of ``kind``, ``n`` at a time, and print one line of figures."""
    jobs = [Job(f"{kind}{n}_{i}_{uuid.uuid4().hex[:6]}", kind) for i in range(turns)]
    processes = max(1, min(setup.clients, n))
    shares = [jobs[i::processes] for i in range(processes)]
    concurrency = [n // processes + (1 if i < n % processes else 0) for i in range(processes)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        pool.map(_warm_import, range(processes))  # interpreters up before the clock starts
        commits_before, cpu_before = commits.read(), probe.cpu()
        with fsyncs_of(probe.pid, postgres) as fsyncs:
            started = time.perf_counter()
            results = pool.map(
                client_process,
                [
                    (
                        setup.base_url,
                        setup.public_id,
                        setup.prefix,
                        str(setup.workspace),
                        share,
                        c,
                    )
                    for share, c in zip(shares, concurrency, strict=True)
                ],
            )
            wall = time.perf_counter() - started
            cpu_after = probe.cpu()
        commits_after = commits.read()
    outcomes = [o for r in results for o in r[0]]
    client_cpu = sum(r[1] for r in results)
    failed = [o for o in outcomes if o.error or not o.first_text]
    good = [o for o in outcomes if not (o.error or not o.first_text)]
    added = [o.first_text - o.started - setup.direct_s for o in good]
    rounds: list[float] = []
    if kind == "tools":
        arrivals = provider.arrivals()
        for o in good:
            stamps = arrivals.get(o.tag, [])
            if len(stamps) >= 2 and o.last_result_sent:
                rounds.append(stamps[1] - o.last_result_sent)
    count = len(outcomes)
    fsync_text = "n/a" if fsyncs["fsyncs"] is None else f"{fsyncs['fsyncs'] / count:.2f}"
    print(
        f"N={n:<4} {kind:<5} {count:5d} turns  "
        + (f"tool round {milliseconds(rounds)}" if kind == "tools" else "")
        + (f"first delta +{milliseconds(added)}" if kind == "text" else "")
        + f"\n       server CPU/turn {(cpu_after - cpu_before) / count * 1000:6.1f} ms"
        f"   client CPU/turn {client_cpu / count * 1000:6.1f} ms"
        f"   {count / wall:6.1f} turns/s"
        f"   transactions/turn {(commits_after - commits_before) / count:5.2f}"
        f"   fsyncs/turn {fsync_text}"
        f"   failed {len(failed)}",
        flush=True,
    )
    for o in failed[:3]:
        print(f"       failed {o.tag}: {o.error or 'no text delta'}", flush=True)


def _warm_import(_: int) -> None:
    """Run in each pool process before timing, so its imports are done."""
    import tests.support.fake_cursor  # noqa: F401


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


def seed_model(url: str, provider_url: str, prefix: str) -> str:
    store = connect_shared_store(url)
    try:
        provider = create_provider(
            store.database,
            ProviderInput(
                name=f"load-{prefix}", type="openai-chat", base_url=provider_url, api_key="k"
            ),
        )
        return save_models(
            store.database, provider.id, [ModelInput(model_id="m", display_name="M")]
        )[0].public_id
    finally:
        store.close()


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
        "--kinds", help="comma-separated turn kinds: text, tools (default both; --floor: text)"
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="text turns against tests.bench.floor_server (the edge and four KV round trips, "
        "no model, no store): what any turn costs at least",
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    levels = [int(n) for n in args.concurrency.split(",")]
    default_kinds = "text" if args.floor else "text,tools"
    kinds = [kind for kind in (args.kinds or default_kinds).split(",") if kind]
    if not kinds or set(kinds) - {"text", "tools"} or (args.floor and kinds != ["text"]):
        raise SystemExit("--kinds takes text and tools (--floor: text only)")
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # inherited by every process
    prefix = uuid.uuid4().hex[:8]
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
        stats_file = Path(tmp) / "stats.json"
        env = server_env(
            Path(tmp), CURSOR_DATABASE_URL=url, LOAD_STATS_FILE=str(stats_file), **SHARED_KEY_ENV
        )
        module = "tests.bench.floor_server" if args.floor else "tests.bench.load_server"
        server = ServerProcess(env, module=module)
        try:
            address = server.wait_for_address()
            probe = ServerProbe(server.proc.pid)
            commits = Commits(stats_file, server.proc.pid)
            direct = asyncio.run(direct_first_text(provider.base_url))
            setup = Setup(f"http://{address}", public_id, prefix, workspace, args.clients, direct)
            database = "PostgreSQL" if args.postgres else "SQLite"
            if args.floor:
                database = "the protocol floor (no store, no model)"
            print(
                f"load on loopback, {os.cpu_count()} CPUs, {database}, provider first token "
                f"{args.delay * 1000:.0f} ms (read directly: {direct * 1000:.1f} ms), "
                f"{args.clients} client processes",
                flush=True,
            )
            print(f"server before:        {probe.resources()}", flush=True)
            run_phase(setup, "text", 10, args.warmup, probe, commits, args.postgres, provider)
            print(f"server after warm-up: {probe.resources()}", flush=True)
            for n in levels:
                turns = max(n * args.rounds, args.min_turns)
                for kind in kinds:
                    run_phase(setup, kind, n, turns, probe, commits, args.postgres, provider)
                    print(f"       server now: {probe.resources()}", flush=True)
            print(f"server at the end:    {probe.resources()}", flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
