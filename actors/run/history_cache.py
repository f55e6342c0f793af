"""Decoded histories of recent revisions, kept in memory between the runs of a conversation.

A turn's base is nearly always the revision the conversation's previous turn ended on. Reading
that history back from the store and decoding it costs time in proportion to its length (about
4 ms for 500 messages here), on the path of every turn. A committed revision never changes and
its id is never reused, so the id names one history for the life of the store: the run that
committed it leaves the history here, and the next run takes it instead of reading it back.

Bounded by the size of what it holds (``MAX_CACHED_BYTES``: the text, arguments, results and
image bytes of every message, counted per history even where consecutive revisions share
messages), least recently used first out; shared by every run's thread, so every access holds
one lock. Only derived data lives here: the store stays the truth, and a miss reads it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    PartsContent,
    TextPart,
    ToolResultContent,
)

# How much message content, over all cached histories, stays in memory.
MAX_CACHED_BYTES = 64 << 20


def history_weight(history: tuple[CanonicalMessage, ...]) -> int:
    """About how many bytes a history's content holds (what dominates its memory)."""
    total = 0
    for message in history:
        content = message.content
        if isinstance(content, PartsContent):
            for part in content.parts:
                total += len(part.text) if isinstance(part, TextPart) else len(part.data)
        elif isinstance(content, AssistantContent):
            total += len(content.text) + len(content.thinking)
            total += sum(len(call.arguments) for call in content.tool_calls)
        elif isinstance(content, ToolResultContent):
            total += len(content.content) + sum(len(image.data) for image in content.images)
        total += 64  # ids, role, structure
    return total


class HistoryCache:
    """revision id -> its committed history, oldest message first."""

    def __init__(self, max_bytes: int = MAX_CACHED_BYTES) -> None:
        self._lock = threading.Lock()
        self._max = max_bytes
        self._held = 0
        self._histories: OrderedDict[int, tuple[tuple[CanonicalMessage, ...], int]] = OrderedDict()

    def get(self, revision_id: int) -> tuple[CanonicalMessage, ...] | None:
        with self._lock:
            entry = self._histories.get(revision_id)
            if entry is None:
                return None
            self._histories.move_to_end(revision_id)
            return entry[0]

    def put(self, revision_id: int, history: tuple[CanonicalMessage, ...]) -> None:
        """Keep a committed revision's history (call only once the commit has succeeded)."""
        weight = history_weight(history)
        if weight > self._max:
            return
        with self._lock:
            previous = self._histories.pop(revision_id, None)
            if previous is not None:
                self._held -= previous[1]
            self._histories[revision_id] = (history, weight)
            self._held += weight
            while self._held > self._max:
                _, (_, evicted) = self._histories.popitem(last=False)
                self._held -= evicted
