"""Races at a run's end: a message told to an actor that has already stopped is dropped
quietly (a debug line), never an ``ActorDeadError`` traceback that kills the teller.

The run stops its BlobSyncActor and CheckpointActor together (``RunChildren.stop``); a job the
CheckpointActor still holds then asks the stopped BlobSyncActor for its blobs. These tests make
that order happen for certain: the sibling (or the run) is stopped first, then the job arrives.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import pykka
import pytest

from actors.blob_sync import start_blob_sync
from actors.checkpoint import start_checkpoint_actor
from actors.protocols.blob_sync import BlobsPersisted
from actors.protocols.checkpoint import CheckpointSetup
from store import Store
from tests.actors.test_checkpoint_actor import (
    INSTRUCTIONS,
    MODEL,
    REQUEST_ID,
    TOOLS,
    U1,
    USER_MESSAGE,
    BlobSyncDouble,
    settled,
)
from tests.support.actor_doubles import WAIT_S, QueueListener, RecordingOutput
from wire.proto import agent_v1_pb2 as agent


class NoTimers:
    """Timers for a BlobSyncActor that is stopped before it could need one."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> Any:
        raise AssertionError("no deadline expected")


class Gone(pykka.ThreadingActor):
    """An actor that is stopped before anyone tells it anything (the run, already ended)."""


def setup() -> CheckpointSetup:
    return CheckpointSetup(
        request_id=REQUEST_ID,
        instructions=INSTRUCTIONS,
        model_name=MODEL,
        mode=agent.AGENT_MODE_AGENT,
        tools=TOOLS,
        context_window=128_000,
        user_message=USER_MESSAGE,
    )


@pytest.fixture
def actors() -> Iterator[list[pykka.ActorRef[Any]]]:
    refs: list[pykka.ActorRef[Any]] = []
    yield refs
    for ref in refs:
        if ref.is_alive():
            ref.stop(timeout=WAIT_S)


def settle(ref: pykka.ActorRef[Any]) -> None:
    """Wait until the actor handled what it was told (or died of it)."""
    deadline = time.monotonic() + WAIT_S
    while ref.is_alive() and not ref.actor_inbox.empty() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)


def test_a_job_for_a_stopped_blob_sync_is_dropped_without_a_traceback(
    server_store: Store, actors: list[pykka.ActorRef[Any]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    output: RecordingOutput[agent.AgentServerMessage] = RecordingOutput()
    blob_sync = start_blob_sync(REQUEST_ID, output, server_store, NoTimers())
    listener: QueueListener[object] = QueueListener()
    checkpoint = start_checkpoint_actor(setup(), output, blob_sync, listener)
    assert isinstance(checkpoint, pykka.ActorRef)  # its liveness and inbox are checked
    actors.append(checkpoint)
    blob_sync.stop(block=True)  # the run ended: its blob sync is gone first
    checkpoint.tell(settled(1, U1))
    settle(checkpoint)
    assert checkpoint.is_alive(), "the CheckpointActor died of a message to a stopped actor"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert "message to a stopped actor dropped message=PersistBlobs" in caplog.text
    listener.assert_silent()
    output.assert_silent()


def test_a_checkpoint_for_a_run_that_stopped_is_dropped_without_a_traceback(
    actors: list[pykka.ActorRef[Any]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    output: RecordingOutput[agent.AgentServerMessage] = RecordingOutput()
    blob_sync = BlobSyncDouble()
    run = Gone.start()
    run.stop(block=True)
    checkpoint = start_checkpoint_actor(setup(), output, blob_sync, run)
    assert isinstance(checkpoint, pykka.ActorRef)  # its liveness and inbox are checked
    actors.append(checkpoint)
    checkpoint.tell(settled(1, U1))
    request = blob_sync.persist_request()
    request.reply_to.tell(BlobsPersisted(request.batch_id))
    output.next()  # the checkpoint went out; its CheckpointPublished has nobody to go to
    settle(checkpoint)
    assert checkpoint.is_alive()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert "message to a stopped actor dropped message=CheckpointPublished" in caplog.text
