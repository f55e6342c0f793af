"""Where a server's spans go: read from the environment by ``actors.server.settings``, kept
light (no OpenTelemetry import) so a server without tracing never loads the SDK."""

from __future__ import annotations

import msgspec

from actors.conversation.secret import Secret


class TraceSettings(msgspec.Struct, frozen=True):
    """The OTLP/HTTP traces URL and extra headers (their values may be a collector's
    credentials: Secrets, never logged)."""

    endpoint: str
    headers: tuple[tuple[str, Secret], ...] = ()
