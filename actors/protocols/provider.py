"""The ProviderActor's protocol: the call it is asked to make, the facts its transport tells
it, what it tells its listener, as one closed union."""

from __future__ import annotations

from typing import Protocol

import msgspec

from actors.conversation.events import ProviderEvent
from actors.conversation.request import LlmRequest, ModelRoute
from store.llm_calls import CallStatus
from wire.providers.errors import ProviderFailure
from wire.providers.grammar import CallResult


class ResponseHeadersReceived(msgspec.Struct, frozen=True):
    status: int
    at: float


class ResponseChunksReceived(msgspec.Struct, frozen=True):
    """Body chunks in arrival order, each with its monotonic arrival time."""

    chunks: tuple[tuple[bytes, float], ...]


class ErrorBodyReceived(msgspec.Struct, frozen=True):
    """A refused answer: its status, the start of its body, its ``Retry-After`` if any."""

    status: int
    body: bytes
    retry_after: str | None = None


class ResponseEnded(msgspec.Struct, frozen=True):
    at: float


class TransportFailed(msgspec.Struct, frozen=True):
    """No answer: ``transient`` for a connection or read error or a stall (worth another
    attempt if nothing reached the turn), not for the whole-call limit."""

    message: str
    transient: bool = False


TransportMessage = (
    ResponseHeadersReceived
    | ResponseChunksReceived
    | ErrorBodyReceived
    | ResponseEnded
    | TransportFailed
)


class AttemptReported(msgspec.Struct, frozen=True):
    """What the transport of the call's ``send``-th request reported. A report of a request
    that is no longer the call's current one (it failed and another was sent, or is waited
    for) is dropped: a stream's error event leaves its later chunks and end in the mailbox."""

    send: int
    report: TransportMessage


class StartProviderCall(msgspec.Struct, frozen=True):
    """Make one provider request for ``request`` along ``route``."""

    run_id: str | None
    model_call_id: str
    request: LlmRequest
    route: ModelRoute


class CancelProviderCall(msgspec.Struct, frozen=True):
    """Stop the call now: close its connection and record it ``cancelled``."""

    reason: str


class RetryDue(msgspec.Struct, frozen=True):
    """The wait before attempt ``attempt`` (1-based) is over: send it."""

    attempt: int


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


# What the ProviderActor tells whoever asked for the call.
ProviderReply = ProviderEventsReceived | ProviderCallEnded

# Everything the ProviderActor takes: the call to make (first), its transport's facts, a cancel.
ProviderMessage = StartProviderCall | AttemptReported | CancelProviderCall | RetryDue


class ProviderListener(Protocol):
    """Who hears about the call: an ActorRef, or anything with a thread-safe ``tell``."""

    def tell(self, message: ProviderReply) -> None: ...
