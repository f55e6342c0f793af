"""Anthropic Messages (``POST {base}/messages``, ``anthropic-version: 2023-06-01``).

Two request choices, both so that the server never invents a number:

- ``max_tokens`` is required by the API, so a model without ``max_output_tokens`` cannot be
  called (a CONFIG failure names the setting) instead of getting a made-up limit.
- Reasoning is requested as ``thinking: {"type": "adaptive", "display": "summarized"}``: the model
  decides how much to think (``output_config.effort`` steers it when an effort is set), so no
  ``budget_tokens`` has to be guessed. Adaptive thinking is the mode current Claude models are
  documented to use (the newest accept nothing else), and ``summarized`` asks for the thinking
  text those models otherwise omit. A model too old for it answers with a 400 that reaches the
  user verbatim.

The system prompt is sent as one text block so it can carry a prompt-cache breakpoint; where the
(at most four) ``cache_control`` marks go is ``wire.providers.cache_points``'s decision.
"""

from __future__ import annotations

from typing import Any

import msgspec

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
    ProviderImagePart,
    ProviderTextPart,
    ToolResultMessage,
    UserMessage,
)
from wire.json_input import decode_json
from wire.providers.adapter import (
    SseJsonDecoder,
    b64,
    check_route,
    encode_body,
    endpoint,
    error_text,
    http_failure,
    json_headers,
    replay_value,
)
from wire.providers.cache_points import cache_points
from wire.providers.errors import FailureKind, ProviderFailure
from wire.providers.sse import ServerSentEvent

NAME = "Anthropic"
REPLAY_KIND = "anthropic"
API_VERSION = "2023-06-01"
# A prompt-cache breakpoint (the default five-minute lifetime); placed by ``cache_points``.
EPHEMERAL = {"type": "ephemeral"}

_STOP = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_USE,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.CONTEXT_WINDOW,
}
_UNSUPPORTED_STOP = {
    "refusal": "the model refused to answer (stop_reason refusal)",
    "pause_turn": "the turn was paused for a server tool (stop_reason pause_turn); "
    "continuing paused turns is not supported",
}


class AnthropicAdapter:
    name = NAME
    # Its reasoning replay is the format's own, always sent: the setting has no say.
    honours_replay_reasoning = False

    def build_call(self, request: LlmRequest, route: ModelRoute) -> HttpCall:
        check_route(NAME, route)
        if route.max_output_tokens is None:
            raise ProviderFailure(
                FailureKind.CONFIG,
                f"{NAME} needs max_output_tokens set on model {route.model_id!r} "
                "(the API requires max_tokens and the server does not guess one)",
            )
        messages = _messages(request)
        points = cache_points(
            bool(request.tools), bool(request.instructions), [m["role"] for m in messages]
        )
        for index in points.messages:
            blocks = messages[index]["content"]
            blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
        body: dict[str, Any] = {
            "model": route.model_id,
            "max_tokens": route.max_output_tokens,
            "messages": messages,
            "stream": True,
        }
        if request.instructions:
            body["system"] = [
                {"type": "text", "text": request.instructions, "cache_control": EPHEMERAL}
            ]
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
            if points.last_tool:
                body["tools"][-1]["cache_control"] = EPHEMERAL
        # Effort "none" means no thinking: the Messages API has no such effort value.
        effort = route.reasoning.effort
        if route.reasoning.enabled and effort != NO_EFFORT and _may_think(messages):
            body["thinking"] = {"type": "adaptive", "display": "summarized"}
        if effort is not None and effort != NO_EFFORT:
            body["output_config"] = {"effort": effort}
        key = (("x-api-key", route.api_key.reveal()),) if route.api_key else ()
        auth = (*key, ("anthropic-version", API_VERSION))
        return HttpCall(
            method="POST",
            url=endpoint(route, "/messages"),
            headers=json_headers(auth, route),
            body=encode_body(body),
        )

    def new_decoder(self, route: ModelRoute) -> AnthropicDecoder:
        return AnthropicDecoder()

    def http_error(self, status: int, body: bytes, route: ModelRoute) -> ProviderFailure:
        return http_failure(NAME, status, body, route)


def _messages(request: LlmRequest) -> list[dict[str, Any]]:
    """Role-alternating messages: consecutive same-role content is merged into one message
    (tool results are user content), as the API requires."""
    out: list[dict[str, Any]] = []
    for message in request.messages:
        match message:
            case UserMessage(parts=parts):
                role, blocks = "user", _user_blocks(parts)
            case AssistantMessage():
                role, blocks = "assistant", _assistant_blocks(message)
            case ToolResultMessage():
                role, blocks = "user", [_tool_result(message)]
            case _:
                raise TypeError(f"not a projected message: {type(message).__name__}")
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _may_think(messages: list[dict[str, Any]]) -> bool:
    """Whether thinking may be asked for: not while the last assistant message's tool calls
    await their results (an open tool round) if that message starts without a thinking block,
    which the API refuses with thinking on. Only a round another model began (a call that fell
    back to this one mid-turn) is so: this model's own rounds replay their thinking first."""
    if len(messages) < 2 or messages[-1]["role"] != "user":
        return True
    last = messages[-2]
    if last["role"] != "assistant" or not any(b["type"] == "tool_use" for b in last["content"]):
        return True
    return last["content"][0]["type"] in ("thinking", "redacted_thinking")


def _tool_result(result: ToolResultMessage) -> dict[str, Any]:
    """A ``tool_result`` block: its text, or with images a list of text and image blocks."""
    content: str | list[dict[str, Any]] = result.content
    if result.images:
        content = _user_blocks((ProviderTextPart(result.content), *result.images))
    return {"type": "tool_result", "tool_use_id": result.call_id, "content": content}


def _user_blocks(parts: tuple[ProviderTextPart | ProviderImagePart, ...]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, ProviderTextPart):
            if part.text:  # the API refuses empty text blocks
                blocks.append({"type": "text", "text": part.text})
        else:
            source = {
                "type": "base64",
                "media_type": part.mime_type,
                "data": b64(part.data),
            }
            blocks.append({"type": "image", "source": source})
    return blocks


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    """Thinking and redacted_thinking blocks first (verbatim, signatures included), then the
    text, then the tool_use blocks."""
    blocks: list[dict[str, Any]] = list(
        replay_value(NAME, message.replay, REPLAY_KIND, "blocks", list) or ()
    )
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for call in message.calls:
        try:
            arguments = decode_json(call.arguments_json)
        except msgspec.DecodeError:
            arguments = None
        if not isinstance(arguments, dict):
            # The model once wrote arguments that are not an object (another format's model,
            # or a cut-off stream); ``input`` must be one, and the call's tool result already
            # quotes what was written and why it did not run.
            arguments = {}
        blocks.append(
            {"type": "tool_use", "id": call.call_id, "name": call.name, "input": arguments}
        )
    return blocks


class _Block:
    """One open content block, by the index the provider gave it."""

    __slots__ = ("kind", "parts", "signature", "start_input", "streamed")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.parts: list[str] = []
        self.signature: list[str] = []
        self.start_input: Any = None
        self.streamed = False  # a tool_use block received a non-empty input_json_delta


class AnthropicDecoder(SseJsonDecoder):
    """Content blocks by index; stop_reason and usage arrive in ``message_delta``; the terminal
    event is ``message_stop``."""

    name = NAME
    terminal = "message_stop"

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, _Block] = {}
        self._seen: set[int] = set()
        self._replay: list[dict[str, Any]] = []
        self._usage: dict[str, int] = {}
        self._stop: FinishReason | None = None

    def on_event(
        self, event: ServerSentEvent, data: dict[str, Any], out: list[ProviderEvent]
    ) -> None:
        kind = data.get("type", event.event)
        if kind == "message_start":
            self._merge_usage(self.obj(data, "message", kind).get("usage"), kind)
        elif kind == "content_block_start":
            self._start(data, out)
        elif kind == "content_block_delta":
            self._delta(data, out)
        elif kind == "content_block_stop":
            self._stop_block(data, out)
        elif kind == "message_delta":
            self._merge_usage(data.get("usage"), kind)
            stop = self.optional_string(self.obj(data, "delta", kind), "stop_reason", kind)
            if stop is not None:
                self._stop = self._map_stop(stop)
        elif kind == "message_stop":
            self._message_stop(out)
        elif kind == "error":
            raise self.stream_error(f"stream error: {error_text(data)}", data)
        # ``ping`` and unknown events carry nothing for us.

    def _start(self, data: dict[str, Any], out: list[ProviderEvent]) -> None:
        where = "content_block_start"
        index = self.integer(data, "index", where)
        block_data = self.obj(data, "content_block", where)
        kind = self.string(block_data, "type", "content_block")
        if index in self._seen:
            raise self.protocol(f"started content block {index} twice")
        self._seen.add(index)
        block = _Block(kind)
        self._blocks[index] = block
        if kind == "text":
            out.append(TextStarted())
            if text := self.optional_string(block_data, "text", "text block"):
                out.append(TextDelta(text))
        elif kind == "thinking":
            out.append(ThinkingStarted())
            if text := self.optional_string(block_data, "thinking", "thinking block"):
                block.parts.append(text)
                out.append(ThinkingDelta(text))
            if signature := self.optional_string(block_data, "signature", "thinking block"):
                block.signature.append(signature)
        elif kind == "redacted_thinking":
            self.string(block_data, "data", "redacted_thinking block")
            # Opaque and encrypted: replayed exactly as received, never shown.
            self._replay.append(dict(block_data))
        elif kind == "tool_use":
            call_id = self.nonempty(block_data, "id", "tool_use block")
            name = self.nonempty(block_data, "name", "tool_use block")
            block.start_input = block_data.get("input")
            out.append(ToolCallStarted(index=index, call_id=call_id, name=name))
        # Server-tool blocks and future kinds: tracked for their stop, otherwise ignored.

    def _delta(self, data: dict[str, Any], out: list[ProviderEvent]) -> None:
        where = "content_block_delta"
        index = self.integer(data, "index", where)
        delta = self.obj(data, "delta", where)
        kind = self.string(delta, "type", "delta")
        block = self._open_block(index, where)
        if kind == "text_delta":
            self._expect(block, "text", kind)
            out.append(TextDelta(self.string(delta, "text", kind)))
        elif kind == "thinking_delta":
            self._expect(block, "thinking", kind)
            text = self.string(delta, "thinking", kind)
            block.parts.append(text)
            out.append(ThinkingDelta(text))
        elif kind == "signature_delta":
            self._expect(block, "thinking", kind)
            block.signature.append(self.string(delta, "signature", kind))
        elif kind == "input_json_delta":
            self._expect(block, "tool_use", kind)
            partial = self.string(delta, "partial_json", kind)
            if partial:
                block.streamed = True
                out.append(ToolCallArgumentsDelta(index=index, delta=partial))
        # citations_delta and future delta kinds add nothing to the canonical stream.

    def _stop_block(self, data: dict[str, Any], out: list[ProviderEvent]) -> None:
        index = self.integer(data, "index", "content_block_stop")
        block = self._open_block(index, "content_block_stop")
        del self._blocks[index]
        if block.kind == "text":
            out.append(TextEnded())
        elif block.kind == "thinking":
            signature = "".join(block.signature)
            if not signature:
                raise self.protocol(f"thinking block {index} ended without a signature")
            self._replay.append(
                {"type": "thinking", "thinking": "".join(block.parts), "signature": signature}
            )
            out.append(ThinkingEnded())
        elif block.kind == "tool_use":
            if not block.streamed:
                # A call without arguments streams no input_json_delta: its start input
                # (normally {}) is the whole argument object.
                if not isinstance(block.start_input, dict):
                    raise self.protocol(f"tool_use block {index} has no input")
                arguments = msgspec.json.encode(block.start_input).decode()
                out.append(ToolCallArgumentsDelta(index=index, delta=arguments))
            out.append(ToolCallEnded(index))

    def _message_stop(self, out: list[ProviderEvent]) -> None:
        if self._blocks:
            raise self.protocol(f"sent message_stop with content block {min(self._blocks)} open")
        if self._stop is None:
            raise self.protocol("sent message_stop without a stop_reason")
        if self._replay:
            out.append(ReplayStateReported(ReplayState(REPLAY_KIND, {"blocks": self._replay})))
        if self._usage:
            out.append(UsageReported(Usage(**self._usage)))
        out.append(CallDone(self._stop))
        self.finished = True

    def _map_stop(self, stop: str) -> FinishReason:
        if stop in _UNSUPPORTED_STOP:
            raise self.provider(_UNSUPPORTED_STOP[stop])
        finish = _STOP.get(stop)
        if finish is None:
            raise self.protocol(f"sent an unknown stop_reason {stop!r}")
        return finish

    def _merge_usage(self, usage: Any, where: str) -> None:
        """message_start and message_delta each report part of the usage; per field the larger
        value wins (output_tokens grows from the first to the final count)."""
        if usage is None:
            return
        if not isinstance(usage, dict):
            raise self.protocol(f"{where} has a usage that is not an object")
        fields = {
            "input_tokens": "input_tokens",
            "output_tokens": "output_tokens",
            "cache_read_tokens": "cache_read_input_tokens",
            "cache_write_tokens": "cache_creation_input_tokens",
        }
        for ours, theirs in fields.items():
            value = self.count(usage, (theirs,), f"{where} usage")
            if value is not None:
                self._usage[ours] = max(value, self._usage.get(ours, value))

    def _open_block(self, index: int, where: str) -> _Block:
        block = self._blocks.get(index)
        if block is None:
            raise self.protocol(f"sent {where} for content block {index}, which is not open")
        return block

    def _expect(self, block: _Block, kind: str, delta: str) -> None:
        if block.kind != kind:
            raise self.protocol(f"sent {delta} in a {block.kind} block")
