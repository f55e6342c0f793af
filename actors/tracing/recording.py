"""Spans made whole after the fact, from what the two recorders hear (their owners' facts).

``RunSpans`` follows a run's opened and closed spans as the RunEventRecorderActor hears them
and makes each span when it closes, with the times the run told; a span that never closes (a
checkpoint whose ACKs never came, a run cut off) is never exported. ``CallSpans`` makes a
provider attempt's span when the CallRecorderActor hears its end. Each is called on its
recorder's worker: starting and ending a span only queues it for the SDK's batch thread.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode

from actors.conversation.request import ModelRoute
from actors.protocols.run_events import RunEventsHappened, SpanClosed, SpanOpened
from actors.tracing.attributes import (
    CHECKPOINT_SPAN,
    RUN_SPAN,
    Attributes,
    call_attributes,
    call_span_name,
    checkpoint_attributes,
    run_attributes,
    run_ids,
    tool_attributes,
)
from actors.tracing.exporter import Tracing
from store.llm_calls import CallEnd
from store.run_events import EventKind

MS = 1_000_000  # nanoseconds


def run_context(run_id: str) -> Context:
    """The context whose current span is the run's root (by its derived ids): a child's parent."""
    trace_id, span_id = run_ids(run_id)
    parent = SpanContext(trace_id, span_id, is_remote=False, trace_flags=trace.TraceFlags(1))
    return trace.set_span_in_context(NonRecordingSpan(parent), Context())


def _record(
    tracing: Tracing,
    name: str,
    context: Context,
    kind: SpanKind,
    span_times: tuple[int, int],
    attributes: Attributes,
    failed: bool,
) -> None:
    start_ns, end_ns = span_times
    span = tracing.tracer.start_span(
        name, context=context, kind=kind, attributes=attributes, start_time=start_ns
    )
    if failed:
        span.set_status(Status(StatusCode.ERROR))
    span.end(end_time=max(end_ns, start_ns))


class RunSpans:
    """The RunEventRecorderActor's spans: its runs' open ones, made whole on close."""

    def __init__(self, tracing: Tracing) -> None:
        self._tracing = tracing
        # run id -> (kind, key) -> (start ms, the opening's detail)
        self._open: dict[str, dict[tuple[EventKind, str], tuple[int, dict[str, object]]]] = {}

    def observe(self, happened: RunEventsHappened) -> None:
        run_id = happened.run_id
        for event in happened.events:
            match event:
                case SpanOpened():
                    spans = self._open.setdefault(run_id, {})
                    spans[(event.kind, event.key)] = (event.started_at_ms, dict(event.detail))
                case SpanClosed():
                    self._close(happened, event)

    def _close(self, happened: RunEventsHappened, event: SpanClosed) -> None:
        run_id = happened.run_id
        spans = self._open.get(run_id, {})
        opened = spans.pop((event.kind, event.key), None)
        if event.kind is EventKind.RUN:
            self._open.pop(run_id, None)  # what it left open never ended: no span
        start_ms = event.started_at_ms
        detail: dict[str, object] = dict(event.detail)
        if opened is not None:
            start_ms = opened[0] if start_ms is None else start_ms
            detail = {**opened[1], **detail}
        if start_ms is None:
            return  # a close of a span never opened (a failure naming no job) is no span
        times = (start_ms * MS, event.ended_at_ms * MS)
        match event.kind:
            case EventKind.RUN:
                attributes, failed = run_attributes(run_id, happened.conversation_id, detail)
                with self._tracing.pinned(*run_ids(run_id)):
                    _record(
                        self._tracing,
                        RUN_SPAN,
                        Context(),
                        SpanKind.SERVER,
                        times,
                        attributes,
                        failed,
                    )
            case EventKind.TOOL:
                name, attributes, failed = tool_attributes(detail)
                context = run_context(run_id)
                _record(self._tracing, name, context, SpanKind.INTERNAL, times, attributes, failed)
            case EventKind.CHECKPOINT:
                attributes, failed = checkpoint_attributes(detail)
                context = run_context(run_id)
                _record(
                    self._tracing,
                    CHECKPOINT_SPAN,
                    context,
                    SpanKind.INTERNAL,
                    times,
                    attributes,
                    failed,
                )


class CallSpans:
    """The CallRecorderActor's spans: one per provider attempt, a child of its run's root (a
    call outside a run, a console check, is a trace of its own)."""

    def __init__(self, tracing: Tracing) -> None:
        self._tracing = tracing

    def ended(
        self,
        run_id: str | None,
        route: ModelRoute,
        place: tuple[int, int],
        started_ns: int,
        end: CallEnd,
    ) -> None:
        """``place``: the attempt's chain position and attempt number."""
        attributes, failed = call_attributes(route, place[0], place[1], end)
        context = Context() if run_id is None else run_context(run_id)
        end_ns = started_ns + round(end.duration_ms * MS)
        _record(
            self._tracing,
            call_span_name(route),
            context,
            SpanKind.CLIENT,
            (started_ns, end_ns),
            attributes,
            failed,
        )
