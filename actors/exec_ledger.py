"""The wire-id bookkeeping of a run's tool executions, sans-IO: the ToolRuntimeActor drives it.

One id space per run, shared by the Exec and Interaction sub-protocols: ids from 1, never
reused, up to the uint32 limit. Each id is, at any moment, one of: a pending exec, a pending
interaction query, a request to move a call to the background (``forced``), an exec the
user's action or a deadline released (its late answers are dropped), or a tombstone, the id of
an answered request kept until its round settles, so a second terminal answer is told apart
from an answer for an id that was never asked. The ledger only records; what an answer means
for its call is the call's own state machine's (``wire.tools``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Generic, Protocol, TypeVar

from wire.tools.base import ToolChannel

# Wire ids are uint32 and never reused, so a run cannot go past this one.
MAX_WIRE_ID = 0xFFFF_FFFF


class InRound(Protocol):
    """What the ledger knows of a call: the round it belongs to."""

    @property
    def round_id(self) -> str: ...


P = TypeVar("P", bound=InRound)


class ExecAnswer(Enum):
    """What an ``ExecClientMessage``'s id names."""

    FORCED = "forced"  # the answer to a request to move a call to the background
    RELEASED = "released"  # an exec whose call already ended: dropped
    PENDING = "pending"  # a pending exec: fed to its call
    DUPLICATE = "duplicate"  # a second terminal answer: a protocol violation
    UNKNOWN = "unknown"  # never asked: a protocol violation


@dataclass(slots=True, frozen=True)
class _Tombstone:
    round_id: str
    channel: ToolChannel  # EXEC or INTERACTION: which kind of answer the id took


class ExecLedger(Generic[P]):
    """The ids of one run's requests to the editor and what each stands for."""

    def __init__(self, first_id: int = 1) -> None:
        """``first_id``: where the id space starts (a test starts near its end)."""
        self._next_id = first_id
        self._execs: dict[int, P] = {}
        self._queries: dict[int, P] = {}
        self._forced: dict[int, tuple[P, str]] = {}  # the call, the answer field it takes
        self._released: set[int] = set()
        self._tombstones: dict[int, _Tombstone] = {}
        self._dispatched: set[str] = set()  # call ids ever dispatched in this run

    # ---- ids and calls ----

    def new_id(self) -> int | None:
        """The next wire id; None when the run's id space is used up."""
        if self._next_id > MAX_WIRE_ID:
            return None
        wire_id, self._next_id = self._next_id, self._next_id + 1
        return wire_id

    def dispatched(self, call_id: str) -> bool:
        return call_id in self._dispatched

    def dispatch(self, call_id: str) -> None:
        self._dispatched.add(call_id)

    # ---- requests sent ----

    def exec_sent(self, wire_id: int, call: P) -> None:
        self._execs[wire_id] = call

    def query_sent(self, wire_id: int, call: P) -> None:
        self._queries[wire_id] = call

    def force_sent(self, wire_id: int, call: P, expected: str) -> None:
        self._forced[wire_id] = (call, expected)

    # ---- answers ----

    def exec_answer(self, wire_id: int) -> ExecAnswer:
        if wire_id in self._forced:
            return ExecAnswer.FORCED
        if wire_id in self._released:
            return ExecAnswer.RELEASED
        if wire_id in self._execs:
            return ExecAnswer.PENDING
        if self._tombstoned(wire_id, ToolChannel.EXEC):
            return ExecAnswer.DUPLICATE
        return ExecAnswer.UNKNOWN

    def pending_exec(self, wire_id: int) -> P | None:
        return self._execs.get(wire_id)

    def take_exec(self, wire_id: int) -> P:
        """A pending exec's terminal answer: the id is tombstoned until its round settles."""
        call = self._execs.pop(wire_id)
        self._tombstones[wire_id] = _Tombstone(call.round_id, ToolChannel.EXEC)
        return call

    def release_exec(self, wire_id: int) -> P | None:
        """End a pending exec without its answer (the user's action, a deadline): whatever
        the editor still sends for it is dropped. None if it was not pending."""
        call = self._execs.pop(wire_id, None)
        if call is not None:
            self._released.add(wire_id)
        return call

    def released(self, wire_id: int) -> bool:
        return wire_id in self._released

    def take_query(self, wire_id: int) -> P | None:
        """A query's answer: the call, the id tombstoned; None if no such query is pending
        (``query_answered_before`` tells a duplicate from an unknown id)."""
        call = self._queries.pop(wire_id, None)
        if call is not None:
            self._tombstones[wire_id] = _Tombstone(call.round_id, ToolChannel.INTERACTION)
        return call

    def query_answered_before(self, wire_id: int) -> bool:
        return self._tombstoned(wire_id, ToolChannel.INTERACTION)

    def take_forced(self, wire_id: int) -> tuple[P, str] | None:
        """The answer to a background request: its call and the answer field it takes."""
        forced = self._forced.pop(wire_id, None)
        if forced is not None:
            self._tombstones[wire_id] = _Tombstone(forced[0].round_id, ToolChannel.EXEC)
        return forced

    def drop_forced(self, wire_id: int) -> bool:
        """Forget a background request the editor could not carry out (it threw)."""
        return self._forced.pop(wire_id, None) is not None

    # ---- the run's state ----

    def execs(self) -> Iterator[tuple[int, P]]:
        """The pending execs in ascending id order."""
        return iter(sorted(self._execs.items(), key=lambda item: item[0]))

    def queries(self) -> Iterator[tuple[int, P]]:
        return iter(sorted(self._queries.items(), key=lambda item: item[0]))

    def first_exec(self, matches: Callable[[P], bool]) -> tuple[int, P] | None:
        """The pending exec of lowest id whose call ``matches``."""
        return next(((i, call) for i, call in self.execs() if matches(call)), None)

    def forced_ids(self) -> list[int]:
        return sorted(self._forced)

    @property
    def pending_count(self) -> int:
        return len(self._execs)

    def settle(self, round_id: str) -> None:
        """The round settled: its tombstones go."""
        for wire_id in [i for i, stone in self._tombstones.items() if stone.round_id == round_id]:
            del self._tombstones[wire_id]

    def clear(self) -> None:
        """Every request ended (an abort): nothing pending, no tombstone; released ids stay
        released and call ids stay dispatched."""
        self._execs.clear()
        self._queries.clear()
        self._forced.clear()
        self._tombstones.clear()

    def _tombstoned(self, wire_id: int, channel: ToolChannel) -> bool:
        """Whether ``wire_id`` already took its terminal answer on ``channel`` (an answer on
        the other channel is for an id that was never asked there: unknown)."""
        stone = self._tombstones.get(wire_id)
        return stone is not None and stone.channel is channel
