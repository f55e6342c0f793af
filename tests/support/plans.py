"""What the plan-action and async-answer tests share: RunRequests for the actions, and reading
what the model was sent."""

from __future__ import annotations

from typing import Any

from tests.support.formats import GEMINI
from wire.proto import agent_v1_pb2 as agent


def action_message(
    model_id: str,
    state: agent.ConversationStateStructure | None,
    *,
    conversation_id: str = "conv-1",
    **action: Any,
) -> agent.AgentClientMessage:
    """A RunRequest carrying one ConversationAction variant (``execute_plan_action=...``)."""
    request = agent.AgentRunRequest(
        conversation_id=conversation_id,
        conversation_state=state,
        action=agent.ConversationAction(**action),
        requested_model=agent.RequestedModel(model_id=model_id),
    )
    return agent.AgentClientMessage(run_request=request)


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user message of a request body, in any of the four formats (tool
    results, which Anthropic and Gemini send as user messages, left out)."""
    if "contents" in body:
        return GEMINI.user_texts(body)
    items = body.get("messages") or body.get("input") or []
    texts = []
    for item in items:
        if item.get("role") != "user":
            continue
        content = item["content"]
        if isinstance(content, str):
            texts.append(content)
            continue
        parts = [p for p in content if p.get("type") in ("text", "input_text")]
        if parts:
            texts.append("".join(p["text"] for p in parts))
    return texts
