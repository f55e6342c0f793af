"""Which run currently owns each conversation, in memory, so a new run can interrupt the old.

The store decides ownership durably (``claim_run`` marks the old run cancelled and makes every
late write of it fail); this map only finds the old run's actor so it can be told to stop at
once: cancel its provider call, abort its pending execs, end its stream with ``canceled``.
A run another instance holds is told through ``RemoteRuns``.
"""

from __future__ import annotations

import threading
from typing import Protocol

from actors.protocols.edge import CancelRun
from actors.protocols.mailbox import Mailbox

# A run's SessionActor, as a newer run that takes its conversation over sees it: told to stop.
Stoppable = Mailbox[CancelRun]


class RemoteRuns(Protocol):
    """The runs other instances on the same database hold (``actors.server.peers``)."""

    def cancel(self, run_id: str, reason: str) -> None:
        """Tell the instance holding ``run_id`` to stop it; returns at once."""
        ...


class RunOwners:
    """conversation id -> (run id, actor); safe to use from every actor thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owners: dict[str, tuple[str, Stoppable]] = {}

    def claim(self, conversation_id: str, run_id: str, actor: Stoppable) -> Stoppable | None:
        """Make ``run_id`` the owner; returns the previous owner's actor if another run had it."""
        with self._lock:
            previous = self._owners.get(conversation_id)
            self._owners[conversation_id] = (run_id, actor)
        if previous is None or previous[0] == run_id:
            return None
        return previous[1]

    def release(self, conversation_id: str, run_id: str) -> bool:
        """Forget the owner, but only if it is still ``run_id`` (a newer run keeps its claim)."""
        with self._lock:
            current = self._owners.get(conversation_id)
            if current is None or current[0] != run_id:
                return False
            del self._owners[conversation_id]
            return True

    def owner(self, conversation_id: str) -> str | None:
        with self._lock:
            current = self._owners.get(conversation_id)
        return None if current is None else current[0]
