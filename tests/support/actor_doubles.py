"""Test doubles for actor-level tests: a RunOutput that records frames and a queue listener.

They stand in for the edge (frames out) and for the actor a reply goes to; the actor under test
is always the real one.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import pytest

from wire.connect import HEADER_SIZE, EnvelopeReader
from wire.errors import ConnectError
from wire.proto import agent_v1_pb2 as agent

WAIT_S = 5.0
QUIET_S = 0.2

T = TypeVar("T")


class RecordingOutput(Generic[T]):
    """RunOutput that decodes each frame as exactly one AgentServerMessage data envelope and
    keeps ``select(message)`` of it (the whole message by default)."""

    def __init__(self, select: Callable[[agent.AgentServerMessage], Any] = lambda m: m) -> None:
        self.frames: queue.Queue[T] = queue.Queue()
        self.finished: list[ConnectError | None] = []
        self._select = select

    def send(self, frame: bytes) -> None:
        envelopes = EnvelopeReader().feed(frame)
        assert len(envelopes) == 1 and envelopes[0].flags == 0, frame[:HEADER_SIZE]
        assert len(frame) == HEADER_SIZE + len(envelopes[0].payload)
        self.frames.put(self._select(agent.AgentServerMessage.FromString(envelopes[0].payload)))

    def run_started(self) -> None:
        pass

    def finish(self, error: ConnectError | None) -> None:
        self.finished.append(error)

    def next(self) -> T:
        return self.frames.get(timeout=WAIT_S)

    def take(self, count: int) -> list[T]:
        return [self.next() for _ in range(count)]

    def assert_silent(self) -> None:
        with pytest.raises(queue.Empty):
            frame = self.frames.get(timeout=QUIET_S)
            pytest.fail(f"unexpected frame {frame}")


class QueueListener(Generic[T]):
    """A thread-safe ``tell`` into a queue."""

    def __init__(self) -> None:
        self.replies: queue.Queue[T] = queue.Queue()

    def tell(self, message: T) -> None:
        self.replies.put(message)

    def next(self) -> T:
        return self.replies.get(timeout=WAIT_S)

    def assert_silent(self) -> None:
        with pytest.raises(queue.Empty):
            reply = self.replies.get(timeout=QUIET_S)
            pytest.fail(f"unexpected reply {reply}")


class Ended:
    """What ``StreamOutput`` queues when the stream is finished (``error`` None: success)."""

    def __init__(self, error: ConnectError | None) -> None:
        self.error = error

    def __repr__(self) -> str:
        return f"Ended({self.error!r})"


class StreamOutput(RecordingOutput[Any]):
    """A RecordingOutput that also queues ``Ended(error)`` behind the frames when the stream is
    finished, so a test sees frames and the end in the order the actor produced them (and
    ``assert_silent`` also means "not ended"); ``started`` counts ``run_started`` calls."""

    def __init__(self, select: Callable[[agent.AgentServerMessage], Any] = lambda m: m) -> None:
        super().__init__(select)
        self.started = 0

    def run_started(self) -> None:
        self.started += 1

    def finish(self, error: ConnectError | None) -> None:
        super().finish(error)
        self.frames.put(Ended(error))

    def end(self) -> ConnectError | None:
        """The next item must be the end of the stream; its error."""
        item = self.next()
        assert isinstance(item, Ended), f"expected the end of the stream, got {item}"
        return item.error
