"""Decoded histories of recent revisions, kept in memory between the runs of a conversation.

A turn's base is nearly always the revision the conversation's previous turn ended on. Reading
that history back from the store and decoding it costs time in proportion to its length (about
4 ms for 500 messages here), on the path of every turn. A committed revision never changes and
its id is never reused, so the id names one history for the life of the store: the run that
committed it leaves the history here, and the next run takes it instead of reading it back.

Bounded by the number of messages held (``MAX_CACHED_MESSAGES``), least recently used first out;
shared by every run's thread, so every access holds one lock. Only derived data lives here: the
store stays the truth, and a miss reads it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from actors.conversation.model import CanonicalMessage

# How many messages, over all cached histories, stay in memory.
MAX_CACHED_MESSAGES = 20_000


class HistoryCache:
    """revision id -> its committed history, oldest message first."""

    def __init__(self, max_messages: int = MAX_CACHED_MESSAGES) -> None:
        self._lock = threading.Lock()
        self._max = max_messages
        self._held = 0
        self._histories: OrderedDict[int, tuple[CanonicalMessage, ...]] = OrderedDict()

    def get(self, revision_id: int) -> tuple[CanonicalMessage, ...] | None:
        with self._lock:
            history = self._histories.get(revision_id)
            if history is not None:
                self._histories.move_to_end(revision_id)
            return history

    def put(self, revision_id: int, history: tuple[CanonicalMessage, ...]) -> None:
        """Keep a committed revision's history (call only once the commit has succeeded)."""
        if len(history) > self._max:
            return
        with self._lock:
            previous = self._histories.pop(revision_id, None)
            if previous is not None:
                self._held -= len(previous)
            self._histories[revision_id] = history
            self._held += len(history)
            while self._held > self._max:
                _, evicted = self._histories.popitem(last=False)
                self._held -= len(evicted)
