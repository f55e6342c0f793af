"""The BlobSyncActor's protocol: what it answers its listener, and every message it takes,
as one closed union."""

from __future__ import annotations

import base64

import msgspec

from actors.protocols.mailbox import Mailbox
from wire.errors import ConnectError
from wire.proto import agent_v1_pb2 as agent

# ---- replies ----


class BlobsPersisted(msgspec.Struct, frozen=True):
    """Every blob of the batch is in the CAS and acknowledged by the client."""

    batch_id: int


class BlobFetched(msgspec.Struct, frozen=True):
    """The blob's bytes (checked against ``blob_id``), or None when the client has no such blob."""

    fetch_id: int
    blob_id: bytes
    data: bytes | None


class BlobSyncFailed(msgspec.Struct, frozen=True):
    """The request cannot succeed; ``error`` ends the run.

    ``batch_id`` is set for a ``PersistBlobs``, ``fetch_id`` for a ``FetchBlob``.
    """

    error: ConnectError
    batch_id: int | None = None
    fetch_id: int | None = None


BlobSyncReply = BlobsPersisted | BlobFetched | BlobSyncFailed


# Who hears how a persist went (the CheckpointActor) and how a fetch went (the SessionActor).
PersistListener = Mailbox[BlobsPersisted | BlobSyncFailed]
FetchListener = Mailbox[BlobFetched | BlobSyncFailed]


# ---- messages told to the actor ----


class PersistBlobs(msgspec.Struct, frozen=True):
    """Store these blobs and make sure the client has them (one KV SET per blob it lacks)."""

    batch_id: int
    blobs: tuple[bytes, ...]
    reply_to: PersistListener


class FetchBlob(msgspec.Struct, frozen=True):
    """Find the blob ``blob_id``: from the CAS, else from the client with one KV GET."""

    fetch_id: int
    blob_id: bytes
    reply_to: FetchListener


class KvClientMessageReceived(msgspec.Struct, frozen=True):
    """The client answered a KV request (forwarded by the SessionActor in seqno order)."""

    message: agent.KvClientMessage


class KvDeadlinePassed(msgspec.Struct, frozen=True):
    """The deadline of KV request ``kv_id`` passed; ignored if it was answered meanwhile."""

    kv_id: int


class CancelBlobSync(msgspec.Struct, frozen=True):
    """The run is cancelled: fail everything pending with ``canceled``."""

    reason: str


BlobSyncMessage = (
    PersistBlobs | FetchBlob | KvClientMessageReceived | KvDeadlinePassed | CancelBlobSync
)


def b64(blob_id: bytes) -> str:
    """A blob id as messages and logs print it: standard base64 with padding."""
    return base64.b64encode(blob_id).decode("ascii")
