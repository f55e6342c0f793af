"""OpenTelemetry traces of runs and provider calls, off unless an OTLP endpoint is configured.

The spans are derived from facts two recorders already hear (the RunEventRecorderActor's run,
tool and checkpoint spans; the CallRecorderActor's provider attempts), after the fact, with
their own start and end times; the SDK's batch processor exports them on its own thread.
"""

from actors.tracing.exporter import TraceSettings, Tracing, start_tracing
from actors.tracing.recording import CallSpans, RunSpans

__all__ = ["CallSpans", "RunSpans", "TraceSettings", "Tracing", "start_tracing"]
