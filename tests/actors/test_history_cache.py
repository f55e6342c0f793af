"""The in-memory history cache: its bound, its order, and the premise it rests on (a history a
run keeps equals the one the store gives back for that revision)."""

from __future__ import annotations

from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    ImagePart,
    Origin,
    PartsContent,
    ReplayState,
    Role,
    TextPart,
    ToolResultContent,
    decode_message,
)
from actors.run.history_cache import HistoryCache, history_weight
from actors.turn.plan import stored
from store import Store
from store.conversations import ConversationStore


def history(name: str, length: int) -> tuple[CanonicalMessage, ...]:
    return tuple(
        CanonicalMessage(f"{name}:{i}", Role.USER, Origin.USER, PartsContent((TextPart("x"),)))
        for i in range(length)
    )


ONE = history_weight(history("w", 1))  # what one of these messages weighs


def test_a_kept_history_is_given_back() -> None:
    cache = HistoryCache(max_bytes=10 * ONE)
    kept = history("a", 3)
    cache.put(7, kept)
    assert cache.get(7) is kept
    assert cache.get(8) is None


def test_the_least_recently_used_histories_leave_first_when_over_the_bound() -> None:
    cache = HistoryCache(max_bytes=10 * ONE)
    cache.put(1, history("a", 4))
    cache.put(2, history("b", 4))
    assert cache.get(1) is not None  # 1 is now the more recently used
    cache.put(3, history("c", 4))  # 12 > 10: the least recently used (2) goes
    assert cache.get(2) is None
    assert cache.get(1) is not None and cache.get(3) is not None


def test_a_history_longer_than_the_bound_is_not_kept_and_evicts_nothing() -> None:
    cache = HistoryCache(max_bytes=10 * ONE)
    cache.put(1, history("a", 5))
    cache.put(2, history("b", 11))
    assert cache.get(2) is None
    assert cache.get(1) is not None


def test_an_image_weighs_its_bytes() -> None:
    picture = CanonicalMessage(
        "img",
        Role.USER,
        Origin.USER,
        PartsContent((ImagePart("image/png", b"\x00" * 100_000),)),
    )
    assert history_weight((picture,)) >= 100_000
    cache = HistoryCache(max_bytes=50_000)
    cache.put(1, (picture,))  # heavier than the whole cache: not kept
    assert cache.get(1) is None


def test_putting_a_revision_again_replaces_it_without_counting_it_twice() -> None:
    cache = HistoryCache(max_bytes=10 * ONE)
    cache.put(1, history("a", 6))
    cache.put(1, history("a", 6))
    cache.put(2, history("b", 4))  # 10 held, not 16: nothing is evicted
    assert cache.get(1) is not None and cache.get(2) is not None


def test_a_history_as_a_run_keeps_it_equals_the_stores_for_that_revision(
    server_store: Store,
) -> None:
    """Every kind of message a run commits decodes back to an equal message."""
    call = CanonicalToolCall(0, "call_1", "Read", '{"path": "/a"}', "run-h:0")
    messages = (
        CanonicalMessage(
            "runtime:1",
            Role.USER,
            Origin.RUNTIME,
            PartsContent((TextPart("look"), ImagePart("image/png", b"\x89PNG\x00"))),
            runtime_event_id="run-request:1",
        ),
        CanonicalMessage(
            "r:call_1:assistant",
            Role.ASSISTANT,
            Origin.ASSISTANT,
            AssistantContent(
                text="reading",
                thinking="first the file",
                tool_round_id="r",
                replay_state=ReplayState("anthropic", {"signature": "s", "blocks": [1, "x"]}),
                tool_calls=(call,),
            ),
        ),
        CanonicalMessage(
            "r:call_1:result",
            Role.TOOL,
            Origin.TOOL,
            ToolResultContent("call_1", "Read", "line 1\nline 2", False),
        ),
        CanonicalMessage("final", Role.ASSISTANT, Origin.ASSISTANT, AssistantContent(text="done")),
    )
    conversations = ConversationStore(server_store.database)
    base = conversations.ensure_conversation("conv-h")
    claimed = conversations.claim_run("run-h", "conv-h", base)
    head = conversations.append_messages(
        "run-h", claimed.base_revision_id, [stored(m) for m in messages]
    )
    read_back = tuple(decode_message(m.payload) for m in conversations.messages_at(head))
    assert read_back == messages
