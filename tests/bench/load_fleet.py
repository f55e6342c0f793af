"""The servers of the load benchmark (``load.py``) and what is read of them from outside.

A ``Fleet`` is what the clients reach and what is measured: one or more server processes on
one database, each started as ``python -m tests.bench.load_server`` (``run.py`` plus a commit
counter, with its own ``LOAD_STATS_FILE``) and all under the key ``SHARED_KEY_ENV``, so they
read the secrets the bench seeded and derive one peer token. What it reports is the sum over
its processes: CPU (utime + stime from ``/proc``), commits, RSS and open descriptors.

The kinds of fleet (``FleetSpec``):

- ``instances``: K processes, each its own ``Member``, each reached at its own URL (the
  clients choose the server for each request: ``load_phase``'s spreads);
- ``workers``: one ``load_server --workers N``, a supervisor and N workers on one port: one
  ``Member`` with ``tree=True``, so every read covers the root and all its descendants now
  (``process_tree``), the supervisor included. The workers run ``run.py`` itself, not
  ``load_server``, so nothing counts their commits (``commits=None``, printed n/a). One URL:
  the kernel spreads the clients' connections over the workers;
- ``haproxy``: the instances fleet of that size behind HAProxy (``tests/support/haproxy.py``,
  round robin per request): the clients reach every member through its one URL; the reads
  still cover the members, and the balancer's own CPU is read apart (``balancer_cpu``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from tests.support.haproxy import Backend, Balancer
from tests.support.process import (
    SHARED_KEY_ENV,
    ServerProcess,
    connect_shared_store,
    server_env,
)

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# The HTTP/2 listener's URL on the server's "cursor server listening" line.
HTTP2_LINE = re.compile(r"http2=http://(\S+)")
# How long a supervisor gets to stop its workers before it is killed.
STOP_WAIT_S = 15.0


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process descended from it now (``/proc/<pid>/task/*/children``)."""
    found: list[int] = []
    pending = [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except FileNotFoundError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{current}/task/{task}/children").read_text().split()
            except FileNotFoundError:
                continue
            pending.extend(int(child) for child in children)
    return found


@dataclass
class ServerProbe:
    """What ``/proc`` says about one server process (0 for what has gone)."""

    pid: int

    def cpu(self) -> float:
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except FileNotFoundError:
            return 0.0
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def rss_mb(self) -> float:
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except FileNotFoundError:
            return 0.0
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def fds(self) -> int:
        try:
            return len(os.listdir(f"/proc/{self.pid}/fd"))
        except FileNotFoundError:
            return 0

    def resources(self) -> str:
        return f"RSS {self.rss_mb():6.1f} MB, {self.fds()} open descriptors"


class Commits:
    """The server's commit count, which ``load_server`` writes when asked with SIGUSR1."""

    def __init__(self, path: Path, pid: int) -> None:
        self.path = path
        self.pid = pid
        self.asked = 0

    def read(self) -> dict[str, int]:
        """The counts: ``commits`` and the crossings (``handoffs``, ``kept``, ``loop_wakeups``,
        ``context_switches``)."""
        self.asked += 1
        os.kill(self.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                stats = json.loads(self.path.read_text())
            except (FileNotFoundError, ValueError):
                stats = {"asked": 0}
            if stats["asked"] >= self.asked:
                return {key: int(value) for key, value in stats.items() if key != "asked"}
            time.sleep(0.01)
        raise AssertionError("the server did not publish its commit count")


@dataclass
class Member:
    """One started server: its process, the URL it serves, its commit counter (None: it has
    none), whether its descendants are part of it (``run.py --workers``) and its HTTP/2
    listener's ``host:port`` (None: it runs none)."""

    server: ServerProcess
    base_url: str
    commits: Commits | None
    tree: bool = False
    h2_address: str | None = None

    def pids(self) -> list[int]:
        root = self.server.proc.pid
        return process_tree(root) if self.tree else [root]

    def cpu(self) -> float:
        return sum(ServerProbe(pid).cpu() for pid in self.pids())

    def rss_mb(self) -> float:
        return sum(ServerProbe(pid).rss_mb() for pid in self.pids())

    def fds(self) -> int:
        return sum(ServerProbe(pid).fds() for pid in self.pids())

    def stop(self) -> None:
        """A supervisor is asked to stop its workers (SIGTERM) before it is killed."""
        proc = self.server.proc
        if self.tree and proc.poll() is None:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(STOP_WAIT_S)
        self.server.stop()


@dataclass
class Fleet:
    """The servers one configuration runs on, named as the printout names them (``2
    instances``); ``balancer``: HAProxy in front, whose URL the clients use instead of the
    members' own."""

    name: str
    members: list[Member]
    balancer: Balancer | None = None

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def front(self) -> str | None:
        return None if self.balancer is None else self.balancer.http1_url

    @property
    def spreads(self) -> bool:
        """Whether the clients choose the server (else one URL: a balancer's, the kernel's)."""
        return len(self.base_urls) > 1

    @property
    def base_urls(self) -> list[str]:
        """Where the clients send requests: each member's URL, or the balancer's alone."""
        return [self.front] if self.front else [m.base_url for m in self.members]

    @property
    def h2_addresses(self) -> list[str]:
        """Each member's HTTP/2 listener (``host:port``), for the ``Run`` RPC's clients."""
        found = [m.h2_address for m in self.members]
        if self.front is not None or not all(found):
            raise AssertionError(f"{self.name}: not every server listens for HTTP/2 here")
        return [address for address in found if address is not None]

    def pids(self) -> list[int]:
        return [pid for m in self.members for pid in m.pids()]

    def cpu_by_member(self) -> list[float]:
        return [m.cpu() for m in self.members]

    def balancer_cpu(self) -> float | None:
        """The balancer's CPU so far (not the servers'); None without one."""
        if self.balancer is None or self.balancer.proc is None:
            return None
        return ServerProbe(self.balancer.proc.pid).cpu()

    def commits(self) -> dict[str, int] | None:
        """Every member's counts (commits and crossings), summed; None if any member cannot
        count."""
        counts = [None if m.commits is None else m.commits.read() for m in self.members]
        if any(c is None for c in counts):
            return None
        total: dict[str, int] = {}
        for each in counts:
            assert each is not None
            for key, value in each.items():
                total[key] = total.get(key, 0) + value
        return total

    def resources(self) -> str:
        rss = [m.rss_mb() for m in self.members]
        fds = [m.fds() for m in self.members]
        text = f"RSS {sum(rss):6.1f} MB, {sum(fds)} open descriptors"
        if len(self.members) > 1:
            each = " + ".join(f"{r:.1f}" for r in rss)
            text += f" (RSS {each} MB; descriptors {' + '.join(str(f) for f in fds)})"
        elif self.members[0].tree:
            text += f" ({len(self.pids())} processes)"
        return text

    def stop(self) -> None:
        if self.balancer is not None:
            self.balancer.stop()
        for member in self.members:
            member.stop()


@dataclass(frozen=True)
class FleetSpec:
    """A fleet to start: ``size`` instances (``instances``), the same behind HAProxy
    (``haproxy``: the instances fleet of that size with a balancer in front), or one
    ``run.py --workers size`` (``workers``)."""

    kind: str
    size: int

    @property
    def name(self) -> str:
        if self.kind == "workers":
            return f"{self.size} workers"
        instances = f"{self.size} instance{'s' if self.size > 1 else ''}"
        return f"{instances} behind HAProxy" if self.kind == "haproxy" else instances


def start_fleets(
    specs: list[FleetSpec], tmp: Path, url: str, module: str, *, h2: bool = False
) -> dict[str, Fleet]:
    """Every fleet of ``specs`` by name, its processes of ``module`` on the database ``url``
    (``h2``: the instances with their HTTP/2 listener too); a HAProxy fleet shares the servers
    of the instances fleet of its size. All stopped again if one fails to start."""
    fleets: dict[str, Fleet] = {}
    try:
        for spec in specs:  # the instances first: a balancer goes in front of them
            if spec.kind in ("instances", "haproxy"):
                plain = FleetSpec("instances", spec.size)
                if plain.name not in fleets:
                    fleets[plain.name] = start_instances(spec.size, tmp, url, module, h2=h2)
        for spec in specs:
            if spec.kind == "haproxy":
                servers = fleets[FleetSpec("instances", spec.size).name]
                fleets[spec.name] = behind_haproxy(servers, tmp / f"haproxy-{spec.size}")
            elif spec.kind == "workers":
                fleets[spec.name] = start_workers(spec.size, tmp, url, module)
    except BaseException:
        for fleet in fleets.values():
            fleet.stop()
        raise
    return {spec.name: fleets[spec.name] for spec in specs}


# Set by ``load --traces``: the servers export their spans to this OTLP sink.
OTLP_VARIABLE = "BENCH_OTLP_ENDPOINT"


def traced() -> dict[str, str]:
    """The servers' tracing settings: on when ``load --traces`` started a sink."""
    endpoint = os.environ.get(OTLP_VARIABLE)
    return {} if not endpoint else {"CURSOR_OTLP_ENDPOINT": endpoint}


def start_instances(size: int, tmp: Path, url: str, module: str, *, h2: bool = False) -> Fleet:
    """``size`` processes of ``module`` on the database ``url``, each counting its commits
    into a file of its own under ``tmp`` (``h2``: each with an HTTP/2 listener on loopback as
    well); stopped again if any fails to start."""
    members: list[Member] = []
    listener = {"CURSOR_H2_LISTEN_ADDR": "127.0.0.1:0"} if h2 else {}
    listener.update(traced())
    try:
        for index in range(size):
            stats = tmp / f"k{size}-{index}-stats.json"
            env = server_env(
                tmp,
                CURSOR_DATABASE_URL=url,
                LOAD_STATS_FILE=str(stats),
                **SHARED_KEY_ENV,
                **listener,
            )
            server = ServerProcess(env, module=module)
            members.append(Member(server, "", Commits(stats, server.proc.pid)))
        for member in members:
            member.base_url = f"http://{member.server.wait_for_address()}"
            if h2:
                found = HTTP2_LINE.search(member.server.log)
                if found is None:
                    raise AssertionError(f"no HTTP/2 listener logged:\n{member.server.log}")
                member.h2_address = found.group(1)
    except BaseException:
        for member in members:
            member.stop()
        raise
    return Fleet(FleetSpec("instances", size).name, members)


def start_workers(count: int, tmp: Path, url: str, module: str) -> Fleet:
    """One ``module --workers count``: a supervisor and its workers, measured as one tree.
    The workers run ``run.py`` itself, so nothing counts their commits."""
    stats = tmp / f"w{count}-stats.json"
    env = server_env(
        tmp, CURSOR_DATABASE_URL=url, LOAD_STATS_FILE=str(stats), **SHARED_KEY_ENV, **traced()
    )
    server = ServerProcess(env, module=module, args=("--workers", str(count)))
    member = Member(server, "", None, tree=True)
    try:
        member.base_url = f"http://{server.wait_for_address(timeout=60)}"
        if len(member.pids()) < count + 1:
            raise AssertionError(f"--workers {count}: only {member.pids()} run\n{server.log}")
    except BaseException:
        member.stop()
        raise
    return Fleet(FleetSpec("workers", count).name, [member])


def behind_haproxy(fleet: Fleet, folder: Path) -> Fleet:
    """``fleet``'s servers behind a HAProxy of ``tests.support.haproxy`` (round robin per
    request; no token: the servers listen on loopback)."""
    folder.mkdir()
    balancer = Balancer(folder)
    backends = [
        Backend(f"s{i}", m.base_url.removeprefix("http://")) for i, m in enumerate(fleet.members)
    ]
    balancer.start(backends)
    return Fleet(FleetSpec("haproxy", fleet.size).name, fleet.members, balancer)


@contextmanager
def fsyncs_of(pids: list[int], postgres_url: str | None) -> Iterator[dict[str, int | None]]:
    """Counts the fsyncs made for the servers while the block runs (None: cannot count)."""
    result: dict[str, int | None] = {"fsyncs": None, "pg_xacts": None, "pg_connections": None}
    if postgres_url is not None:
        before = pg_wal_syncs(postgres_url)
        xacts_before = pg_database_stats(postgres_url)
        yield result
        after = pg_wal_syncs(postgres_url)
        xacts_after = pg_database_stats(postgres_url)
        result["fsyncs"] = None if before is None or after is None else after - before
        if xacts_before is not None and xacts_after is not None:
            # Minus the two statistics reads themselves.
            result["pg_xacts"] = xacts_after[0] - xacts_before[0] - 2
            result["pg_connections"] = xacts_after[1]
        return
    perf = shutil.which("perf")
    if perf is None:
        yield result
        return
    events = "syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync"
    proc = subprocess.Popen(
        [perf, "stat", "-x,", "-e", events, "-p", ",".join(str(pid) for pid in pids)],
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


def pg_database_stats(url: str) -> tuple[int, int] | None:
    """The database's transactions so far as PostgreSQL counts them (every statement outside a
    transaction is one: the store's pooled reads included) and its open connections, or None.
    The database is shared: only a quiet one gives the servers' own."""
    import psycopg2

    try:
        with psycopg2.connect(url) as conn, conn.cursor() as cur:
            cur.execute(
                "SELECT xact_commit + xact_rollback, numbackends FROM pg_stat_database "
                "WHERE datname = current_database()"
            )
            row = cur.fetchone()
    except psycopg2.Error:
        return None
    return None if row is None else (int(row[0]), int(row[1]))


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
