"""OpenAI Chat Completions (``POST {base}/chat/completions``), also what most compatible
servers speak. Reasoning is read from ``delta.reasoning_content`` and replayed in the same field.

``reasoning_content`` is not in OpenAI's schema: DeepSeek and Kimi require it back on an
assistant message with tool calls, while servers that refuse unknown message keys (OpenAI's own
API, Mistral, Groq) answer 400 to it. So the replay state records which endpoint streamed it
(``origin``, a digest of the base URL) and is sent back only to that endpoint, and only while
the provider's ``replay_reasoning`` setting is on.

OpenRouter streams its reasoning as ``delta.reasoning`` (text) and ``delta.reasoning_details``
(typed objects, some signed or encrypted, in fragments sharing an ``index``). The text is shown
as thinking; the details, their fragments joined per index, go back to the same endpoint on
the assistant message as ``reasoning_details``, OpenRouter's own field (without details, the
text goes back in the field it came in).
"""

from __future__ import annotations

import hashlib
from typing import Any

from actors.conversation.events import (
    CallDone,
    FinishReason,
    ProviderEvent,
    ReplayStateReported,
    TextDelta,
    TextEnded,
    TextStarted,
    ThinkingDelta,
    ThinkingEnded,
    ThinkingStarted,
    ToolCallArgumentsDelta,
    ToolCallEnded,
    ToolCallStarted,
    Usage,
    UsageReported,
)
from actors.conversation.model import ReplayState
from actors.conversation.request import (
    AssistantMessage,
    HttpCall,
    LlmRequest,
    ModelRoute,
    ProviderImagePart,
    ProviderTextPart,
    ToolResultMessage,
    UserMessage,
)
from wire.providers.adapter import (
    SseJsonDecoder,
    bearer_auth,
    check_route,
    data_url,
    encode_body,
    endpoint,
    error_text,
    http_failure,
    json_headers,
    replay_value,
)
from wire.providers.errors import ProviderFailure
from wire.providers.sse import ServerSentEvent

NAME = "OpenAI Chat"
REPLAY_KIND = "openai_chat"
REASONING_KEY = "reasoning_content"
OPENROUTER_REASONING_KEY = "reasoning"
DETAILS_KEY = "reasoning_details"
ORIGIN_KEY = "origin"
# The string fields of a reasoning detail that its stream fragments continue.
_DETAIL_TEXT_FIELDS = ("text", "summary", "data")

_FINISH = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_USE,
    "function_call": FinishReason.TOOL_USE,
}


class OpenAiChatAdapter:
    name = NAME
    # The setting decides whether ``reasoning_content`` goes back (see the module docstring).
    honours_replay_reasoning = True

    def build_call(self, request: LlmRequest, route: ModelRoute) -> HttpCall:
        check_route(NAME, route)
        body: dict[str, Any] = {
            "model": route.model_id,
            "messages": _messages(request, route),
            "stream": True,
            # Without it the stream carries no token counts at all.
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                }
                for tool in request.tools
            ]
        if route.max_output_tokens is not None:
            body["max_completion_tokens"] = route.max_output_tokens
        if route.reasoning.effort is not None:
            body["reasoning_effort"] = route.reasoning.effort
        if route.prompt_cache_key and request.cache_key is not None:
            body["prompt_cache_key"] = request.cache_key
        auth = bearer_auth(route)
        return HttpCall(
            method="POST",
            url=endpoint(route, "/chat/completions"),
            headers=json_headers(auth, route),
            body=encode_body(body),
        )

    def new_decoder(self, route: ModelRoute) -> ChatDecoder:
        return ChatDecoder(origin(route))

    def http_error(self, status: int, body: bytes, route: ModelRoute) -> ProviderFailure:
        return http_failure(NAME, status, body, route)


def origin(route: ModelRoute) -> str:
    """Which endpoint streamed a reasoning text: 16 hex digits of SHA-256 of the base URL (the
    URL itself stays out of the conversation state, which the editor keeps too)."""
    return hashlib.sha256(route.base_url.encode()).hexdigest()[:16]


def _replayed_reasoning(message: AssistantMessage, here: str | None) -> dict[str, Any]:
    """The reasoning fields to send back with ``message``, if endpoint ``here`` streamed them
    (``here`` is None when the provider's replay is off).

    A state recorded before origins existed has none; it came from an OpenAI Chat provider of
    the same conversation and is replayed as it always was.
    """
    state = message.replay
    if state is None or state.provider_kind != REPLAY_KIND:
        return {}
    fields = _reasoning_fields(state)
    source = state.value.get(ORIGIN_KEY)
    if here is None or (source is not None and source != here):
        return {}
    return fields


def _reasoning_fields(state: ReplayState) -> dict[str, Any]:
    """The fields a state of ours replays: the details if any, else the text in its field."""
    details = state.value.get(DETAILS_KEY)
    if details is not None:
        return {DETAILS_KEY: replay_value(NAME, state, REPLAY_KIND, DETAILS_KEY, list)}
    key = OPENROUTER_REASONING_KEY if OPENROUTER_REASONING_KEY in state.value else REASONING_KEY
    return {key: replay_value(NAME, state, REPLAY_KIND, key, str)}


def _messages(request: LlmRequest, route: ModelRoute) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    here = origin(route) if route.replay_reasoning else None  # once per request
    if request.instructions:
        out.append({"role": "system", "content": request.instructions})
    shown: list[ToolResultMessage] = []  # this round's results with images, not yet sent
    for message in request.messages:
        if shown and not isinstance(message, ToolResultMessage):
            out.append(_result_images(shown))
            shown = []
        match message:
            case UserMessage(parts=parts):
                out.append({"role": "user", "content": _user_content(parts)})
            case AssistantMessage():
                out.append(_assistant(message, _replayed_reasoning(message, here)))
            case ToolResultMessage(call_id=call_id, content=content):
                out.append({"role": "tool", "tool_call_id": call_id, "content": content})
                if message.images:
                    shown.append(message)
            case _:
                raise TypeError(f"not a projected message: {type(message).__name__}")
    if shown:
        out.append(_result_images(shown))
    return out


def _result_images(results: list[ToolResultMessage]) -> dict[str, Any]:
    """The images of a round's results, as one user message after its last tool message.

    A Chat Completions tool message holds only text, and the tool messages must follow their
    assistant message without a break, so the images come right after them, each result's
    under a line naming its call."""
    content: list[dict[str, Any]] = []
    for result in results:
        text = f"The image(s) returned by tool call {result.call_id} ({result.name}):"
        content.append({"type": "text", "text": text})
        for image in result.images:
            url = data_url(image.mime_type, image.data)
            content.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "user", "content": content}


def _user_content(
    parts: tuple[ProviderTextPart | ProviderImagePart, ...],
) -> str | list[dict[str, Any]]:
    """A plain string when there is only text (what every compatible server accepts)."""
    if all(isinstance(part, ProviderTextPart) for part in parts):
        return "".join(part.text for part in parts if isinstance(part, ProviderTextPart))
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, ProviderTextPart):
            content.append({"type": "text", "text": part.text})
        else:
            url = data_url(part.mime_type, part.data)
            content.append({"type": "image_url", "image_url": {"url": url}})
    return content


def _assistant(message: AssistantMessage, reasoning: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "role": "assistant",
        # null, not "", beside tool calls: some compatible servers refuse an empty string.
        "content": message.text if message.text or not message.calls else None,
    }
    entry.update(reasoning)
    if message.calls:
        entry["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json},
            }
            for call in message.calls
        ]
    return entry


class ChatDecoder(SseJsonDecoder):
    """Chunks carry deltas of ``choices[0]``; the stream ends with ``data: [DONE]``, after the
    finish chunk and the usage chunk. [DONE] is required: without it a stream cut after the
    finish chunk would silently lose its usage."""

    name = NAME
    terminal = "[DONE]"

    def __init__(self, origin: str) -> None:
        super().__init__()
        self._origin = origin
        self._text_open = False
        self._thinking_open = False
        self._reasoning: list[str] = []
        self._reasoning_key = REASONING_KEY
        self._details: list[dict[str, Any]] = []
        self._refusal: list[str] = []
        self._tools: list[int] = []
        self._finish: FinishReason | None = None
        self._usage: Usage | None = None

    def on_event(
        self, event: ServerSentEvent, data: dict[str, Any], out: list[ProviderEvent]
    ) -> None:
        if data.get("error") is not None:
            raise self.stream_error(f"stream error: {error_text(data)}", data)
        if data.get("usage") is not None:
            self._usage = self._read_usage(self.obj(data, "usage", "chunk"))
        choices = data.get("choices")
        if choices is None and "usage" in data:
            return
        if not isinstance(choices, list):
            raise self.protocol("chunk is missing list choices")
        if not choices:
            return
        choice = choices[0]
        if not isinstance(choice, dict):
            raise self.protocol("chunk has a choice that is not an object")
        delta = choice.get("delta")
        if delta is not None:
            if not isinstance(delta, dict):
                raise self.protocol("chunk has a delta that is not an object")
            self._delta(delta, out)
        reason = self.optional_string(choice, "finish_reason", "choice")
        if reason is not None:
            self._finish = self._map_finish(reason)

    def _delta(self, delta: dict[str, Any], out: list[ProviderEvent]) -> None:
        reasoning = self.optional_string(delta, REASONING_KEY, "delta")
        if not reasoning:
            reasoning = self.optional_string(delta, OPENROUTER_REASONING_KEY, "delta")
            if reasoning:
                self._reasoning_key = OPENROUTER_REASONING_KEY
        details = delta.get(DETAILS_KEY)
        if details is not None:
            if not isinstance(details, list):
                raise self.protocol(f"delta has {DETAILS_KEY} that is not a list")
            for detail in details:
                self._detail(detail)
        if reasoning:
            self._close_text(out)
            if not self._thinking_open:
                self._thinking_open = True
                out.append(ThinkingStarted())
            self._reasoning.append(reasoning)
            out.append(ThinkingDelta(reasoning))
        content = self.optional_string(delta, "content", "delta")
        if content:
            self._close_thinking(out)
            if not self._text_open:
                self._text_open = True
                out.append(TextStarted())
            out.append(TextDelta(content))
        refusal = self.optional_string(delta, "refusal", "delta")
        if refusal:
            self._refusal.append(refusal)
        calls = delta.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise self.protocol("delta has tool_calls that is not a list")
            for call in calls:
                self._tool_delta(call, out)

    def _detail(self, detail: Any) -> None:
        """One reasoning detail, or the next fragment of the last one (same index and type)."""
        if not isinstance(detail, dict):
            raise self.protocol(f"delta has a {DETAILS_KEY} entry that is not an object")
        self.string(detail, "type", DETAILS_KEY)
        last = self._details[-1] if self._details else None
        index = detail.get("index")
        if (
            last is None
            or index is None
            or last.get("index") != index
            or last.get("type") != detail["type"]
        ):
            self._details.append(dict(detail))
            return
        for key, value in detail.items():
            if key in _DETAIL_TEXT_FIELDS and isinstance(value, str):
                before = last.get(key)
                last[key] = before + value if isinstance(before, str) else value
            elif value is not None:
                last[key] = value

    def _tool_delta(self, call: Any, out: list[ProviderEvent]) -> None:
        if not isinstance(call, dict):
            raise self.protocol("tool call delta is not an object")
        index = self.integer(call, "index", "tool call delta")
        function = call.get("function") or {}
        if not isinstance(function, dict):
            raise self.protocol("tool call delta has a function that is not an object")
        if index not in self._tools:
            self._close_thinking(out)
            self._close_text(out)
            call_id = self.nonempty(call, "id", f"tool call {index}")
            name = self.nonempty(function, "name", f"tool call {index} function")
            self._tools.append(index)
            out.append(ToolCallStarted(index=index, call_id=call_id, name=name))
        # Later chunks of a call may repeat its id and name; only arguments accumulate.
        arguments = self.optional_string(function, "arguments", f"tool call {index} function")
        if arguments:
            out.append(ToolCallArgumentsDelta(index=index, delta=arguments))

    def _map_finish(self, reason: str) -> FinishReason:
        if reason == "content_filter":
            raise self.provider("stopped the answer: finish_reason content_filter")
        finish = _FINISH.get(reason)
        if finish is None:
            raise self.protocol(f"sent an unknown finish_reason {reason!r}")
        return finish

    def _read_usage(self, usage: dict[str, Any]) -> Usage:
        where = "usage"
        return Usage(
            input_tokens=self.count(usage, ("prompt_tokens",), where),
            output_tokens=self.count(usage, ("completion_tokens",), where),
            cache_read_tokens=self.count(usage, ("prompt_tokens_details", "cached_tokens"), where),
            reasoning_tokens=self.count(
                usage, ("completion_tokens_details", "reasoning_tokens"), where
            ),
        )

    def on_done_marker(self, out: list[ProviderEvent]) -> None:
        if self.finished:
            raise self.protocol("sent [DONE] twice")
        if self._refusal:
            raise self.provider(f"model refused: {''.join(self._refusal)}")
        if self._finish is None:
            raise self.provider("stream sent [DONE] without a finish_reason")
        self._close_thinking(out)
        self._close_text(out)
        out.extend(ToolCallEnded(index) for index in sorted(self._tools))
        if self._usage is not None:
            out.append(UsageReported(self._usage))
        if self._reasoning or self._details:
            value: dict[str, Any] = {ORIGIN_KEY: self._origin}
            if self._reasoning:
                value[self._reasoning_key] = "".join(self._reasoning)
            if self._details:
                value[DETAILS_KEY] = self._details
            out.append(ReplayStateReported(ReplayState(REPLAY_KIND, value)))
        out.append(CallDone(self._finish))
        self.finished = True

    def _close_text(self, out: list[ProviderEvent]) -> None:
        if self._text_open:
            self._text_open = False
            out.append(TextEnded())

    def _close_thinking(self, out: list[ProviderEvent]) -> None:
        if self._thinking_open:
            self._thinking_open = False
            out.append(ThinkingEnded())
