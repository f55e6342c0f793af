"""What every benchmark prints: a timed call, percentiles, and the p50/p99 line."""

from __future__ import annotations

import time
from collections.abc import Callable


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` took."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(values: list[float], decimals: int = 2) -> str:
    """``p50 … ms   p99 … ms`` of durations given in seconds."""
    p50, p99 = percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000
    return f"p50 {p50:7.{decimals}f} ms   p99 {p99:7.{decimals}f} ms"
