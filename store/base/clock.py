"""The one clock: UTC wall-clock milliseconds since the epoch.

Every ``*_ms`` column, call record and UI timestamp (ToolCall start and end) reads it, so two
stamps of one event never disagree by their source.
"""

from __future__ import annotations

import time


def now_ms() -> int:
    """UTC milliseconds since the epoch."""
    return time.time_ns() // 1_000_000
