"""Length recovery: what a turn does when the output limit cut the model's answer.

A cut text answer is kept and the model is asked to go on, in a new call: the partial answer is
stored as the assistant message it was, followed by a runtime user message asking to continue
(``continuation:{request_id}:{call_index}``), so the stored history says what happened and the
next request repeats it unchanged (its cached prefix stays warm). The editor sees one text: the
new call's deltas follow the old ones, and its first text step joins the last one. After
``MAX_CONTINUATIONS`` the last part is the answer as it is.

A tool call whose arguments the limit cut (not a complete JSON object) is never run: it gets an
error result asking for a smaller call (``wire.tools.dispatch.cut_tool_call``); the round's
complete calls run as usual.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from actors.conversation.model import (
    CONTINUATION_EVENT_PREFIX,
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    Role,
    TextPart,
    starts_turn,
)
from prompt.continuation import continuation_text
from wire.json_input import decode_json

# How many times one answer is continued before the turn ends with it as it is.
MAX_CONTINUATIONS = 3


def continuations(history: Sequence[CanonicalMessage]) -> int:
    """How many continuation requests the current turn (after its last user turn) holds."""
    count = 0
    for message in reversed(history):
        if starts_turn(message):
            break
        event = message.runtime_event_id
        count += event is not None and event.startswith(CONTINUATION_EVENT_PREFIX)
    return count


def continuation(
    request_id: str,
    call_index: int,
    partial: AssistantContent,
    history: Sequence[CanonicalMessage],
) -> tuple[CanonicalMessage, CanonicalMessage] | None:
    """The cut answer and the request to go on, to append before the next call; None once the
    answer was continued ``MAX_CONTINUATIONS`` times."""
    if continuations(history) >= MAX_CONTINUATIONS:
        return None
    answer = CanonicalMessage(
        f"{request_id}:assistant:{call_index}", Role.ASSISTANT, Origin.ASSISTANT, partial
    )
    event = f"{CONTINUATION_EVENT_PREFIX}{request_id}:{call_index}"
    ask = CanonicalMessage(
        message_id=f"runtime:{event}",
        role=Role.USER,
        origin=Origin.RUNTIME,
        content=PartsContent((TextPart(continuation_text()),)),
        runtime_event_id=event,
    )
    return answer, ask


def cut_calls(calls: Sequence[CanonicalToolCall]) -> tuple[str, ...]:
    """The ids of the calls of a cut answer whose arguments are not a complete JSON object
    (the limit stopped them mid-way); a call that decodes whole was finished and may run."""
    cut: list[str] = []
    for call in calls:
        try:
            value = decode_json(call.arguments)
        except msgspec.DecodeError:
            value = None
        if not isinstance(value, dict):
            cut.append(call.call_id)
    return tuple(cut)
