"""Folding canonical messages into the neutral provider projection, in one place.

Tool pairs are stored one per completion (``assistant(call) -> tool(result)``, in completion
order); a provider wants a round as one assistant message holding every call, then the
results. The regrouping is deterministic, so projecting an append-only history always yields
the previous projection as an exact prefix, which keeps provider prompt caches warm.
"""

from __future__ import annotations

from collections.abc import Sequence

from actors.conversation import request as neutral
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    ImagePart,
    PartsContent,
    ReplayState,
    Role,
    TextPart,
    ToolResultContent,
    is_summary,
)


class ProjectionError(ValueError):
    """The stored history cannot be projected (a broken invariant, never a user error)."""


def visible(messages: Sequence[CanonicalMessage]) -> tuple[CanonicalMessage, ...]:
    """What the model sees of an append-only history: the newest compaction summary, then the
    messages from its tail on, older summaries left out (the newest one covers them); the whole
    history when there is no summary."""
    newest = next((i for i in range(len(messages) - 1, -1, -1) if is_summary(messages[i])), None)
    if newest is None:
        return tuple(messages)
    summary = messages[newest]
    tail = summary.summary_tail
    if not tail:
        start = newest + 1
    else:
        start = next((i for i, m in enumerate(messages) if m.message_id == tail), -1)
        if start < 0 or start > newest:
            raise ProjectionError(f"summary {summary.message_id}: tail {tail} not before it")
    return (summary, *(m for m in messages[start:] if not is_summary(m)))


def project(messages: Sequence[CanonicalMessage]) -> tuple[neutral.ProjectedMessage, ...]:
    """The provider-neutral history for ``messages`` (the system prompt travels separately)."""
    out: list[neutral.ProjectedMessage] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        content = message.content
        if message.role is Role.SYSTEM:
            raise ProjectionError(f"system message {message.message_id} in stored history")
        if isinstance(content, AssistantContent) and content.tool_calls:
            if content.tool_round_id is None:
                raise ProjectionError(f"tool call without a round in {message.message_id}")
            i = _project_round(messages, i, out)
            continue
        if isinstance(content, AssistantContent):
            out.append(
                neutral.AssistantMessage(
                    text=content.text, thinking=content.thinking, replay=content.replay_state
                )
            )
        elif isinstance(content, PartsContent):
            out.append(neutral.UserMessage(tuple(_part(p) for p in content.parts)))
        else:
            raise ProjectionError(f"tool result {content.call_id} outside its tool round")
        i += 1
    return tuple(out)


def _part(part: TextPart | ImagePart) -> neutral.ProviderTextPart | neutral.ProviderImagePart:
    if isinstance(part, TextPart):
        return neutral.ProviderTextPart(part.text)
    return _image(part)


def _image(part: ImagePart) -> neutral.ProviderImagePart:
    return neutral.ProviderImagePart(part.mime_type, part.data)


def _project_round(
    messages: Sequence[CanonicalMessage], start: int, out: list[neutral.ProjectedMessage]
) -> int:
    """Regroup the round starting at ``start``; returns the index after it."""
    first = messages[start].content
    assert isinstance(first, AssistantContent)
    round_id = first.tool_round_id
    calls: list[CanonicalToolCall] = []
    results: list[ToolResultContent] = []
    text: list[str] = []
    thinking: list[str] = []
    replay: ReplayState | None = None
    i = start
    while i < len(messages):
        content = messages[i].content
        if isinstance(content, AssistantContent) and content.tool_round_id == round_id:
            if not content.tool_calls:
                break
            calls.extend(content.tool_calls)
            text.append(content.text)
            thinking.append(content.thinking)
            if content.replay_state is not None:
                if replay is not None:
                    raise ProjectionError(f"tool round {round_id} repeats its replay state")
                replay = content.replay_state
        elif isinstance(content, ToolResultContent) and any(
            c.call_id == content.call_id for c in calls
        ):
            if any(r.call_id == content.call_id for r in results):
                raise ProjectionError(f"duplicate result for tool call {content.call_id}")
            results.append(content)
        else:
            break
        i += 1
    answered = {r.call_id for r in results}
    for call in calls:
        if call.call_id not in answered:
            raise ProjectionError(f"tool call {call.call_id} has no result")
    out.append(
        neutral.AssistantMessage(
            text="".join(text),
            thinking="".join(thinking),
            replay=replay,
            calls=tuple(
                neutral.ProviderToolCall(c.index, c.call_id, c.name, c.arguments)
                for c in sorted(calls, key=lambda c: c.index)
            ),
        )
    )
    out.extend(
        neutral.ToolResultMessage(r.call_id, r.name, r.content, tuple(_image(i) for i in r.images))
        for r in results
    )
    return i
