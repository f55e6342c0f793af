"""The BlobSyncActor: one per run, the owner of the KV (blob) sub-protocol inside RunSSE.

Cursor's Agent keeps conversation state as blobs addressed by their raw SHA-256. The server
pushes every blob it creates to the client with one KV SET and keeps it in its own CAS once
acknowledged; a checkpoint may only reference blobs the client has acknowledged, so callers
wait for ``BlobsPersisted`` before publishing. Blobs the server lacks are fetched with KV GET
and checked against their id before they are stored.

The mailbox never waits: an outstanding SET or GET is state, and its deadline arrives as a
``KvDeadlinePassed`` message from a timer (``actors.loop.timers``; on the server, the loop's timer
heap through ``actors.loop.bridge``). A rejected SET, a hash mismatch, a missed deadline or an
internal error puts the actor in a failed state: every waiting and every later request is
answered with the same ``BlobSyncFailed``, and the owner (the SessionActor) ends the run with
that error. Nothing is ever retried under a new KV id.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec
import peewee
import pykka

from actors.loop.timers import Timer, Timers
from actors.pool import PooledActor
from actors.protocols.blob_sync import (
    BlobFetched,
    BlobsPersisted,
    BlobSyncFailed,
    BlobSyncMessage,
    BlobSyncReply,
    CancelBlobSync,
    FetchBlob,
    KvClientMessageReceived,
    KvDeadlinePassed,
    PersistBlobs,
    b64,
)
from actors.protocols.mailbox import ActorHandle, Mailbox
from actors.protocols.run_output import RunOutput
from actors.store_failure import store_failure
from store import Store
from store.blobs import InvalidBlobId, blob_id_of, check_blob_id
from store.database import is_unavailable
from wire.connect import data_frame
from wire.errors import Code, ConnectError, cancelled_error, protocol_error
from wire.log import format_event, log_event
from wire.proto import agent_v1_pb2 as agent

R = TypeVar("R", bound=BlobSyncReply)  # a reply, to whoever asked for it

logger = logging.getLogger("cursor_server.blob_sync")

# How long the client has to answer one KV SET (its ACK) or one KV GET before the run fails.
KV_SET_ACK_TIMEOUT_S = 15.0
KV_GET_REPLY_TIMEOUT_S = 15.0
# KV ids are uint32 on the wire and are never reused, so a run cannot go past this one.
MAX_KV_ID = 0xFFFF_FFFF


class KvLimits(msgspec.Struct, frozen=True):
    """Deadlines of the KV sub-protocol (shortened in tests)."""

    set_ack_timeout_s: float = KV_SET_ACK_TIMEOUT_S
    get_reply_timeout_s: float = KV_GET_REPLY_TIMEOUT_S


DEFAULT_KV_LIMITS = KvLimits()


# ---- internal state ----


@dataclass(slots=True)
class _PendingSet:
    blob_id: bytes
    timer: Timer


@dataclass(slots=True)
class _PendingGet:
    blob_id: bytes
    timer: Timer
    waiters: list[FetchBlob]


@dataclass(slots=True)
class _Batch:
    request: PersistBlobs
    waiting: set[bytes] = field(default_factory=set)


class BlobSyncActor(PooledActor):
    """KV SET/GET for one run: ids from 1, one SET per blob, paired ACKs, deadlines."""

    def __init__(
        self,
        request_id: str,
        output: RunOutput,
        store: Store,
        timers: Timers,
        limits: KvLimits = DEFAULT_KV_LIMITS,
    ) -> None:
        super().__init__()
        self.request_id = request_id
        self._output = output
        self._store = store
        self._timers = timers
        self._limits = limits
        self._next_kv_id = 1
        self._failure: ConnectError | None = None
        # Blobs the client is known to have in this run: acknowledged SETs and answered GETs.
        self._acked: set[bytes] = set()
        # Blobs sent with SET and not yet in the CAS (stored once acknowledged).
        self._unstored: dict[bytes, bytes] = {}
        self._sets: dict[int, _PendingSet] = {}
        self._set_by_blob: dict[bytes, int] = {}
        self._gets: dict[int, _PendingGet] = {}
        self._get_by_blob: dict[bytes, int] = {}
        # Open batches in arrival order (keyed by identity: callers may repeat a batch_id).
        self._batches: dict[int, _Batch] = {}
        self._batches_by_blob: dict[bytes, list[_Batch]] = {}

    # ---- lifecycle ----

    def on_receive(self, message: BlobSyncMessage) -> None:
        try:
            self._handle(message)
        except Exception as exc:
            # A bug or a store failure: answer everyone instead of dying with waiters left.
            if isinstance(exc, peewee.DatabaseError) and is_unavailable(exc):
                # The database's state (locked, full), not a bug: one line, no traceback.
                error = store_failure(exc)
                log_event(
                    logger,
                    logging.WARNING,
                    "blob sync store unavailable",
                    request_id=self.request_id,
                    error=str(exc),
                )
            else:
                error = ConnectError(Code.INTERNAL, f"blob sync failed: {exc}")
                logger.exception(
                    format_event("blob sync internal error", {"request_id": self.request_id})
                )
            registered = self._is_registered(message)
            if self._failure is None:
                self._fail(error)
            if isinstance(message, PersistBlobs | FetchBlob) and not registered:
                self._refuse(message)

    def on_stop(self) -> None:
        if self._failure is None:
            self._fail(cancelled_error())

    def on_failure(
        self, exception_type: object, exception_value: object, traceback: object
    ) -> None:
        if self._failure is None:
            self._fail(ConnectError(Code.INTERNAL, f"blob sync failed: {exception_value}"))

    def _handle(self, message: BlobSyncMessage) -> None:
        match message:
            case PersistBlobs():
                self._on_persist(message)
            case FetchBlob():
                self._on_fetch(message)
            case KvClientMessageReceived(message=kv):
                self._on_client_message(kv)
            case KvDeadlinePassed(kv_id=kv_id):
                self._on_deadline(kv_id)
            case CancelBlobSync(reason=reason):
                if self._failure is None:
                    log_event(
                        logger,
                        logging.DEBUG,
                        "blob sync cancelled",
                        request_id=self.request_id,
                        reason=reason,
                    )
                    self._fail(cancelled_error())
            case _:
                raise TypeError(f"BlobSyncActor cannot handle {type(message).__name__}")

    # ---- SET ----

    def _on_persist(self, request: PersistBlobs) -> None:
        if self._failure is not None:
            self._refuse(request)
            return
        new: dict[bytes, bytes] = {}
        for data in request.blobs:
            blob_id = blob_id_of(data)
            if blob_id not in self._acked:
                new.setdefault(blob_id, data)
        if not new:
            self._reply(request.reply_to, BlobsPersisted(request.batch_id))
            return
        batch = _Batch(request, set(new))
        self._batches[id(batch)] = batch
        for blob_id in new:
            self._batches_by_blob.setdefault(blob_id, []).append(batch)
        # The whole batch goes out at once; a blob already in flight is waited for, not resent.
        for blob_id, data in new.items():
            if blob_id not in self._set_by_blob:
                self._send_set(blob_id, data)
        # Into the CAS once acknowledged (``_store_acked``), after the waiters are answered.
        self._unstored.update(new)

    def _send_set(self, blob_id: bytes, data: bytes) -> None:
        kv_id = self._new_kv_id()
        timer = self._deadline(kv_id, self._limits.set_ack_timeout_s)
        self._sets[kv_id] = _PendingSet(blob_id, timer)
        self._set_by_blob[blob_id] = kv_id
        self._send(
            agent.KvServerMessage(
                id=kv_id, set_blob_args=agent.SetBlobArgs(blob_id=blob_id, blob_data=data)
            )
        )
        log_event(
            logger,
            logging.DEBUG,
            "kv set sent",
            request_id=self.request_id,
            kv_id=kv_id,
            blob_id=b64(blob_id),
            bytes=len(data),
        )

    def _on_set_result(self, kv_id: int, kv: agent.KvClientMessage) -> None:
        blob_id = self._sets[kv_id].blob_id
        variant = kv.WhichOneof("message")
        if variant != "set_blob_result":
            self._fail(protocol_error(f"KV SET {b64(blob_id)}: answered with {variant}"))
            return
        if kv.set_blob_result.HasField("error"):
            self._fail(protocol_error(f"KV SET {b64(blob_id)}: {kv.set_blob_result.error.message}"))
            return
        pending = self._sets.pop(kv_id)
        del self._set_by_blob[blob_id]
        pending.timer.cancel()
        self._acked.add(blob_id)
        log_event(
            logger,
            logging.DEBUG,
            "kv set acked",
            request_id=self.request_id,
            kv_id=kv_id,
            blob_id=b64(blob_id),
        )
        done = False
        for batch in self._batches_by_blob.pop(blob_id, []):
            batch.waiting.discard(blob_id)
            if not batch.waiting:
                del self._batches[id(batch)]
                self._reply(batch.request.reply_to, BlobsPersisted(batch.request.batch_id))
                done = True
        if done:
            self._store_acked()

    def _store_acked(self) -> None:
        """Put the acknowledged blobs into the CAS, off the checkpoint's path: the waiters
        were answered first (the client holds every acknowledged blob, so a crash before this
        costs a KV GET later, never a blob). One read finds what is stored already; the rest
        is one write transaction of multi-row INSERTs."""
        acked = {b: d for b, d in self._unstored.items() if b in self._acked}
        if not acked:
            return
        for blob_id in acked:
            del self._unstored[blob_id]
        present = self._store.blobs.has_many(list(acked))
        if len(present) < len(acked):
            self._store.blobs.put_many({b: d for b, d in acked.items() if b not in present})

    # ---- GET ----

    def _on_fetch(self, request: FetchBlob) -> None:
        if self._failure is not None:
            self._refuse(request)
            return
        try:
            blob_id = check_blob_id(request.blob_id)
        except InvalidBlobId as exc:
            # The id is bad, not the sync: this request fails, the actor stays usable.
            error = protocol_error(f"KV GET: {exc}")
            self._reply(request.reply_to, BlobSyncFailed(error, fetch_id=request.fetch_id))
            return
        data = self._unstored.get(blob_id) or self._store.blobs.get(blob_id)
        if data is not None:
            self._reply(request.reply_to, BlobFetched(request.fetch_id, blob_id, data))
            return
        kv_id = self._get_by_blob.get(blob_id)
        if kv_id is not None:
            self._gets[kv_id].waiters.append(request)
            return
        kv_id = self._new_kv_id()
        timer = self._deadline(kv_id, self._limits.get_reply_timeout_s)
        self._gets[kv_id] = _PendingGet(blob_id, timer, [request])
        self._get_by_blob[blob_id] = kv_id
        self._send(
            agent.KvServerMessage(id=kv_id, get_blob_args=agent.GetBlobArgs(blob_id=blob_id))
        )
        log_event(
            logger,
            logging.DEBUG,
            "kv get sent",
            request_id=self.request_id,
            kv_id=kv_id,
            blob_id=b64(blob_id),
        )

    def _on_get_result(self, kv_id: int, kv: agent.KvClientMessage) -> None:
        blob_id = self._gets[kv_id].blob_id
        variant = kv.WhichOneof("message")
        if variant != "get_blob_result":
            self._fail(protocol_error(f"KV GET {b64(blob_id)}: answered with {variant}"))
            return
        result = kv.get_blob_result
        if result.HasField("error"):
            self._fail(protocol_error(f"KV GET {b64(blob_id)}: {result.error.message}"))
            return
        data: bytes | None = None
        if result.HasField("blob_data"):
            data = result.blob_data
            actual = blob_id_of(data)
            if actual != blob_id:
                self._fail(
                    protocol_error(
                        f"KV GET blob hash mismatch: expected {b64(blob_id)}, got {b64(actual)}"
                    )
                )
                return
            self._store.blobs.put(blob_id, data)
            self._acked.add(blob_id)  # the client gave it to us, so it has it
        pending = self._gets.pop(kv_id)
        del self._get_by_blob[blob_id]
        pending.timer.cancel()
        log_event(
            logger,
            logging.DEBUG,
            "kv get answered",
            request_id=self.request_id,
            kv_id=kv_id,
            blob_id=b64(blob_id),
            found=data is not None,
        )
        for waiter in pending.waiters:
            self._reply(waiter.reply_to, BlobFetched(waiter.fetch_id, blob_id, data))

    # ---- client answers and deadlines ----

    def _on_client_message(self, kv: agent.KvClientMessage) -> None:
        kv_id = kv.id
        if kv_id in self._sets:
            self._on_set_result(kv_id, kv)
        elif kv_id in self._gets:
            self._on_get_result(kv_id, kv)
        elif 0 < kv_id < self._next_kv_id:
            # Ids are never reused, so this is a repeated or late answer to finished work.
            log_event(
                logger,
                logging.DEBUG,
                "kv answer for a finished id ignored",
                request_id=self.request_id,
                kv_id=kv_id,
            )
        else:
            log_event(
                logger, logging.WARNING, "unknown KV id", request_id=self.request_id, kv_id=kv_id
            )

    def _on_deadline(self, kv_id: int) -> None:
        if self._failure is not None:
            return
        if kv_id in self._sets:
            blob_id = self._sets[kv_id].blob_id
            self._fail(protocol_error(f"KV SET timed out: {b64(blob_id)}"))
        elif kv_id in self._gets:
            blob_id = self._gets[kv_id].blob_id
            self._fail(protocol_error(f"KV GET timed out: {b64(blob_id)}"))

    # ---- helpers ----

    def _new_kv_id(self) -> int:
        kv_id = self._next_kv_id
        if kv_id > MAX_KV_ID:
            raise OverflowError("KV ids exhausted for this run")
        self._next_kv_id += 1
        return kv_id

    def _deadline(self, kv_id: int, delay: float) -> Timer:
        ref = self.actor_ref
        message = KvDeadlinePassed(kv_id)

        def tell() -> None:
            with contextlib.suppress(pykka.ActorDeadError):
                ref.tell(message)

        return self._timers.call_later(delay, tell)

    def _send(self, message: agent.KvServerMessage) -> None:
        self._output.send(data_frame(agent.AgentServerMessage(kv_server_message=message)))

    def _reply(self, to: Mailbox[R], message: R) -> None:
        try:
            to.tell(message)
        except pykka.ActorDeadError:
            log_event(
                logger,
                logging.DEBUG,
                "blob sync reply to a stopped actor dropped",
                request_id=self.request_id,
                reply=type(message).__name__,
            )

    def _refuse(self, request: PersistBlobs | FetchBlob) -> None:
        assert self._failure is not None
        if isinstance(request, PersistBlobs):
            reply = BlobSyncFailed(self._failure, batch_id=request.batch_id)
        else:
            reply = BlobSyncFailed(self._failure, fetch_id=request.fetch_id)
        self._reply(request.reply_to, reply)

    def _is_registered(self, message: object) -> bool:
        """Whether a request already waits in the state (so ``_fail`` will answer it)."""
        if isinstance(message, PersistBlobs):
            return any(batch.request is message for batch in self._batches.values())
        if isinstance(message, FetchBlob):
            return any(waiter is message for get in self._gets.values() for waiter in get.waiters)
        return False

    def _fail(self, error: ConnectError) -> None:
        """Enter the failed state and answer every waiting request with ``error``."""
        self._failure = error
        log_event(
            logger,
            # A cancel is every run's normal end (the run stops its BlobSync), not news.
            logging.DEBUG if error.code is Code.CANCELED else logging.WARNING,
            "blob sync failed",
            request_id=self.request_id,
            code=error.code.value,
            message=error.message,
        )
        for timer in [
            *(s.timer for s in self._sets.values()),
            *(g.timer for g in self._gets.values()),
        ]:
            timer.cancel()
        batches = list(self._batches.values())
        waiters = [waiter for get in self._gets.values() for waiter in get.waiters]
        self._sets.clear()
        self._set_by_blob.clear()
        self._gets.clear()
        self._get_by_blob.clear()
        self._batches.clear()
        self._batches_by_blob.clear()
        for batch in batches:
            self._refuse(batch.request)
        for waiter in waiters:
            self._refuse(waiter)


def start_blob_sync(
    request_id: str,
    output: RunOutput,
    store: Store,
    timers: Timers,
    limits: KvLimits = DEFAULT_KV_LIMITS,
) -> ActorHandle[BlobSyncMessage]:
    """Start the run's BlobSyncActor; stopping it with the run fails pending work ``canceled``."""
    return BlobSyncActor.start(request_id, output, store, timers, limits)
