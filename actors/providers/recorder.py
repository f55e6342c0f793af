"""The CallRecorderActor: the one writer of the call records (``llm_calls``), off every call's path.

A ProviderActor tells it facts about its call (started, chunks read, ended) and never waits for
the database itself: the request and the model's first events never queue behind a commit, and
no ProviderActor handler opens a connection (the recorder is a pooled actor: told from a
provider's handler, it runs after that handler, on its worker). One recorder serves the whole
process and writes in the order it is told, so a call's row exists before its chunks and its
end. It tells
the call's listener ``ProviderCallEnded`` only once the end is written, so whoever hears that a
call ended finds its record finished (status, usage, error) and never ``running``.

It passes what it writes on to the server's metrics (``actors.protocols.metrics``): a few
counter increments per attempt, before the write and whatever becomes of it.

It reads the observability settings when a call starts (verbose: store the redacted request and
the raw stream; how many records to keep), and redacts there, with the route's secrets.

With tracing on (``actors.tracing``), each attempt's end is also a span of its run's trace,
from the same start and end facts (route, status, usage); no request or stream goes in it.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import time
from typing import TYPE_CHECKING

import msgspec
import peewee
import pykka

from actors.pool import PooledActor
from actors.protocols.call_recorder import (
    RecordCallEnd,
    RecordCallStart,
    RecordChunks,
    RecorderMessage,
)
from actors.protocols.mailbox import ActorHandle
from actors.protocols.metrics import MetricsPort
from store.base.clock import now_ms
from store.catalog import ObservabilitySettings, get_observability
from store.database import log_store_failure
from store.llm_calls import CallEnd, CallRecords, NewCall, OutgoingRequest, RecordedChunk
from wire.providers.redaction import (
    StreamScrubber,
    redacted_headers,
    route_secrets,
    scrub_text,
)

if TYPE_CHECKING:  # the SDK is loaded only with tracing on
    from actors.tracing.exporter import Tracing
    from actors.tracing.recording import CallSpans

logger = logging.getLogger("cursor_server.provider")

# Verbose chunks are written in batches of this many (one commit per batch, not per chunk).
CHUNK_FLUSH_COUNT = 64


class _Call:
    """What the recorder keeps for a call between its start and its end."""

    def __init__(self, record_id: int | None, start: RecordCallStart, retained: int) -> None:
        self.record_id = record_id
        self.start = start
        self.started = start.started
        self.started_ns = 0  # the attempt's start on the clock, in ns (with tracing on)
        # Every route's of the call's chain: the whole call's credentials.
        self.secrets = route_secrets(start.call_route or start.route)
        self.retained = retained
        self.verbose = False
        self.chunks: list[RecordedChunk] = []
        self.seq = 0
        # A verbose call's raw chunks are scrubbed as one stream (a key split over two is
        # caught): the scrubber holds the last ones back, and ``held`` their places and times.
        self.scrubber: StreamScrubber | None = None
        self.held: collections.deque[tuple[int, float]] = collections.deque()
        # The metrics' labels: the attempt's provider type and model (public id).
        self.labels = (start.route.provider_type.value, start.route.public_id)


class CallRecorderActor(PooledActor):
    """Writes every call's record; one per process, started before any call and stopped last."""

    def __init__(
        self,
        database: peewee.Database,
        metrics: MetricsPort | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        super().__init__()
        self._spans: CallSpans | None = None
        if tracing is not None:
            from actors.tracing.recording import CallSpans

            self._spans = CallSpans(tracing)
        self._database = database
        self._metrics = metrics
        self._records = CallRecords(database)
        self._calls: dict[str, _Call] = {}
        # model call id -> the record of its last attempt that ended and was retried
        self._retried: dict[str, int] = {}

    def on_receive(self, message: RecorderMessage) -> None:
        """One process-wide recorder must outlive any one call's failure: an error is logged
        with its traceback and the recorder goes on (a call's end is still told)."""
        try:
            match message:
                case RecordCallStart():
                    self._start(message)
                case RecordChunks(model_call_id=model_call_id, chunks=chunks):
                    call = self._calls.get(model_call_id)
                    if call is not None and call.scrubber is not None:
                        self._keep(call, call.scrubber, chunks)
                case RecordCallEnd():
                    self._end(message)
                case _:
                    raise TypeError(f"CallRecorderActor cannot handle {type(message).__name__}")
        except Exception:
            logger.exception("recording a provider call failed (%s)", type(message).__name__)

    def _start(self, start: RecordCallStart) -> None:
        route = start.route
        if self._metrics is not None:
            self._metrics.call_attempted(
                route.provider_type.value, route.public_id, start.attempt, start.chain_position
            )
        try:
            settings = get_observability(self._database)
        except peewee.DatabaseError as exc:
            log_store_failure(
                logger, exc, "reading the observability settings failed; using the defaults"
            )
            settings = ObservabilitySettings()
        call = _Call(None, start, settings.retained_calls)
        call.verbose = settings.verbose
        if call.verbose:
            call.scrubber = StreamScrubber(call.secrets)
        if self._spans is not None:
            call.started_ns = time.time_ns() - round((time.monotonic() - start.started) * 1e9)
        new_call = NewCall(
            run_id=start.run_id,
            model_call_id=start.model_call_id,
            provider_id=route.provider_id,
            provider_name=route.provider_name,
            provider_type=route.provider_type.value,
            provider_url=route.base_url,
            public_id=route.public_id,
            model_id=route.model_id,
            display_name=route.display_name,
            verbose=call.verbose,
            key_label=start.key_label,
            chain_position=start.chain_position,
            attempt=start.attempt,
            asked_model_id=route.asked_model_id if start.run_id is not None else None,
            user_id=route.user_id if start.run_id is not None else None,
        )
        request = None
        if start.request is not None:
            headers, body = start.request
            request = OutgoingRequest(
                headers=redacted_headers(headers, call.secrets),
                body=scrub_text(body.decode("utf-8", "replace"), call.secrets),
                byte_count=len(body),
            )
        # The record's start is when the call started, not when this actor got to it (its
        # mailbox may hold other calls' writes): the monotonic start, moved onto the clock.
        started_at_ms = now_ms() - round((time.monotonic() - start.started) * 1000)
        try:
            call.record_id = self._records.start(new_call, request, started_at_ms)
        except peewee.DatabaseError as exc:
            log_store_failure(
                logger, exc, "recording the start of call %s failed", start.model_call_id
            )
        self._calls[start.model_call_id] = call

    def _keep(
        self, call: _Call, scrubber: StreamScrubber, chunks: tuple[tuple[bytes, float], ...]
    ) -> None:
        for data, at in chunks:
            call.held.append((call.seq, (at - call.started) * 1000))
            call.seq += 1
            self._released(call, scrubber.feed(data))
        if len(call.chunks) >= CHUNK_FLUSH_COUNT:
            self._flush(call)

    @staticmethod
    def _released(call: _Call, scrubbed: list[bytes]) -> None:
        for data in scrubbed:
            seq, offset_ms = call.held.popleft()
            call.chunks.append(RecordedChunk(seq, offset_ms, data))

    def _flush(self, call: _Call, final: bool = False) -> None:
        """Write the chunks kept so far; ``final``: the stream has ended, so the scrubber's
        held chunks go too."""
        if final and call.scrubber is not None:
            self._released(call, call.scrubber.finish())
        chunks, call.chunks = call.chunks, []
        if chunks and call.record_id is not None:
            try:
                self._records.record_chunks(call.record_id, chunks)
            except peewee.DatabaseError as exc:
                log_store_failure(
                    logger, exc, "recording the stream of call %s failed", call.record_id
                )

    def _trace(self, spans: CallSpans, call: _Call, end: CallEnd) -> None:
        """The attempt's span; a failure to make it is logged, never the record's or the
        listener's loss."""
        start = call.start
        try:
            spans.ended(
                start.run_id,
                start.route,
                (start.chain_position, start.attempt),
                call.started_ns,
                end,
            )
        except Exception:
            logger.exception("tracing call %s failed", start.model_call_id)

    def _end(self, message: RecordCallEnd) -> None:
        call = self._calls.pop(message.model_call_id, None)
        record_id = call.record_id if call is not None else None
        # A cancel between attempts ends the call with no attempt open: its record is the
        # last attempt's, which ended (failed) without telling anyone.
        earlier = self._retried.pop(message.model_call_id, None)
        if self._metrics is not None and call is not None and message.end is not None:
            self._metrics.call_ended(*call.labels, message.end)
        if self._spans is not None and call is not None and message.end is not None:
            self._trace(self._spans, call, message.end)
        try:
            if call is not None and record_id is not None and message.end is not None:
                self._flush(call, final=True)
                self._records.finish(record_id, message.end)
        except peewee.DatabaseError as exc:
            log_store_failure(logger, exc, "recording the end of call %s failed", record_id)
        finally:
            # The listener hears of the end whatever happened to its record; a listener that
            # has already stopped (its run ended first) must not stop the recorder.
            if message.ended is not None and message.listener is not None:
                known = record_id if record_id is not None else earlier
                ended = msgspec.structs.replace(message.ended, record_id=known)
                with contextlib.suppress(pykka.ActorDeadError):
                    message.listener.tell(ended)
            elif message.ended is None and record_id is not None:
                self._retried[message.model_call_id] = record_id
        if call is not None and record_id is not None:
            # After the listener heard: pruning old records is nobody's wait.
            try:
                self._records.prune(call.retained)
            except peewee.DatabaseError as exc:
                log_store_failure(logger, exc, "pruning call records failed")


def start_call_recorder(
    database: peewee.Database,
    metrics: MetricsPort | None = None,
    tracing: Tracing | None = None,
) -> ActorHandle[RecorderMessage]:
    """The process's recorder; start it before the first call (``stop_all`` stops it last);
    ``metrics``: the server's, ``tracing``: the server's, if on."""
    return CallRecorderActor.start(database, metrics, tracing)
