"""The ProviderActor: one per LLM call, owner of that call's request and stream.

It builds the request with the route's adapter, hands the HTTP exchange to the loop
(``actors.providers.transport``), decodes and grammar-checks what comes back, and forwards
canonical events to its listener in batches. The call's ``llm_calls`` record is kept by the
process's CallRecorderActor (``actors.providers.recorder``), told the call's start, its bytes and
exactly one end; the recorder tells the listener ``ProviderCallEnded`` once that end is written.
Its mailbox never waits on the network or the database, so a cancel is handled at once: the
transport task is cancelled, which closes the connection.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import time
from typing import Protocol

import httpx
import msgspec
import pykka

from actors.conversation.events import CallStarted, ProviderEvent, TextDelta, ThinkingDelta
from actors.conversation.request import LlmRequest, ModelRoute
from actors.loop.bridge import LoopTasks
from actors.providers.adapter import StreamDecoder, adapter_for
from actors.providers.errors import FailureKind, ProviderFailure
from actors.providers.grammar import CallResult, StreamGrammar
from actors.providers.recorder import RecordCallEnd, RecordCallStart, RecordChunks
from actors.providers.redaction import route_secrets, scrub_text
from actors.providers.transport import (
    CallLimits,
    ErrorBodyReceived,
    ResponseChunksReceived,
    ResponseEnded,
    ResponseHeadersReceived,
    TransportFailed,
    stream_call,
)
from store.llm_calls import CallEnd, CallStatus
from wire.log import log_event

logger = logging.getLogger("cursor_server.provider")


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


# Everything the ProviderActor takes: the call to make (first), its transport's facts, a cancel.
ProviderMessage = (
    StartProviderCall
    | ResponseHeadersReceived
    | ResponseChunksReceived
    | ErrorBodyReceived
    | ResponseEnded
    | TransportFailed
    | CancelProviderCall
)


class ProviderListener(Protocol):
    """Who hears about the call: an ActorRef, or anything with a thread-safe ``tell``."""

    def tell(self, message: ProviderEventsReceived | ProviderCallEnded) -> None: ...


class ProviderDeps(msgspec.Struct, frozen=True):
    """What every ProviderActor shares: the call recorder, the loop, the HTTP client, the
    limits."""

    recorder: pykka.ActorRef
    tasks: LoopTasks
    client: httpx.AsyncClient
    limits: CallLimits = CallLimits()


class ProviderActor(pykka.ThreadingActor):
    """One provider call, from request to recorded end."""

    use_daemon_thread = True

    def __init__(self, listener: ProviderListener, deps: ProviderDeps):
        super().__init__()
        # Set by the first message, StartProviderCall (``start_provider_call`` tells it first).
        self._call: StartProviderCall | None = None
        self._listener = listener
        self._deps = deps
        self._secrets: tuple[str, ...] = ()
        self._future: concurrent.futures.Future[None] | None = None
        self._decoder: StreamDecoder | None = None
        self._grammar = StreamGrammar()
        self._started = time.monotonic()
        self._response_bytes = 0
        self._ended = False
        self._http_status: int | None = None
        self._ttfb_ms: float | None = None
        self._ttft_ms: float | None = None

    # ---- lifecycle ----

    @property
    def _current(self) -> StartProviderCall:
        if self._call is None:
            raise RuntimeError("ProviderActor was told something before its StartProviderCall")
        return self._call

    def _begin(self, call: StartProviderCall) -> None:
        """Send the request, then tell the recorder (which writes the record on its thread)."""
        if self._call is not None:
            raise TypeError(f"ProviderActor got a second StartProviderCall ({call.model_call_id})")
        self._call, route = call, call.route
        self._secrets = route_secrets(route)
        adapter = adapter_for(route.provider_type)
        try:
            http_call = adapter.build_call(call.request, route)
        except ProviderFailure as failure:
            self._record_start(None)
            self._fail(failure)
            return
        self._adapter = adapter
        self._decoder = adapter.new_decoder(route)
        self._started = time.monotonic()
        self._future = self._deps.tasks.submit(
            stream_call(self._deps.client, http_call, self._deps.limits, self.actor_ref.tell)
        )
        self._record_start((http_call.headers, http_call.body))
        log_event(
            logger,
            logging.DEBUG,  # the end's INFO line names the call and its outcome
            "provider call started",
            run_id=call.run_id,
            model_call_id=call.model_call_id,
            provider_type=route.provider_type.value,
            model=route.public_id,
        )

    def _record_start(self, request: tuple[tuple[tuple[str, str], ...], bytes] | None) -> None:
        call = self._current
        start = RecordCallStart(call.run_id, call.model_call_id, call.route, self._started, request)
        try:
            self._deps.recorder.tell(start)
        except pykka.ActorDeadError:
            logger.warning("call %s is not recorded: the recorder has stopped", call.model_call_id)

    def on_stop(self) -> None:
        if not self._ended and self._call is not None:
            self._cancel("the server stopped the call")

    def on_failure(
        self, exception_type: object, exception_value: object, traceback: object
    ) -> None:
        if not self._ended and self._call is not None:
            failure = ProviderFailure(FailureKind.PROVIDER, f"internal error: {exception_value}")
            self._end(CallStatus.FAILED, failure=failure)

    def on_receive(self, message: ProviderMessage) -> None:
        if self._ended:
            return
        match message:
            case StartProviderCall():
                self._begin(message)
            case ResponseChunksReceived(chunks=chunks):
                self._on_chunks(chunks)
            case ResponseHeadersReceived(status=status, at=at):
                self._on_headers(status, at)
            case ResponseEnded():
                self._on_end()
            case ErrorBodyReceived(status=status, body=body):
                self._record_chunks(((body, time.monotonic()),))
                self._fail(self._adapter.http_error(status, body, self._current.route))
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
            self._forward([CallStarted(self._current.model_call_id)])

    def _on_chunks(self, chunks: tuple[tuple[bytes, float], ...]) -> None:
        assert self._decoder is not None
        events: list[ProviderEvent] = []
        self._record_chunks(chunks)
        try:
            for data, _at in chunks:
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
        if self._ttft_ms is None and any(_is_token(event) for event in events):
            # Time to first token: stamped as the first text or thinking delta is told, so it
            # includes our decoding (not the wait behind the run's checkpoint barrier).
            self._ttft_ms = (time.monotonic() - self._started) * 1000
        self._listener.tell(ProviderEventsReceived(self._current.model_call_id, tuple(events)))

    def _record_chunks(self, chunks: tuple[tuple[bytes, float], ...]) -> None:
        """Count the bytes; the recorder keeps them when the call is verbose."""
        self._response_bytes += sum(len(data) for data, _at in chunks)
        with contextlib.suppress(pykka.ActorDeadError):  # the end says it is not recorded
            self._deps.recorder.tell(RecordChunks(self._current.model_call_id, chunks))

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
        log_event(
            logger,
            logging.INFO,
            "provider call ended",
            run_id=self._current.run_id,
            model_call_id=self._current.model_call_id,
            status=status.value,
            error=failure.message if failure is not None else None,
        )
        end = CallEnd(
            status=status,
            duration_ms=(time.monotonic() - self._started) * 1000,
            response_bytes=self._response_bytes,
            finish_reason=result.finish.value if result is not None else None,
            usage=self._reported_usage(),
            error_message=failure.message if failure is not None else None,
            http_status=self._http_status,
            ttfb_ms=self._ttfb_ms,
            ttft_ms=self._ttft_ms,
        )
        ended = ProviderCallEnded(
            self._current.model_call_id,
            None,
            status,
            result=result,
            failure=failure if status is CallStatus.FAILED else None,
        )
        try:
            # The recorder writes the end, then tells the listener (with the record id).
            self._deps.recorder.tell(
                RecordCallEnd(self._current.model_call_id, end, ended, self._listener)
            )
        except pykka.ActorDeadError:
            logger.warning(
                "the end of call %s is not recorded: the recorder has stopped",
                self._current.model_call_id,
            )
            with contextlib.suppress(pykka.ActorDeadError):  # its run may have ended too
                self._listener.tell(ended)
        self.stop()


def _is_token(event: ProviderEvent) -> bool:
    """A delta of visible output: text or thinking with at least one character."""
    return isinstance(event, TextDelta | ThinkingDelta) and event.text != ""


def start_provider_call(
    call: StartProviderCall, listener: ProviderListener, deps: ProviderDeps
) -> pykka.ActorRef:
    """Start the actor for one call and tell it the call (its first message, so nothing the
    caller tells it later can come first); tell it ``CancelProviderCall`` to stop it early."""
    actor = ProviderActor.start(listener, deps)
    actor.tell(call)
    return actor
