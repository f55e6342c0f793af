"""Google Gemini, natively (``POST {base}/models/{model}:streamGenerateContent?alt=sse``).

Three choices:

- **The model's parts go back exactly as they were streamed.** Gemini signs its thinking: a
  ``thoughtSignature`` rides on a text, thought or ``functionCall`` part, and the API checks,
  on the next request, that each signature is back on the part that carried it. Merging or
  re-splitting parts could move one, so the replay state is the list of streamed parts,
  verbatim and in order, and the assistant turn is sent as that list.
- **Call ids.** Older API versions give a ``functionCall`` no id. Such a call gets an id of
  ours (unique, kept in the history); a call the API gave an id keeps it, and only then does
  its ``functionResponse`` carry the id back. A response always names its function.
- **A call we rebuild carries Google's placeholder signature.** Gemini 3 refuses a request
  whose current turn holds a ``functionCall`` part without a signature; a call that was not
  streamed by Gemini (another provider's turn) has none, so the first call of each rebuilt
  model content carries ``skip_thought_signature_validator``, the value Google documents for
  history that did not come from the model.
- **Tool schemas go as ``parametersJsonSchema``**, which takes JSON Schema as written; the older
  ``parameters`` field takes an OpenAPI subset that refuses keywords our tools use.

Reasoning: ``thinkingConfig.includeThoughts`` when reasoning is enabled, ``thinkingLevel`` for
an effort, and effort ``none`` as ``thinkingBudget: 0``; no budget is ever guessed.
"""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import quote

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
    Reasoning,
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
    finish_for,
    http_failure,
    json_headers,
    replay_value,
)
from wire.providers.errors import FailureKind, ProviderFailure
from wire.providers.sse import ServerSentEvent

NAME = "Gemini"
REPLAY_KIND = "gemini"
PARTS_KEY = "parts"
SIGNATURE = "thoughtSignature"
# Google's documented stand-in for a signature on a call the model did not stream to us.
UNSIGNED_CALL_SIGNATURE = "skip_thought_signature_validator"
_REFUSED = "the answer was stopped"


class GeminiAdapter:
    name = NAME
    # Its reasoning replay is the format's own, always sent: the setting has no say.
    honours_replay_reasoning = False

    def build_call(self, request: LlmRequest, route: ModelRoute) -> HttpCall:
        check_route(NAME, route)
        body: dict[str, Any] = {"contents": _contents(request)}
        if request.instructions:
            body["systemInstruction"] = {"parts": [{"text": request.instructions}]}
        if request.tools:
            declarations = [
                {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
                for t in request.tools
            ]
            body["tools"] = [{"functionDeclarations": declarations}]
        generation: dict[str, Any] = {}
        if route.max_output_tokens is not None:
            generation["maxOutputTokens"] = route.max_output_tokens
        thinking = _thinking_config(route.reasoning)
        if thinking:
            generation["thinkingConfig"] = thinking
        if generation:
            body["generationConfig"] = generation
        key = (("x-goog-api-key", route.api_key.reveal()),) if route.api_key else ()
        model = quote(route.model_id, safe="")
        return HttpCall(
            method="POST",
            url=endpoint(route, f"/models/{model}:streamGenerateContent?alt=sse"),
            headers=json_headers(key, route),
            body=encode_body(body),
        )

    def new_decoder(self, route: ModelRoute) -> GeminiDecoder:
        return GeminiDecoder()

    def http_error(self, status: int, body: bytes, route: ModelRoute) -> ProviderFailure:
        return http_failure(NAME, status, body, route)


def _thinking_config(reasoning: Reasoning) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if reasoning.enabled and reasoning.effort != NO_EFFORT:
        config["includeThoughts"] = True
    if reasoning.effort == NO_EFFORT:
        config["thinkingBudget"] = 0
    elif reasoning.effort is not None:
        config["thinkingLevel"] = reasoning.effort
    return config


# ---------------------------------------------------------------------------------------------
# Requests


def _contents(request: LlmRequest) -> list[dict[str, Any]]:
    """``user``/``model`` contents; consecutive same-role parts share one content (tool
    results are user parts), and a result's images follow the round's responses."""
    out: list[dict[str, Any]] = []
    with_id: set[str] = set()  # calls whose id came from the API, so it goes back
    shown: list[ToolResultMessage] = []
    for message in request.messages:
        if shown and not isinstance(message, ToolResultMessage):
            _add(out, "user", _result_images(shown))
            shown = []
        match message:
            case UserMessage(parts=parts):
                role, parts_out = "user", _user_parts(parts)
            case AssistantMessage():
                role, parts_out = "model", _model_parts(message, with_id)
            case ToolResultMessage():
                role, parts_out = "user", [_function_response(message, with_id)]
                if message.images:
                    shown.append(message)
            case _:
                raise TypeError(f"not a projected message: {type(message).__name__}")
        _add(out, role, parts_out)
    if shown:
        _add(out, "user", _result_images(shown))
    return out


def _add(out: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    if not parts:
        return
    if out and out[-1]["role"] == role:
        out[-1]["parts"].extend(parts)
    else:
        out.append({"role": role, "parts": parts})


def _user_parts(parts: tuple[ProviderTextPart | ProviderImagePart, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, ProviderTextPart):
            if part.text:
                out.append({"text": part.text})
        else:
            out.append(_inline(part))
    return out


def _inline(image: ProviderImagePart) -> dict[str, Any]:
    return {"inlineData": {"mimeType": image.mime_type, "data": b64(image.data)}}


def _model_parts(message: AssistantMessage, with_id: set[str]) -> list[dict[str, Any]]:
    """The streamed parts as they came (signatures where they were), else parts built from
    the message (another provider's turn, or one without anything to replay)."""
    streamed = replay_value(NAME, message.replay, REPLAY_KIND, PARTS_KEY, list)
    if streamed is None:
        return _built_parts(message)
    if not all(isinstance(part, dict) for part in streamed):
        raise ProviderFailure(
            FailureKind.PROTOCOL, f"{NAME} replay state has a part that is not an object"
        )
    calls = [part["functionCall"] for part in streamed if _is_call(part)]
    names = [call.get("name") for call in calls]
    expected = [call.name for call in message.calls]
    if names != expected:
        raise ProviderFailure(
            FailureKind.PROTOCOL,
            f"{NAME} replay state's function calls {names} are not the message's {expected}",
        )
    for call, streamed_call in zip(message.calls, calls, strict=True):
        if streamed_call.get("id") is not None:
            with_id.add(call.call_id)
    return [dict(part) for part in streamed]


def _is_call(part: Any) -> bool:
    return isinstance(part, dict) and isinstance(part.get("functionCall"), dict)


def _built_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.text:
        parts.append({"text": message.text})
    for position, call in enumerate(message.calls):
        try:
            arguments = decode_json(call.arguments_json)
        except msgspec.DecodeError:
            arguments = None
        # ``args`` must be an object; arguments the model wrote otherwise were already
        # answered with an error result quoting them.
        args = arguments if isinstance(arguments, dict) else {}
        part: dict[str, Any] = {"functionCall": {"name": call.name, "args": args}}
        if position == 0:
            # Like a streamed round, only the first of parallel calls is signed.
            part[SIGNATURE] = UNSIGNED_CALL_SIGNATURE
        parts.append(part)
    return parts


def _function_response(result: ToolResultMessage, with_id: set[str]) -> dict[str, Any]:
    response: dict[str, Any] = {"name": result.name, "response": {"output": result.content}}
    if result.call_id in with_id:
        response["id"] = result.call_id
    return {"functionResponse": response}


def _result_images(results: list[ToolResultMessage]) -> list[dict[str, Any]]:
    """A function response holds JSON only, so a round's images follow its responses as user
    parts, each result's under a line naming its call."""
    parts: list[dict[str, Any]] = []
    for result in results:
        text = f"The image(s) returned by tool call {result.call_id} ({result.name}):"
        parts.append({"text": text})
        parts.extend(_inline(image) for image in result.images)
    return parts


# ---------------------------------------------------------------------------------------------
# Streams

_FINISH = {"STOP": FinishReason.STOP, "MAX_TOKENS": FinishReason.LENGTH}


class GeminiDecoder(SseJsonDecoder):
    """Each event is a ``GenerateContentResponse`` whose ``candidates[0].content.parts`` are
    new parts; the last one carries ``finishReason``. There is no terminal marker: the answer
    is complete when the body ends after a finish reason (usage may still follow it)."""

    name = NAME
    terminal = "a finishReason"

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[dict[str, Any]] = []
        self._text_open = False
        self._thinking_open = False
        self._calls = 0
        self._ids: set[str] = set()
        self._reason: str | None = None
        self._usage: Usage | None = None

    def on_event(
        self, event: ServerSentEvent, data: dict[str, Any], out: list[ProviderEvent]
    ) -> None:
        if data.get("error") is not None:
            raise self.stream_error(f"stream error: {error_text(data)}", data)
        if data.get("usageMetadata") is not None:
            # Each chunk repeats the totals so far: the last one is the call's.
            self._usage = self._read_usage(self.obj(data, "usageMetadata", "chunk"))
        candidates = data.get("candidates")
        if candidates is None:
            self._blocked(data)
            return
        if not isinstance(candidates, list) or not candidates:
            raise self.protocol("chunk has no candidate")
        candidate = candidates[0]
        if not isinstance(candidate, dict):
            raise self.protocol("chunk has a candidate that is not an object")
        content = candidate.get("content")
        if content is not None:
            if not isinstance(content, dict):
                raise self.protocol("candidate has a content that is not an object")
            parts = content.get("parts", [])
            if not isinstance(parts, list):
                raise self.protocol("content has parts that is not a list")
            for part in parts:
                self._part(part, out)
        reason = self.optional_string(candidate, "finishReason", "candidate")
        if reason is not None:
            self._finish_reason(reason, candidate)

    def _blocked(self, data: dict[str, Any]) -> None:
        feedback = data.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            raise self.provider(f"refused the prompt: blockReason {feedback['blockReason']}")

    def _part(self, part: Any, out: list[ProviderEvent]) -> None:
        if not isinstance(part, dict):
            raise self.protocol("sent a part that is not an object")
        self.optional_string(part, SIGNATURE, "part")
        if self._reason is not None:
            raise self.protocol("sent a part after its finishReason")
        self._parts.append(part)
        if "functionCall" in part:
            self._call(self.obj(part, "functionCall", "part"), out)
            return
        text = self.optional_string(part, "text", "part")
        if not text:
            return  # a signature alone, or a kind of part we do not show (kept for replay)
        if part.get("thought") is True:
            self._close_text(out)
            if not self._thinking_open:
                self._thinking_open = True
                out.append(ThinkingStarted())
            out.append(ThinkingDelta(text))
        else:
            self._close_thinking(out)
            if not self._text_open:
                self._text_open = True
                out.append(TextStarted())
            out.append(TextDelta(text))

    def _call(self, call: dict[str, Any], out: list[ProviderEvent]) -> None:
        self._close_thinking(out)
        self._close_text(out)
        index = self._calls
        self._calls += 1
        name = self.nonempty(call, "name", f"functionCall {index}")
        args = call.get("args", {})
        if not isinstance(args, dict):
            raise self.protocol(f"functionCall {index} has args that are not an object")
        call_id = self.optional_string(call, "id", f"functionCall {index}") or _new_call_id()
        out.append(ToolCallStarted(index=index, call_id=call_id, name=name))
        out.append(ToolCallArgumentsDelta(index, msgspec.json.encode(args).decode()))
        out.append(ToolCallEnded(index))

    def _finish_reason(self, reason: str, candidate: dict[str, Any]) -> None:
        if reason not in _FINISH:
            detail = self.optional_string(candidate, "finishMessage", "candidate")
            suffix = f": {detail}" if detail else ""
            raise self.provider(f"{_REFUSED}: finishReason {reason}{suffix}")
        self._reason = reason

    def finish(self) -> list[ProviderEvent]:
        self._sse.finish()
        if self._reason is None:
            raise self.provider(f"stream ended before {self.terminal}")
        out: list[ProviderEvent] = []
        self._close_thinking(out)
        self._close_text(out)
        if self._usage is not None:
            out.append(UsageReported(self._usage))
        if any(_needs_replay(part) for part in self._parts):
            out.append(ReplayStateReported(ReplayState(REPLAY_KIND, {PARTS_KEY: self._parts})))
        finish = _FINISH[self._reason]
        out.append(CallDone(finish_for(self._calls > 0) if finish is FinishReason.STOP else finish))
        self.finished = True
        return out

    def on_done_marker(self, out: list[ProviderEvent]) -> None:
        raise self.protocol("sent [DONE], which Gemini streams do not have")

    def _read_usage(self, usage: dict[str, Any]) -> Usage:
        where = "usageMetadata"
        candidates = self.count(usage, ("candidatesTokenCount",), where)
        thoughts = self.count(usage, ("thoughtsTokenCount",), where)
        output = None
        if candidates is not None or thoughts is not None:
            # Thought tokens are billed as output but counted apart from the candidates.
            output = (candidates or 0) + (thoughts or 0)
        return Usage(
            input_tokens=self.count(usage, ("promptTokenCount",), where),
            output_tokens=output,
            cache_read_tokens=self.count(usage, ("cachedContentTokenCount",), where),
            reasoning_tokens=thoughts,
        )

    def _close_text(self, out: list[ProviderEvent]) -> None:
        if self._text_open:
            self._text_open = False
            out.append(TextEnded())

    def _close_thinking(self, out: list[ProviderEvent]) -> None:
        if self._thinking_open:
            self._thinking_open = False
            out.append(ThinkingEnded())


def _needs_replay(part: dict[str, Any]) -> bool:
    """What a part built from the message's text and calls would lose."""
    call = part.get("functionCall")
    has_id = isinstance(call, dict) and call.get("id") is not None
    return SIGNATURE in part or part.get("thought") is True or has_id


def _new_call_id() -> str:
    """An id for a call the API gave none: unique, and fixed once it is in the history."""
    return f"call_{secrets.token_hex(12)}"
