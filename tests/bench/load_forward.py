"""The server CPU one forwarded BidiAppend adds, isolated (``load.py --probe-appends``).

A run is opened on the fleet's first server and kept waiting on its model (the provider holds
its answer: ``HOLD_MARK``). While it waits, the bench posts client heartbeats to it one after
another, in rounds that alternate between the first server itself (direct) and the second,
which forwards each to the first (it learnt who holds the run from one warm-up heartbeat, as
any later append of a run finds it in its route memory). Both ways the first server does the
same with each: orders it in the run's inbox and tells the run's actor, which ignores it; so
what the fleet's CPU per append differs by is the forwarding itself: the second server's
edge, the frame on its channel to the holder's peer listener and the answer made from the
reply, against the first server's public edge. Then the run is cancelled. The bench's own
CPU is not counted.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

import aiohttp

from tests.bench.fast_cursor import AiohttpCursor, Answer
from tests.bench.load_fleet import Fleet
from tests.bench.load_phase import Setup
from tests.bench.load_provider import HOLD_MARK, HOLD_S, LoadProviderProcess
from tests.bench.stats import percentile
from tests.support.fake_cursor import (
    CursorSession,
    RunStream,
    cancel_message,
    heartbeat_message,
    user_turn_message,
)
from wire.proto import agent_v1_pb2 as agent

ROUNDS = 4


class SwitchedCursor:
    """An ``EditorClient`` sending each request to the server ``target`` names now."""

    def __init__(self, cursors: list[AiohttpCursor]) -> None:
        self.cursors = cursors
        self.target = 0

    async def open_run_sse(self, request_id: str) -> RunStream:
        return await self.cursors[self.target].open_run_sse(request_id)

    async def append(
        self,
        request_id: str,
        seqno: int,
        message: agent.AgentClientMessage,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        return await self.cursors[self.target].append(request_id, seqno, message, headers=headers)


@dataclass
class Way:
    """Appends sent one way: the fleet's CPU (seconds, per member) and each one's latency."""

    appends: int = 0
    cpu: list[float] = field(default_factory=lambda: [0.0, 0.0])
    latencies: list[float] = field(default_factory=list)

    def cpu_ms(self, member: int | None = None) -> float:
        """Server CPU per append, ms: the fleet's, or one member's."""
        total = sum(self.cpu) if member is None else self.cpu[member]
        return total / self.appends * 1000 if self.appends else 0.0


@dataclass
class ForwardCost:
    """What the probe measured, directly to the holder and through the other server."""

    direct: Way
    forwarded: Way

    @property
    def extra_ms(self) -> float:
        return self.forwarded.cpu_ms() - self.direct.cpu_ms()

    def text(self) -> str:
        def latency(way: Way) -> str:
            return f"latency p50 {percentile(way.latencies, 0.5) * 1000:5.2f} ms"

        d, f = self.direct, self.forwarded
        return (
            f"forwarded append, isolated ({d.appends} heartbeats each way, alternating, to a run "
            "held by instance 0 waiting on its model):"
            f"\n       direct to the holder     server CPU/append {d.cpu_ms():5.2f} ms"
            f"   {latency(d)}"
            f"\n       through instance 1       server CPU/append {f.cpu_ms():5.2f} ms"
            f"   {latency(f)}"
            f"\n       forwarding: {self.extra_ms:+.2f} ms server CPU per append"
            f" (instance 1 {f.cpu_ms(1) - d.cpu_ms(1):+.2f} ms,"
            f" instance 0 {f.cpu_ms(0) - d.cpu_ms(0):+.2f} ms)"
        )


async def _wait_for_request(provider: LoadProviderProcess, tag: str) -> None:
    deadline = time.monotonic() + 30
    while tag not in await asyncio.to_thread(provider.arrivals):
        if time.monotonic() > deadline:
            raise AssertionError("the held run never reached the provider")
        await asyncio.sleep(0.05)


async def probe_forwarding(
    fleet: Fleet, setup: Setup, provider: LoadProviderProcess, appends: int
) -> ForwardCost:
    """``appends`` heartbeats each way (in ``ROUNDS`` rounds) to a run held by member 0."""
    assert fleet.size >= 2 and fleet.front is None, "the probe needs two members reached directly"
    http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
    client = SwitchedCursor([AiohttpCursor(m.base_url, session=http) for m in fleet.members[:2]])
    tag = f"probe_{uuid.uuid4().hex[:8]}"
    session = CursorSession(client, f"{setup.prefix}-{tag}", workspace=setup.workspace)
    first = user_turn_message(
        f"hi {HOLD_MARK} load-tag-{tag}", setup.public_id, conversation_id=f"{setup.prefix}-{tag}"
    )
    turn = asyncio.create_task(session.run(first, timeout=HOLD_S, total_timeout=HOLD_S * 2))
    ways = {0: Way(), 1: Way()}
    try:
        await _wait_for_request(provider, tag)
        for target in (0, 1):  # instance 1 learns who holds the run; both connections open
            client.target = target
            await session.send(heartbeat_message())
        per_round = max(1, appends // ROUNDS)
        for _ in range(ROUNDS):
            for target, way in ways.items():
                client.target = target
                before = fleet.cpu_by_member()[:2]
                for _ in range(per_round):
                    sent = time.perf_counter()
                    await session.send(heartbeat_message())
                    way.latencies.append(time.perf_counter() - sent)
                after = fleet.cpu_by_member()[:2]
                way.appends += per_round
                way.cpu = [w + a - b for w, a, b in zip(way.cpu, after, before, strict=True)]
        client.target = 0
        await session.send(cancel_message("the probe is done"))
        await asyncio.wait_for(turn, 30)
    finally:
        turn.cancel()
        await http.close()
    return ForwardCost(ways[0], ways[1])
