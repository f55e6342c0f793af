"""The error a run's model selection raises: what ends the run's stream, as a Connect error.

Its own module so the fallback routes (``actors.run.fallback_routes``), which
``actors.run.model_selection`` calls, can tell a fallback that cannot run from a bug.
"""

from __future__ import annotations

from wire.errors import ConnectError


class ModelSelectionError(Exception):
    """The run cannot start on the selected model; ``error`` is what ends its stream."""

    def __init__(self, error: ConnectError) -> None:
        super().__init__(error.message)
        self.error = error
