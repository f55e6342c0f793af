"""OpenAI Responses (``POST {base}/responses``), used statelessly.

We send ``store: false`` and never ``previous_response_id``: the conversation lives in our own
store, every request carries the whole history, and nothing is kept at the provider. Reasoning
survives between calls because we ask for ``reasoning.encrypted_content`` and send the reasoning
items back verbatim; a reasoning item without it cannot be replayed statelessly (its id refers
to nothing stored), so it is not kept.

Bodies conform to OpenAI's published ``CreateResponse`` schema, which servers validating against
the SDK's types (vLLM, gateways) enforce: replayed assistant text is the easy input message form
(``{"role": "assistant", "content": text}``), image parts carry ``detail``, and ``include`` is
sent only when reasoning is asked for or a reasoning item is replayed (a model without reasoning
may refuse it).
"""

from __future__ import annotations

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
    NO_EFFORT,
    AssistantMessage,
    HttpCall,
    LlmRequest,
    ModelRoute,
    ProviderTextPart,
    Reasoning,
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
    finish_for,
    http_failure,
    json_headers,
    replay_value,
)
from wire.providers.errors import ProviderFailure
from wire.providers.sse import ServerSentEvent

NAME = "OpenAI Responses"
REPLAY_KIND = "openai_responses"
ENCRYPTED_REASONING = "reasoning.encrypted_content"

_THINKING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
_THINKING_DONES = ("response.reasoning_summary_text.done", "response.reasoning_text.done")


class OpenAiResponsesAdapter:
    name = NAME
    # Its reasoning replay is the format's own, always sent: the setting has no say.
    honours_replay_reasoning = False

    def build_call(self, request: LlmRequest, route: ModelRoute) -> HttpCall:
        check_route(NAME, route)
        items = _input(request)
        body: dict[str, Any] = {
            "model": route.model_id,
            "input": items,
            "stream": True,
            "store": False,
        }
        reasoning = _reasoning(route.reasoning)
        if reasoning is not None or any(item.get("type") == "reasoning" for item in items):
            body["include"] = [ENCRYPTED_REASONING]
        if request.instructions:
            body["instructions"] = request.instructions
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "strict": False,
                }
                for tool in request.tools
            ]
        if route.max_output_tokens is not None:
            body["max_output_tokens"] = route.max_output_tokens
        if reasoning is not None:
            body["reasoning"] = reasoning
        elif route.reasoning.effort == NO_EFFORT:
            body["reasoning"] = {"effort": NO_EFFORT}
        if route.prompt_cache_key and request.cache_key is not None:
            body["prompt_cache_key"] = request.cache_key
        auth = bearer_auth(route)
        return HttpCall(
            method="POST",
            url=endpoint(route, "/responses"),
            headers=json_headers(auth, route),
            body=encode_body(body),
        )

    def new_decoder(self, route: ModelRoute) -> ResponsesDecoder:
        return ResponsesDecoder()

    def http_error(self, status: int, body: bytes, route: ModelRoute) -> ProviderFailure:
        return http_failure(NAME, status, body, route)


def _reasoning(reasoning: Reasoning) -> dict[str, Any] | None:
    """The ``reasoning`` object when reasoning is asked for (effort ``none`` asks for none)."""
    if reasoning.effort == NO_EFFORT or not (reasoning.enabled or reasoning.effort is not None):
        return None
    asked: dict[str, Any] = {"summary": "auto"}
    if reasoning.effort is not None:
        asked["effort"] = reasoning.effort
    return asked


def _input(request: LlmRequest) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in request.messages:
        match message:
            case UserMessage(parts=parts):
                content: list[dict[str, Any]] = []
                for part in parts:
                    if isinstance(part, ProviderTextPart):
                        if part.text:
                            content.append({"type": "input_text", "text": part.text})
                    else:
                        url = data_url(part.mime_type, part.data)
                        # "auto" is the API's default; the schema requires the field.
                        content.append({"type": "input_image", "image_url": url, "detail": "auto"})
                if content:
                    items.append({"type": "message", "role": "user", "content": content})
            case AssistantMessage():
                items.extend(_assistant(message))
            case ToolResultMessage():
                items.append(_function_call_output(message))
            case _:
                raise TypeError(f"not a projected message: {type(message).__name__}")
    return items


def _function_call_output(result: ToolResultMessage) -> dict[str, Any]:
    """A result's text as its output string, or, with images, a list of input content: the
    text, then each image (the schema's function_call_output takes either)."""
    output: str | list[dict[str, Any]] = result.content
    if result.images:
        parts: list[dict[str, Any]] = []
        if result.content:
            parts.append({"type": "input_text", "text": result.content})
        for image in result.images:
            url = data_url(image.mime_type, image.data)
            parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
        output = parts
    return {"type": "function_call_output", "call_id": result.call_id, "output": output}


def replayable(item: dict[str, Any]) -> bool:
    """Whether a reasoning item can go back statelessly: with its ``encrypted_content``, or
    with readable ``content`` (vLLM's, which never encrypts). An item with neither is only an
    id of a stored item, and with ``store: false`` nothing is stored: replaying it fails."""
    return bool(item.get("encrypted_content") or item.get("content"))


def _assistant(message: AssistantMessage) -> list[dict[str, Any]]:
    """Reasoning items first (verbatim), then the text, then the calls: the order they had."""
    replayed = replay_value(NAME, message.replay, REPLAY_KIND, "items", list) or ()
    # Items recorded before the decoder filtered them are filtered here too.
    items: list[dict[str, Any]] = [
        item for item in replayed if not isinstance(item, dict) or replayable(item)
    ]
    if message.text:
        # The easy input form: an output message would need an id and a status we never had
        # (the call was not stored), and output_text is not an input content type.
        items.append({"role": "assistant", "content": message.text})
    items.extend(
        {
            "type": "function_call",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments_json,
        }
        for call in message.calls
    )
    return items


class ResponsesDecoder(SseJsonDecoder):
    """Typed events (``data.type``, else the SSE event name); tool calls are output items
    indexed by ``output_index``. Terminal: ``response.completed`` or ``response.incomplete``
    (the output limit: a call still open ends with the arguments it got, finish LENGTH)."""

    name = NAME
    terminal = "response.completed"

    def __init__(self) -> None:
        super().__init__()
        self._text_open = False
        self._thinking_open = False
        self._open_tools: dict[int, int] = {}  # output_index -> argument characters streamed
        self._any_tool = False
        self._reasoning_items: list[dict[str, Any]] = []

    def on_event(  # noqa: C901 (one branch per Responses event type)
        self, event: ServerSentEvent, data: dict[str, Any], out: list[ProviderEvent]
    ) -> None:
        kind = data.get("type", event.event)
        if kind == "response.output_text.delta":
            self._close_thinking(out)
            if not self._text_open:
                self._text_open = True
                out.append(TextStarted())
            out.append(TextDelta(self.string(data, "delta", kind)))
        elif kind == "response.output_text.done":
            self._close_text(out)
        elif kind in _THINKING_DELTAS:
            self._close_text(out)
            if not self._thinking_open:
                self._thinking_open = True
                out.append(ThinkingStarted())
            out.append(ThinkingDelta(self.string(data, "delta", kind)))
        elif kind in _THINKING_DONES:
            self._close_thinking(out)
        elif kind == "response.output_item.added":
            self._item_added(data, out)
        elif kind == "response.output_item.done":
            self._item_done(data, out)
        elif kind == "response.function_call_arguments.delta":
            index = self._tool_index(data, kind)
            delta = self.string(data, "delta", kind)
            if delta:
                self._open_tools[index] += len(delta)
                out.append(ToolCallArgumentsDelta(index=index, delta=delta))
        elif kind == "response.function_call_arguments.done":
            self._end_tool(self._tool_index(data, kind), data, out)
        elif kind == "response.refusal.done":
            raise self.provider(f"model refused: {data.get('refusal', '')}")
        elif kind == "response.completed":
            self._terminal(data, FinishReason.STOP, out)
        elif kind == "response.incomplete":
            self._terminal(data, FinishReason.LENGTH, out)
        elif kind == "response.failed":
            response = data.get("response")
            error = response.get("error") if isinstance(response, dict) else None
            detail = error_text({"error": error}) if error else "no error details"
            raise self.stream_error(f"failed: {detail}", data)
        elif kind == "error":
            raise self.stream_error(f"stream error: {error_text(data)}", data)
        # Lifecycle and bookkeeping events (created, in_progress, content_part.*, …) carry
        # nothing the canonical stream needs.

    def _item_added(self, data: dict[str, Any], out: list[ProviderEvent]) -> None:
        item = self.obj(data, "item", "response.output_item.added")
        if item.get("type") != "function_call":
            return
        where = "function_call item"
        index = self.integer(data, "output_index", "response.output_item.added")
        call_id = self.nonempty(item, "call_id", where)
        name = self.nonempty(item, "name", where)
        if index in self._open_tools:
            raise self.protocol(f"opened output_index {index} twice")
        self._close_thinking(out)
        self._close_text(out)
        self._open_tools[index] = 0
        self._any_tool = True
        out.append(ToolCallStarted(index=index, call_id=call_id, name=name))
        arguments = self.optional_string(item, "arguments", where)
        if arguments:
            self._open_tools[index] += len(arguments)
            out.append(ToolCallArgumentsDelta(index=index, delta=arguments))

    def _item_done(self, data: dict[str, Any], out: list[ProviderEvent]) -> None:
        item = self.obj(data, "item", "response.output_item.done")
        if item.get("type") == "reasoning":
            # Kept whole: id, summary and encrypted_content go back verbatim next time.
            if replayable(item):
                self._reasoning_items.append(item)
        elif item.get("type") == "function_call":
            index = self.integer(data, "output_index", "response.output_item.done")
            if index in self._open_tools:
                self._end_tool(index, item, out)

    def _tool_index(self, data: dict[str, Any], kind: str) -> int:
        index = self.integer(data, "output_index", kind)
        if index not in self._open_tools:
            raise self.protocol(f"sent {kind} for output_index {index}, which is not an open call")
        return index

    def _end_tool(self, index: int, data: dict[str, Any], out: list[ProviderEvent]) -> None:
        """Close a call; a server that streamed no argument deltas gets its final text sent."""
        if not self._open_tools[index]:
            arguments = self.optional_string(data, "arguments", "function call done")
            if arguments:
                out.append(ToolCallArgumentsDelta(index=index, delta=arguments))
        del self._open_tools[index]
        out.append(ToolCallEnded(index))

    def _terminal(
        self, data: dict[str, Any], finish: FinishReason, out: list[ProviderEvent]
    ) -> None:
        kind = data.get("type", "terminal event")
        response = self.obj(data, "response", kind)
        if finish is FinishReason.LENGTH:
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            if reason == "content_filter":
                raise self.provider("stopped the answer: incomplete (content_filter)")
            self._close_thinking(out)
            self._close_text(out)
            # A call the limit stopped mid-way ends with the arguments it got: the turn answers
            # it with an error asking for a smaller call (``actors.turn.length``).
            for index in sorted(self._open_tools):
                out.append(ToolCallEnded(index))
            self._open_tools.clear()
        elif self._text_open or self._thinking_open or self._open_tools:
            raise self.protocol("completed with an output item still open")
        usage = response.get("usage")
        if usage is not None:
            if not isinstance(usage, dict):
                raise self.protocol(f"{kind} has a usage that is not an object")
            out.append(UsageReported(self._read_usage(usage)))
        if self._reasoning_items:
            state = ReplayState(REPLAY_KIND, {"items": self._reasoning_items})
            out.append(ReplayStateReported(state))
        if finish is FinishReason.STOP:
            finish = finish_for(self._any_tool)
        out.append(CallDone(finish))
        self.finished = True

    def _read_usage(self, usage: dict[str, Any]) -> Usage:
        where = "usage"
        return Usage(
            input_tokens=self.count(usage, ("input_tokens",), where),
            output_tokens=self.count(usage, ("output_tokens",), where),
            cache_read_tokens=self.count(usage, ("input_tokens_details", "cached_tokens"), where),
            reasoning_tokens=self.count(
                usage, ("output_tokens_details", "reasoning_tokens"), where
            ),
        )

    def _close_text(self, out: list[ProviderEvent]) -> None:
        if self._text_open:
            self._text_open = False
            out.append(TextEnded())

    def _close_thinking(self, out: list[ProviderEvent]) -> None:
        if self._thinking_open:
            self._thinking_open = False
            out.append(ThinkingEnded())
