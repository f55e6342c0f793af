"""The ProviderActor: one per LLM call, owner of that call's request, stream and record.

It builds the request with the route's adapter, hands the HTTP exchange to the loop
(``actors.providers.transport``), decodes and grammar-checks what comes back, forwards canonical
events to its listener in batches, and keeps the ``llm_calls`` row true from ``running`` to
exactly one end. Its mailbox never waits on the network, so a cancel is handled at once: the
transport task is cancelled, which closes the connection.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from typing import Protocol

import httpx
import msgspec
import peewee
import pykka

from actors.bridge import LoopTasks
from actors.providers.adapter import StreamDecoder, adapter_for
from actors.providers.errors import FailureKind, ProviderFailure
from actors.providers.events import CallStarted, ProviderEvent
from actors.providers.grammar import CallResult, StreamGrammar
from actors.providers.redaction import redacted_headers, route_secrets, scrub_bytes, scrub_text
from actors.providers.request import LlmRequest, ModelRoute
from actors.providers.transport import (
    CallLimits,
    ErrorBodyReceived,
    ResponseChunksReceived,
    ResponseEnded,
    ResponseHeadersReceived,
    TransportFailed,
    stream_call,
)
from store.catalog import get_observability
from store.llm_calls import (
    CallEnd,
    CallRecords,
    CallStatus,
    NewCall,
    OutgoingRequest,
    RecordedChunk,
)
from wire.log import log_event

logger = logging.getLogger("cursor_server.provider")

# Verbose chunks are written in batches of this many, so recording stays off the hot path.
CHUNK_FLUSH_COUNT = 64


class StartProviderCall(msgspec.Struct, frozen=True):
    """Make one provider request for ``request`` along ``route``."""

    run_id: str | None
    model_call_id: str
    request: LlmRequest
    route: ModelRoute


class CancelProviderCall(msgspec.Struct, frozen=True):
    """Stop the call now: close its connection and record it ``cancelled``."""

    reason: str


class ProviderEventsReceived(msgspec.Struct, frozen=True):
    """Canonical events, in order, already checked against the stream grammar."""

    model_call_id: str
    events: tuple[ProviderEvent, ...]


class ProviderCallEnded(msgspec.Struct, frozen=True):
    """The call is over; ``result`` is set when it completed, ``failure`` when it failed."""

    model_call_id: str
    record_id: int | None
    status: CallStatus
    result: CallResult | None = None
    failure: ProviderFailure | None = None


class ProviderListener(Protocol):
    """Who hears about the call: an ActorRef, or anything with a thread-safe ``tell``."""

    def tell(self, message: ProviderEventsReceived | ProviderCallEnded) -> None: ...


class ProviderDeps(msgspec.Struct, frozen=True):
    """What every ProviderActor shares: the store, the loop, the HTTP client, the limits."""

    database: peewee.Database
    tasks: LoopTasks
    client: httpx.AsyncClient
    limits: CallLimits = CallLimits()


class ProviderActor(pykka.ThreadingActor):
    """One provider call, from request to recorded end."""

    use_daemon_thread = True

    def __init__(self, call: StartProviderCall, listener: ProviderListener, deps: ProviderDeps):
        super().__init__()
        self._call = call
        self._listener = listener
        self._deps = deps
        self._records = CallRecords(deps.database)
        self._secrets = route_secrets(call.route)
        self._record_id: int | None = None
        self._verbose = False
        self._retained = 0
        self._future: concurrent.futures.Future[None] | None = None
        self._decoder: StreamDecoder | None = None
        self._grammar = StreamGrammar()
        self._started = time.monotonic()
        self._response_bytes = 0
        self._chunks: list[RecordedChunk] = []
        self._chunk_seq = 0
        self._ended = False
        self._http_status: int | None = None
        self._ttfb_ms: float | None = None

    # ---- lifecycle ----

    def on_start(self) -> None:
        """Send the request first, then touch the database (this thread's first query opens
        its connection): the stream's events queue in this mailbox behind the settings read
        and the record's one commit, so neither delays the request itself."""
        call, route = self._call, self._call.route
        adapter = adapter_for(route.provider_type)
        try:
            http_call = adapter.build_call(call.request, route)
        except ProviderFailure as failure:
            self._record_id = self._records.start(self._new_call())
            self._fail(failure)
            return
        self._adapter = adapter
        self._decoder = adapter.new_decoder()
        self._started = time.monotonic()
        self._future = self._deps.tasks.submit(
            stream_call(self._deps.client, http_call, self._deps.limits, self.actor_ref.tell)
        )
        self._record_id = self._records.start(
            self._new_call(),
            OutgoingRequest(
                headers=redacted_headers(http_call.headers, self._secrets),
                body=scrub_text(http_call.body.decode("utf-8", "replace"), self._secrets),
                byte_count=len(http_call.body),
            ),
        )
        log_event(
            logger,
            logging.INFO,
            "provider call started",
            run_id=call.run_id,
            model_call_id=call.model_call_id,
            provider_type=route.provider_type.value,
            model=route.public_id,
        )

    def _new_call(self) -> NewCall:
        """The call's record, with the observability settings read now (they may change)."""
        call, route = self._call, self._call.route
        settings = get_observability(self._deps.database)
        self._verbose, self._retained = settings.verbose, settings.retained_calls
        return NewCall(
            run_id=call.run_id,
            model_call_id=call.model_call_id,
            provider_id=route.provider_id,
            provider_name=route.provider_name,
            provider_type=route.provider_type.value,
            provider_url=route.base_url,
            public_id=route.public_id,
            model_id=route.model_id,
            display_name=route.display_name,
            verbose=self._verbose,
        )

    def on_stop(self) -> None:
        if not self._ended:
            self._cancel("the server stopped the call")

    def on_failure(
        self, exception_type: object, exception_value: object, traceback: object
    ) -> None:
        if not self._ended:
            failure = ProviderFailure(FailureKind.PROVIDER, f"internal error: {exception_value}")
            self._end(CallStatus.FAILED, failure=failure)

    def on_receive(self, message: object) -> None:
        if self._ended:
            return
        match message:
            case ResponseChunksReceived(chunks=chunks):
                self._on_chunks(chunks)
            case ResponseHeadersReceived(status=status, at=at):
                self._on_headers(status, at)
            case ResponseEnded():
                self._on_end()
            case ErrorBodyReceived(status=status, body=body):
                self._record_chunk(body, time.monotonic())
                self._fail(self._adapter.http_error(status, body, self._call.route))
            case TransportFailed(message=text):
                self._fail(ProviderFailure(FailureKind.PROVIDER, scrub_text(text, self._secrets)))
            case CancelProviderCall(reason=reason):
                self._cancel(reason)
            case _:
                raise TypeError(f"ProviderActor cannot handle {type(message).__name__}")

    # ---- stream ----

    def _on_headers(self, status: int, at: float) -> None:
        # Kept until the end and written with the finish (no commit before the first events).
        self._http_status, self._ttfb_ms = status, (at - self._started) * 1000
        if 200 <= status < 300:
            self._forward([CallStarted(self._call.model_call_id)])

    def _on_chunks(self, chunks: tuple[tuple[bytes, float], ...]) -> None:
        assert self._decoder is not None
        events: list[ProviderEvent] = []
        try:
            for data, at in chunks:
                self._record_chunk(data, at)
                events.extend(self._decoder.feed(data))
        except ProviderFailure as failure:
            self._forward(events)
            if not self._ended:
                self._fail(failure)
            return
        self._forward(events)

    def _on_end(self) -> None:
        assert self._decoder is not None
        try:
            self._forward(self._decoder.finish())
            if not self._ended:
                self._grammar.end_of_stream()
        except ProviderFailure as failure:
            self._fail(failure)
            return
        if not self._ended:
            result = self._grammar.result()
            self._end(CallStatus.COMPLETED, result=result)

    def _forward(self, events: list[ProviderEvent]) -> None:
        if self._ended or not events:
            return
        try:
            for event in events:
                self._grammar.accept(event)
        except ProviderFailure as failure:
            self._fail(failure)
            return
        self._listener.tell(ProviderEventsReceived(self._call.model_call_id, tuple(events)))

    def _record_chunk(self, data: bytes, at: float) -> None:
        self._response_bytes += len(data)
        if not self._verbose:
            return
        offset_ms = (at - self._started) * 1000
        self._chunks.append(
            RecordedChunk(self._chunk_seq, offset_ms, scrub_bytes(data, self._secrets))
        )
        self._chunk_seq += 1
        if len(self._chunks) >= CHUNK_FLUSH_COUNT:
            self._flush_chunks()

    def _flush_chunks(self) -> None:
        if self._chunks and self._record_id is not None:
            self._records.record_chunks(self._record_id, self._chunks)
        self._chunks = []

    # ---- ends ----

    def _reported_usage(self) -> dict[str, int]:
        """The usage columns the provider reported (the grammar keeps the one usage event)."""
        usage = self._grammar.usage
        if usage is None:
            return {}
        return {k: v for k, v in msgspec.structs.asdict(usage).items() if v is not None}

    def _fail(self, failure: ProviderFailure) -> None:
        failure = ProviderFailure(
            failure.kind,
            scrub_text(failure.message, self._secrets),
            http_status=failure.http_status,
        )
        self._end(CallStatus.FAILED, failure=failure)

    def _cancel(self, reason: str) -> None:
        self._end(CallStatus.CANCELLED, failure=ProviderFailure(FailureKind.PROVIDER, reason))

    def _end(
        self,
        status: CallStatus,
        *,
        result: CallResult | None = None,
        failure: ProviderFailure | None = None,
    ) -> None:
        self._ended = True
        if self._future is not None:
            self._future.cancel()
        self._flush_chunks()
        if self._record_id is not None:
            self._records.finish(
                self._record_id,
                CallEnd(
                    status=status,
                    duration_ms=(time.monotonic() - self._started) * 1000,
                    response_bytes=self._response_bytes,
                    finish_reason=result.finish.value if result is not None else None,
                    usage=self._reported_usage(),
                    error_message=failure.message if failure is not None else None,
                    http_status=self._http_status,
                    ttfb_ms=self._ttfb_ms,
                ),
            )
            self._records.prune(self._retained)
        log_event(
            logger,
            logging.INFO,
            "provider call ended",
            run_id=self._call.run_id,
            model_call_id=self._call.model_call_id,
            status=status.value,
            error=failure.message if failure is not None else None,
        )
        self._listener.tell(
            ProviderCallEnded(
                self._call.model_call_id,
                self._record_id,
                status,
                result=result,
                failure=failure if status is CallStatus.FAILED else None,
            )
        )
        self.stop()


def start_provider_call(
    call: StartProviderCall, listener: ProviderListener, deps: ProviderDeps
) -> pykka.ActorRef:
    """Start the actor for one call; tell it ``CancelProviderCall`` to stop it early."""
    return ProviderActor.start(call, listener, deps)
