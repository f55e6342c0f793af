"""Benchmark: how much of a conversation's input Anthropic serves from its prompt cache (run by
hand: python -m tests.bench.cache).

The server runs as ``python run.py``; the provider is the caching fake Anthropic
(``tests/support/caching_anthropic.py``: prefixes marked ``cache_control`` kept five minutes,
1024 tokens at least, reads and writes counted as the API reports them), and the fake Cursor
client runs the turns against a small workspace. The conversation has TURNS turns (10), each a
tool round (the model reads a file) and then an answer; each turn carries the state of the one
before it back, as the editor does. It prints, per turn, the input tokens of its two calls as
the API splits them, the share of input tokens of turns 2 to TURNS served from the cache
(target at least 90 %), and the cost at list prices with and without caching.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path

from store import connect_store
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from tests.support.caching_anthropic import CacheUsage, CachingAnthropic, Reply
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeToolCall
from tests.support.process import ServerProcess, server_env
from wire.proto import agent_v1_pb2 as agent

TURNS = int(os.environ.get("BENCH_TURNS", "10"))
TARGET = 0.90
# Claude Sonnet 4.5 list prices, USD per million tokens: input, 5-minute cache write, cache
# read, output.
PRICE_INPUT, PRICE_WRITE, PRICE_READ, PRICE_OUTPUT = 3.00, 3.75, 0.30, 15.00

SOURCE = "".join(
    f"def step_{n}(value: int) -> int:\n    return value * {n} + {n % 7}\n\n" for n in range(40)
)
ANSWER = (
    "The module defines forty small steps; each multiplies its input by its own number and "
    "adds a remainder. Nothing in it keeps state, so any step can be tested on its own. "
) * 3


def cost(usages: list[CacheUsage], cached: bool) -> float:
    """USD at list prices; without caching every input token is charged as plain input."""
    total = 0.0
    for usage in usages:
        if cached:
            total += usage.input_tokens * PRICE_INPUT
            total += usage.cache_creation_input_tokens * PRICE_WRITE
            total += usage.cache_read_input_tokens * PRICE_READ
        else:
            total += usage.total_input * PRICE_INPUT
        total += usage.output_tokens * PRICE_OUTPUT
    return total / 1_000_000


async def conversation(cursor: FakeCursor, fake: CachingAnthropic, model: str, ws: Path) -> None:
    state: agent.ConversationStateStructure | None = None
    for turn in range(TURNS):
        read = FakeToolCall(f"read-{turn}", "Read", (json.dumps({"path": "/steps.py"}),))
        fake.enqueue(Reply(text="Let me read it.", tools=[read]), Reply(text=ANSWER))
        log = await CursorSession(cursor, f"cache-turn-{turn}", workspace=ws).run(
            user_turn_message(
                f"Question {turn}: what does steps.py do?",
                model,
                conversation_id="bench-cache",
                message_id=f"msg-{turn}",
                conversation_state=state,
            )
        )
        assert log.end == {}, log.end
        state = log.checkpoints()[-1]


async def main() -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        (workspace / "steps.py").write_text(SOURCE)
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        async with CachingAnthropic() as fake:
            store = connect_store(url)
            provider = create_provider(
                store.database,
                ProviderInput(name="claude", type="anthropic", base_url=fake.base_url, api_key="k"),
            )
            model = ModelInput(
                model_id="claude-sonnet-4-5", display_name="C", max_output_tokens=8192
            )
            public_id = save_models(store.database, provider.id, [model])[0].public_id
            store.close()
            server = ServerProcess(server_env(Path(tmp), CURSOR_DATABASE_URL=url))
            try:
                address = await asyncio.to_thread(server.wait_for_address)
                cursor = FakeCursor(f"http://{address}")
                try:
                    await conversation(cursor, fake, public_id, workspace)
                finally:
                    await cursor.aclose()
            finally:
                server.stop()
        report(fake.usages)


def report(usages: list[CacheUsage]) -> None:
    per_turn = [usages[2 * n : 2 * n + 2] for n in range(TURNS)]
    print("turn  input   read  write  uncached  read share")
    for number, calls in enumerate(per_turn, start=1):
        total = sum(u.total_input for u in calls)
        read = sum(u.cache_read_input_tokens for u in calls)
        write = sum(u.cache_creation_input_tokens for u in calls)
        plain = sum(u.input_tokens for u in calls)
        print(f"{number:>4} {total:>6} {read:>6} {write:>6} {plain:>9} {read / total:>10.1%}")
    later = [u for calls in per_turn[1:] for u in calls]
    share = sum(u.cache_read_input_tokens for u in later) / sum(u.total_input for u in later)
    verdict = "met" if share >= TARGET else "NOT met"
    print(f"\ninput tokens of turns 2-{TURNS} read from the cache: {share:.1%} ", end="")
    print(f"(target {TARGET:.0%}: {verdict})")
    print(
        f"cost at list prices, all {TURNS} turns: ${cost(usages, True):.4f} with caching, "
        f"${cost(usages, False):.4f} without"
    )


if __name__ == "__main__":
    asyncio.run(main())
