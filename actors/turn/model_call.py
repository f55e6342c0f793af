"""One model call of a turn: the provider's events become frames and steps, its end an outcome.

The driver hands every ProviderActor message of the call to ``receive`` and sends the frames
it returns. Every call starts *held*, while the checkpoint before it is still being acknowledged:
its messages queue with their arrival times, and ``release`` (once that checkpoint is out)
plays them in order, so the client never sees progress ahead of its checkpoint while the
request's round trip still overlaps the blobs' ACKs. Thinking durations use the arrival time,
not the release time.
"""

from __future__ import annotations

import msgspec

from actors.conversation.events import (
    FinishReason,
    ProviderEvent,
    TextDelta,
    TextEnded,
    TextStarted,
    ThinkingDelta,
    ThinkingEnded,
    ThinkingStarted,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    Usage,
    UsageReported,
)
from actors.conversation.model import AssistantContent, CanonicalMessage, CanonicalToolCall
from actors.protocols.checkpoint import AssistantStep, Step, ThinkingStep
from actors.protocols.provider import ProviderCallEnded, ProviderEventsReceived, ProviderReply
from actors.turn.length import cut_calls
from wire.errors import Code, ConnectError, protocol_error, provider_error_detail
from wire.interaction_updates import (
    text_delta_frame,
    thinking_completed_frame,
    thinking_delta_frame,
    token_delta_frame,
    turn_ended_frame,
)
from wire.proto import agent_v1_pb2 as agent
from wire.providers.errors import FailureKind, ProviderFailure
from wire.streamed_args import StreamedArgsDecoder
from wire.tools.dynamic_mcp import placeholder_card
from wire.tools.frames import partial_tool_call_frame
from wire.tools.mcp_names import NO_DYNAMIC_TOOLS, DynamicMcpTools
from wire.tools.registry import find_tool
from wire.tools.streaming import streamed_args_decoder, streamed_args_frames

# What the editor sees of the model: after the first of these a call is no longer silent.
_CONTENT_EVENTS = (TextStarted, TextDelta, ThinkingStarted, ThinkingDelta, ToolCallStarted)


# ---- outcomes ----


class CallAnswered(msgspec.Struct, frozen=True):
    """The model answered without tools: the turn's final assistant message."""

    content: AssistantContent


class CallWantsTools(msgspec.Struct, frozen=True):
    """The model asked for tools: ``content`` is its message (text, thinking, replay state);
    ``cut`` names the calls whose arguments the output limit cut (never run)."""

    calls: tuple[CanonicalToolCall, ...]
    content: AssistantContent
    cut: tuple[str, ...] = ()


class CallCut(msgspec.Struct, frozen=True):
    """The output limit cut a text answer: ``content`` is what the model wrote of it."""

    content: AssistantContent


class CallFailed(msgspec.Struct, frozen=True):
    error: ConnectError


class CallCancelled(msgspec.Struct, frozen=True):
    """The call was cancelled by the run itself, which is already ending."""


class CallTooLong(msgspec.Struct, frozen=True):
    """The provider refused the request for its length, or stopped as the context window
    filled (what it wrote is dropped): the turn compacts and asks again."""

    error: ConnectError


class CallSummarized(msgspec.Struct, frozen=True):
    """A summary call (``actors.turn.compaction``) wrote its summary: ``message`` is to be
    appended, then the model is asked again on summary + tail."""

    message: CanonicalMessage


CallOutcome = (
    CallAnswered
    | CallWantsTools
    | CallCut
    | CallFailed
    | CallCancelled
    | CallTooLong
    | CallSummarized
)


class CallStep(msgspec.Struct, frozen=True):
    """What one message of the call did: frames to send, and its outcome once it ended."""

    frames: tuple[bytes, ...] = ()
    outcome: CallOutcome | None = None


def run_failure(failure: ProviderFailure) -> ConnectError:
    """How a failed provider call ends the run (with Cursor's retryable error details)."""
    if failure.kind is FailureKind.PROTOCOL:
        return protocol_error(failure.message)
    message = f"provider error: {failure.message}"
    return ConnectError(Code.UNAVAILABLE, message, (provider_error_detail(message),))


def add_usage(total: Usage | None, usage: Usage | None) -> Usage | None:
    """Usage summed over reports: a field is a sum only while every report has it."""
    if total is None:
        return usage
    if usage is None:
        return total

    def both(a: int | None, b: int | None) -> int | None:
        return None if a is None or b is None else a + b

    return Usage(
        input_tokens=both(total.input_tokens, usage.input_tokens),
        output_tokens=both(total.output_tokens, usage.output_tokens),
        cache_read_tokens=both(total.cache_read_tokens, usage.cache_read_tokens),
        cache_write_tokens=both(total.cache_write_tokens, usage.cache_write_tokens),
        reasoning_tokens=both(total.reasoning_tokens, usage.reasoning_tokens),
    )


def turn_ended(usage: Usage | None) -> bytes:
    """The ``turn_ended`` frame that leads a turn's final checkpoint, with the turn's usage."""
    usage = usage or Usage()
    return turn_ended_frame(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        reasoning_tokens=usage.reasoning_tokens,
    )


class ModelCall:
    """The state of one provider call: held messages, streamed text and thinking, steps, usage.

    ``steps`` are the thinking and text steps the call produced (for its checkpoint);
    ``usage`` sums its usage reports; ``last_tokens`` is input plus output of the last report
    that had both (the context the next request starts from). A streaming call gets a card
    only for a tool of ``offered`` (the run's mode; None: every tool we run) or one of the
    run's ``dynamic`` MCP tools: the round refuses any other, so the editor must not see it
    start.

    A call that continues a cut answer (``after``, the call it cut) is not held (no checkpoint
    comes between the two: the editor sees one answer) and starts from its steps, its first
    text joining the cut text."""

    def __init__(
        self,
        model_call_id: str,
        call_index: int,
        offered: tuple[str, ...] | None = None,
        dynamic: DynamicMcpTools = NO_DYNAMIC_TOOLS,
        after: ModelCall | None = None,
        opened_at: float = 0.0,
    ) -> None:
        """``opened_at``: when the request was made (monotonic seconds), for how long a
        silent model was seen thinking."""
        self.model_call_id = model_call_id
        self.call_index = call_index
        self._opened_at = opened_at
        self._spoke = False  # the model's first text, thinking or tool call was played
        self._kept_alive = False  # a silence was shown as thinking (``keep_alive``)
        self._continues = False  # the model's thinking continues that shown block
        self._offered = offered
        self._dynamic = dynamic  # the run's dynamic MCP tools, matched by exact name
        self.steps: list[Step] = list(after.steps) if after is not None else []
        self._joins = after is not None
        self.usage: Usage | None = None
        self.last_tokens: int | None = None
        self._held: list[tuple[ProviderReply, float]] | None = [] if after is None else None
        self._ended = False
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._thinking_started = 0.0
        self._calls: dict[int, tuple[str, str]] = {}
        self._decoders: dict[int, StreamedArgsDecoder | None] = {}
        self._placeholders: dict[str, agent.ToolCall] = {}  # call id -> a dynamic tool's card

    def receive(self, message: ProviderReply, now: float) -> CallStep:
        """One message of the provider (another call's messages are ignored)."""
        if message.model_call_id != self.model_call_id or self._ended:
            return CallStep()
        if self._held is not None:
            self._held.append((message, now))
            return CallStep()
        if isinstance(message, ProviderEventsReceived):
            return CallStep(frames=tuple(self._events(message.events, now)))
        self._ended = True
        return CallStep(outcome=self._outcome(message))

    def release(self) -> CallStep:
        """The checkpoint before the call is out: play the held messages in order."""
        held, self._held = self._held or [], None
        frames: list[bytes] = []
        for message, arrived in held:
            step = self.receive(message, arrived)
            frames.extend(step.frames)
            if step.outcome is not None:
                return CallStep(tuple(frames), step.outcome)
        return CallStep(tuple(frames))

    @property
    def silent(self) -> bool:
        """The call goes on and the editor has seen nothing of the model yet: no text,
        thinking or tool call, whether the provider's headers came or not (a reasoning model
        that does not stream its reasoning answers 200 at once, then says nothing)."""
        return not self._spoke and not self._ended

    def keep_alive(self) -> CallStep:
        """The model has been silent a while: an empty thinking delta, which the editor shows
        as the model thinking and a client counts as activity (a heartbeat is not). Nothing
        while the call is held (its checkpoint comes first) or once the model was heard; the
        conversation's steps are untouched."""
        if not self.silent or self._held is not None:
            return CallStep()
        self._kept_alive = True
        return CallStep(frames=(thinking_delta_frame(""),))

    def _close_kept_alive(self, event: ProviderEvent, now: float) -> list[bytes]:
        """After a silence shown as thinking, the model's first content: its own thinking
        continues that block (and its duration counts from the request, the silence being
        thinking the provider did not stream); text or a tool call ends the block, which
        lasted the silence. Other events (usage, say) wait for one of those."""
        if isinstance(event, ThinkingStarted | ThinkingDelta):
            self._kept_alive = False
            self._continues = True
            return []
        if isinstance(event, _CONTENT_EVENTS):
            self._kept_alive = False
            return [thinking_completed_frame(max(1, round((now - self._opened_at) * 1000)))]
        return []

    def _events(self, events: tuple[ProviderEvent, ...], now: float) -> list[bytes]:
        frames: list[bytes] = []
        for event in events:
            if self._kept_alive:
                frames.extend(self._close_kept_alive(event, now))
            if isinstance(event, _CONTENT_EVENTS):
                self._spoke = True
            match event:
                case TextStarted():
                    self._text = []
                case TextDelta(text=text):
                    self._text.append(text)
                    frames.append(text_delta_frame(text))
                case TextEnded():
                    self._add_step(AssistantStep("".join(self._text)))
                case ThinkingStarted():
                    self._thinking_started = self._opened_at if self._continues else now
                    self._continues = False
                    self._thinking = []
                case ThinkingDelta(text=text):
                    self._thinking.append(text)
                    frames.append(thinking_delta_frame(text))
                case ThinkingEnded():
                    duration = max(1, round((now - self._thinking_started) * 1000))
                    frames.append(thinking_completed_frame(duration))
                    self._add_step(ThinkingStep("".join(self._thinking), duration))
                case ToolCallStarted(index=index, call_id=call_id, name=name):
                    self._calls[index] = (call_id, name)
                    if self._shows_card(name):
                        self._decoders[index] = streamed_args_decoder(name)
                        frames.extend(self._partial_call(call_id, name, ""))
                case ToolCallArgumentsDelta(index=index, delta=delta):
                    frames.extend(self._arguments_delta(index, delta))
                case UsageReported(usage=usage):
                    frames.extend(self._usage_reported(usage))
                case _:
                    pass  # the call's end arrives as ProviderCallEnded
        return frames

    def _add_step(self, step: AssistantStep | ThinkingStep) -> None:
        if not step.text:
            return
        last = self.steps[-1] if self.steps else None
        if self._joins and isinstance(step, AssistantStep) and isinstance(last, AssistantStep):
            self.steps[-1] = AssistantStep(last.text + step.text)
        else:
            self.steps.append(step)
        self._joins = False

    def _usage_reported(self, usage: Usage) -> list[bytes]:
        self.usage = add_usage(self.usage, usage)
        if usage.input_tokens is not None and usage.output_tokens is not None:
            self.last_tokens = usage.input_tokens + usage.output_tokens
        return [] if usage.output_tokens is None else [token_delta_frame(usage.output_tokens)]

    def _arguments_delta(self, index: int, delta: str) -> list[bytes]:
        """A call's arguments as they stream: an edit's content as it is written, else the
        raw argument text."""
        call_id, name = self._calls[index]
        if index not in self._decoders:
            return []  # no card for a call the round refuses
        decoder = self._decoders[index]
        if decoder is None:
            return self._partial_call(call_id, name, delta)
        events = decoder.feed(delta)
        return list(streamed_args_frames(call_id, name, self.model_call_id, events))

    def _shows_card(self, name: str) -> bool:
        if self._dynamic.find(name) is not None:
            return True
        definition = find_tool(name)
        if definition is None:
            return False  # the round refuses the unknown tool when it starts
        return self._offered is None or definition.name in self._offered

    def _partial_call(self, call_id: str, name: str, delta: str) -> list[bytes]:
        card = self._placeholders.get(call_id)
        if card is None and (tool := self._dynamic.find(name)) is not None:
            card = self._placeholders[call_id] = placeholder_card(name, tool, call_id)
        return [partial_tool_call_frame(call_id, name, self.model_call_id, delta, card)]

    def _outcome(self, message: ProviderCallEnded) -> CallOutcome:
        if message.failure is not None:
            error = run_failure(message.failure)
            return CallTooLong(error) if message.failure.too_long else CallFailed(error)
        result = message.result
        if result is None:
            return CallCancelled()
        if result.finish is FinishReason.CONTEXT_WINDOW:
            return CallTooLong(ConnectError(Code.RESOURCE_EXHAUSTED, "context window filled"))
        cut = result.finish is FinishReason.LENGTH
        content = AssistantContent(
            text=result.text, thinking=result.thinking, replay_state=result.replay
        )
        if not result.calls:
            return CallCut(content) if cut else CallAnswered(content)
        calls = tuple(
            CanonicalToolCall(c.index, c.call_id, c.name, c.arguments_json, self.model_call_id)
            for c in result.calls
        )
        return CallWantsTools(calls, content, cut_calls(calls) if cut else ())
