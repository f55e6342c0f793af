"""The canonical provider event stream: what every adapter turns its wire format into.

One stream per provider call: ``CallStarted`` once, then text / thinking / tool-call blocks,
at most one ``ReplayStateReported`` and one ``UsageReported``, then ``CallDone``. The grammar is
checked by ``wire.providers.grammar``; consumers can rely on it.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

# The canonical message model owns the replay state: adapters produce it, the conversation
# stores it on the assistant message, and the next request hands it back to the adapter.
# ``provider_kind`` is ``openai_chat`` (``{"reasoning_content": str}``, or OpenRouter's
# ``reasoning`` and ``reasoning_details``, with the ``origin`` that streamed them),
# ``openai_responses`` (``{"items": [reasoning output items, encrypted content included]}``),
# ``anthropic`` (``{"blocks": [thinking blocks with signatures and redacted_thinking blocks]}``)
# or ``gemini`` (``{"parts": [the streamed parts, thought signatures where they came]}``).
from actors.conversation.model import ReplayState


class FinishReason(StrEnum):
    STOP = "stop"
    LENGTH = "length"
    TOOL_USE = "tool_use"
    # The input and output together filled the model's context window (Anthropic's
    # ``model_context_window_exceeded``): the turn compacts and asks again.
    CONTEXT_WINDOW = "context_window"


class Usage(msgspec.Struct, frozen=True, omit_defaults=True):
    """Token counts exactly as the provider reported them; ``None`` means not reported."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None


class CallStarted(msgspec.Struct, frozen=True, tag=True):
    """The provider answered 2xx; nothing of the body has been read yet."""

    model_call_id: str


class TextStarted(msgspec.Struct, frozen=True, tag=True):
    pass


class TextDelta(msgspec.Struct, frozen=True, tag=True):
    text: str


class TextEnded(msgspec.Struct, frozen=True, tag=True):
    pass


class ThinkingStarted(msgspec.Struct, frozen=True, tag=True):
    pass


class ThinkingDelta(msgspec.Struct, frozen=True, tag=True):
    text: str


class ThinkingEnded(msgspec.Struct, frozen=True, tag=True):
    pass


class ToolCallStarted(msgspec.Struct, frozen=True, tag=True):
    """A tool call opens; ``index`` is the provider's own (may be sparse), ``call_id`` its id."""

    index: int
    call_id: str
    name: str


class ToolCallArgumentsDelta(msgspec.Struct, frozen=True, tag=True):
    index: int
    delta: str


class ToolCallEnded(msgspec.Struct, frozen=True, tag=True):
    index: int


class ReplayStateReported(msgspec.Struct, frozen=True, tag=True):
    state: ReplayState


class UsageReported(msgspec.Struct, frozen=True, tag=True):
    usage: Usage


class CallDone(msgspec.Struct, frozen=True, tag=True):
    finish: FinishReason


ProviderEvent = (
    CallStarted
    | TextStarted
    | TextDelta
    | TextEnded
    | ThinkingStarted
    | ThinkingDelta
    | ThinkingEnded
    | ToolCallStarted
    | ToolCallArgumentsDelta
    | ToolCallEnded
    | ReplayStateReported
    | UsageReported
    | CallDone
)
