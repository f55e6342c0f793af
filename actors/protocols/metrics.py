"""The port through which the recorders pass on to the server's metrics what they already hear.

The CallRecorderActor sees every provider attempt start and end, the RunEventRecorderActor every
run's start and end: each tells this port the same facts it writes, in memory, before (and
whatever happens to) the write. A method only increments counters (no IO, no lock of the
caller's held), so the hot path pays a few counter increments per call and per run. The
implementation (``actors.server.metrics``) owns one Prometheus registry per server; a recorder
given none counts nothing.
"""

from __future__ import annotations

from typing import Protocol

from store.llm_calls import CallEnd


class MetricsPort(Protocol):
    """Facts for the metrics; every method is cheap and safe to call from any thread."""

    def call_attempted(
        self, provider_type: str, model: str, attempt: int, chain_position: int
    ) -> None:
        """An attempt of a provider call started: ``attempt`` > 1 is a retry, ``attempt`` 1 at
        ``chain_position`` > 0 is a fallback to the chain's next model."""

    def call_ended(self, provider_type: str, model: str, end: CallEnd) -> None:
        """An attempt ended with ``end`` (status, times, usage) as its record gets it."""

    def run_started(self, mode: str, resumed: bool) -> None:
        """A run began in ``mode``; ``resumed``: it continues a turn instead of starting one."""

    def run_ended(self, mode: str, code: str) -> None:
        """A run of ``mode`` ended with EndStream ``code`` (``ok`` on success)."""
