"""The servers of the load benchmark (``load.py``) and what is read of them from outside.

A ``Fleet`` is what the clients reach and what is measured: one or more server processes on
one database, each started as ``python -m tests.bench.load_server`` (``run.py`` plus a commit
counter, with its own ``LOAD_STATS_FILE``) and all under the key ``SHARED_KEY_ENV``, so they
read the secrets the bench seeded and derive one peer token. What it reports is the sum over
its processes: CPU (utime + stime from ``/proc``), commits, RSS and open descriptors.

Hooks for what is not here yet:

- ``run.py --workers N``: a ``Fleet`` named ``N workers`` of one ``Member`` with
  ``tree=True``: every read covers the root and all its descendants now (``process_tree``),
  the supervisor included. Its workers run ``run.py`` itself, not ``load_server``, so there is
  no commit counter: ``commits=None`` (printed n/a). One URL: the kernel spreads connections.
- a balancer in front (``tests/support/haproxy.py``): set ``front`` to its URL; the clients
  then reach every member through it (``base_urls`` is that one URL) while the reads still
  cover the members (the balancer's own CPU is not the servers').

``load.py`` keys its fleets by name and runs ``(fleet name, spread)`` configurations, so such
a fleet is one more entry there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from tests.support.process import (
    SHARED_KEY_ENV,
    ServerProcess,
    connect_shared_store,
    server_env,
)

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


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


@dataclass
class Member:
    """One started server: its process, the URL it serves, its commit counter (None: it has
    none), and whether its descendants are part of it (``run.py --workers``)."""

    server: ServerProcess
    base_url: str
    commits: Commits | None
    tree: bool = False

    def pids(self) -> list[int]:
        root = self.server.proc.pid
        return process_tree(root) if self.tree else [root]

    def cpu(self) -> float:
        return sum(ServerProbe(pid).cpu() for pid in self.pids())

    def rss_mb(self) -> float:
        return sum(ServerProbe(pid).rss_mb() for pid in self.pids())

    def fds(self) -> int:
        return sum(ServerProbe(pid).fds() for pid in self.pids())


@dataclass
class Fleet:
    """The servers one configuration runs on, named as the printout names them (``2
    instances``); ``front``: a balancer's URL the clients use instead of the members' own."""

    name: str
    members: list[Member]
    front: str | None = None

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def spreads(self) -> bool:
        """Whether the clients choose the server (else one URL: a balancer's, the kernel's)."""
        return len(self.base_urls) > 1

    @property
    def base_urls(self) -> list[str]:
        """Where the clients send requests: each member's URL, or the balancer's alone."""
        return [self.front] if self.front else [m.base_url for m in self.members]

    def pids(self) -> list[int]:
        return [pid for m in self.members for pid in m.pids()]

    def cpu_by_member(self) -> list[float]:
        return [m.cpu() for m in self.members]

    def commits(self) -> int | None:
        """Every member's commit count, summed; None if any member cannot count."""
        counts = [None if m.commits is None else m.commits.read() for m in self.members]
        return None if None in counts else sum(c for c in counts if c is not None)

    def resources(self) -> str:
        rss = [m.rss_mb() for m in self.members]
        fds = [m.fds() for m in self.members]
        text = f"RSS {sum(rss):6.1f} MB, {sum(fds)} open descriptors"
        if len(self.members) > 1:
            each = " + ".join(f"{r:.1f}" for r in rss)
            text += f" (RSS {each} MB; descriptors {' + '.join(str(f) for f in fds)})"
        return text

    def stop(self) -> None:
        for member in self.members:
            member.server.stop()


def instances_name(size: int) -> str:
    return f"{size} instance{'s' if size > 1 else ''}"


def start_fleet(size: int, tmp: Path, url: str, module: str) -> Fleet:
    """``size`` processes of ``module`` on the database ``url``, each counting its commits
    into a file of its own under ``tmp``; stopped again if any fails to start."""
    members: list[Member] = []
    try:
        for index in range(size):
            stats = tmp / f"k{size}-{index}-stats.json"
            env = server_env(
                tmp, CURSOR_DATABASE_URL=url, LOAD_STATS_FILE=str(stats), **SHARED_KEY_ENV
            )
            server = ServerProcess(env, module=module)
            members.append(Member(server, "", Commits(stats, server.proc.pid)))
        for member in members:
            member.base_url = f"http://{member.server.wait_for_address()}"
    except BaseException:
        for member in members:
            member.server.stop()
        raise
    return Fleet(instances_name(size), members)


@contextmanager
def fsyncs_of(pids: list[int], postgres_url: str | None) -> Iterator[dict[str, int | None]]:
    """Counts the fsyncs made for the servers while the block runs (None: cannot count)."""
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
