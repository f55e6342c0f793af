"""Automatic compaction: when a conversation is summarised, what the summary call sees, and the
phase that makes it.

Before each model call the turn projects the request's input: the last call's reported tokens
(input plus output) plus an estimate of the messages added since, or, with no report to start
from (a new run, just after a compaction), an estimate of the whole visible history and the
fixed part (system prompt, tool schemas). Past ``COMPACT_AT`` of the model's context window,
or when the input and the model's output limit together would not fit, the conversation is
summarised first. A provider's refusal for length (``ProviderFailure.too_long``, Anthropic's
``model_context_window_exceeded`` stop) compacts too, once per call: a call refused again
right after its compaction fails the run. A model without ``context_window_tokens`` is never
compacted before a call, only after a refusal.

The summary covers the visible history up to a *tail*, the newest messages kept verbatim:
the tail starts at a message that opens no part of a tool round (a user message, an answer,
a round's first pair, which carries its text, thinking and replay state), so no call is left
without its result and reasoning replay stays valid. The summary is a new runtime user
message (``summary:{request_id}:{call_index}``, ``summary_tail`` naming the tail's first
message): nothing is deleted, and ``actors.conversation.projection.visible`` starts every
later request from the newest summary.

The summary call is the compaction assets' prompt, no tools, no reasoning, and the part to
summarise (its tool calls and results written out as text, ``actors.turn.summary_input``: a
request without tools may hold no tool blocks) followed by the assets' closing request, so it
always ends on a user message (Anthropic refuses a history ending on an assistant message).
That part is cut from its front, at the same boundaries, until it fits the window itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import msgspec

from actors.conversation.events import ProviderEvent, TextDelta, UsageReported
from actors.conversation.model import (
    SUMMARY_END,
    SUMMARY_EVENT_PREFIX,
    SUMMARY_LEAD,
    AssistantContent,
    CanonicalMessage,
    Origin,
    PartsContent,
    Role,
    TextPart,
    ToolResultContent,
    is_summary,
    summary_text,
)
from actors.conversation.projection import project, visible
from actors.conversation.request import (
    LlmRequest,
    ModelRoute,
    ProviderTextPart,
    Reasoning,
    ToolSpec,
    UserMessage,
)
from actors.protocols.provider import (
    ProviderCallEnded,
    ProviderReply,
    StartProviderCall,
)
from actors.turn.model_call import (
    CallCancelled,
    CallFailed,
    CallOutcome,
    CallStep,
    CallSummarized,
    ModelCall,
    add_usage,
    run_failure,
)
from actors.turn.summary_input import summary_input
from prompt.compaction import CompactionAssets, compaction_assets
from wire.errors import Code, ConnectError
from wire.interaction_updates import (
    summary_completed_frame,
    summary_frame,
    summary_started_frame,
)
from wire.tools.mcp_names import NO_DYNAMIC_TOOLS

# Compact before a call whose projected input passes this share of the context window.
COMPACT_AT = 0.8
# The newest messages kept verbatim after the summary: at most this share of the window.
TAIL_SHARE = 0.25
# Room left in the window for the summary the summary call writes.
SUMMARY_RESERVE_TOKENS = 4096
# The token estimate of text: ASCII characters per token, tokens per other character.
ASCII_CHARS_PER_TOKEN = 3.5
TOKENS_PER_OTHER_CHAR = 0.6
# Each image, and each message's framing, in tokens.
IMAGE_TOKENS = 1600
MESSAGE_TOKENS = 4


# ---- the estimate ----


def text_tokens(text: str) -> int:
    """The estimated tokens of ``text`` (conservative: rounds up)."""
    # Counted in C: a loop over the characters in Python cost 1-2 ms per turn on the system
    # prompt and tool schemas alone.
    ascii_chars = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    other = len(text) - ascii_chars
    return math.ceil(ascii_chars / ASCII_CHARS_PER_TOKEN + other * TOKENS_PER_OTHER_CHAR)


def message_tokens(message: CanonicalMessage) -> int:
    """The estimated tokens one message adds to a request."""
    content = message.content
    total = MESSAGE_TOKENS
    if isinstance(content, PartsContent):
        for part in content.parts:
            total += text_tokens(part.text) if isinstance(part, TextPart) else IMAGE_TOKENS
    elif isinstance(content, AssistantContent):
        total += text_tokens(content.text) + text_tokens(content.thinking)
        for call in content.tool_calls:
            total += text_tokens(call.name) + text_tokens(call.arguments)
    else:
        total += text_tokens(content.content) + IMAGE_TOKENS * len(content.images)
    return total


def estimate(messages: Iterable[CanonicalMessage]) -> int:
    return sum(message_tokens(m) for m in messages)


def fixed_tokens(instructions: str, tools: Sequence[ToolSpec]) -> int:
    """The estimated tokens of what every request repeats: system prompt and tool schemas."""
    schemas = msgspec.json.encode([(t.name, t.description, t.parameters) for t in tools])
    return text_tokens(instructions) + text_tokens(schemas.decode())


# ---- where the tail starts ----


def boundaries(view: Sequence[CanonicalMessage]) -> list[int]:
    """The indexes (past the first) where a tail may start: no tool round is split there."""
    out: list[int] = []
    open_round: str | None = None
    for i, message in enumerate(view):
        content = message.content
        if isinstance(content, ToolResultContent):
            continue
        round_id = content.tool_round_id if isinstance(content, AssistantContent) else None
        if i > 0 and (round_id is None or round_id != open_round):
            out.append(i)
        open_round = round_id
    return out


def tail_start(view: Sequence[CanonicalMessage], budget: int | None) -> int | None:
    """Where the verbatim tail starts: the longest tail within ``budget`` tokens, else the
    shortest one (None budget: the shortest); None when no boundary leaves anything to
    summarise."""
    starts = boundaries(view)
    if not starts:
        return None
    if budget is not None:
        for start in starts:
            if estimate(view[start:]) <= budget:
                return start
    return starts[-1]


def fit_to_window(
    part: Sequence[CanonicalMessage], budget: int | None
) -> Sequence[CanonicalMessage]:
    """``part`` cut from its front, at tail boundaries, until its estimate fits ``budget``."""
    if budget is None:
        return part
    for start in (0, *boundaries(part)):
        if estimate(part[start:]) <= budget:
            return part[start:]
    starts = boundaries(part)
    return part[starts[-1] :] if starts else part


# ---- the summary message ----


def summary_event(request_id: str, call_index: int) -> str:
    return f"{SUMMARY_EVENT_PREFIX}{request_id}:{call_index}"


def summary_message(request_id: str, call_index: int, summary: str, tail: str) -> CanonicalMessage:
    """The stored summary: a runtime user message the next requests start from."""
    event = summary_event(request_id, call_index)
    return CanonicalMessage(
        message_id=f"runtime:{event}",
        role=Role.USER,
        origin=Origin.RUNTIME,
        content=PartsContent((TextPart(f"{SUMMARY_LEAD}{summary}{SUMMARY_END}"),)),
        runtime_event_id=event,
        summary_tail=tail,
    )


# ---- the phase ----


class Compaction(ModelCall):
    """One summary call: a model call whose text is collected instead of shown, whose end
    is the summary message (or the run's end), held like any call until the checkpoint
    before it is out. ``call`` is the provider call to start; the editor sees
    ``summary_started`` when it starts, then ``summary`` and ``summary_completed``."""

    def __init__(
        self,
        call: StartProviderCall,
        call_index: int,
        tail: str,
        after: ModelCall | None = None,
    ) -> None:
        super().__init__(call.model_call_id, call_index, (), NO_DYNAMIC_TOOLS, after)
        self.call = call
        self.tail = tail
        self._summary: list[str] = []

    def started(self) -> bytes:
        return summary_started_frame()

    def _events(self, events: tuple[ProviderEvent, ...], now: float) -> list[bytes]:
        for event in events:
            if isinstance(event, TextDelta):
                self._summary.append(event.text)
            elif isinstance(event, UsageReported):
                self.usage = add_usage(self.usage, event.usage)  # no anchor for the next call
        return []

    def receive(self, message: ProviderReply, now: float) -> CallStep:
        step = super().receive(message, now)
        match step.outcome:
            case CallSummarized(message=summary):
                frames = (summary_frame(summary_text(summary)), summary_completed_frame())
                return CallStep(frames, step.outcome)
            case CallFailed():
                return CallStep((summary_completed_frame(failed=True),), step.outcome)
            case _:
                return step

    def _outcome(self, message: ProviderCallEnded) -> CallOutcome:
        if message.failure is not None:
            return CallFailed(run_failure(message.failure))  # even for length: no retry
        if message.result is None:
            return CallCancelled()
        text = "".join(self._summary).strip()
        if not text or message.result.calls:
            return CallFailed(
                ConnectError(Code.UNAVAILABLE, "compaction failed: the summary call wrote none")
            )
        request_id, _, _ = self.model_call_id.rpartition(":")
        return CallSummarized(summary_message(request_id, self.call_index, text, self.tail))


# ---- the run's compactor ----


class Compactor:
    """A run's view of its context: the last report's tokens and how many messages of the
    history it covered (the anchor), and the estimate of what every request repeats
    (``fixed``, set once the run knows its prompt and tools)."""

    def __init__(
        self, request_id: str, route: ModelRoute, assets: CompactionAssets | None = None
    ) -> None:
        self._request_id = request_id
        self._route = route
        self._assets = assets or compaction_assets()
        self.fixed = 0
        self._tokens: int | None = None
        self._covered = 0
        self._refused: ConnectError | None = None

    @property
    def last_tokens(self) -> int | None:
        """Input plus output of the run's last call that reported both (for the checkpoint)."""
        return self._tokens

    @property
    def window(self) -> int | None:
        return self._route.context_window_tokens

    def observe(self, tokens: int | None, covered: int) -> None:
        """A call succeeded: its report (input plus output) anchors the next projection."""
        if tokens is not None:
            self._tokens, self._covered = tokens, covered

    def projected(
        self, history: Sequence[CanonicalMessage], view: Sequence[CanonicalMessage] | None = None
    ) -> int:
        """The next request's estimated input tokens: the anchor plus the messages added since;
        an estimate of everything when there is none or a summary came after it. ``view``:
        ``visible(history)``, when the caller has it already."""
        added = history[self._covered :] if self._tokens is not None else None
        if added is not None and self._covered <= len(history) and not any(map(is_summary, added)):
            return (self._tokens or 0) + estimate(added)
        return self.fixed + estimate(visible(history) if view is None else view)

    def due(
        self, history: Sequence[CanonicalMessage], view: Sequence[CanonicalMessage] | None = None
    ) -> bool:
        """Whether the next call must compact first (never without a context window, never
        twice in a row)."""
        window = self.window
        if window is None or (history and is_summary(history[-1])):
            return False
        projected = self.projected(history, view)
        output = self._route.max_output_tokens or 0
        return projected > window * COMPACT_AT or projected + output > window

    def refuse(self, error: ConnectError) -> None:
        """The provider refused the last request for its length: compact before the next."""
        self._refused = error

    def before_call(
        self,
        call_index: int,
        history: Sequence[CanonicalMessage],
        after: ModelCall | None,
        view: Sequence[CanonicalMessage] | None = None,
    ) -> Compaction | ConnectError | None:
        """The summary call to make before model call ``call_index``: after a refusal, or when
        one is due (never while continuing a cut answer, ``after``); after a refusal that came
        right after a compaction, the error that ends the run. ``view``: ``visible(history)``
        as the call would send it, derived once by the caller for both (else here, once)."""
        refused, self._refused = self._refused, None
        if refused is not None:
            if history and is_summary(history[-1]):
                return too_long_error(refused)
            started = self.start(call_index, history, after=after, view=view)
            return started or too_long_error(refused)
        if after is not None or self.window is None:
            return None
        if view is None:
            view = visible(history)
        if self.due(history, view):
            return self.start(call_index, history, view=view)
        return None

    def start(
        self,
        call_index: int,
        history: Sequence[CanonicalMessage],
        *,
        whole: bool = False,
        after: ModelCall | None = None,
        shortest_tail: bool = False,
        view: Sequence[CanonicalMessage] | None = None,
    ) -> Compaction | None:
        """The summary call for ``history`` (``whole``: everything is summarised, no tail;
        ``shortest_tail``: only the newest answer or round is kept verbatim, whatever the
        window; ``view``: ``visible(history)``, when the caller has it already); None when
        there is nothing to summarise."""
        if view is None:
            view = visible(history)
        window = self.window
        if whole:
            start: int | None = len(view)
        else:
            share = None if window is None or shortest_tail else int(window * TAIL_SHARE)
            start = tail_start(view, share)
        if not start:
            return None
        tail = view[start].message_id if start < len(view) else ""
        budget = None
        if window is not None:
            budget = int(window * COMPACT_AT) - SUMMARY_RESERVE_TOKENS - self.fixed
        part = fit_to_window(view[:start], budget)
        ask = UserMessage((ProviderTextPart(self._assets.request),))
        written = summary_input(project(part))
        request = LlmRequest(self._assets.prompt, (), (*written, ask), None)
        route = msgspec.structs.replace(self._route, reasoning=Reasoning())
        call = StartProviderCall(
            self._request_id, f"{self._request_id}:{call_index}", request, route
        )
        return Compaction(call, call_index, tail, after)


def too_long_error(refusal: ConnectError) -> ConnectError:
    """How a run ends whose request the provider refused for its length right after a
    compaction (or with nothing to summarise): ``refusal`` says what the provider said."""
    return ConnectError(
        Code.RESOURCE_EXHAUSTED,
        "the conversation does not fit the model's context window even after compaction "
        f"({refusal.message})",
    )
