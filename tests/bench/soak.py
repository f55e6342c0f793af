"""Soak with faults (run by hand: python -m tests.bench.soak): many conversations at once, for a
while, with faults injected at random, then an accounting that must balance.

Built on the load benchmark's parts (``load_fleet``'s ``seed_model`` and ``ServerProbe``, the
provider of ``load_provider``, the aiohttp client of ``fast_cursor``), all on loopback: the
server as ``python run.py`` on a fixed port, the provider (``soak_provider``) in a process of
its own, and ``--conversations`` conversations in this process, each a run of turns one after
the other (half text, half one round of two Reads, by seed), each turn sending the client's
last checkpoint as the editor does; after ``--conversation-turns`` turns (40) the user starts a
new conversation, so the work per turn stays steady and memory can flatten. Faults, seeded
(``--seed``; ``soak_faults``):

- ``--provider-faults`` of provider requests are answered 500 or 429 (the server retries them)
  or cut after their first events (the turn ends ``unavailable``; each cut's call record must
  hold exactly the body bytes the provider sent before closing);
- ``--drops`` of turns drop their RunSSE stream mid-turn and resume with ``resume_action`` and
  their last checkpoint (the turn ends ``ok``);
- once, at half time, the server is stopped with SIGTERM and started again on the same
  database and port; the turns it cut resume (or, without a checkpoint of theirs, are sent
  again) and end as the faults of their requests after the restart call for.

At the end it checks and prints: each turn's end code against what its faults call for, the
store's messages of each conversation against the client's last checkpoint (nothing lost,
nothing twice, every turn's user message once), every ``llm_calls`` row and every run ended,
and the server's RSS and descriptors after warm-up and at the end of each of its two lives
(flat within ``RSS_TOLERANCE_MB`` / ``FD_TOLERANCE``). Any failed check: exit status 1.

``--turns`` runs that many turns per conversation instead of ``--minutes`` (the suite's short
version, ``tests/process/test_soak_short.py``: counts, not times). ``--postgres URL`` runs on that
PostgreSQL database instead of a fresh SQLite file; the checks read only this soak's rows (its
run ids carry its prefix), but a fresh database per soak keeps the server's startup and sweeps to
the soak's own rows (``createdb -O <role> soak_<date>``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import signal
import socket
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from store.catalog import update_observability
from tests.bench.load_fleet import ServerProbe, seed_model
from tests.bench.load_provider import TOOLS_MARK, LoadProviderProcess
from tests.bench.soak_accounting import (
    RunSummary,
    TurnRecord,
    check_cuts,
    check_messages,
    check_turns,
    client_keys,
    cut_records,
    unended_records,
)
from tests.bench.soak_client import SoakCursor, run_one
from tests.bench.soak_faults import draw, drops_stream
from tests.bench.soak_provider import SoakProvider
from tests.support.fake_cursor import resume_message, user_turn_message
from tests.support.process import (
    SHARED_KEY_ENV,
    ServerProcess,
    connect_shared_store,
    server_env,
)
from wire.proto import agent_v1_pb2 as agent

# Growth allowed from the warm-up sample to the end of a server life: the history cache
# (``actors/run/history_cache.py``) and the finished runs' frames (``finished_retention_bytes``) may
# still be filling to their 64 MiB caps, plus allocator slack. Over 30 minutes each life grew
# about 35 MB.
RSS_TOLERANCE_MB = 96.0
# Descriptors: both samples are taken with every conversation busy; the count moves with
# the connections open at that instant (two or three per conversation) and the pooled
# database connections (at most 8 idle).
FD_TOLERANCE = 60
# Runs one turn may take: the first, a resume after a drop, and a few around the restart.
MAX_RUNS = 6
VERBOSE = bool(os.environ.get("SOAK_VERBOSE"))
WARM_FRACTION = 0.15  # of each server life, before its warm-up sample


@dataclass
class Life:
    """One server process: its probe and the samples taken of it."""

    process: ServerProcess
    probe: ServerProbe
    samples: dict[str, tuple[float, int]] = field(default_factory=dict)

    def sample(self, label: str) -> None:
        if self.process.proc.poll() is None:
            self.samples[label] = (self.probe.rss_mb(), self.probe.fds())


@dataclass
class Conversation:
    """One conversation as the editor keeps it: its last checkpoint and every blob seen."""

    index: int
    conversation_id: str
    state: agent.ConversationStateStructure | None = None
    blobs: dict[bytes, bytes] = field(default_factory=dict)
    turns: list[TurnRecord] = field(default_factory=list)


class Soak:
    """The clients, the server's lives and the restart between them."""

    def __init__(self, args: argparse.Namespace, tmp: Path, provider_url: str) -> None:
        self.args = args
        self.prefix = uuid.uuid4().hex[:8]
        self.url = args.postgres or f"sqlite:///{tmp / 'soak.db'}"
        self.public_id = seed_model(self.url, provider_url, self.prefix)
        keep_every_call_record(self.url)
        self.workspace = tmp / "ws"
        self.workspace.mkdir()
        (self.workspace / "a.txt").write_text("first file\n")
        (self.workspace / "b.txt").write_text("second file\n")
        self.port = free_port()
        self.env = server_env(
            tmp,
            CURSOR_DATABASE_URL=self.url,
            CURSOR_LISTEN_ADDR=f"127.0.0.1:{self.port}",
            CURSOR_LOG_LEVEL=args.log_level,
            **SHARED_KEY_ENV,
        )
        self.lives: list[Life] = []
        self.up = asyncio.Event()
        self.cursor: SoakCursor | None = None
        self.old_cursors: list[SoakCursor] = []
        self.restart_window: tuple[float, float] | None = None
        self.in_flight = 0
        self.done_turns = 0
        self.started = time.perf_counter()
        self.conversations = [
            Conversation(i, f"{self.prefix}-conv{i}") for i in range(args.conversations)
        ]

    # ---- progress ----

    def progress(self) -> float:
        turns: int | None = self.args.turns
        if turns is not None:
            conversations: int = self.args.conversations
            return self.done_turns / (turns * conversations)
        minutes: float = self.args.minutes
        return (time.perf_counter() - self.started) / (minutes * 60)

    def more_turns(self, done: int) -> bool:
        """Whether a conversation slot that has run ``done`` turns runs another."""
        turns: int | None = self.args.turns
        if turns is not None:
            return done < turns
        return self.progress() < 1.0

    # ---- the server ----

    async def start_server(self) -> None:
        process = ServerProcess(self.env)
        await asyncio.to_thread(process.wait_for_address)
        self.lives.append(Life(process, ServerProbe(process.proc.pid)))
        self.cursor = SoakCursor(f"http://127.0.0.1:{self.port}")
        self.up.set()

    async def restart(self) -> None:
        """SIGTERM, wait for the exit, start again on the same database and port."""
        life = self.lives[-1]
        life.sample("end")
        self.up.clear()
        stopped_at = time.perf_counter()
        life.process.proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(life.process.proc.wait, 30)
        if code != 0:
            print(f"server exited {code} at SIGTERM:\n{life.process.log[-3000:]}", flush=True)
        assert self.cursor is not None
        self.old_cursors.append(self.cursor)
        await self.start_server()
        self.restart_window = (stopped_at, time.perf_counter())

    async def monitor(self, clients: asyncio.Future[list[None]]) -> None:
        """Warm-up samples, the restart at half time (while turns are in flight), end sample."""
        restarted = False
        while not clients.done():
            await asyncio.sleep(0.05)
            p = self.progress()
            life = self.lives[-1]
            base = 0.5 if restarted else 0.0
            if "warm" not in life.samples and p >= base + WARM_FRACTION * 0.5:
                life.sample("warm")
            if not restarted and p >= 0.5 and self.in_flight > 0:
                restarted = True
                await self.restart()
            if restarted and "end" not in life.samples and p >= 0.97:
                life.sample("end")
        self.lives[-1].sample("end")

    # ---- the clients ----

    async def conversation(self, conversation: Conversation) -> None:
        """One user's turns; past ``--conversation-turns`` they start a new conversation."""
        done = 0
        while self.more_turns(done):
            if len(conversation.turns) >= self.args.conversation_turns:
                generation = len([c for c in self.conversations if c.index == conversation.index])
                conversation = Conversation(
                    conversation.index, f"{self.prefix}-conv{conversation.index}-{generation}"
                )
                self.conversations.append(conversation)
            await self.turn(conversation, done)
            done += 1

    async def turn(self, conversation: Conversation, number: int) -> None:
        seed = self.args.seed
        tag = f"c{conversation.index}t{number}"
        kind = "tools" if draw(seed, f"kind:{tag}") < 0.5 else "text"
        record = TurnRecord(conversation.index, tag, kind, drops_stream(seed, self.args.drops, tag))
        conversation.turns.append(record)
        mark = f" {TOOLS_MARK}" if kind == "tools" else ""
        message = user_turn_message(
            f"hi{mark} load-tag-{tag}",
            self.public_id,
            conversation_id=conversation.conversation_id,
            message_id=f"m-{tag}",
            conversation_state=conversation.state,
        )
        own_checkpoint = False
        for attempt in range(MAX_RUNS):
            await self.up.wait()
            assert self.cursor is not None
            self.in_flight += 1
            try:
                outcome = await run_one(
                    self.cursor,
                    f"{self.prefix}-{tag}-{attempt}",
                    message,
                    workspace=self.workspace,
                    blobs=conversation.blobs,
                    drop=self.args.drop_point if record.drop and attempt == 0 else "",
                )
            finally:
                self.in_flight -= 1
            record.runs.append(outcome.summary())
            if VERBOSE:
                print(f"{tag} run {attempt}: {outcome.code} {outcome.message}", flush=True)
            conversation.blobs.update(outcome.blobs)
            if outcome.last_checkpoint is not None:
                conversation.state = outcome.last_checkpoint
                own_checkpoint = True
            if not outcome.interrupted:
                break
            if answered(conversation, tag):
                # The stop came after the answer's checkpoint: the turn is over, as the
                # editor sees it, and there is nothing to resume.
                record.runs.append(RunSummary("answered", "", outcome.ended, outcome.ended))
                break
            if outcome.code == "refused":
                await asyncio.sleep(0.1)  # the server is restarting: wait for it
            elif own_checkpoint:
                assert conversation.state is not None
                message = resume_message(
                    self.public_id,
                    conversation_id=conversation.conversation_id,
                    conversation_state=conversation.state,
                )
        self.done_turns += 1

    async def run(self) -> None:
        await self.start_server()
        clients = asyncio.gather(*(self.conversation(c) for c in list(self.conversations)))
        monitor = asyncio.create_task(self.monitor(clients))
        try:
            await clients
        finally:
            await monitor
            for cursor in [*self.old_cursors, self.cursor]:
                if cursor is not None:
                    await cursor.aclose()
            life = self.lives[-1]
            life.process.proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(life.process.proc.wait, 30)
            for life in self.lives:
                life.process.stop()
            if self.args.log_dir:
                for number, life in enumerate(self.lives, 1):
                    Path(self.args.log_dir, f"server-{number}.log").write_text(life.process.log)


def keep_every_call_record(url: str) -> None:
    """The accounting reads every call record (each ends, each cut's bytes): the retention
    that keeps the newest 10 000 by default would delete the first ones long before a
    30-minute soak ends (it makes about 37 a second)."""
    store = connect_shared_store(url)
    try:
        update_observability(store.database, retained_calls=2**31 - 1)
    finally:
        store.close()


def answered(conversation: Conversation, tag: str) -> bool:
    """Whether the client's last checkpoint ends with the final answer of turn ``tag``."""
    keys = client_keys(conversation.state, conversation.blobs)
    return (
        isinstance(keys, list)
        and bool(keys)
        and keys[-1][0] == "text"
        and (
            "user",
            tag,
        )
        in keys
    )


def free_port() -> int:
    """A loopback port free now, so every life of the server listens on the same one."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def flat(lives: list[Life]) -> list[str]:
    """Each life's growth from its warm-up sample to its end, beyond the tolerances."""
    problems = []
    for number, life in enumerate(lives, 1):
        warm, end = life.samples.get("warm"), life.samples.get("end")
        if warm is None or end is None:
            problems.append(f"server life {number}: missing a sample ({sorted(life.samples)})")
            continue
        if end[0] - warm[0] > RSS_TOLERANCE_MB:
            problems.append(f"server life {number}: RSS grew {end[0] - warm[0]:.1f} MB")
        if end[1] - warm[1] > FD_TOLERANCE:
            problems.append(f"server life {number}: descriptors grew by {end[1] - warm[1]}")
    return problems


def report(
    soak: Soak,
    provider_report: dict[str, list[tuple[float, str]]],
    cuts: dict[str, list[int]],
) -> list[str]:
    """Print the counts; return the failed checks."""
    turns = [t for c in soak.conversations for t in c.turns]
    failures: list[str] = []
    wall = time.perf_counter() - soak.started
    print(
        f"soak: {soak.args.conversations} users, {len(soak.conversations)} conversations of at "
        f"most {soak.args.conversation_turns} turns, {len(turns)} turns in {wall:.0f} s, "
        f"seed {soak.args.seed}, {os.cpu_count()} CPUs, "
        f"{'PostgreSQL' if soak.args.postgres else 'SQLite'}",
        flush=True,
    )
    print(f"turns by kind: {dict(sorted(Counter(t.kind for t in turns).items()))}")
    print(f"turns by end code: {dict(sorted(Counter(t.final for t in turns).items()))}")
    requests = [f for reqs in provider_report.values() for _, f in reqs]
    print(f"provider requests: {len(requests)}, faults: {dict(sorted(Counter(requests).items()))}")
    window = soak.restart_window
    turn_problems, faults = check_turns(turns, provider_report, window)
    print(
        "turns by fault: "
        + ", ".join(f"{kind} {count}" for kind, count in sorted(faults.items()))
        + f"; restart window {0 if window is None else window[1] - window[0]:.1f} s"
    )
    print(f"turns ending as their fault calls for: {len(turns) - len(turn_problems)}/{len(turns)}")
    failures += turn_problems
    cut_problems = check_cuts(cuts, cut_records(soak.url, soak.prefix), turns, window)
    print(
        f"cuts: {sum(len(c) for c in cuts.values())}; turns whose cuts the server's call records "
        f"do not hold byte for byte: {len(cut_problems)}"
    )
    failures += cut_problems
    message_problems, stored = check_messages(
        soak.url, [(c.conversation_id, c.state, c.blobs, c.turns) for c in soak.conversations]
    )
    print(
        f"messages stored: {stored}; lost or duplicated: {len(message_problems)} "
        f"(over {len(soak.conversations)} conversations)"
    )
    failures += message_problems
    calls, unended = unended_records(soak.url, soak.prefix)
    print(f"llm_calls rows: {calls}, not ended: {len(unended)}")
    failures += unended
    for number, life in enumerate(soak.lives, 1):
        samples = "   ".join(
            f"{label} RSS {rss:6.1f} MB, {fds} descriptors"
            for label, (rss, fds) in sorted(life.samples.items(), key=lambda kv: kv[0] != "warm")
        )
        print(f"server life {number}: {samples}")
    print(f"flat within RSS +{RSS_TOLERANCE_MB:.0f} MB, descriptors +{FD_TOLERANCE}")
    failures += flat(soak.lives)
    if window is None:
        failures.append("the server was never restarted")
    return failures


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--turns", type=int, help="turns per conversation instead of --minutes")
    parser.add_argument(
        "--conversation-turns",
        type=int,
        default=40,
        help="turns after which a user starts a new conversation (a steady workload: an "
        "endless conversation makes every turn's request, checkpoint and history bigger)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--provider-faults", type=float, default=0.05, help="share of requests")
    parser.add_argument("--drops", type=float, default=0.02, help="share of turns")
    parser.add_argument("--delay", type=float, default=0.1, help="provider first-token delay, s")
    parser.add_argument(
        "--drop-point",
        choices=("staged", "first-exec"),
        default="staged",
        help="where a dropping client loses its stream (first-exec: see the report's open race)",
    )
    parser.add_argument(
        "--postgres", metavar="URL", help="run on this PostgreSQL database instead of SQLite"
    )
    parser.add_argument("--log-dir", help="write each server life's log there")
    parser.add_argument("--log-level", default="info", help="the server's CURSOR_LOG_LEVEL")
    return parser.parse_args(argv)


async def soak_main(args: argparse.Namespace, tmp: Path) -> list[str]:
    make = partial(SoakProvider, args.delay, args.seed, args.provider_faults, args.drops)
    with LoadProviderProcess(args.delay, make) as provider:
        soak = Soak(args, tmp, provider.base_url)
        await soak.run()
        requests, cuts = provider.report()
        return report(soak, requests, cuts)


def main() -> None:
    args = parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # inherited by every process
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        failures = asyncio.run(soak_main(args, Path(tmp)))
    for failure in failures[:20]:
        print(f"FAILED: {failure}")
    print("soak failed" if failures else "soak passed", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
