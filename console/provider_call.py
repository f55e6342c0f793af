"""One provider call made by the console and awaited on the loop, through the ProviderActor.

The console's model checks send their requests exactly the way a turn does: a
``StartProviderCall`` to a ProviderActor, which records the call in ``llm_calls`` (with no
run) and tells its listener. The listener here is the bridge's ``LoopMailbox``, the one
actor-to-loop crossing, so the aiohttp handler awaits the call's messages without blocking the
loop. A call is bounded: past ``timeout_s`` it is cancelled (recorded ``cancelled``) and
``CallTimedOut`` is raised; a handler cancelled meanwhile (its client left) cancels it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

import msgspec
import pykka

from actors.conversation.events import (
    CallStarted,
    TextDelta,
    ThinkingDelta,
    ToolCallArgumentsDelta,
)
from actors.conversation.request import LlmRequest, ModelRoute
from actors.loop.bridge import LoopMailbox
from actors.protocols.mailbox import Mailbox
from actors.protocols.provider import (
    CancelProviderCall,
    ProviderCallEnded,
    ProviderEventsReceived,
    ProviderMessage,
    ProviderReply,
    StartProviderCall,
)
from actors.providers.actor import ProviderDeps, start_provider_call

# After a cancel the actor records the call and tells its end; this bounds the wait for it, so
# the record is finished when the answer goes out (and a stopped recorder cannot hang us).
CANCEL_GRACE_S = 5.0

_FIRST_TOKEN = (TextDelta, ThinkingDelta, ToolCallArgumentsDelta)


class CallTimedOut(Exception):
    """The provider did not end the call within the bound; it was cancelled."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"the provider did not answer within {timeout_s:g} s")
        self.timeout_s = timeout_s


class AwaitedCall(msgspec.Struct, frozen=True):
    """A call's end and its times as the console saw them, in ms from the call's start.

    ``ttfb_ms``: the provider's 2xx headers (``CallStarted``); ``ttft_ms``: the first text,
    thinking or tool-argument delta; ``total_ms``: the recorded end.
    """

    ended: ProviderCallEnded
    ttfb_ms: float | None
    ttft_ms: float | None
    total_ms: float


CONSOLE_CALL_PREFIX = "console:"


def console_call_id() -> str:
    """A model call id for a call outside any run (``console:`` and a random hex)."""
    return f"{CONSOLE_CALL_PREFIX}{uuid.uuid4().hex[:16]}"


def is_console_call(model_call_id: str) -> bool:
    """Whether a call record is one of the console's own calls (a model test or check)."""
    return model_call_id.startswith(CONSOLE_CALL_PREFIX)


async def await_provider_call(
    deps: ProviderDeps, route: ModelRoute, request: LlmRequest, timeout_s: float
) -> AwaitedCall:
    """Make one provider call with no run and wait (bounded by ``timeout_s``) for its end."""
    mailbox: LoopMailbox[ProviderReply] = LoopMailbox(asyncio.get_running_loop())
    call = StartProviderCall(None, console_call_id(), request, route)
    started = time.monotonic()
    actor = start_provider_call(call, mailbox, deps)
    times = _Times(started)
    try:
        async with asyncio.timeout(timeout_s):
            ended = await _until_end(mailbox, times)
    except TimeoutError:
        _cancel(actor, f"the console's check timed out after {timeout_s:g} s")
        await _settle(mailbox, times)
        raise CallTimedOut(timeout_s) from None
    except asyncio.CancelledError:
        _cancel(actor, "the console's check was cancelled")
        raise
    return AwaitedCall(ended, times.ttfb_ms, times.ttft_ms, times.since_start())


def _cancel(actor: Mailbox[ProviderMessage], reason: str) -> None:
    """Cancel the call; an actor that already stopped has ended (and recorded) it."""
    with contextlib.suppress(pykka.ActorDeadError):
        actor.tell(CancelProviderCall(reason))


class _Times:
    """When the first headers and the first token of a call arrived on the loop."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.ttfb_ms: float | None = None
        self.ttft_ms: float | None = None

    def since_start(self) -> float:
        return (time.monotonic() - self.started) * 1000

    def saw(self, message: ProviderEventsReceived) -> None:
        for event in message.events:
            if self.ttfb_ms is None and isinstance(event, CallStarted):
                self.ttfb_ms = self.since_start()
            elif self.ttft_ms is None and isinstance(event, _FIRST_TOKEN):
                self.ttft_ms = self.since_start()


async def _until_end(mailbox: LoopMailbox[ProviderReply], times: _Times) -> ProviderCallEnded:
    while True:
        message = await mailbox.get()
        if isinstance(message, ProviderCallEnded):
            return message
        times.saw(message)


async def _settle(mailbox: LoopMailbox[ProviderReply], times: _Times) -> None:
    """Wait (bounded) for a cancelled call's recorded end."""
    try:
        async with asyncio.timeout(CANCEL_GRACE_S):
            await _until_end(mailbox, times)
    except TimeoutError:
        pass
