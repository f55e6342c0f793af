"""The history a summary call reads, as plain text messages.

A summary call offers no tools, and providers refuse tool blocks in a request without tools
(Anthropic: "Requests which include `tool_use` or `tool_result` blocks must define tools"), so
the part to summarise cannot be sent as it is projected for a model call. Each tool call
becomes a line of its assistant message and each result a user message naming its call, in
the same order; reasoning and its replay state are left out (the summary call reasons not,
and a signature means nothing outside the request it came from). Images stay as they are.
"""

from __future__ import annotations

from collections.abc import Iterable

from actors.conversation.request import (
    AssistantMessage,
    ProjectedMessage,
    ProviderTextPart,
    ToolResultMessage,
    UserMessage,
)


def summary_input(messages: Iterable[ProjectedMessage]) -> tuple[ProjectedMessage, ...]:
    """``messages`` without tool blocks or reasoning: calls and results written out."""
    out: list[ProjectedMessage] = []
    for message in messages:
        match message:
            case UserMessage():
                out.append(message)
            case AssistantMessage(text=text, calls=calls):
                lines = [text] if text else []
                lines.extend(
                    f"[called {c.name} (call {c.call_id}) with {c.arguments_json or '{}'}]"
                    for c in calls
                )
                if lines:
                    out.append(AssistantMessage(text="\n".join(lines)))
            case ToolResultMessage(call_id=call_id, name=name, content=content, images=images):
                head = ProviderTextPart(f"[result of {name} (call {call_id})]\n{content}")
                out.append(UserMessage((head, *images)))
    return tuple(out)
