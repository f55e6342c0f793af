"""The RunEventRecorderActor: the one writer of ``run_events``, off every run's path.

A run tells it what happened (a span of the run opened or closed: the run itself, a checkpoint
job, a tool call) and never asks it anything, so no turn waits for a commit and no run's handler
opens a connection for it (the recorder is a pooled actor, run after the handler that told it).
What a run tells is built without IO by ``actors.turn.timeline``. One recorder serves the
process and writes in the order it is told: a span's row is inserted when it opens and ended by
id when it closes, so a span that never closes (a checkpoint whose ACKs never came) stays in the
store open, which is what a stalled turn looks like.

Writes are batched: the first fact after a flush starts a deadline (``flush_after_s``, a timer
that tells the recorder ``FlushRunEvents``), and everything told until then is one transaction.
A turn tells four to ten facts spread over its life; writing each burst on its own was a third
to a half of a turn's write transactions. The cost is that a running turn's timeline shows in
the store up to ``flush_after_s`` late, and a crash loses at most that much of it (the run
itself is cancelled at the next start either way). Without timers (``flush_after_s`` 0) the
recorder tells itself the flush at once, which lands behind what is already queued. A failed
write is logged and its batch (up to ``flush_after_s`` of every run's facts) dropped, never
raised into a run. After a batch that ended a run, the events of runs beyond
``retained_calls`` (the observability setting that bounds call records) are pruned.

A run's start and end are passed on to the server's metrics (``actors.protocols.metrics``) as
they are told, before the batch is written and whatever becomes of it.
With tracing on (``actors.tracing``), the same facts are also a run's trace spans, made as
they are told (not as they are written): a failed write drops rows, never spans.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

import msgspec
import peewee
import pykka

from actors.loop.timers import Timers
from actors.pool import PooledActor
from actors.protocols.mailbox import ActorHandle
from actors.protocols.metrics import MetricsPort
from actors.protocols.run_events import (
    FlushRunEvents,
    RunEventMessage,
    RunEventsHappened,
    SpanClosed,
    SpanOpened,
)
from store.catalog import ObservabilitySettings, get_observability
from store.database import log_store_failure
from store.run_events import DetailValue, EventKind, RunEvents

if TYPE_CHECKING:  # the SDK is loaded only with tracing on
    from actors.tracing.exporter import Tracing
    from actors.tracing.recording import RunSpans

logger = logging.getLogger("cursor_server.run_events")

# How long the first fact after a write waits for the others to join it (see the docstring).
FLUSH_AFTER_S = 0.1


# ---- the recorder ----


class _Open(msgspec.Struct):
    """A span written open: its row, start and detail, for its close."""

    row_id: int
    started_at_ms: int
    detail: dict[str, DetailValue]


_Spans = dict[tuple[EventKind, str], _Open]


class RunEventRecorderActor(PooledActor):
    """Writes every run's events; one per process, started before any run and stopped after."""

    def __init__(
        self,
        database: peewee.Database,
        timers: Timers | None = None,
        flush_after_s: float = 0.0,
        metrics: MetricsPort | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        super().__init__()
        self._metrics = metrics
        self._modes: dict[str, str] = {}  # run id -> its mode, from its start to its end
        # With tracing on: each span, when it closes, is also a trace span (queued for export).
        self._spans: RunSpans | None = None
        if tracing is not None:
            from actors.tracing.recording import RunSpans

            self._spans = RunSpans(tracing)
        if flush_after_s > 0 and timers is None:
            raise ValueError("a flush deadline needs timers")
        self._timers = timers
        self._flush_after_s = flush_after_s
        self._database = database
        self._events = RunEvents(database)
        self._pending: list[RunEventsHappened] = []
        self._flush_told = False
        self._open: dict[str, _Spans] = {}  # run id -> its spans written open

    def on_receive(self, message: RunEventMessage) -> None:
        """The recorder outlives any one failure: an error is logged and it goes on."""
        try:
            match message:
                case RunEventsHappened():
                    if self._metrics is not None:
                        self._count(message, self._metrics)
                    self._pending.append(message)
                    if self._spans is not None:
                        self._trace(self._spans, message)
                    if not self._flush_told:
                        self._tell_flush()  # raising leaves the next fact to try again
                        self._flush_told = True
                case FlushRunEvents():
                    self._flush_told = False
                    self._flush()
                case _:
                    raise TypeError(f"RunEventRecorderActor cannot handle {type(message).__name__}")
        except Exception:
            logger.exception("recording run events failed (%s)", type(message).__name__)

    def _count(self, happened: RunEventsHappened, metrics: MetricsPort) -> None:
        """The run's start and end, for the metrics (its other spans are not counted)."""
        for event in happened.events:
            if event.kind is not EventKind.RUN:
                continue
            if isinstance(event, SpanOpened):
                mode = str(event.detail.get("mode") or "unknown")
                self._modes[happened.run_id] = mode
                metrics.run_started(mode, bool(event.detail.get("resumed")))
            elif happened.run_id in self._modes:  # an end without a start here is not counted
                mode = self._modes.pop(happened.run_id)
                metrics.run_ended(mode, str(event.detail.get("code") or "unknown"))

    def _trace(self, spans: RunSpans, happened: RunEventsHappened) -> None:
        """The facts' spans; a failure to make them is logged, never the rows' loss."""
        try:
            spans.observe(happened)
        except Exception:
            logger.exception("tracing the events of run %s failed", happened.run_id)

    def _tell_flush(self) -> None:
        if self._timers is None or self._flush_after_s <= 0:
            self.actor_ref.tell(FlushRunEvents())
            return
        ref = self.actor_ref

        def tell() -> None:
            with contextlib.suppress(pykka.ActorDeadError):  # stopped: on_stop wrote the rest
                ref.tell(FlushRunEvents())

        self._timers.call_later(self._flush_after_s, tell)

    def on_stop(self) -> None:
        """Stopped with facts still queued behind the stop: they are written first."""
        self._flush()

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        ended: set[str] = set()
        # Worked on a copy: a batch that fails rolls back, and so does what it opened.
        spans = {run_id: dict(open_spans) for run_id, open_spans in self._open.items()}
        try:
            with self._events.atomic():
                for happened in batch:
                    self._write(happened, spans, ended)
        except peewee.DatabaseError as exc:
            log_store_failure(logger, exc, "writing %d run event batches failed", len(batch))
        else:
            self._open = spans
        for run_id in ended:
            # The run ended: what it left open stays open in the store (it never ended).
            self._open.pop(run_id, None)
        if ended:
            self._prune()

    def _write(
        self, happened: RunEventsHappened, spans: dict[str, _Spans], ended: set[str]
    ) -> None:
        run_id = happened.run_id
        open_spans = spans.setdefault(run_id, {})
        for event in happened.events:
            match event:
                case SpanOpened():
                    open_spans[(event.kind, event.key)] = self._insert(happened, event)
                case SpanClosed():
                    self._close(happened, event, open_spans.pop((event.kind, event.key), None))
                    if event.kind is EventKind.RUN:
                        ended.add(run_id)
                case _:
                    raise TypeError(f"not a run event: {type(event).__name__}")
        if not open_spans:
            del spans[run_id]

    def _insert(self, happened: RunEventsHappened, event: SpanOpened) -> _Open:
        row_id = self._events.insert(
            happened.run_id,
            happened.conversation_id,
            event.kind,
            event.started_at_ms,
            None,
            event.detail,
        )
        return _Open(row_id, event.started_at_ms, dict(event.detail))

    def _close(self, happened: RunEventsHappened, event: SpanClosed, opened: _Open | None) -> None:
        if opened is not None:
            started = opened.started_at_ms if event.started_at_ms is None else event.started_at_ms
            detail = {**opened.detail, **event.detail}
            self._events.close(opened.row_id, started, event.ended_at_ms, detail)
        elif event.started_at_ms is not None:
            self._events.insert(
                happened.run_id,
                happened.conversation_id,
                event.kind,
                event.started_at_ms,
                event.ended_at_ms,
                event.detail,
            )
        # A close of a span never opened (a checkpoint failure naming no job) is not a span.

    def _prune(self) -> None:
        try:
            settings = get_observability(self._database)
        except peewee.DatabaseError as exc:
            log_store_failure(
                logger, exc, "reading the observability settings failed; using the defaults"
            )
            settings = ObservabilitySettings()
        try:
            self._events.prune(settings.retained_calls)
        except peewee.DatabaseError as exc:
            log_store_failure(logger, exc, "pruning run events failed")


def start_run_event_recorder(
    database: peewee.Database,
    timers: Timers | None = None,
    flush_after_s: float = 0.0,
    metrics: MetricsPort | None = None,
    tracing: Tracing | None = None,
) -> ActorHandle[RunEventMessage]:
    """The process's recorder; start it before the first run (``stop_all`` stops it after).
    The server passes the loop's timers, ``FLUSH_AFTER_S``, its metrics and its tracing if on."""
    return RunEventRecorderActor.start(database, timers, flush_after_s, metrics, tracing)
