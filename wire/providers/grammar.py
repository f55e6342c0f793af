"""The canonical stream grammar, checked event by event, and the result it assembles.

Every adapter's output goes through ``StreamGrammar`` before anything acts on it, so a
provider (or adapter) bug surfaces as one ``ProviderFailure(PROTOCOL)`` naming the rule instead
of a half-built tool call reaching the agent loop. Text, thinking and tool-call blocks may be
open at the same time (Chat streams tool calls while text is open); each kind on its own must
nest properly.
"""

from __future__ import annotations

import msgspec

from actors.conversation.events import (
    CallDone,
    CallStarted,
    FinishReason,
    ProviderEvent,
    ReplayStateReported,
    TextDelta,
    TextEnded,
    TextStarted,
    ThinkingDelta,
    ThinkingEnded,
    ThinkingStarted,
    ToolCallArgumentsDelta,
    ToolCallEnded,
    ToolCallStarted,
    Usage,
    UsageReported,
)
from actors.conversation.model import ReplayState
from actors.conversation.request import AssistantMessage, ProviderToolCall
from wire.providers.errors import FailureKind, ProviderFailure


class CallResult(msgspec.Struct, frozen=True):
    """What one finished call produced; ``calls`` are sorted by the provider's index."""

    text: str
    thinking: str
    calls: tuple[ProviderToolCall, ...]
    replay: ReplayState | None
    usage: Usage | None
    finish: FinishReason

    def assistant_message(self) -> AssistantMessage:
        """The call as the assistant turn to put into the next request's history."""
        return AssistantMessage(
            text=self.text, thinking=self.thinking, replay=self.replay, calls=self.calls
        )


class _Call:
    __slots__ = ("arguments", "call_id", "ended", "name")

    def __init__(self, call_id: str, name: str) -> None:
        self.call_id = call_id
        self.name = name
        self.arguments: list[str] = []
        self.ended = False


def _violation(message: str) -> ProviderFailure:
    return ProviderFailure(FailureKind.PROTOCOL, f"provider stream broke the grammar: {message}")


class StreamGrammar:
    """Feed every event of one call to ``accept``; call ``end_of_stream`` when the body ends."""

    def __init__(self) -> None:
        self._started = False
        self._finish: FinishReason | None = None
        self._text_open = False
        self._thinking_open = False
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._calls: dict[int, _Call] = {}
        self._call_ids: set[str] = set()
        self._replay: ReplayState | None = None
        self._replay_seen = False
        self._usage: Usage | None = None

    # -- checking ------------------------------------------------------------------------------

    def accept(self, event: ProviderEvent) -> None:  # noqa: C901 (an exhaustive match over the closed event union)
        name = type(event).__name__
        if self._finish is not None:
            raise _violation(f"{name} after CallDone")
        if isinstance(event, CallStarted):
            if self._started:
                raise _violation("a second CallStarted")
            self._started = True
            return
        if not self._started:
            raise _violation(f"{name} before CallStarted")
        match event:
            case TextStarted():
                if self._text_open:
                    raise _violation("TextStarted while text is open")
                self._text_open = True
            case TextDelta(text=text):
                if not self._text_open:
                    raise _violation("TextDelta outside a text block")
                self._text.append(text)
            case TextEnded():
                if not self._text_open:
                    raise _violation("TextEnded without an open text block")
                self._text_open = False
            case ThinkingStarted():
                if self._thinking_open:
                    raise _violation("ThinkingStarted while thinking is open")
                self._thinking_open = True
            case ThinkingDelta(text=text):
                if not self._thinking_open:
                    raise _violation("ThinkingDelta outside a thinking block")
                self._thinking.append(text)
            case ThinkingEnded():
                if not self._thinking_open:
                    raise _violation("ThinkingEnded without an open thinking block")
                self._thinking_open = False
            case ToolCallStarted():
                self._start_call(event)
            case ToolCallArgumentsDelta(index=index, delta=delta):
                self._open_call(index, "ToolCallArgumentsDelta").arguments.append(delta)
            case ToolCallEnded(index=index):
                self._end_call(index)
            case ReplayStateReported(state=state):
                if self._replay_seen:
                    raise _violation("a second ReplayStateReported")
                self._replay_seen = True
                self._replay = state
            case UsageReported(usage=usage):
                if self._usage is not None:
                    raise _violation("a second UsageReported")
                self._usage = usage
            case CallDone(finish=finish):
                self._done(finish)
            case _:
                raise _violation(f"unknown event {name}")

    def _start_call(self, event: ToolCallStarted) -> None:
        if event.index in self._calls:
            raise _violation(f"tool call index {event.index} started twice")
        if not event.call_id or not event.name:
            raise _violation(f"tool call {event.index} has an empty call id or name")
        if event.call_id in self._call_ids:
            raise _violation(f"tool call id {event.call_id!r} started twice")
        self._calls[event.index] = _Call(event.call_id, event.name)
        self._call_ids.add(event.call_id)

    def _open_call(self, index: int, name: str) -> _Call:
        call = self._calls.get(index)
        if call is None:
            raise _violation(f"{name} for unknown tool call index {index}")
        if call.ended:
            raise _violation(f"{name} for tool call index {index} after it ended")
        return call

    def _end_call(self, index: int) -> None:
        # Arguments that are not a JSON object are the model's mistake, not the provider's:
        # the call is kept as the model wrote it and its tool result tells the model why it
        # did not run (``wire.tools.args.ToolArgs``).
        self._open_call(index, "ToolCallEnded").ended = True

    def _done(self, finish: FinishReason) -> None:
        if self._text_open:
            raise _violation("CallDone while text is open")
        if self._thinking_open:
            raise _violation("CallDone while thinking is open")
        still_open = sorted(i for i, call in self._calls.items() if not call.ended)
        if still_open:
            raise _violation(f"CallDone while tool call index {still_open[0]} is open")
        if finish is FinishReason.TOOL_USE and not self._calls:
            raise _violation("CallDone(tool_use) without any tool call")
        if finish is FinishReason.STOP and self._calls:
            raise _violation("CallDone(stop) after tool calls")
        self._finish = finish

    def end_of_stream(self) -> None:
        """The body ended: without ``CallDone`` the provider stopped early."""
        if self._finish is None:
            raise ProviderFailure(FailureKind.PROVIDER, "provider stream ended before done")

    # -- results -------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._finish is not None

    @property
    def text(self) -> str:
        """Visible text so far (also meaningful after a failure: partial output)."""
        return "".join(self._text)

    @property
    def thinking(self) -> str:
        return "".join(self._thinking)

    @property
    def usage(self) -> Usage | None:
        return self._usage

    def result(self) -> CallResult:
        """The assembled call; only after ``CallDone`` (a partial call is not a result)."""
        if self._finish is None:
            raise RuntimeError("StreamGrammar.result() before CallDone")
        calls = tuple(
            ProviderToolCall(
                index=index,
                call_id=call.call_id,
                name=call.name,
                arguments_json="".join(call.arguments),
            )
            for index, call in sorted(self._calls.items())
        )
        return CallResult(
            text=self.text,
            thinking=self.thinking,
            calls=calls,
            replay=self._replay,
            usage=self._usage,
            finish=self._finish,
        )
