"""One phase of the load benchmark (``load.py``): ``turns`` turns of one kind, ``n`` at a time,
run by client processes against a ``Fleet``, measured and printed.

Each client process is an aiohttp session without a connection cap, running its share of the
turns ``n // processes`` at a time; each turn is a ``TimedSession`` (which acknowledges every
blob at once, answers a KV GET from its blob store and execs against a workspace) on a new
conversation, whose first message is the setup's ``turn`` (``TURNS``). How a turn's requests
reach a fleet of several servers is its ``spread``:

- ``one``: every request to the first server (the others idle);
- ``client``: each turn to one server, the next in turn for the next turn (pinned: all of a
  turn's requests on the server that holds its run, nothing forwarded);
- ``request``: every request to the next server (``RotatingCursor``): the RunSSE's server holds
  the run, and the appends that reach another are forwarded to it by that server's peer
  forwarder, as behind a round-robin balancer with no stickiness.

The setup's ``transport`` says how a turn reaches its server: ``pair``, Cursor's HTTP/1.1 pair
(a RunSSE stream and a BidiAppend request per client message); ``h2``, the HTTP/2 ``Run`` RPC
(one bidi stream per turn, every client message a frame of its body), each client process
keeping one HTTP/2 connection per server for all its turns (``SharedH2Cursor``), as an editor
does. A bidi stream stays on the server it opened on, so ``h2`` spreads ``one`` and ``client``
only.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from tests.bench.editor_turn import editor_turn
from tests.bench.fast_cursor import AiohttpCursor, RotatingCursor, SharedH2Cursor, TimedSession
from tests.bench.load_fleet import Fleet, fsyncs_of
from tests.bench.load_provider import TOOLS_MARK, LoadProviderProcess
from tests.bench.stats import percentile
from tests.support.fake_cursor import EditorClient, TurnLog, user_turn_message
from tests.support.h2_client import H2Client
from wire.proto import agent_v1_pb2 as agent

SPREADS = ("one", "client", "request")
# The first message of a turn: a new conversation's RunRequest as the editor sends it (its
# request context, open files and state; the context's parts by blob, which the server has
# from the turns before), the same with parts new to the server on every turn (each fetched
# by KV GET), or a text and a model alone.
TURNS = ("editor", "editor-cold", "light")
# How a turn reaches the server: the HTTP/1.1 RunSSE + BidiAppend pair, or the HTTP/2 Run RPC.
TRANSPORTS = ("pair", "h2")


@dataclass(frozen=True)
class Job:
    """One turn a client runs: ``kind`` is ``text`` or ``tools``; ``index``, its place in the
    phase, picks its server (``client``) or its first server (``request``)."""

    tag: str
    kind: str
    index: int


@dataclass(frozen=True)
class Outcome:
    """What the client saw of one turn (``time.perf_counter`` stamps), and how many requests
    it sent (the RunSSE and every append) and how many of them reached another server than
    the one holding the run."""

    tag: str
    kind: str
    started: float
    first_text: float
    last_result_sent: float
    error: str
    requests: int = 0
    crossed: int = 0


def first_text_at(log: TurnLog) -> float:
    for message, at in zip(log.messages, log.received_at, strict=True):
        if message.interaction_update.HasField("text_delta"):
            return at
    return 0.0


Cursors = list[AiohttpCursor] | list[SharedH2Cursor]  # one per server, for one transport


def client_for(
    cursors: Cursors, job: Job, spread: str
) -> tuple[EditorClient, RotatingCursor | None]:
    """The client a turn sends through, and the rotation when its requests are spread."""
    if spread == "request" and len(cursors) > 1:
        if not all(isinstance(c, AiohttpCursor) for c in cursors):
            raise ValueError("a Run stream stays on one server: spread one or client")
        rotating = RotatingCursor(
            [c for c in cursors if isinstance(c, AiohttpCursor)], start=job.index % len(cursors)
        )
        return rotating, rotating
    if spread == "client":
        return cursors[job.index % len(cursors)], None
    return cursors[0], None


def first_message(
    turn: str, text: str, public_id: str, conversation_id: str, workspace: Path
) -> tuple[agent.AgentClientMessage, dict[bytes, bytes]]:
    """A new conversation's RunRequest as the ``turn`` of ``TURNS`` builds it, and the blobs
    the client holds before it starts (those the server may KV GET)."""
    if turn == "light":
        return user_turn_message(text, public_id, conversation_id=conversation_id), {}
    built = editor_turn(
        text,
        public_id,
        conversation_id=conversation_id,
        workspace=workspace,
        fresh_workspace=turn == "editor-cold",
    )
    return built.message, built.blobs


async def run_turn(
    cursors: Cursors,
    spread: str,
    job: Job,
    public_id: str,
    prefix: str,
    workspace: Path,
    turn: str,
) -> Outcome:
    client, rotating = client_for(cursors, job, spread)
    mark = f" {TOOLS_MARK}" if job.kind == "tools" else ""
    text = f"hi{mark} load-tag-{job.tag}"
    first, blobs = first_message(turn, text, public_id, f"{prefix}-c-{job.tag}", workspace)
    session = TimedSession(
        client, f"{prefix}-{job.tag}", workspace=workspace, batch_size=2, blobs=blobs
    )
    sent_at = session.sent_at
    started = time.perf_counter()
    try:
        log = await session.run(first, timeout=60, total_timeout=120)
    except Exception as exc:  # counted and printed: a load run reports failures, not stops
        return Outcome(job.tag, job.kind, started, 0.0, 0.0, repr(exc)[:200])
    finally:
        if isinstance(client, SharedH2Cursor):
            client.forget(session.request_id)
    error = "" if log.end == {} else f"end {log.end}"
    last = max(sent_at) if sent_at else 0.0
    crossed = rotating.crossed if rotating is not None else 0
    requests = 1 + session.seqno  # the RunSSE and every append
    return Outcome(job.tag, job.kind, started, first_text_at(log), last, error, requests, crossed)


async def client_main(
    targets: list[str],
    spread: str,
    public_id: str,
    prefix: str,
    workspace: str,
    jobs: list[Job],
    concurrency: int,
    turn: str,
    transport: str,
) -> tuple[list[Outcome], float]:
    """Run ``jobs``, ``concurrency`` at a time, against ``targets``: the servers' base URLs
    (``pair``) or their HTTP/2 listeners' ``host:port`` (``h2``, connected before the clock
    starts). Returns the outcomes and this process's CPU seconds while they ran."""
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=None)
    )
    h2_clients = (
        [await H2Client.connect(address) for address in targets] if transport == "h2" else []
    )
    cursors: Cursors = (
        [SharedH2Cursor(client) for client in h2_clients]
        if h2_clients
        else [AiohttpCursor(url, session=session) for url in targets]
    )
    queue = list(reversed(jobs))
    outcomes: list[Outcome] = []

    async def worker() -> None:
        while queue:
            job = queue.pop()
            outcomes.append(
                await run_turn(cursors, spread, job, public_id, prefix, Path(workspace), turn)
            )

    cpu = time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu = time.process_time() - cpu
    await session.close()
    for client in h2_clients:
        await client.aclose()
    return outcomes, cpu


def client_process(args: tuple[Any, ...]) -> tuple[list[Outcome], float]:
    return asyncio.run(client_main(*args))


def _warm_import(_: int) -> None:
    """Run in each pool process before timing, so its imports are done."""
    import tests.support.fake_cursor  # noqa: F401


@dataclass(frozen=True)
class Setup:
    """What every phase shares: the model, the run's id prefix, the execs' workspace, how many
    client processes, what reading the provider directly takes, the PostgreSQL URL (None:
    SQLite), the turn's first message (one of ``TURNS``) and how it reaches the server (one of
    ``TRANSPORTS``)."""

    public_id: str
    prefix: str
    workspace: Path
    clients: int
    direct_s: float
    postgres: str | None
    turn: str = "editor"
    transport: str = "pair"


SPREAD_NAMES = {
    "one": "every request to the first",
    "client": "each turn pinned to one",
    "request": "each request to the next",
}


def config_label(fleet: Fleet, spread: str) -> str:
    """How a configuration is named in the printout: the fleet, and how the clients spread
    their requests when they choose the server."""
    return f"{fleet.name}, {SPREAD_NAMES[spread]}" if fleet.spreads else fleet.name


@dataclass
class PhaseResult:
    """One phase's figures; CPU in seconds, ``server_cpu`` per fleet member."""

    label: str
    fleet: str
    size: int
    spread: str
    spread_name: str  # how the clients spread their requests; "" when they cannot choose
    kind: str
    n: int
    outcomes: list[Outcome]
    wall: float
    server_cpu: list[float]
    balancer_cpu: float | None
    client_cpu: float
    commits: int | None
    # Per phase: actor-pool hand-offs (and actors kept on a worker), loop wake-ups and
    # context switches of the servers.
    crossings: dict[str, int] | None
    fsyncs: int | None
    added: list[float]
    rounds: list[float]
    pg_xacts: int | None = None
    pg_connections: int | None = None

    @property
    def count(self) -> int:
        return len(self.outcomes)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.error or not o.first_text]

    @property
    def cpu_per_turn_ms(self) -> float:
        return sum(self.server_cpu) / self.count * 1000

    @property
    def turns_per_s(self) -> float:
        return self.count / self.wall

    @property
    def turns_per_cpu_s(self) -> float:
        cpu = sum(self.server_cpu)
        return self.count / cpu if cpu else 0.0

    @property
    def requests_per_turn(self) -> float:
        return sum(o.requests for o in self.outcomes) / self.count

    @property
    def crossed_per_turn(self) -> float:
        return sum(o.crossed for o in self.outcomes) / self.count


def run_phase(
    setup: Setup,
    fleet: Fleet,
    spread: str,
    kind: str,
    n: int,
    turns: int,
    provider: LoadProviderProcess,
) -> PhaseResult:
    """Run ``turns`` turns of ``kind``, ``n`` at a time, against ``fleet`` spread ``spread``."""
    jobs = [Job(f"{kind}{n}_{i}_{uuid.uuid4().hex[:6]}", kind, i) for i in range(turns)]
    processes = max(1, min(setup.clients, n))
    shares = [jobs[i::processes] for i in range(processes)]
    concurrency = [n // processes + (1 if i < n % processes else 0) for i in range(processes)]
    targets = fleet.h2_addresses if setup.transport == "h2" else fleet.base_urls
    work = [
        (
            targets,
            spread,
            setup.public_id,
            setup.prefix,
            str(setup.workspace),
            share,
            c,
            setup.turn,
            setup.transport,
        )
        for share, c in zip(shares, concurrency, strict=True)
    ]
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        pool.map(_warm_import, range(processes))  # interpreters up before the clock starts
        commits_before, cpu_before = fleet.commits(), fleet.cpu_by_member()
        balancer_before = fleet.balancer_cpu()
        with fsyncs_of(fleet.pids(), setup.postgres) as fsyncs:
            started = time.perf_counter()
            results = pool.map(client_process, work)
            wall = time.perf_counter() - started
            cpu_after = fleet.cpu_by_member()
            balancer_after = fleet.balancer_cpu()
        commits_after = fleet.commits()
    outcomes = [o for r in results for o in r[0]]
    good = [o for o in outcomes if not (o.error or not o.first_text)]
    rounds: list[float] = []
    if kind == "tools":
        arrivals = provider.arrivals()
        for o in good:
            stamps = arrivals.get(o.tag, [])
            if len(stamps) >= 2 and o.last_result_sent:
                rounds.append(stamps[1] - o.last_result_sent)
    deltas = (
        None
        if commits_before is None or commits_after is None
        else {key: commits_after[key] - commits_before.get(key, 0) for key in commits_after}
    )
    commits = None if deltas is None else deltas.pop("commits")
    return PhaseResult(
        label=config_label(fleet, spread),
        fleet=fleet.name,
        size=fleet.size,
        spread_name=SPREAD_NAMES[spread] if fleet.spreads else "",
        spread=spread,
        kind=kind,
        n=n,
        outcomes=outcomes,
        wall=wall,
        server_cpu=[a - b for a, b in zip(cpu_after, cpu_before, strict=True)],
        balancer_cpu=(
            None
            if balancer_before is None or balancer_after is None
            else balancer_after - balancer_before
        ),
        client_cpu=sum(r[1] for r in results),
        commits=commits,
        crossings=deltas,
        fsyncs=fsyncs["fsyncs"],
        pg_xacts=fsyncs["pg_xacts"],
        pg_connections=fsyncs["pg_connections"],
        added=[o.first_text - o.started - setup.direct_s for o in good],
        rounds=rounds,
    )


def milliseconds(values: list[float]) -> str:
    if not values:
        return "p50     n/a      p99     n/a   "
    p50, p99 = percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000
    return f"p50 {p50:7.1f} ms   p99 {p99:7.1f} ms"


def phase_text(result: PhaseResult, *, labelled: bool) -> str:
    """The phase's lines: latency, CPU and rate, then the store's and the fleet's counts
    (``labelled``: the configuration named on the first line)."""
    r = result
    count = r.count
    latency = (
        f"tool round {milliseconds(r.rounds)}"
        if r.kind == "tools"
        else f"first delta +{milliseconds(r.added)}"
    )
    label = f"   [{r.label}]" if labelled else ""
    fsyncs = "n/a" if r.fsyncs is None else f"{r.fsyncs / count:.2f}"
    transactions = "  n/a" if r.commits is None else f"{r.commits / count:5.2f}"
    text = (
        f"N={r.n:<4} {r.kind:<5} {count:5d} turns  {latency}{label}"
        f"\n       server CPU/turn {r.cpu_per_turn_ms:6.1f} ms"
        f"   client CPU/turn {r.client_cpu / count * 1000:6.1f} ms"
        f"   {r.turns_per_s:6.1f} turns/s"
        f"   {r.turns_per_cpu_s:6.1f} turns/server CPU-s"
        f"\n       transactions/turn {transactions}"
        f"   fsyncs/turn {fsyncs}"
        f"   failed {len(r.failed)}"
    )
    if r.crossings:
        per = {key: value / count for key, value in r.crossings.items()}
        text += (
            f"\n       crossings/turn: actor-pool hand-offs {per.get('handoffs', 0):5.1f}"
            f" (kept on the worker {per.get('kept', 0):5.1f})"
            f"   loop wake-ups {per.get('loop_wakeups', 0):5.1f}"
            f"   context switches {per.get('context_switches', 0):6.1f}"
        )
    if r.pg_xacts is not None:
        text += (
            f"\n       PostgreSQL transactions/turn {r.pg_xacts / count:5.1f} (reads included)"
            f"   connections open at the end {r.pg_connections}"
        )
    if r.spread_name:  # the clients chose each request's server: they know what crossed
        text += (
            f"   requests/turn {r.requests_per_turn:4.1f}"
            f"   forwarded/turn {r.crossed_per_turn:4.1f}"
        )
    if r.size > 1:
        total = sum(r.server_cpu) or 1.0
        shares = " + ".join(f"{cpu / total * 100:.0f}%" for cpu in r.server_cpu)
        text += f"   server CPU by instance {shares}"
    if r.balancer_cpu is not None:
        text += f"   balancer CPU/turn {r.balancer_cpu / count * 1000:5.1f} ms"
    for o in r.failed[:3]:
        text += f"\n       failed {o.tag}: {o.error or 'no text delta'}"
    return text
