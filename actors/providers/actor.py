"""The ProviderActor: one per LLM call, owner of that call's request and stream.

It builds the request with the route's adapter, hands the HTTP exchange to the loop
(``actors.providers.transport``), decodes and grammar-checks what comes back, and forwards
canonical events to its listener in batches. The call's ``llm_calls`` record is kept by the
process's CallRecorderActor (``actors.providers.recorder``), told the call's start, its bytes and
exactly one end; the recorder tells the listener ``ProviderCallEnded`` once that end is written.
Its mailbox never waits on the network or the database, so a cancel is handled at once: the
transport task is cancelled, which closes the connection.

A transient failure before anything of the attempt reached the listener is tried again
(``wire.providers.retry`` decides): the failed attempt's record is ended, and the next
attempt starts when a timer tells ``RetryDue``; a cancel meanwhile ends the call at once. Each
attempt is one record; the listener hears one end, the last attempt's. What shows nothing
(``CallStarted``, an empty text or thinking block opened: ``_SHOWS_NOTHING``) is held until
something would show, so "nothing reached the listener" means nothing was shown.

Each attempt sends one key of the route's pool, chosen by the process's ``KeyHealth``
(``actors.providers.key_health``; the decisions in ``wire.providers.key_pool``): a 429 or 401
cools that key, and with another key healthy the attempt is tried again at once on it, within
the same retry budget.

When the retries of a model give up on a failure that may fall back (``wire.providers.fallback``)
the call moves at once to the route's next fallback (``ModelRoute.fallbacks``): that model's
adapter builds its own request from the same ``LlmRequest``, with a retry budget of its own.
Each record names its place in the chain and its attempt within its model.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import logging
import random
import time

import httpx
import msgspec
import pykka

from actors.conversation.events import (
    CallStarted,
    ProviderEvent,
    TextDelta,
    TextStarted,
    ThinkingDelta,
    ThinkingStarted,
)
from actors.conversation.request import ModelRoute
from actors.loop.bridge import LoopTasks
from actors.loop.timers import Timer
from actors.pool import PooledActor
from actors.protocols.call_recorder import (
    RecordCallEnd,
    RecordCallStart,
    RecordChunks,
    RecorderMessage,
)
from actors.protocols.mailbox import ActorHandle, Mailbox
from actors.protocols.provider import (
    AttemptReported,
    CancelProviderCall,
    ErrorBodyReceived,
    ProviderCallEnded,
    ProviderEventsReceived,
    ProviderListener,
    ProviderMessage,
    ResponseChunksReceived,
    ResponseEnded,
    ResponseHeadersReceived,
    RetryDue,
    StartProviderCall,
    TransportFailed,
    TransportMessage,
)
from actors.providers.attempt_key import AttemptKey
from actors.providers.key_health import KeyHealth
from actors.providers.transport import CallLimits, stream_call
from store.llm_calls import CallEnd, CallStatus
from wire.log import log_event
from wire.providers.adapter import StreamDecoder
from wire.providers.errors import FailureKind, ProviderFailure
from wire.providers.fallback import chain_failure_message, may_fall_back
from wire.providers.formats import adapter_for
from wire.providers.grammar import CallResult, StreamGrammar
from wire.providers.redaction import route_secrets, scrub_text
from wire.providers.retry import AttemptFailure, GiveUp, RetryAfter, RetryPolicy, decide

logger = logging.getLogger("cursor_server.provider")


class ProviderDeps(msgspec.Struct, frozen=True):
    """What every ProviderActor shares: the call recorder, the loop, the HTTP client, the
    limits, the retry policy, the health of the process's provider keys."""

    recorder: Mailbox[RecorderMessage]
    tasks: LoopTasks
    client: httpx.AsyncClient
    limits: CallLimits = CallLimits()
    retry: RetryPolicy = RetryPolicy()
    keys: KeyHealth = msgspec.field(default_factory=KeyHealth)


class ProviderActor(PooledActor):
    """One provider call, from request to recorded end, over one or more attempts."""

    def __init__(self, listener: ProviderListener, deps: ProviderDeps):
        super().__init__()
        # Set by the first message, StartProviderCall (``start_provider_call`` tells it first).
        self._call: StartProviderCall | None = None
        self._listener = listener
        self._deps = deps
        self._secrets: tuple[str, ...] = ()
        self._future: concurrent.futures.Future[None] | None = None
        self._timer: Timer | None = None
        self._decoder: StreamDecoder | None = None
        self._first_started = time.monotonic()
        self._attempt = 0  # within the current model
        self._sends = 0  # requests sent for the call, over every model: whose reports count
        self._position = 0  # the current model's place in the route's chain
        self._key = AttemptKey(deps.keys)  # the pool key the current attempt sends
        self._ended = False
        self._reset_attempt()

    def _reset_attempt(self) -> None:
        """What one attempt owns: its stream's decoding, counters and timings."""
        self._grammar = StreamGrammar()
        self._started = time.monotonic()
        self._response_bytes = 0
        self._http_status: int | None = None
        self._ttfb_ms: float | None = None
        self._ttft_ms: float | None = None
        self._held_start: list[ProviderEvent] = []  # held until something would show
        self._reached_listener = False

    # ---- lifecycle ----

    @property
    def _current(self) -> StartProviderCall:
        if self._call is None:
            raise RuntimeError("ProviderActor was told something before its StartProviderCall")
        return self._call

    @property
    def _route(self) -> ModelRoute:
        """The route of the current attempt: the call's, or one of its fallbacks."""
        return self._current.route.chain()[self._position]

    def _begin(self, call: StartProviderCall) -> None:
        if self._call is not None:
            raise TypeError(f"ProviderActor got a second StartProviderCall ({call.model_call_id})")
        self._call = call
        self._secrets = route_secrets(call.route)
        self._adapter = adapter_for(call.route.provider_type)
        self._first_started = time.monotonic()
        self._send_attempt()

    def _send_attempt(self) -> None:
        """Send the request, then tell the recorder (which writes the record on its thread)."""
        call, route = self._current, self._key.route_for_attempt(self._route)
        self._attempt += 1
        self._sends += 1
        self._reset_attempt()
        try:
            http_call = self._adapter.build_call(call.request, route)
        except ProviderFailure as failure:
            self._record_start(None)
            self._fail(failure)
            return
        self._decoder = self._adapter.new_decoder(route)
        self._future = self._deps.tasks.submit(
            # Reports from the loop (a chunk batch's timer among them) may come after the
            # actor stopped (the server shutting down): they are dropped, not raised there.
            stream_call(
                self._deps.client,
                http_call,
                self._deps.limits,
                functools.partial(self._tell_report, self._sends),
            )
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
            chain_position=self._position,
            attempt=self._attempt,
            key=self._key.label,
        )

    def _record_start(self, request: tuple[tuple[tuple[str, str], ...], bytes] | None) -> None:
        call = self._current
        start = RecordCallStart(
            call.run_id,
            call.model_call_id,
            self._route,
            self._started,
            request,
            key_label=self._key.label,
            chain_position=self._position,
            attempt=self._attempt,
            call_route=call.route if call.route.fallbacks else None,
        )
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
            case AttemptReported(send=send, report=report):
                if send == self._sends and self._future is not None:
                    self._on_report(report)
            case CancelProviderCall(reason=reason):
                self._cancel(reason)
            case RetryDue(attempt=attempt):
                if attempt == self._attempt + 1 and self._future is None:
                    self._timer = None
                    self._send_attempt()
            case _:
                raise TypeError(f"ProviderActor cannot handle {type(message).__name__}")

    def _on_report(self, report: TransportMessage) -> None:
        """What the current request's transport reported."""
        match report:
            case ResponseChunksReceived(chunks=chunks):
                self._on_chunks(chunks)
            case ResponseHeadersReceived(status=status, at=at):
                self._on_headers(status, at)
            case ResponseEnded():
                self._on_end()
            case ErrorBodyReceived(status=status, body=body, retry_after=retry_after):
                self._record_chunks(((body, time.monotonic()),))
                failure = self._adapter.http_error(status, body, self._route)
                self._fail(failure, self._attempt_failure(http_status=status, after=retry_after))
            case TransportFailed(message=text, transient=transient):
                failure = ProviderFailure(FailureKind.PROVIDER, scrub_text(text, self._secrets))
                self._fail(failure, self._attempt_failure(transport_error=transient))
            case _:
                raise TypeError(f"not a transport report: {type(report).__name__}")

    # ---- stream ----

    def _on_headers(self, status: int, at: float) -> None:
        # Kept until the end and written with the finish (no commit before the first events).
        self._http_status, self._ttfb_ms = status, (at - self._started) * 1000
        if 200 <= status < 300:
            self._key.answered()
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
        batch = [*self._held_start, *events]
        if all(isinstance(event, _SHOWS_NOTHING) for event in batch):
            self._held_start = batch  # nothing of the answer yet: a retry stays possible
            return
        self._held_start = []
        self._reached_listener = True
        try:
            self._listener.tell(ProviderEventsReceived(self._current.model_call_id, tuple(batch)))
        except pykka.ActorDeadError:
            # The run stopped before its cancel reached us: nobody hears the rest, and the
            # call ends as the cancel would have ended it, not as a failure of ours.
            self._cancel("the run that asked for the call has ended")

    def _record_chunks(self, chunks: tuple[tuple[bytes, float], ...]) -> None:
        """Count the bytes; the recorder keeps them when the call is verbose."""
        self._response_bytes += sum(len(data) for data, _at in chunks)
        with contextlib.suppress(pykka.ActorDeadError):  # the end says it is not recorded
            self._deps.recorder.tell(RecordChunks(self._current.model_call_id, chunks))

    # ---- ends ----

    def _attempt_failure(
        self,
        *,
        http_status: int | None = None,
        transport_error: bool = False,
        after: str | None = None,
    ) -> AttemptFailure:
        return AttemptFailure(http_status, transport_error, self._reached_listener, after)

    def _fail(self, failure: ProviderFailure, attempt: AttemptFailure | None = None) -> None:
        """End the attempt failed; retry it when the policy says so, else end the call. A
        stream's error event that said "not now" counts as the status it stands for."""
        failure = failure.with_message(scrub_text(failure.message, self._secrets))
        if attempt is None and failure.stream_status is not None:
            attempt = self._attempt_failure(http_status=failure.stream_status)
        decision: RetryAfter | GiveUp = GiveUp("not transient")
        elapsed_s = time.monotonic() - self._first_started
        if attempt is not None and self._key.refused(
            failure.message,
            attempt,
            self._deps.retry,
            attempts_made=self._attempt,
            elapsed_s=elapsed_s,
        ):
            decision = RetryAfter(0.0)  # at once, on another key
        elif attempt is not None:
            decision = decide(
                self._deps.retry,
                attempt,
                attempts_made=self._attempt,
                elapsed_s=elapsed_s,
                now_epoch_s=time.time(),
                random=random.random,
            )
        if isinstance(decision, GiveUp):
            if attempt is None or not self._fall_back(failure, attempt):
                self._end(CallStatus.FAILED, failure=failure)
            return
        self._stop_stream()
        log_event(
            logger,
            logging.INFO,
            "provider call attempt failed; trying again",
            run_id=self._current.run_id,
            model_call_id=self._current.model_call_id,
            attempt=self._attempt,
            key=self._key.label,
            delay_s=round(decision.delay_s, 3),
            error=failure.message,
        )
        self._record_end(self._attempt_end(CallStatus.FAILED, None, failure), None)
        due = RetryDue(self._attempt + 1)
        self._timer = self._deps.tasks.call_later(
            decision.delay_s, functools.partial(self._tell_self, due)
        )

    def _fall_back(self, failure: ProviderFailure, attempt: AttemptFailure) -> bool:
        """Move the call to its next model when there is one and the failure allows it (the
        failed attempt's record is ended first); False: the call ends with this failure."""
        chain = self._current.route.chain()
        if self._position + 1 >= len(chain) or not may_fall_back(attempt):
            return False
        self._stop_stream()
        self._record_end(self._attempt_end(CallStatus.FAILED, None, failure), None)
        failed = self._route
        self._position += 1
        self._attempt = 0
        self._first_started = time.monotonic()  # its own retry budget
        self._adapter = adapter_for(self._route.provider_type)
        log_event(
            logger,
            logging.WARNING,
            "provider call falling back",
            run_id=self._current.run_id,
            model_call_id=self._current.model_call_id,
            failed_model=failed.public_id,
            model=self._route.public_id,
            chain_position=self._position,
            error=failure.message,
        )
        self._send_attempt()
        return True

    def _tell_self(self, message: RetryDue | AttemptReported) -> None:
        """A timer's or the transport's message (on the loop), dropped if the actor has
        stopped."""
        with contextlib.suppress(pykka.ActorDeadError):
            self.actor_ref.tell(message)

    def _tell_report(self, send: int, report: TransportMessage) -> None:
        """The transport of request ``send`` reported (on the loop)."""
        self._tell_self(AttemptReported(send, report))

    def _cancel(self, reason: str) -> None:
        self._end(CallStatus.CANCELLED, failure=ProviderFailure(FailureKind.PROVIDER, reason))

    def _stop_stream(self) -> None:
        if self._future is not None:
            self._future.cancel()
            self._future = None

    def _attempt_end(
        self, status: CallStatus, result: CallResult | None, failure: ProviderFailure | None
    ) -> CallEnd:
        return CallEnd(
            status=status,
            duration_ms=(time.monotonic() - self._started) * 1000,
            response_bytes=self._response_bytes,
            finish_reason=result.finish.value if result is not None else None,
            usage=_reported_usage(self._grammar),
            error_message=failure.message if failure is not None else None,
            http_status=self._http_status,
            ttfb_ms=self._ttfb_ms,
            ttft_ms=self._ttft_ms,
        )

    def _record_end(self, end: CallEnd | None, ended: ProviderCallEnded | None) -> None:
        """Tell the recorder an attempt's end (``end``; None: its record is already ended)
        and, with ``ended``, that the call is over."""
        model_call_id = self._current.model_call_id
        try:
            # The recorder writes the end, then tells the listener (with the record id).
            self._deps.recorder.tell(RecordCallEnd(model_call_id, end, ended, self._listener))
        except pykka.ActorDeadError:
            logger.warning(
                "the end of call %s is not recorded: the recorder has stopped", model_call_id
            )
            if ended is not None:
                with contextlib.suppress(pykka.ActorDeadError):  # its run may have ended too
                    self._listener.tell(ended)

    def _end(
        self,
        status: CallStatus,
        *,
        result: CallResult | None = None,
        failure: ProviderFailure | None = None,
    ) -> None:
        self._ended = True
        between_attempts = self._future is None and self._timer is not None
        self._stop_stream()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        log_event(
            logger,
            logging.INFO,
            "provider call ended",
            run_id=self._current.run_id,
            model_call_id=self._current.model_call_id,
            status=status.value,
            chain_position=self._position,
            attempts=self._attempt,
            error=failure.message if failure is not None else None,
        )
        ended = ProviderCallEnded(
            self._current.model_call_id,
            None,
            status,
            result=result,
            failure=(
                _chain_failure(failure, self._current.route, self._route, self._position)
                if status is CallStatus.FAILED
                else None
            ),
        )
        end = None if between_attempts else self._attempt_end(status, result, failure)
        self._record_end(end, ended)
        self.stop()


def _chain_failure(
    failure: ProviderFailure | None, call: ModelRoute, failed: ModelRoute, position: int
) -> ProviderFailure | None:
    """The call's failure as its listener hears it: the last attempt's, naming the model of
    the chain it came from (``failed``, at ``position``) when that was a fallback."""
    if failure is None or position == 0:
        return failure
    message = chain_failure_message(
        failure.message, failed.display_name, position, len(call.fallbacks), call.display_name
    )
    return failure.with_message(message)


def _reported_usage(grammar: StreamGrammar) -> dict[str, int]:
    """The usage columns the provider reported (the grammar keeps the one usage event)."""
    usage = grammar.usage
    if usage is None:
        return {}
    return {k: v for k, v in msgspec.structs.asdict(usage).items() if v is not None}


# What opens the answer without showing any of it (an empty text or thinking block before its
# first delta): held back, so a failure right after it may still be retried or fall back.
_SHOWS_NOTHING = (CallStarted, TextStarted, ThinkingStarted)


def _is_token(event: ProviderEvent) -> bool:
    """A delta of visible output: text or thinking with at least one character."""
    return isinstance(event, TextDelta | ThinkingDelta) and event.text != ""


def start_provider_call(
    call: StartProviderCall, listener: ProviderListener, deps: ProviderDeps
) -> ActorHandle[ProviderMessage]:
    """Start the actor for one call and tell it the call (its first message, so nothing the
    caller tells it later can come first); tell it ``CancelProviderCall`` to stop it early."""
    actor = ProviderActor.start(listener, deps)
    actor.tell(call)
    return actor
