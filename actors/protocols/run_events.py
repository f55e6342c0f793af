"""The RunEventRecorderActor's protocol: the spans runs open and close, and the flush."""

from __future__ import annotations

import msgspec

from store.run_events import Detail, EventKind

# ---- what runs tell it ----


class SpanOpened(msgspec.Struct, frozen=True):
    """A span of the run began; ``key`` names it for its close (the checkpoint job id, the
    tool call id; empty for the run itself)."""

    kind: EventKind
    key: str
    started_at_ms: int
    detail: Detail


class SpanClosed(msgspec.Struct, frozen=True):
    """A span ended. ``detail`` adds to what its opening said. ``started_at_ms``, when the
    closer knows the span's own start (a tool call's, from the tool runtime), replaces the
    opening's and lets the span be written whole even if its opening never was."""

    kind: EventKind
    key: str
    ended_at_ms: int
    detail: Detail
    started_at_ms: int | None = None


RunEvent = SpanOpened | SpanClosed


class RunEventsHappened(msgspec.Struct, frozen=True):
    """Events of one run, in the order they happened."""

    run_id: str
    conversation_id: str
    events: tuple[RunEvent, ...]


class FlushRunEvents(msgspec.Struct, frozen=True):
    """Write everything told since the last flush (the recorder tells it to itself)."""


RunEventMessage = RunEventsHappened | FlushRunEvents
