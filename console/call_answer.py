"""A verbose call's answer put together from its recorded response chunks, for the call detail.

The raw chunks are hard to read: the text arrives in dozens of deltas and a tool call's
arguments in fragments. The chunks are fed to the call's own format's decoder (the adapter a
call uses, ``wire.providers.formats``), so the answer is read exactly as the server read it: the
text, the thinking and each tool call with its whole arguments, in the order they opened. A body
that stops early (a cancelled call) or that the decoder refuses still gives what came before,
with ``complete`` false and the decoder's message.
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
from store.llm_calls import CallSummary, RecordedChunk
from wire.providers.errors import ProviderFailure
from wire.providers.formats import adapter_for


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


def _route(call: CallSummary) -> ModelRoute:
    """The route a decoder needs (its format and endpoint); no key: nothing is sent."""
    return ModelRoute(
        provider_id=call.provider_id or 0,
        provider_name=call.provider_name,
        provider_type=ProviderType(call.provider_type),
        base_url=call.provider_url,
        api_key=Secret(""),
        headers=(),
        public_id=call.public_id,
        model_id=call.model_id,
        display_name=call.display_name,
    )


def _decoded(
    call: CallSummary, chunks: Sequence[RecordedChunk]
) -> tuple[list[ProviderEvent], str | None]:
    """The events the chunks decode to, and why decoding stopped early (None: it did not)."""
    route = _route(call)
    decoder = adapter_for(route.provider_type).new_decoder(route)
    events: list[ProviderEvent] = []
    try:
        for chunk in chunks:
            events.extend(decoder.feed(chunk.data))
        events.extend(decoder.finish())
    except ProviderFailure as failure:
        return events, failure.message
    return events, None


def assembled_answer(call: CallSummary, chunks: Sequence[RecordedChunk]) -> AssembledAnswer | None:
    """The answer the chunks hold; None without chunks or for a format this server lacks."""
    if not chunks or call.provider_type not in ProviderType.__members__.values():
        return None
    events, problem = _decoded(call, chunks)
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
    return AssembledAnswer(
        text="".join(text),
        thinking="".join(thinking),
        tool_calls=[
            AnswerToolCall(started.call_id, started.name, "".join(arguments.get(index, [])))
            for index, started in opened.items()
        ],
        finish=finish,
        complete=problem is None and finish is not None,
        problem=problem,
    )
