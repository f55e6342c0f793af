"""Benchmark: what the server adds to an agent turn (run by hand: python -m tests.bench.turn).

Everything runs on loopback, in three processes as with the editor: the server as
``python run.py`` (as it runs for a user), the fake provider (``provider_process``), and the fake
Cursor client in this one (it acknowledges every KV SET at once). It prints, at p50 and p99
over TURNS turns:

- added time to the first text delta: (RunRequest sent -> first text_delta at the client)
  minus (request sent -> first text event when the client reads the same provider stream
  directly); both ends are stamped as the client reads them, not polled;
- the protocol floor of that first delta, in the same run: our edge serving a run that does
  no work but SET a new conversation's four first-checkpoint blobs and answer once they are
  acknowledged (``floor_server``), from RunSSE open to its text delta;
- overhead per tool round: the exec result leaving the client -> the next provider request
  arriving at the fake provider;
- the server time of a text turn on a conversation with a long history against a short one
  (the turn carries the state of the turn before it back, as the editor does).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    Origin,
    PartsContent,
    Role,
    TextPart,
)
from actors.turn.plan import stored
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from store.conversations import ConversationStore, StaleRun
from tests.bench.fast_cursor import AiohttpCursor, TimedSession
from tests.bench.provider_process import ProviderProcess
from tests.bench.stats import ms
from tests.support.fake_cursor import CursorSession, TurnLog, user_turn_message
from tests.support.fake_provider import FakeToolCall, Script, chat_events
from tests.support.process import (
    SHARED_KEY_ENV,
    ServerProcess,
    connect_shared_store,
    server_env,
)

TURNS = int(os.environ.get("BENCH_TURNS", "200"))
LONG, SHORT = 500, 5
HISTORY_TURNS = int(os.environ.get("BENCH_HISTORY_TURNS", "40"))


async def direct_first_text(client: httpx.AsyncClient, url: str) -> float:
    started = time.perf_counter()
    async with client.stream("POST", url, json={}) as response:
        async for line in response.aiter_lines():
            if '"content": "' in line or '"content":"' in line:
                return time.perf_counter() - started
    raise AssertionError("no text in the direct stream")


def seed_history(store_path: str, conversation_id: str, messages: int) -> None:
    """A conversation whose history already holds ``messages`` messages (user/assistant)."""
    store = connect_shared_store(store_path)
    conversations = ConversationStore(store.database)
    head = conversations.ensure_conversation(conversation_id)
    run_id = f"seed-{conversation_id}"
    batch = []
    for i in range(messages):
        if i % 2 == 0:
            content = PartsContent((TextPart(f"question {i} " * 20),))
            message = CanonicalMessage(f"seed:{i}", Role.USER, Origin.USER, content)
        else:
            message = CanonicalMessage(
                f"seed:{i}",
                Role.ASSISTANT,
                Origin.ASSISTANT,
                AssistantContent(text=f"answer {i} " * 40),
            )
        batch.append(stored(message))
    # The seed's run belongs to no instance, so the server's sweep of runs no live instance
    # holds may cancel it between its claim and its append: then it is claimed again.
    for attempt in range(3):
        claimed = conversations.claim_run(run_id, conversation_id, head)
        try:
            conversations.append_messages(run_id, claimed.base_revision_id, batch)
            break
        except StaleRun:
            if attempt == 2:
                raise
    store.close()


def first_text_at(log: TurnLog) -> float:
    """When the client read the run's first text delta."""
    for message, at in zip(log.messages, log.received_at, strict=True):
        if message.interaction_update.HasField("text_delta"):
            return at
    raise AssertionError(f"the run showed no text: {log.kinds()} end {log.end}")


async def main() -> None:
    with (
        tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp,
        ProviderProcess() as fake,
    ):
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        store = connect_shared_store(url)
        async with httpx.AsyncClient() as direct:
            provider = create_provider(
                store.database,
                ProviderInput(name="fake", type="openai-chat", base_url=fake.base_url, api_key="k"),
            )
            public_id = save_models(
                store.database, provider.id, [ModelInput(model_id="m", display_name="M")]
            )[0].public_id
            store.close()
            # Three processes, as with the editor: the server, the fake provider, and this one
            # (the fake client); none waits for another's interpreter.
            server = ServerProcess(server_env(Path(tmp), CURSOR_DATABASE_URL=url, **SHARED_KEY_ENV))
            address = await asyncio.to_thread(server.wait_for_address)
            cursor = AiohttpCursor(f"http://{address}")
            text = chat_events(text=["Hello", " there", "!"])
            added: list[float] = []
            for i in range(TURNS):
                fake.enqueue(Script.sse(text))
                direct_s = await direct_first_text(direct, f"{fake.base_url}/chat/completions")
                fake.enqueue(Script.sse(text))
                session = CursorSession(cursor, f"first-{i}")
                started = time.perf_counter()
                log = await session.run(
                    user_turn_message("hi", public_id, conversation_id=f"c-{i}")
                )
                added.append(first_text_at(log) - started - direct_s)

            # The protocol floor, measured the same way: the edge with a run that only SETs a
            # first checkpoint's four blobs and answers once they are acknowledged.
            floor_server = ServerProcess(server_env(Path(tmp)), module="tests.bench.floor_server")
            floor_address = await asyncio.to_thread(floor_server.wait_for_address)
            floor_cursor = AiohttpCursor(f"http://{floor_address}")
            floor: list[float] = []
            for i in range(TURNS):
                session = CursorSession(floor_cursor, f"floor-{i}")
                started = time.perf_counter()
                log = await session.run(user_turn_message("hi", public_id))
                floor.append(first_text_at(log) - started)
            await floor_cursor.aclose()
            floor_server.stop()

            round_overhead: list[float] = []
            workspace = Path(tmp) / "ws"
            workspace.mkdir()
            (workspace / "a.txt").write_text("content\n")
            for i in range(TURNS):
                fake.enqueue(
                    Script.sse(
                        chat_events(
                            tools=[FakeToolCall(f"call_{i}", "Read", ('{"path": "/a.txt"}',))]
                        )
                    ),
                    Script.sse(text),
                )
                session = TimedSession(cursor, f"tool-{i}", workspace=workspace)
                before = len(fake.request_times())
                await session.run(user_turn_message("read", public_id, conversation_id=f"t-{i}"))
                arrived = fake.request_times()[before + 1]
                round_overhead.append(arrived - session.sent_at[0])

            turn_time: dict[int, list[float]] = {LONG: [], SHORT: []}
            # Interleaved, so a slower or faster stretch of this shared machine weighs on both.
            for i in range(HISTORY_TURNS):
                for size in (SHORT, LONG):
                    conversation = f"h{size}-{i}"
                    await asyncio.to_thread(seed_history, url, conversation, size)
                    # The first turn on the seeded history publishes its roots once; the
                    # timed one carries that state back, as the editor does on every turn.
                    fake.enqueue(Script.sse(text))
                    warm = await CursorSession(cursor, f"warm-{size}-{i}").run(
                        user_turn_message("first", public_id, conversation_id=conversation)
                    )
                    assert warm.end == {}, warm.end
                    message = user_turn_message("more", public_id, conversation_id=conversation)
                    message.run_request.conversation_state.CopyFrom(warm.checkpoints()[-1])
                    fake.enqueue(Script.sse(text))
                    started = time.perf_counter()
                    log = await CursorSession(cursor, f"hist-{size}-{i}").run(message)
                    assert log.end == {}, log.end
                    turn_time[size].append(time.perf_counter() - started)
            await cursor.aclose()
            server.stop()
        print(f"{TURNS} turns on loopback, this machine")
        print(f"added time to the first text delta   {ms(added)}   (target p50 <= 5 ms)")
        print(
            f"  protocol floor (edge, no work)     {ms(floor)}   (floor_server: 4 KV round trips)"
        )
        ratio = statistics.median(added) / statistics.median(floor)
        print(f"  added time / protocol floor        {ratio:.2f}x at p50")
        print(f"overhead per tool round              {ms(round_overhead)}   (target p50 <= 10 ms)")
        long_p50 = statistics.median(turn_time[LONG])
        short_p50 = statistics.median(turn_time[SHORT])
        print(
            f"text turn on a {LONG}-message history vs {SHORT}: "
            f"{long_p50 * 1000:.1f} ms vs {short_p50 * 1000:.1f} ms = {long_p50 / short_p50:.2f}x "
            "(target <= 1.5x)"
        )


if __name__ == "__main__":
    asyncio.run(main())
