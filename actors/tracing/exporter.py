"""The server's TracerProvider: one per server (never the process's global one, so several
servers in one process keep their own), exporting OTLP over HTTP from the SDK's batch thread.

A run's root span takes ids derived from the run id (``attributes.run_ids``), so a span that
another actor records (a provider attempt) names it as its parent without asking anyone; every
other id is random.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import Tracer

from actors.tracing.settings import TraceSettings

# The service name when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one.
SERVICE = "cursor-server"
# The instrumentation scope every span of ours carries.
SCOPE = "cursor_server"
# How long a server's stop waits for the last spans to be exported (a collector that is down
# makes the exporter retry for up to its own timeout, 10 s: it is cut off after this).
FLUSH_TIMEOUT_S = 2.0


class _PinnedIds(RandomIdGenerator):
    """Random ids, except while ``pinned``: then the trace and span id given (a run's root)."""

    def __init__(self) -> None:
        self._local = threading.local()

    @contextlib.contextmanager
    def pinned(self, trace_id: int, span_id: int) -> Iterator[None]:
        self._local.ids = (trace_id, span_id)
        try:
            yield
        finally:
            self._local.ids = None

    def _pin(self) -> tuple[int, int] | None:
        ids: tuple[int, int] | None = getattr(self._local, "ids", None)
        return ids

    def generate_trace_id(self) -> int:
        ids = self._pin()
        return super().generate_trace_id() if ids is None else ids[0]

    def generate_span_id(self) -> int:
        ids = self._pin()
        return super().generate_span_id() if ids is None else ids[1]

    def is_trace_id_random(self) -> bool:
        return self._pin() is None


class Tracing:
    """A server's tracer; ``shutdown`` (on the server's stop) exports what is still queued."""

    def __init__(
        self, provider: TracerProvider, exporter: OTLPSpanExporter, ids: _PinnedIds
    ) -> None:
        self._provider = provider
        self._exporter = exporter
        self._ids = ids
        self.tracer: Tracer = provider.get_tracer(SCOPE)

    def pinned(self, trace_id: int, span_id: int) -> contextlib.AbstractContextManager[None]:
        """Spans started in this block on this thread get these ids (one span per block)."""
        return self._ids.pinned(trace_id, span_id)

    def shutdown(self) -> None:
        """Export what is queued, then stop the batch thread; past ``FLUSH_TIMEOUT_S`` the
        exporter is shut down under it, which ends its retries (the rest is dropped, and the
        SDK logs it). Blocking: call it off the event loop."""
        stopping = threading.Thread(
            target=self._provider.shutdown, name="tracing-shutdown", daemon=True
        )
        stopping.start()
        stopping.join(FLUSH_TIMEOUT_S)
        if stopping.is_alive():
            self._exporter.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it untyped
            stopping.join(FLUSH_TIMEOUT_S)


def _resource() -> Resource:
    """OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES as the SDK reads them; our name else."""
    resource = Resource.create()
    name = str(resource.attributes.get(SERVICE_NAME, ""))
    if not name or name.startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: SERVICE}))
    return resource


def start_tracing(settings: TraceSettings, extra: Mapping[str, str] | None = None) -> Tracing:
    """A TracerProvider of this server's own with a batch processor and the OTLP/HTTP exporter.
    The exporter honours OTEL_EXPORTER_OTLP_TRACES_{TIMEOUT,COMPRESSION,CERTIFICATE}, the batch
    processor OTEL_BSP_*, and the sampler OTEL_TRACES_SAMPLER; ``extra``: resource attributes
    (the instance id)."""
    ids = _PinnedIds()
    resource = _resource()
    if extra:
        resource = resource.merge(Resource(dict(extra)))
    provider = TracerProvider(resource=resource, id_generator=ids, shutdown_on_exit=False)
    exporter = OTLPSpanExporter(
        endpoint=settings.endpoint,
        # No headers given: OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, as the exporter reads them.
        headers={name: value.reveal() for name, value in settings.headers} or None,
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return Tracing(provider, exporter, ids)
