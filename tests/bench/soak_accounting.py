"""The soak's accounting: what each turn went through, and the checks that must balance once
the server has stopped (end codes against faults, the store against the client, call records).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from actors.codecs.checkpoint_json import decode_root, hydrated_message_id
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    PartsContent,
    TextPart,
    ToolResultContent,
    decode_message,
)
from store.base.typed_peewee import execute_sql
from store.conversations import ConversationStore
from tests.bench.soak_faults import expected_end
from tests.support.process import connect_shared_store
from wire.proto import agent_v1_pb2 as agent

TAG = re.compile(r"load-tag-(\w+)")
INTERRUPTED = frozenset({"dropped", "canceled", "refused"})
# A run the restart interrupted after the client had the answer's checkpoint: the turn is over.
ANSWERED = "answered"

Key = tuple[str, str]


@dataclass(frozen=True)
class RunSummary:
    """One run of a turn: how it ended (``ok``, an EndStream code, ``dropped``, ``refused``)."""

    code: str
    message: str
    started: float
    ended: float


@dataclass(frozen=True)
class RunOutcome:
    """One run as the client saw it, with what it keeps for the next run."""

    code: str
    message: str
    started: float
    ended: float
    blobs: dict[bytes, bytes]
    last_checkpoint: agent.ConversationStateStructure | None

    @property
    def interrupted(self) -> bool:
        return self.code in INTERRUPTED

    def summary(self) -> RunSummary:
        return RunSummary(self.code, self.message, self.started, self.ended)


@dataclass
class TurnRecord:
    """One turn of a conversation: ``drop`` says whether the plan drops its stream."""

    conversation: int
    tag: str
    kind: str
    drop: bool
    runs: list[RunSummary] = field(default_factory=list)

    @property
    def final(self) -> str:
        return self.runs[-1].code if self.runs else "never ran"


def _restart_hit(turn: TurnRecord, window: tuple[float, float] | None) -> bool:
    return window is not None and any(
        r.started < window[1] and r.ended > window[0] for r in turn.runs
    )


def check_turn(
    turn: TurnRecord, requests: list[tuple[float, str]], window: tuple[float, float] | None
) -> tuple[str, str | None]:
    """The turn's fault label and its problem, if its runs do not end as its faults call for.

    A turn the restart cut is judged by the faults of its requests after the restart (those
    before died with the old process), or by all of them if it had ended meanwhile."""
    faults = [fault for _, fault in requests]
    injected = sorted({f for f in faults if f != "ok"})
    hit = _restart_hit(turn, window)
    label = "restart" if hit else "drop" if turn.drop else "+".join(injected) or "none"
    expected = {expected_end(faults)}
    if hit and window is not None:
        # Requests between the SIGTERM and the new start reached the dying process.
        expected.add(expected_end([f for at, f in requests if at > window[1]]))
    if "ok" in expected:
        expected.add(ANSWERED)
    codes = [r.code for r in turn.runs]
    messages = [r.message for r in turn.runs if r.message]
    runs_fit = all(code in INTERRUPTED for code in codes[:-1])
    if not hit:
        runs_fit = runs_fit and codes[:-1] == (["dropped"] if turn.drop else [])
    if turn.final in expected and runs_fit:
        return label, None
    return label, (
        f"turn {turn.tag} ({turn.kind}, {label}): runs ended {codes}, faults {faults}, "
        f"expected {sorted(expected)}; messages {messages}"
    )


def check_turns(
    turns: Sequence[TurnRecord],
    provider: dict[str, list[tuple[float, str]]],
    window: tuple[float, float] | None,
) -> tuple[list[str], Counter[str]]:
    """Every turn against its faults: the problems, and how many turns had each fault."""
    problems: list[str] = []
    labels: Counter[str] = Counter()
    for turn in turns:
        label, problem = check_turn(turn, provider.get(turn.tag, []), window)
        labels[label] += 1
        if problem is not None:
            problems.append(problem)
    return problems, labels


def message_keys(message: CanonicalMessage) -> list[Key]:
    """What identifies a message across the store and a checkpoint: a user turn's tag, each
    call's id, each result's call id, an answer's text."""
    content = message.content
    if isinstance(content, PartsContent):
        text = "".join(p.text for p in content.parts if isinstance(p, TextPart))
        return [("user", tag) for tag in TAG.findall(text)[-1:]] or [("user", text[:40])]
    if isinstance(content, AssistantContent):
        keys = [("call", call.call_id) for call in content.tool_calls]
        return keys + ([("text", content.text)] if content.text else [])
    if isinstance(content, ToolResultContent):
        return [("result", content.call_id)]
    return [("other", repr(content)[:40])]


def client_keys(
    state: agent.ConversationStateStructure | None, blobs: dict[bytes, bytes]
) -> list[Key] | str:
    """The keys of the history the client's last checkpoint holds (its roots, system root
    left out), or why it cannot be read."""
    if state is None:
        return []
    keys: list[Key] = []
    for ordinal, blob_id in enumerate(state.root_prompt_messages_json):
        if ordinal == 0:
            continue
        data = blobs.get(bytes(blob_id))
        if data is None:
            return f"root {ordinal} of the last checkpoint is not in the client's blobs"
        keys += message_keys(decode_root(data, hydrated_message_id(bytes(blob_id), ordinal)))
    return keys


def check_conversation(
    store: ConversationStore,
    conversation_id: str,
    state: agent.ConversationStateStructure | None,
    blobs: dict[bytes, bytes],
    turns: Sequence[TurnRecord],
) -> tuple[list[str], int]:
    """The store's history at the conversation's head against what the client saw."""
    head = store.head(conversation_id)
    if head is None:
        return [f"{conversation_id}: no head in the store"], 0
    messages = [decode_message(m.payload) for m in store.messages_at(head)]
    stored = [key for m in messages for key in message_keys(m)]
    problems = []
    tags = [value for kind, value in stored if kind == "user"]
    if tags != [t.tag for t in turns]:
        problems.append(
            f"{conversation_id}: user turns stored {tags}, sent {[t.tag for t in turns]}"
        )
    twice = [key for key, n in Counter(k for k in stored if k[0] != "text").items() if n > 1]
    if twice:
        problems.append(f"{conversation_id}: stored more than once: {twice}")
    seen = client_keys(state, blobs)
    if isinstance(seen, str):
        problems.append(f"{conversation_id}: {seen}")
    else:
        lost = Counter(seen) - Counter(stored)
        extra = Counter(stored) - Counter(seen)
        if lost:
            problems.append(f"{conversation_id}: in the client's checkpoint, not stored: {lost}")
        if extra:
            problems.append(f"{conversation_id}: stored, not in the client's checkpoint: {extra}")
    return problems, len(messages)


def check_messages(
    url: str,
    conversations: Sequence[
        tuple[str, agent.ConversationStateStructure | None, dict[bytes, bytes], list[TurnRecord]]
    ],
) -> tuple[list[str], int]:
    """Every conversation's check; the problems and how many messages are stored."""
    store = connect_shared_store(url)
    try:
        conversation_store = ConversationStore(store.database)
        problems: list[str] = []
        total = 0
        for conversation_id, state, blobs, turns in conversations:
            found, count = check_conversation(
                conversation_store, conversation_id, state, blobs, turns
            )
            problems += found
            total += count
        return problems, total
    finally:
        store.close()


def of_soak(param: str) -> str:
    """The SQL condition for this soak's rows, ``param`` its driver's placeholder for the
    soak's ``<prefix>-%``: its run ids start with its prefix (a PostgreSQL database may hold
    other runs)."""
    return f"run_id LIKE {param}"


def unended_records(url: str, prefix: str) -> tuple[int, list[str]]:
    """How many ``llm_calls`` rows the soak made, and every call record or run not ended."""
    store = connect_shared_store(url)
    db = store.database
    mine, params = of_soak(db.param), (f"{prefix}-%",)
    try:
        total = int(
            execute_sql(db, f"SELECT COUNT(*) FROM llm_calls WHERE {mine}", params).fetchone()[0]
        )
        calls = execute_sql(
            db,
            f"SELECT id, status FROM llm_calls WHERE {mine} "
            "AND (ended_at_ms IS NULL OR status = 'running')",
            params,
        ).fetchall()
        runs = execute_sql(
            db, f"SELECT run_id FROM runs WHERE {mine} AND status = 'running'", params
        ).fetchall()
    finally:
        store.close()
    return total, [f"llm_calls row {row[0]} not ended ({row[1]})" for row in calls] + [
        f"run {row[0]} still running" for row in runs
    ]


def cut_records(url: str, prefix: str) -> dict[str, list[int]]:
    """The body bytes of every attempt that failed after a 200 (a cut stream), by turn tag
    (run ids are ``<prefix>-<tag>-<n>``)."""
    store = connect_shared_store(url)
    try:
        db = store.database
        rows = execute_sql(
            db,
            f"SELECT run_id, response_bytes FROM llm_calls WHERE {of_soak(db.param)} "
            "AND status = 'failed' AND http_status = 200 ORDER BY id",
            (f"{prefix}-%",),
        ).fetchall()
    finally:
        store.close()
    received: dict[str, list[int]] = {}
    for run_id, size in rows:
        received.setdefault(str(run_id).rsplit("-", 2)[1], []).append(int(size))
    return received


def check_cuts(
    cuts: dict[str, list[int]],
    received: dict[str, list[int]],
    turns: Sequence[TurnRecord],
    window: tuple[float, float] | None,
) -> list[str]:
    """Each cut against the server's record of it: the attempt failed with exactly the body
    bytes the provider had sent before closing (fewer: events lost on the way to the turn).
    Turns the restart cut are left out (a cut sent to the dying process has no such row)."""
    problems: list[str] = []
    for turn in turns:
        if _restart_hit(turn, window):
            continue
        sent, got = sorted(cuts.get(turn.tag, [])), sorted(received.get(turn.tag, []))
        if sent != got:
            problems.append(
                f"turn {turn.tag}: cuts sent {sent} body bytes, the server's failed attempts "
                f"after a 200 received {got}"
            )
    return problems
