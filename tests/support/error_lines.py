"""ERROR lines nobody expected, from the loop and the HTTP server, fail the test that made them.

What they catch is what a user would see in the server's log as a fault: asyncio's "Task was
destroyed but it is pending!", "Task exception was never retrieved", an exception in a
callback, aiohttp's "Error handling request". In the test process they are caught by a
handler on those loggers (after a ``gc.collect()`` at the end of every async test, since a
task destroyed while pending is reported only when it is collected); from a ``python run.py``
the test started, by reading its log. A test that provokes one on purpose says so with
``@pytest.mark.allows_error_lines``.
"""

from __future__ import annotations

import gc
import logging
import re
from collections.abc import Iterable

WATCHED_LOGGERS = ("asyncio", "aiohttp.server", "aiohttp.web")
# The same loggers in a server process's log (``wire.log.configure_logging``'s format).
PROCESS_LINE = re.compile(r" ERROR (asyncio|aiohttp\.server|aiohttp\.web) ")


class ErrorLines(logging.Handler):
    """Collects ERROR records of the watched loggers while installed."""

    def __init__(self, *, collect: bool = True) -> None:
        """``collect``: collect garbage on leaving, so a task destroyed while pending is
        reported now; a full collection costs tens of ms, so a test that ran no event loop
        of its own is spared it."""
        super().__init__(logging.ERROR)
        self.lines: list[str] = []
        self._collect = collect

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")

    def __enter__(self) -> ErrorLines:
        for name in WATCHED_LOGGERS:
            logging.getLogger(name).addHandler(self)
        return self

    def __exit__(self, *_: object) -> None:
        if self._collect:
            gc.collect()  # a pending task is reported when it is collected
        for name in WATCHED_LOGGERS:
            logging.getLogger(name).removeHandler(self)


def process_error_lines(lines: Iterable[str]) -> list[str]:
    """The watched loggers' ERROR lines among a server process's log lines."""
    return [line for line in lines if PROCESS_LINE.search(line)]
