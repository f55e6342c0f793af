"""Benchmark: the store's share of an agent turn's latency (run by hand:
``python -m tests.bench.store_turn``).

``start_turn`` (one commit before the model is asked) and ``commit_tool_result`` (one commit per
tool result, the last one of a round also reserving the next model call) sit on the critical path
of every turn and tool round, so their cost should be close to the database's own commit cost,
not to building SQL in Python. On one SQLite file in a temp dir (``BENCH_DIR`` moves it), the
store's pragmas (WAL, synchronous=FULL), ITERATIONS times over:

- ``floor``: one bare transaction inserting one row into a scratch table, the cheapest durable
  write this database can do (the ratios below divide by its p50);
- ``start_turn new``: a turn on a conversation that does not exist yet;
- ``start_turn existing``: a turn on a conversation with HISTORY messages, on its head;
- ``commit_tool_result``: the last result of a two-call round, with
  ``reserve_call_when_settled=True`` (the first result is committed untimed).

The four are interleaved per iteration so all see the same machine. Prints p50 and p99 of each
and the ratio of each p50 to the floor's. ``BENCH_ITERATIONS`` changes the count (>= 200 for
stable p99s).
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

import peewee

from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    Role,
    TextPart,
    ToolResultContent,
)
from actors.turn.plan import stored
from store import connect_store
from store.base.typed_peewee import execute_sql
from store.conversations import ConversationStore, RunStatus, StoredMessage, ToolCallSpec
from tests.bench.stats import ms, timed

ITERATIONS = int(os.environ.get("BENCH_ITERATIONS", "300"))
HISTORY = 40
FLOOR_TABLE = "bench_floor"


def runtime(event: str) -> StoredMessage:
    """A RunRequest's rendered user turn, with its stable event id."""
    content = PartsContent((TextPart(f"the user turn {event} " * 20),))
    return stored(
        CanonicalMessage(
            f"runtime:{event}", Role.USER, Origin.RUNTIME, content, runtime_event_id=event
        )
    )


def assistant(message_id: str) -> StoredMessage:
    content = AssistantContent(text=f"answer {message_id} " * 40)
    return stored(CanonicalMessage(message_id, Role.ASSISTANT, Origin.ASSISTANT, content))


def tool_pair(round_id: str, call: ToolCallSpec) -> tuple[StoredMessage, StoredMessage]:
    """The (assistant with one call, tool result) pair a completed call commits."""
    asst = AssistantContent(
        tool_round_id=round_id,
        tool_calls=(
            CanonicalToolCall(
                call.index, call.call_id, call.name, call.arguments, call.model_call_id
            ),
        ),
    )
    result = ToolResultContent(call.call_id, call.name, "file contents " * 30, False)
    return (
        stored(
            CanonicalMessage(
                f"{round_id}:{call.call_id}:assistant", Role.ASSISTANT, Origin.ASSISTANT, asst
            )
        ),
        stored(
            CanonicalMessage(f"{round_id}:{call.call_id}:result", Role.TOOL, Origin.TOOL, result)
        ),
    )


def seed(cs: ConversationStore, conversation_id: str) -> int:
    """A conversation with HISTORY messages (one revision per turn + answer); its head."""
    head = cs.ensure_conversation(conversation_id)
    for turn in range(HISTORY // 2):
        run_id = f"seed:{turn}"
        started = cs.start_turn(run_id, conversation_id, head, runtime(f"seed:{turn}"))
        head = cs.append_messages(run_id, started.head, [assistant(f"seed:{turn}:answer")])
        cs.finish_run(run_id, RunStatus.COMPLETED)
    return head


def floor_insert(db: peewee.Database, value: int) -> None:
    """One bare one-row INSERT transaction: the cheapest durable write."""
    with db.atomic():
        execute_sql(db, f"INSERT INTO {FLOOR_TABLE} (value) VALUES ({db.param})", (value,))


def main() -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        store = connect_store(f"sqlite:///{Path(tmp) / 'bench.db'}")
        db = store.database
        execute_sql(db, f"CREATE TABLE {FLOOR_TABLE} (id INTEGER PRIMARY KEY, value INTEGER)")
        cs = ConversationStore(db)
        head = seed(cs, "existing")
        calls = [
            ToolCallSpec(0, "call-a", "m:0", "Read", '{"path":"/a"}'),
            ToolCallSpec(1, "call-b", "m:0", "Read", '{"path":"/b"}'),
        ]
        times: dict[str, list[float]] = {}
        for i in range(ITERATIONS):
            times.setdefault("floor", []).append(timed(lambda: floor_insert(db, i)))  # noqa: B023

            run_id, conversation_id, turn = f"new:{i}", f"new:{i}", runtime(f"new:{i}")
            spent = timed(lambda: cs.start_turn(run_id, conversation_id, None, turn))  # noqa: B023
            times.setdefault("start_turn new", []).append(spent)

            # Each turn starts on the seeded head (a sibling branch; the last run is superseded).
            run_id, turn = f"existing:{i}", runtime(f"existing:{i}")
            spent = timed(lambda: cs.start_turn(run_id, "existing", head, turn))  # noqa: B023
            times.setdefault("start_turn existing", []).append(spent)

            started = cs.start_turn(f"round:{i}", conversation_id, None, runtime(f"round:{i}"))
            round_id = f"round:{i}:0"
            cs.create_tool_round(f"round:{i}", round_id, started.head, b"{}", calls)
            cs.commit_tool_result(f"round:{i}", round_id, "call-b", tool_pair(round_id, calls[1]))
            run_id, pair = f"round:{i}", tool_pair(round_id, calls[0])
            spent = timed(
                lambda: cs.commit_tool_result(
                    run_id,  # noqa: B023
                    round_id,  # noqa: B023
                    "call-a",
                    pair,  # noqa: B023
                    reserve_call_when_settled=True,
                )
            )
            times.setdefault("commit_tool_result", []).append(spent)
        store.close()

    print(f"{ITERATIONS} iterations; SQLite file, WAL, synchronous=FULL; history {HISTORY}")
    floor = statistics.median(times["floor"])
    for name, values in times.items():
        ratio = statistics.median(values) / floor
        print(f"{name:20} {ms(values, 3)}   {ratio:5.1f}x floor")


if __name__ == "__main__":
    main()
