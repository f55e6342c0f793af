"""Canonical messages: the single source of a conversation's context.

Messages are immutable and only appended (``store.conversations`` keeps them in a revision
chain). Their canonical JSON (``encode_message``) is deterministic, so the same history always
has the same bytes and the same digest; it is what the store persists and what a revision's
digest is computed over.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Origin(StrEnum):
    """Who produced the message: the prompt assets, the user (hydrated from a client
    checkpoint), the runtime (the rendered user turn), the model, or a tool."""

    PROMPT = "prompt"
    USER = "user"
    RUNTIME = "runtime"
    ASSISTANT = "assistant"
    TOOL = "tool"


class TextPart(msgspec.Struct, frozen=True, tag="text", omit_defaults=True):
    text: str


class ImagePart(msgspec.Struct, frozen=True, tag="image", omit_defaults=True):
    mime_type: str
    data: bytes


class ReplayState(msgspec.Struct, frozen=True):
    """Opaque provider reasoning state (``provider_kind`` + JSON value), replayed verbatim."""

    provider_kind: str
    value: dict[str, Any]


class CanonicalToolCall(msgspec.Struct, frozen=True, omit_defaults=True):
    """One call the model made: its provider index, id, name, exact argument JSON text and the
    provider call (``{run_id}:{provider_call_index}``) that produced it."""

    index: int
    call_id: str
    name: str
    arguments: str
    model_call_id: str


class PartsContent(msgspec.Struct, frozen=True, tag="parts", tag_field="kind"):
    parts: tuple[TextPart | ImagePart, ...]


class AssistantContent(
    msgspec.Struct, frozen=True, tag="assistant", tag_field="kind", omit_defaults=True
):
    """An assistant message. A final answer has no calls; in a tool round each committed pair's
    assistant holds exactly one call and ``tool_round_id``, and only the round's first pair
    carries the text, thinking and replay state."""

    text: str = ""
    thinking: str = ""
    tool_round_id: str | None = None
    replay_state: ReplayState | None = None
    tool_calls: tuple[CanonicalToolCall, ...] = ()


class ToolResultContent(
    msgspec.Struct, frozen=True, tag="tool_result", tag_field="kind", omit_defaults=True
):
    """What the LLM sees of a tool's result: a string, and the images it shows (a Read of
    an image file). Only ``images`` has a default, so a result without images encodes to the
    same bytes as before the field existed."""

    call_id: str
    name: str
    content: str
    is_error: bool
    images: tuple[ImagePart, ...] = ()


Content = PartsContent | AssistantContent | ToolResultContent


class CanonicalMessage(msgspec.Struct, frozen=True, omit_defaults=True):
    """One immutable message of a conversation.

    ``runtime_event_id`` is set on runtime-origin messages (the rendered user turn of a
    RunRequest: ``run-request:{request_id}``); the store keeps it unique per conversation so
    a retried or replayed RunRequest never appends its turn twice.

    ``summary_tail`` marks a compaction summary (``summary:{request_id}:{call_index}``): the id
    of the first message it does not cover, kept verbatim after it in the provider request
    (``""``: it covers everything before it). Nothing is deleted: the projection starts from
    the newest summary (``actors.conversation.projection.visible``).
    """

    message_id: str
    role: Role
    origin: Origin
    content: Content
    runtime_event_id: str | None = None
    summary_tail: str | None = None


# The runtime event of a request to go on with an answer the output limit cut
# (``continuation:{request_id}:{call_index}``): a user-role message inside the turn, not a turn.
CONTINUATION_EVENT_PREFIX = "continuation:"

# The runtime event of a compaction summary (``summary:{request_id}:{call_index}``): a
# user-role message inside the turn, not a turn.
SUMMARY_EVENT_PREFIX = "summary:"


def starts_turn(message: CanonicalMessage) -> bool:
    """Whether ``message`` opens a turn: a user-role message other than a continuation
    request or a compaction summary."""
    event = message.runtime_event_id
    return message.role is Role.USER and not (
        event is not None and event.startswith((CONTINUATION_EVENT_PREFIX, SUMMARY_EVENT_PREFIX))
    )


def is_summary(message: CanonicalMessage) -> bool:
    """Whether ``message`` is a compaction summary."""
    return message.summary_tail is not None


# How a summary message frames what the summary call wrote (our own words).
SUMMARY_LEAD = (
    "The earlier part of this conversation was condensed into the summary below; the "
    "messages after it follow in full.\n<conversation_summary>\n"
)
SUMMARY_END = "\n</conversation_summary>"


def summary_text(message: CanonicalMessage) -> str:
    """What the summary call wrote, from a summary message (without our framing)."""
    content = message.content
    assert isinstance(content, PartsContent) and isinstance(content.parts[0], TextPart)
    return content.parts[0].text.removeprefix(SUMMARY_LEAD).removesuffix(SUMMARY_END)


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(CanonicalMessage)


def encode_message(message: CanonicalMessage) -> bytes:
    """The canonical JSON bytes (field order fixed by the Structs, defaults omitted)."""
    return _encoder.encode(message)


def decode_message(data: bytes) -> CanonicalMessage:
    return _decoder.decode(data)
