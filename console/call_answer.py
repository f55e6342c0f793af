"""A verbose call's answer put together from its recorded response chunks, for the call detail.

The raw chunks are hard to read: the text arrives in dozens of deltas and a tool call's
arguments in fragments. The chunks are fed to the call's own format's decoder (the adapter a
call uses, ``wire.providers.formats``), so the answer is read exactly as the server read it: the
text, the thinking and each tool call with its whole arguments, in the order they opened. A body
that stops early (a cancelled call) or that the decoder refuses still gives what came before,
with ``complete`` false and the decoder's message.

Only an answer the provider accepted (2xx) is put together: a refused call's chunks are its
error body, not an answer. The recorder scrubs the raw bytes, but a key split over two deltas
(JSON between its pieces) comes back whole once the deltas are joined: every assembled string
is scrubbed again with the provider's credentials (its whole key pool and sealed headers,
given by the caller). The answer holds at most ``MAX_ANSWER_CHARS`` characters.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from actors.conversation.events import (
    CallDone,
    ProviderEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from actors.conversation.request import ModelRoute, ProviderType
from actors.conversation.secret import Secret
from store.llm_calls import CallStatus, CallSummary, RecordedChunk
from wire.providers.errors import ProviderFailure
from wire.providers.formats import adapter_for
from wire.providers.redaction import scrub_text

# The characters of thinking, text and tool arguments together an assembled answer holds; the
# rest is cut (the raw chunks still hold all of it).
MAX_ANSWER_CHARS = 1_000_000


class AnswerToolCall(msgspec.Struct, frozen=True):
    call_id: str
    name: str
    arguments: str


class AssembledAnswer(msgspec.Struct, frozen=True):
    text: str
    thinking: str
    tool_calls: list[AnswerToolCall]
    finish: str | None
    complete: bool
    problem: str | None = None


def _route(call: CallSummary, provider_type: ProviderType) -> ModelRoute:
    """The route a decoder needs (its format and endpoint); no key: nothing is sent."""
    return ModelRoute(
        provider_id=call.provider_id or 0,
        provider_name=call.provider_name,
        provider_type=provider_type,
        base_url=call.provider_url,
        api_key=Secret(""),
        headers=(),
        public_id=call.public_id,
        model_id=call.model_id,
        display_name=call.display_name,
    )


def _decoded(
    call: CallSummary, provider_type: ProviderType, chunks: Sequence[RecordedChunk]
) -> tuple[list[ProviderEvent], str | None]:
    """The events the chunks decode to, and why decoding stopped early (None: it did not)."""
    route = _route(call, provider_type)
    decoder = adapter_for(route.provider_type).new_decoder(route)
    events: list[ProviderEvent] = []
    try:
        for chunk in chunks:
            events.extend(decoder.feed(chunk.data))
        events.extend(decoder.finish())
    except ProviderFailure as failure:
        return events, failure.message
    return events, None


class _Budget:
    """What is left of ``MAX_ANSWER_CHARS``; ``cut`` once a string did not fit."""

    def __init__(self) -> None:
        self.left = MAX_ANSWER_CHARS
        self.cut = False

    def take(self, text: str) -> str:
        kept = text[: self.left]
        self.left -= len(kept)
        self.cut = self.cut or len(kept) < len(text)
        return kept


def _accepted(call: CallSummary) -> bool:
    """Whether the provider accepted the call (2xx): only then do its chunks hold an answer."""
    return call.http_status is not None and 200 <= call.http_status < 300


def assembled_answer(
    call: CallSummary, chunks: Sequence[RecordedChunk], secrets: Sequence[str]
) -> AssembledAnswer | None:
    """The answer the chunks hold, each string scrubbed of ``secrets`` (the provider's
    credentials); None without chunks, for a call the provider did not accept (2xx) and for a
    format this server lacks."""
    if not chunks or not _accepted(call):
        return None
    try:
        provider_type = ProviderType(call.provider_type)
    except ValueError:
        return None
    events, problem = _decoded(call, provider_type, chunks)
    text: list[str] = []
    thinking: list[str] = []
    opened: dict[int, ToolCallStarted] = {}
    arguments: dict[int, list[str]] = {}
    finish = None
    for event in events:
        match event:
            case TextDelta(text=delta):
                text.append(delta)
            case ThinkingDelta(text=delta):
                thinking.append(delta)
            case ToolCallStarted(index=index):
                opened[index] = event
                arguments.setdefault(index, [])
            case ToolCallArgumentsDelta(index=index, delta=delta):
                arguments.setdefault(index, []).append(delta)
            case CallDone(finish=reason):
                finish = reason.value

    def clean(pieces: Sequence[str]) -> str:
        return scrub_text("".join(pieces), secrets)

    budget = _Budget()
    kept_text = budget.take(clean(text))
    kept_thinking = budget.take(clean(thinking))
    tool_calls = [
        AnswerToolCall(
            clean([started.call_id]),
            clean([started.name]),
            budget.take(clean(arguments.get(index, []))),
        )
        for index, started in opened.items()
    ]
    if budget.cut:
        problem = f"the answer was cut at its first {MAX_ANSWER_CHARS:,} characters"
    elif call.status == CallStatus.RUNNING:
        problem = None  # still streaming: its end is not missing yet
    return AssembledAnswer(
        text=kept_text,
        thinking=kept_thinking,
        tool_calls=tool_calls,
        finish=finish,
        complete=problem is None and finish is not None and call.status != CallStatus.RUNNING,
        problem=None if problem is None else scrub_text(problem, secrets),
    )
