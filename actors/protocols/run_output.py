"""The port through which a run's actors put frames on the run's outbound stream.

Actors run on their own threads; the edge's implementation crosses into the asyncio loop.
Every method is non-blocking and safe to call from any thread.
"""

from __future__ import annotations

from typing import Protocol

from wire.errors import ConnectError


class RunOutput(Protocol):
    """Where a run's frames go. The first ``finish`` wins; later frames are dropped."""

    def send(self, frame: bytes) -> None:
        """Queue one Connect data frame (already enveloped) for every subscriber."""

    def run_started(self) -> None:
        """The RunRequest was accepted: the run is open (heartbeats start)."""

    def finish(self, error: ConnectError | None) -> None:
        """End the stream with the success EndStream (``None``) or the given error."""
