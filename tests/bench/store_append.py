"""Benchmark: an append must cost O(new messages), not O(history) (run by hand:
``python -m tests.bench.store_append``).

Two conversations in one SQLite file (a temp dir, ``BENCH_DIR`` moves it): one whose history
holds LONG messages, one holding SHORT, each built the way a conversation grows (one revision
per user/assistant exchange, so the lineage is deep). Then APPENDS times over, alternating the
two conversations so both see the same machine: ``append_messages`` of one assistant message
and ``append_once`` of one runtime turn. Prints the p50 and p99 of each and the long/short ratio
of the p50s (target <= 1.5x). ``BENCH_APPENDS`` shortens a run.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    Origin,
    PartsContent,
    Role,
    TextPart,
)
from actors.turn.plan import stored
from store import connect_store
from store.conversations import ConversationStore, StoredMessage
from tests.bench.stats import ms, timed

APPENDS = int(os.environ.get("BENCH_APPENDS", "200"))
LONG, SHORT = 500, 5
TARGET = 1.5


def user(message_id: str) -> StoredMessage:
    content = PartsContent((TextPart(f"question {message_id} " * 20),))
    return stored(CanonicalMessage(message_id, Role.USER, Origin.USER, content))


def assistant(message_id: str) -> StoredMessage:
    content = AssistantContent(text=f"answer {message_id} " * 40)
    return stored(CanonicalMessage(message_id, Role.ASSISTANT, Origin.ASSISTANT, content))


def runtime(event: str) -> StoredMessage:
    content = PartsContent((TextPart(f"the user turn {event} " * 20),))
    return stored(
        CanonicalMessage(
            f"runtime:{event}", Role.USER, Origin.RUNTIME, content, runtime_event_id=event
        )
    )


def seed(cs: ConversationStore, conversation_id: str, messages: int) -> int:
    """A conversation with ``messages`` messages, one revision per exchange; its head."""
    head = cs.ensure_conversation(conversation_id)
    run_id = f"seed:{conversation_id}"
    cs.claim_run(run_id, conversation_id, head)
    for i in range(0, messages, 2):
        batch = [user(f"{conversation_id}:seed:{i}")]
        if i + 1 < messages:
            batch.append(assistant(f"{conversation_id}:seed:{i + 1}"))
        head = cs.append_messages(run_id, head, batch)
    return head


def claim(cs: ConversationStore, conversation_id: str, run_id: str, base: int) -> str:
    """A fresh run on the seeded head, so every timed append sees exactly the seeded history
    (each one starts a sibling branch; the previous run is superseded)."""
    cs.claim_run(run_id, conversation_id, base)
    return run_id


def main() -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        store = connect_store(f"sqlite:///{Path(tmp) / 'bench.db'}")
        cs = ConversationStore(store.database)
        bases = {name: seed(cs, name, size) for name, size in (("long", LONG), ("short", SHORT))}
        times: dict[tuple[str, str], list[float]] = {}
        for i in range(APPENDS):
            for name, base in bases.items():
                run_id = claim(cs, name, f"{name}:messages:{i}", base)
                message = assistant(f"{name}:bench:{i}")
                spent = timed(lambda: cs.append_messages(run_id, base, [message]))  # noqa: B023
                times.setdefault(("append_messages", name), []).append(spent)
                run_id = claim(cs, name, f"{name}:once:{i}", base)
                turn = runtime(f"{name}:bench:{i}")
                spent = timed(lambda: cs.append_once(run_id, base, turn))  # noqa: B023
                times.setdefault(("append_once", name), []).append(spent)
        store.close()

    print(f"{APPENDS} appends each on a history of {LONG} vs {SHORT} messages")
    worst = 0.0
    for op in ("append_messages", "append_once"):
        long_t, short_t = times[(op, "long")], times[(op, "short")]
        ratio = statistics.median(long_t) / statistics.median(short_t)
        worst = max(worst, ratio)
        print(f"{op:16} long  {ms(long_t)}")
        print(f"{op:16} short {ms(short_t)}")
        print(f"{op:16} ratio of p50s {ratio:.2f}x (target <= {TARGET}x)")
    print(f"worst ratio {worst:.2f}x: {'ok' if worst <= TARGET else 'MISSED'}")


if __name__ == "__main__":
    main()
