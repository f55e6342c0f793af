"""OpenTelemetry traces of runs and provider calls, off unless an OTLP endpoint is configured.

The spans are derived from facts two recorders already hear (the RunEventRecorderActor's run,
tool and checkpoint spans; the CallRecorderActor's provider attempts), after the fact, with
their own start and end times; the SDK's batch processor exports them on its own thread.
Only the settings are imported here: ``exporter`` and ``recording`` load the SDK, and are
imported only by a server whose tracing is on.
"""

from actors.tracing.settings import TraceSettings

__all__ = ["TraceSettings"]
