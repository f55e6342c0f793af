"""What the console's model checks send and how their answers are judged; no IO.

Every request is built the way a turn builds one: canonical messages (``actors.conversation
.model``) projected by ``actors.conversation.projection`` into an ``LlmRequest``. The tool check's
second request holds the model's own assistant message as a committed tool round would (one
``assistant(call) -> tool(result)`` pair per call, the first pair carrying the text, thinking and
replay state), so the adapter replays the reasoning in the provider's native field exactly as it
would in a turn: Chat ``reasoning_content``, Responses reasoning items, Anthropic thinking blocks
with their signatures.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from actors.conversation.events import FinishReason
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    ReplayState,
    Role,
    TextPart,
    ToolResultContent,
)
from actors.conversation.projection import project
from actors.conversation.request import (
    LlmRequest,
    ModelRoute,
    ProviderType,
    ToolSpec,
    conversation_cache_key,
)
from wire.providers.grammar import CallResult
from wire.providers.redaction import route_secrets, scrub_text

PING_INSTRUCTIONS = "You are a connection test. Do exactly what the user asks."
PING_PROMPT = "Reply with the single word: pong"

TOOL_NAME = "get_weather"
WEATHER_TOOL = ToolSpec(
    name=TOOL_NAME,
    description="Get the current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city, e.g. Paris"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
TOOL_INSTRUCTIONS = (
    "You are checking tool use. When a question needs a tool, call it; never guess its result."
)
TOOL_PROMPT = (
    "What is the weather in Paris right now? You cannot know it without calling the "
    f"{TOOL_NAME} tool: call it, then answer in one sentence from its result."
)
WEATHER_RESULT = '{"temperature_c": 18, "conditions": "partly cloudy"}'
ROUND_ID = "console-check:round"
# The checks send a prompt-cache key where a turn would, so a server that refuses it fails here.
CHECK_CACHE_KEY = conversation_cache_key("console-check")

# How much of the model's answer a step's detail quotes.
QUOTE_MAX_CHARS = 200

STEP_TOOL_CALL = "tool call"
STEP_REPLAY = "tool result replay"
DID_NOT_CALL = "the model did not call the tool"
NOT_RUN = "not run: the tool call step failed"
STOPPED_AT_LIMIT = "the model stopped at its output limit before completing the response"

# Where each format replays reasoning, for the details.
_NATIVE_FIELD = {
    "openai_chat": "Chat reasoning_content",
    "openai_responses": "Responses reasoning items",
    "anthropic": "Anthropic thinking blocks with signatures",
    "gemini": "Gemini parts with their thought signatures",
}


class Step(msgspec.Struct, frozen=True):
    """One step's verdict; ``call_id`` is its ``llm_calls`` row (None when it did not run)."""

    name: str
    ok: bool
    detail: str
    call_id: int | None = None


def _user(message_id: str, text: str) -> CanonicalMessage:
    return CanonicalMessage(message_id, Role.USER, Origin.USER, PartsContent((TextPart(text),)))


def ping_request() -> LlmRequest:
    """The Test's one small request: no tools, one short user message."""
    messages = project([_user("console-check:ping", PING_PROMPT)])
    return LlmRequest(PING_INSTRUCTIONS, (), messages, CHECK_CACHE_KEY)


def _tool_history() -> list[CanonicalMessage]:
    return [_user("console-check:user", TOOL_PROMPT)]


def tool_call_request() -> LlmRequest:
    """Step 1: a prompt the model can only answer by calling the dummy tool."""
    return LlmRequest(TOOL_INSTRUCTIONS, (WEATHER_TOOL,), project(_tool_history()), CHECK_CACHE_KEY)


def replay_request(result: CallResult, model_call_id: str) -> LlmRequest:
    """Step 2: step 1's assistant message with its calls and replay state, then the results,
    committed as a turn's tool round would be and projected like a turn's history."""
    messages = _tool_history()
    for position, call in enumerate(result.calls):
        first = position == 0
        canonical = CanonicalToolCall(
            call.index, call.call_id, call.name, call.arguments_json, model_call_id
        )
        assistant = AssistantContent(
            text=result.text if first else "",
            thinking=result.thinking if first else "",
            tool_round_id=ROUND_ID,
            replay_state=result.replay if first else None,
            tool_calls=(canonical,),
        )
        messages.append(
            CanonicalMessage(
                f"{ROUND_ID}:{call.call_id}:assistant", Role.ASSISTANT, Origin.ASSISTANT, assistant
            )
        )
        messages.append(
            CanonicalMessage(
                f"{ROUND_ID}:{call.call_id}:result",
                Role.TOOL,
                Origin.TOOL,
                ToolResultContent(call.call_id, call.name, WEATHER_RESULT, False),
            )
        )
    return LlmRequest(TOOL_INSTRUCTIONS, (WEATHER_TOOL,), project(messages), CHECK_CACHE_KEY)


def quoted(text: str, route: ModelRoute) -> str:
    """The model's text as a detail quotes it: credentials removed, shortened."""
    text = scrub_text(text, route_secrets(route))
    if len(text) > QUOTE_MAX_CHARS:
        text = text[:QUOTE_MAX_CHARS] + "…"
    return repr(text)


def _reasoning_note(replay: ReplayState | None, route: ModelRoute) -> str:
    if replay is None:
        return "; it returned no reasoning to replay"
    field = _NATIVE_FIELD.get(replay.provider_kind, replay.provider_kind)
    if route.provider_type is ProviderType.OPENAI_CHAT and not route.replay_reasoning:
        return (
            f"; it returned reasoning ({field}), which is not sent back: the provider's "
            "replay_reasoning is off"
        )
    return f"; its reasoning is replayed as {field}"


def judge_tool_call(result: CallResult, route: ModelRoute) -> Step:
    """Step 1 completed: did the model call the offered tool, and only that one?"""
    if result.finish is FinishReason.LENGTH:
        return Step(STEP_TOOL_CALL, False, STOPPED_AT_LIMIT)
    if not result.calls:
        answered = f": it answered {quoted(result.text, route)}" if result.text else ""
        return Step(STEP_TOOL_CALL, False, DID_NOT_CALL + answered)
    others = sorted({call.name for call in result.calls if call.name != TOOL_NAME})
    if others:
        names = ", ".join(quoted(name, route) for name in others)
        return Step(STEP_TOOL_CALL, False, f"the model called {names}, which it was not offered")
    calls = ", ".join(
        f"{TOOL_NAME}({scrub_text(call.arguments_json, route_secrets(route))})"
        for call in result.calls
    )
    return Step(
        STEP_TOOL_CALL, True, f"the model called {calls}{_reasoning_note(result.replay, route)}"
    )


def judge_replay(result: CallResult, route: ModelRoute) -> Step:
    """Step 2 completed: the provider took the tool result and the replayed message."""
    if result.finish is FinishReason.LENGTH:
        return Step(STEP_REPLAY, False, STOPPED_AT_LIMIT)
    if result.calls:
        answer = f"the model called {TOOL_NAME} again"
    else:
        answer = f"the model answered {quoted(result.text, route)}"
    return Step(STEP_REPLAY, True, f"the provider accepted the tool result; {answer}")


def overall(steps: Sequence[Step]) -> bool:
    return all(step.ok for step in steps)
