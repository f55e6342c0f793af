"""Fuzzing the KV replies the editor sends (``KvClientMessage``: SET acknowledgements and
GET answers) into the BlobSyncActor's state machine, driven directly (no thread, so an
exception is seen instead of being turned into ``internal``). Whatever the replies — unknown
or repeated ids, the wrong variant, errors, data that does not hash to the id asked for — each
ends as a reply or a ``protocol error`` failure, never an exception, and nothing but a blob
under its own hash reaches the store."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from actors.blob_sync import BlobSyncActor
from actors.protocols.blob_sync import (
    BlobFetched,
    BlobsPersisted,
    BlobSyncFailed,
    BlobSyncReply,
    FetchBlob,
    KvClientMessageReceived,
    KvDeadlinePassed,
    PersistBlobs,
)
from store import blob_id_of, connect_store
from tests.support.actor_doubles import RecordingOutput
from tests.support.fuzz import fuzz_settings, proto_message
from wire.errors import Code
from wire.proto import agent_v1_pb2 as agent

_DIR = Path(tempfile.mkdtemp(prefix="fuzz-kv-"))
atexit.register(shutil.rmtree, _DIR, True)
STORE = connect_store(f"sqlite:///{_DIR}/blobs.db")

A, B, MISSING = b"blob a", b"blob b", b"blob the client has"


class _Timer:
    def cancel(self) -> None:
        pass


class _Timers:
    """Deadlines never fire by themselves here: the test sends ``KvDeadlinePassed``."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> _Timer:
        return _Timer()


class _Listener:
    def __init__(self) -> None:
        self.replies: list[BlobSyncReply] = []

    def tell(self, message: BlobSyncReply) -> None:
        self.replies.append(message)


@st.composite
def kv_reply(draw: st.DrawFn) -> agent.KvClientMessage:
    """A reply to one of the requests in flight (ids 1-3), mostly well-formed."""
    kind = draw(st.sampled_from(("ack", "data", "not found", "random")))
    kv_id = draw(st.sampled_from([0, 1, 2, 3, 4, 2**32 - 1]) | st.integers(0, 2**32 - 1))
    if kind == "ack":
        return agent.KvClientMessage(id=kv_id, set_blob_result=agent.SetBlobResult())
    if kind == "data":
        data = draw(st.sampled_from([A, B, MISSING]) | st.binary(max_size=16))
        return agent.KvClientMessage(id=kv_id, get_blob_result=agent.GetBlobResult(blob_data=data))
    if kind == "not found":
        return agent.KvClientMessage(id=kv_id, get_blob_result=agent.GetBlobResult())
    message = draw(proto_message(agent.KvClientMessage.DESCRIPTOR))
    assert isinstance(message, agent.KvClientMessage)  # a message of that descriptor
    return message


@fuzz_settings()
@given(st.lists(kv_reply(), max_size=6), st.lists(st.integers(0, 5), max_size=2))
def test_any_kv_replies_end_in_replies_or_a_protocol_error(
    replies: list[agent.KvClientMessage], deadlines: list[int]
) -> None:
    output: RecordingOutput[agent.AgentServerMessage] = RecordingOutput()
    actor = BlobSyncActor("req-fuzz-kv", output, STORE, _Timers())
    listener = _Listener()
    actor._handle(PersistBlobs(1, (A, B), listener))  # SET ids 1 and 2
    actor._handle(FetchBlob(2, blob_id_of(MISSING), listener))  # GET id 3
    for reply in replies:
        actor._handle(KvClientMessageReceived(reply))
    for kv_id in deadlines:
        actor._handle(KvDeadlinePassed(kv_id))
    for answer in listener.replies:
        assert isinstance(answer, BlobFetched | BlobsPersisted | BlobSyncFailed)
        if isinstance(answer, BlobSyncFailed):
            assert answer.error.code is Code.INVALID_ARGUMENT, answer.error
            assert answer.error.message.startswith("protocol error: KV")
        if isinstance(answer, BlobFetched) and answer.data is not None:
            assert blob_id_of(answer.data) == answer.blob_id
    for blob in (A, B, MISSING):
        stored = STORE.blobs.get(blob_id_of(blob))
        assert stored is None or stored == blob
