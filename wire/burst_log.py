"""One log line per burst of like refusals, not one per request.

A flood (thousands of connections or streams refused in a second) must not become thousands
of log lines: the first refusal for a key is logged with its fields, later ones within
``quiet_s`` of the previous are only counted, and the next line for that key (once a quiet
spell has passed) says how many the burst before it left out.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable

from wire.log import log_event

MAX_KEYS = 1024


class BurstLog:
    """Logs ``event`` once per burst per key (a peer address, a limit's name)."""

    def __init__(
        self,
        logger: logging.Logger,
        event: str,
        *,
        level: int = logging.WARNING,
        quiet_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._event = event
        self._level = level
        self._quiet_s = quiet_s
        self._clock = clock
        # key -> [time of the last event, events not logged since the last line]
        self._bursts: OrderedDict[str, list[float]] = OrderedDict()

    def __len__(self) -> int:
        """How many keys it remembers a burst for."""
        return len(self._bursts)

    def __call__(self, key: str, **fields: object) -> bool:
        """Record one event; True when it was logged (the first of its burst)."""
        now = self._clock()
        burst = self._bursts.get(key)
        if burst is not None and now - burst[0] < self._quiet_s:
            burst[0] = now
            burst[1] += 1
            self._bursts.move_to_end(key)
            return False
        left_out = 0 if burst is None else int(burst[1])
        self._bursts[key] = [now, 0]
        self._bursts.move_to_end(key)
        while len(self._bursts) > MAX_KEYS:
            self._bursts.popitem(last=False)
        log_event(
            self._logger,
            self._level,
            self._event,
            **fields,
            quiet_for_s=f"{self._quiet_s:g}",
            left_out_before=left_out or None,
        )
        return True


class RefusalLog:
    """The refusal lines of one listener's gate (``edge request refused``, ``agent request
    refused``): one per burst per peer, kind and status, not one per request."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logs = {
            what: BurstLog(logger, f"{what} request refused") for what in ("edge", "agent")
        }

    def __call__(self, what: str, status: int, peer: str | None, **fields: object) -> None:
        self._logs[what](f"{peer} {status}", peer=peer, **fields)
