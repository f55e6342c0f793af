"""Canonical messages <-> the JSON Cursor keeps in a checkpoint (sans-IO).

A checkpoint's ``root_prompt_messages_json`` holds one blob per message in the AI-SDK style
JSON the Cursor client understands, and ``pending_tool_calls`` holds the staged assistant of an
unfinished round inline. The client sends both back on its next request, so this module is the
only thing standing between what we stored and what we can recover: encoding is compact and
deterministic (the same history always yields the same bytes, hence the same blob ids, which
is what keeps the root list an append-only prefix), and decoding hydrates the JSON into
canonical messages again.

Reasoning replay state (Anthropic signatures, Responses encrypted items, ...) has no slot of its
own in Cursor's JSON, so it travels in the reasoning part's ``signature`` as
``REPLAY_SIGNATURE_PREFIX + base64(JSON {"provider_kind", "value"})``. Our prefix is
``cursor-server:v1:``; the reference server's ``cursor-byok:v1:`` is accepted when decoding so a
conversation checkpointed by it keeps its replay state. Any other signature is Cursor's own and
is kept verbatim as the replay state ``cursor_opaque`` (``{"signature": <text>}``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import msgspec

from actors.conversation import request as neutral
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Content,
    ImagePart,
    Origin,
    PartsContent,
    ReplayState,
    Role,
    TextPart,
    ToolResultContent,
)
from actors.conversation.projection import ProjectionError, project
from wire.json_input import decode_json
from wire.tools.registry import cursor_identifier

REPLAY_SIGNATURE_PREFIX = "cursor-server:v1:"
REFERENCE_REPLAY_SIGNATURE_PREFIX = "cursor-byok:v1:"
OPAQUE_PROVIDER_KIND = "cursor_opaque"
SYSTEM_ROOT_ID = "system"
ASSISTANT_WIRE_ID = "1"  # Cursor's assistants all carry this id; ours do too
RUNTIME_ID_PREFIX = "runtime:"
PROMPT_ID_PREFIXES = ("request-context:", "selected-context:")
HYDRATED_ID_PREFIX = "cursor-root:"
PENDING_ID_PREFIX = "cursor-pending:"

_encoder = msgspec.json.Encoder()
_replay_decoder = msgspec.json.Decoder(ReplayState)


class CheckpointJsonError(ValueError):
    """Checkpoint JSON that cannot be encoded or hydrated; the message says what and where."""


class PendingRound(msgspec.Struct, frozen=True):
    """A staged assistant recovered from ``pending_tool_calls``: the round to resume.

    ``calls`` are re-indexed 0..n in content order with compact argument JSON, each carrying
    ``model_call_id`` (Cursor's ``modelProviderMessageId`` when present, else ``internal_id``).
    """

    internal_id: str
    model_call_id: str
    started_at_ms: int
    text: str
    thinking: str
    replay_state: ReplayState | None
    calls: tuple[CanonicalToolCall, ...]
    # The calls the state proves completed: the tool messages after the staged assistant, in
    # the order they completed (never every call: a round whose last call completed settles).
    results: tuple[ToolResultContent, ...] = ()


# ---- encoding --------------------------------------------------------------------------------


def encode_system_root(instructions: str) -> bytes:
    """Root 0: the system prompt, id ``system``."""
    parts = PartsContent((TextPart(instructions),))
    return encode_root(CanonicalMessage(SYSTEM_ROOT_ID, Role.SYSTEM, Origin.PROMPT, parts), "")


def encode_root(message: CanonicalMessage, model_name: str) -> bytes:
    """One root blob: ``{"role","content","id"}`` in that key order, compact UTF-8.

    ``model_name`` goes into a reasoning part's ``providerOptions.cursor.modelName``.
    """
    return _dump(_wire_message(message, model_name))


def root_messages_json(
    instructions: str, messages: Sequence[CanonicalMessage], model_name: str
) -> list[bytes]:
    """The whole root list: the system root (if any instructions) then the regrouped history.

    Settled rounds regroup deterministically, so the list for an append-only history is always
    a prefix of the list for any longer one (the checkpoint root frontier relies on it).
    """
    roots = [encode_system_root(instructions)] if instructions else []
    roots.extend(encode_root(message, model_name) for message in regroup_rounds(messages))
    return roots


def regroup_rounds(messages: Sequence[CanonicalMessage]) -> list[CanonicalMessage]:
    """The history as Cursor should see it: each tool round as one assistant holding every call
    (sorted by index) followed by its results in completion order; other messages unchanged.

    The grouping is the provider projection's (``actors.conversation.projection.project``), so
    Cursor's roots and the LLM's history can never disagree; this only puts the message ids,
    origins, ``model_call_id`` and ``is_error`` back that the neutral projection leaves out.
    """
    try:
        projected = project(messages)
    except ProjectionError as error:
        raise CheckpointJsonError(str(error)) from error
    out: list[CanonicalMessage] = []
    i = 0
    for item in _rounds_first(projected):
        message = messages[i]
        content = message.content
        if not (isinstance(content, AssistantContent) and content.tool_calls):
            out.append(message)
            i += 1
            continue
        assert isinstance(item, neutral.AssistantMessage)
        i = _regroup_one(messages, i, item, out)
    return out


def _rounds_first(
    projected: Sequence[neutral.ProjectedMessage],
) -> list[neutral.ProjectedMessage]:
    """Projected items with each round's results dropped (they are taken from the canonical
    messages, which keep ``is_error`` and ids), so there is one item per round or message."""
    items: list[neutral.ProjectedMessage] = []
    skip = 0
    for item in projected:
        if skip:
            skip -= 1
            continue
        items.append(item)
        if isinstance(item, neutral.AssistantMessage) and item.calls:
            skip = len(item.calls)
    return items


def _regroup_one(
    messages: Sequence[CanonicalMessage],
    start: int,
    projected: neutral.AssistantMessage,
    out: list[CanonicalMessage],
) -> int:
    """Append the round starting at ``start`` as one assistant + its results; return the next
    index. The round ends with its last result (the projection checked every call has one)."""
    first = messages[start]
    first_content = first.content
    assert isinstance(first_content, AssistantContent)
    calls: dict[str, CanonicalToolCall] = {}
    results: list[CanonicalMessage] = []
    i = start
    while len(results) < len(projected.calls):
        content = messages[i].content
        if isinstance(content, AssistantContent):
            calls.update((call.call_id, call) for call in content.tool_calls)
        elif isinstance(content, ToolResultContent):
            results.append(messages[i])
        i += 1
    ordered = tuple(calls[call.call_id] for call in projected.calls)
    merged = AssistantContent(
        text=projected.text,
        thinking=projected.thinking,
        tool_round_id=first_content.tool_round_id,
        replay_state=projected.replay,
        tool_calls=ordered,
    )
    out.append(CanonicalMessage(first.message_id, first.role, first.origin, merged))
    out.extend(results)
    return i


def tool_identifier(name: str, dynamic_tools: Mapping[str, str] | Collection[str] = ()) -> str:
    """Cursor's identifier of a tool in a pending execution contract: a dynamic (MCP) tool
    has its raw name (Cursor's name of the tool, given as ``offered -> raw``, or the name
    itself), a built-in one the registry's (``cursor_identifier``)."""
    if name not in dynamic_tools:
        return cursor_identifier(name)
    return dynamic_tools[name] if isinstance(dynamic_tools, Mapping) else name


def encode_pending(
    assistant: AssistantContent,
    *,
    model_name: str,
    allowed_tools: Sequence[str],
    dynamic_tools: Mapping[str, str] | Collection[str],
    started_at_ms: int,
) -> str:
    """A ``pending_tool_calls`` entry: the staged assistant (a round with all its calls, or a
    final answer) with ``providerOptions.cursor`` saying when the round started and how each
    call is executed, which is what lets a later request resume the round."""
    if started_at_ms < 0:
        raise CheckpointJsonError(f"pendingToolCallStartedAtMs is negative: {started_at_ms}")
    calls = sorted(assistant.tool_calls, key=lambda call: call.index)
    contracts = {
        call.call_id: {
            "toolCallId": call.call_id,
            "outerToolName": call.name,
            "toolIdentifier": tool_identifier(call.name, dynamic_tools),
            "isDynamic": call.name in dynamic_tools,
            "allowedToolNames": list(allowed_tools),
        }
        for call in calls
    }
    wire = {
        "role": "assistant",
        "content": _assistant_parts(assistant, calls, model_name),
        "id": ASSISTANT_WIRE_ID,
        "providerOptions": {
            "cursor": {
                "pendingToolCallStartedAtMs": started_at_ms,
                "pendingToolExecutionContracts": contracts,
            }
        },
    }
    return _dump(wire).decode("utf-8")


def encode_pending_result(message: CanonicalMessage) -> str:
    """A ``pending_tool_calls`` entry after the staged assistant: one of its calls completed,
    as the tool message Cursor keeps among the roots once the round settles. The staged state
    then proves the call ran, so a resume, even by a server that lost its database, does not
    run it again and gives the model this result."""
    if not isinstance(message.content, ToolResultContent):
        raise CheckpointJsonError("a pending result must be a tool message")
    return _dump(_wire_message(message, "")).decode("utf-8")


def replay_signature(state: ReplayState) -> str:
    """The reasoning part's ``signature`` carrying ``state`` (raw text for Cursor's own)."""
    if state.provider_kind == OPAQUE_PROVIDER_KIND:
        signature = state.value.get("signature")
        if not isinstance(signature, str):
            raise CheckpointJsonError("cursor_opaque replay state has no string signature")
        return signature
    envelope = base64.b64encode(_encoder.encode(state)).decode("ascii")
    return REPLAY_SIGNATURE_PREFIX + envelope


def _wire_message(message: CanonicalMessage, model_name: str) -> dict[str, Any]:
    content = message.content
    if isinstance(content, AssistantContent):
        parts = _assistant_parts(content, content.tool_calls, model_name)
        wire_id = ASSISTANT_WIRE_ID
    elif isinstance(content, ToolResultContent):
        parts = [
            {
                "type": "tool-result",
                "toolCallId": content.call_id,
                "toolName": content.name,
                "result": content.content,
                "experimental_content": [
                    {"type": "text", "text": content.content},
                    *(_wire_part(image) for image in content.images),
                ],
                "isError": content.is_error,
            }
        ]
        wire_id = content.call_id
    else:
        parts = [_wire_part(part) for part in content.parts]
        wire_id = message.message_id
    return {"role": message.role.value, "content": parts, "id": wire_id}


def _wire_part(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    return {
        "type": "image",
        "data": base64.b64encode(part.data).decode("ascii"),
        "mimeType": part.mime_type,
    }


def _assistant_parts(
    content: AssistantContent, calls: Sequence[CanonicalToolCall], model_name: str
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if content.thinking or content.replay_state is not None:
        reasoning: dict[str, Any] = {
            "type": "reasoning",
            "text": content.thinking,
            "providerOptions": {"cursor": {"modelName": model_name}},
        }
        if content.replay_state is not None:
            reasoning["signature"] = replay_signature(content.replay_state)
        parts.append(reasoning)
    if content.text:
        parts.append({"type": "text", "text": content.text})
    for call in calls:
        parts.append(
            {
                "type": "tool-call",
                "toolCallId": call.call_id,
                "toolName": call.name,
                "args": _arguments_object(call),
            }
        )
    return parts


def _arguments_object(call: CanonicalToolCall) -> dict[str, Any] | str:
    """The call's argument text as a JSON object (the AI-SDK ``args`` shape); text that is not
    an object (the model's mistake, answered with an error result) is kept as the string it
    was, so it round-trips exactly."""
    try:
        value = decode_json(call.arguments)
    except msgspec.DecodeError:
        return call.arguments
    return value if isinstance(value, dict) else call.arguments


def _dump(value: Any) -> bytes:
    """Compact UTF-8 JSON, keys in insertion order: the same value always gives the same bytes."""
    return _encoder.encode(value)


# ---- decoding --------------------------------------------------------------------------------


def hydrated_message_id(blob_id: bytes, ordinal: int) -> str:
    """The internal id of the ``ordinal``-th root hydrated from blob ``blob_id``."""
    return f"{HYDRATED_ID_PREFIX}{base64.b64encode(blob_id).decode('ascii')}:{ordinal}"


def decode_root(data: bytes | str, internal_id: str) -> CanonicalMessage:
    """Hydrate one root blob into a canonical message.

    The origin follows the role and wire id (``runtime:`` user messages keep their wire id as
    message id and the rest as ``runtime_event_id``; everything else gets ``internal_id``).
    An assistant with calls gets ``tool_round_id = {internal_id}:tool-round`` and
    ``model_call_id = internal_id`` (the wire id is always "1", so only the internal id keeps
    distinct rounds from merging); call indexes are their order of appearance.
    """
    value = _load(data)
    role_name = value.get("role")
    try:
        role = Role(role_name if isinstance(role_name, str) else "")
    except ValueError:
        raise CheckpointJsonError(f"unknown Cursor message role: {role_name!r}") from None
    wire_id = value.get("id")
    wire_id = wire_id if isinstance(wire_id, str) else ""
    runtime_event_id: str | None = None
    message_id = internal_id
    if role is Role.SYSTEM:
        origin = Origin.PROMPT
    elif role is Role.ASSISTANT:
        origin = Origin.ASSISTANT
    elif role is Role.TOOL:
        origin = Origin.TOOL
    elif wire_id.startswith(RUNTIME_ID_PREFIX):
        origin = Origin.RUNTIME
        runtime_event_id = wire_id.removeprefix(RUNTIME_ID_PREFIX)
        message_id = wire_id
    elif wire_id.startswith(PROMPT_ID_PREFIXES):
        origin = Origin.PROMPT
    else:
        origin = Origin.USER
    content: Content
    if role is Role.ASSISTANT:
        content = _decode_assistant(value, internal_id, internal_id)
    elif role is Role.TOOL:
        content = _decode_tool_result(value)
    else:
        content = _decode_parts(value)
    return CanonicalMessage(message_id, role, origin, content, runtime_event_id)


def decode_pending(value: str) -> PendingRound:
    """Recover the staged round of a ``pending_tool_calls`` entry (to run it before any model
    call); refuses an entry without a start time or without tool calls."""
    wire = _load(value)
    cursor = _object_at(wire, "providerOptions", "cursor")
    started = cursor.get("pendingToolCallStartedAtMs")
    if isinstance(started, bool) or not isinstance(started, int) or started < 0:
        raise CheckpointJsonError("Cursor pending assistant is missing pendingToolCallStartedAtMs")
    digest = hashlib.sha256(value.encode("utf-8")).digest()
    internal_id = PENDING_ID_PREFIX + base64.b64encode(digest).decode("ascii")
    if wire.get("role") != Role.ASSISTANT.value:
        raise CheckpointJsonError("Cursor pending message is not an assistant message")
    provider_message_id = cursor.get("modelProviderMessageId")
    model_call_id = (
        provider_message_id
        if isinstance(provider_message_id, str) and provider_message_id
        else internal_id
    )
    content = _decode_assistant(wire, internal_id, model_call_id)
    if not content.tool_calls:
        raise CheckpointJsonError("Cursor pending assistant has no tool calls")
    return PendingRound(
        internal_id=internal_id,
        model_call_id=model_call_id,
        started_at_ms=started,
        text=content.text,
        thinking=content.thinking,
        replay_state=content.replay_state,
        calls=content.tool_calls,
    )


def decode_pending_round(entries: Sequence[str]) -> PendingRound | None:
    """The round a state's ``pending_tool_calls`` holds (None: none): its staged assistant,
    then the result of each call completed before the state was published. A result that
    names no call of the round, a second one for a call, or one for every call (a round
    whose last call completed is settled, never pending) is refused."""
    if not entries:
        return None
    pending = decode_pending(entries[0])
    calls = {call.call_id for call in pending.calls}
    results: dict[str, ToolResultContent] = {}
    for position, value in enumerate(entries[1:], start=1):
        wire = _load(value)
        if wire.get("role") != Role.TOOL.value:
            raise CheckpointJsonError(f"pending_tool_calls[{position}] is not a tool message")
        result = _decode_tool_result(wire)
        if result.call_id not in calls:
            raise CheckpointJsonError(
                f"pending_tool_calls[{position}] is the result of {result.call_id!r}, which is "
                "not a call of the pending round"
            )
        if result.call_id in results:
            raise CheckpointJsonError(
                f"pending_tool_calls[{position}] is a second result of {result.call_id!r}"
            )
        results[result.call_id] = result
    if len(results) == len(calls):
        raise CheckpointJsonError(
            "pending_tool_calls holds a result for every call of its round, which is then "
            "not pending"
        )
    return msgspec.structs.replace(pending, results=tuple(results.values()))


def replay_state_from_signature(signature: str) -> ReplayState:
    """Inverse of ``replay_signature``: our (or the reference's) envelope, else opaque."""
    for prefix in (REPLAY_SIGNATURE_PREFIX, REFERENCE_REPLAY_SIGNATURE_PREFIX):
        if signature.startswith(prefix):
            encoded = signature.removeprefix(prefix)
            try:
                return _replay_decoder.decode(base64.b64decode(encoded, validate=True))
            except (binascii.Error, ValueError) as error:
                raise CheckpointJsonError(f"invalid replay state envelope: {error}") from error
    return ReplayState(OPAQUE_PROVIDER_KIND, {"signature": signature})


def _decode_parts(value: dict[str, Any]) -> PartsContent:
    raw = value.get("content")
    if isinstance(raw, str):
        return PartsContent((TextPart(raw),))
    if not isinstance(raw, list):
        raise CheckpointJsonError("Cursor message content is not an array")
    parts: list[TextPart | ImagePart] = []
    for part in raw:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            parts.append(TextPart(_required_str(part, "text")))
        elif kind == "image":
            parts.append(_decode_image(part))
        elif kind is None:
            raise CheckpointJsonError("Cursor message content part is missing type")
        else:
            raise CheckpointJsonError(f"unsupported Cursor message content part: {kind}")
    return PartsContent(tuple(parts))


def _decode_image(part: dict[str, Any]) -> ImagePart:
    mime_type = _required_str(part, "mimeType")
    try:
        data = base64.b64decode(_required_str(part, "data"), validate=True)
    except ValueError as error:  # binascii.Error, and ValueError for a non-ASCII string
        raise CheckpointJsonError(f"invalid Cursor image base64: {error}") from error
    return ImagePart(mime_type, data)


def _decode_assistant(
    value: dict[str, Any], internal_id: str, model_call_id: str
) -> AssistantContent:
    raw = value.get("content")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise CheckpointJsonError("Cursor assistant content is not an array")
    text: list[str] = []
    thinking: list[str] = []
    replay: ReplayState | None = None
    calls: list[CanonicalToolCall] = []
    for part in raw:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            text.append(_optional_str(part, "text"))
        elif kind == "reasoning":
            thinking.append(_optional_str(part, "text"))
            signature = part.get("signature")
            if isinstance(signature, str):
                if replay is not None:
                    raise CheckpointJsonError("Cursor assistant has multiple reasoning signatures")
                replay = replay_state_from_signature(signature)
        elif kind == "tool-call":
            args = part.get("args", {})
            calls.append(
                CanonicalToolCall(
                    index=len(calls),
                    call_id=_required_str(part, "toolCallId"),
                    name=_required_str(part, "toolName"),
                    # A string is the text of arguments that were not an object, verbatim.
                    arguments=args if isinstance(args, str) else _encoder.encode(args).decode(),
                    model_call_id=model_call_id,
                )
            )
        # Other part types (e.g. Cursor's own annotations) carry nothing the model replays.
    return AssistantContent(
        text="".join(text),
        thinking="".join(thinking),
        tool_round_id=f"{internal_id}:tool-round" if calls else None,
        replay_state=replay,
        tool_calls=tuple(calls),
    )


def _decode_tool_result(value: dict[str, Any]) -> ToolResultContent:
    raw = value.get("content")
    if not isinstance(raw, list) or not raw or not isinstance(raw[0], dict):
        raise CheckpointJsonError("Cursor tool message has no result part")
    part = raw[0]
    result = part.get("result")
    is_error = part.get("isError")
    return ToolResultContent(
        call_id=_required_str(part, "toolCallId"),
        name=_required_str(part, "toolName"),
        content=result if isinstance(result, str) else "",
        is_error=is_error if isinstance(is_error, bool) else False,
        images=_result_images(part.get("experimental_content")),
    )


def _result_images(content: Any) -> tuple[ImagePart, ...]:
    """The image parts of a tool result's ``experimental_content`` (its text is ``result``).

    Only parts of the shape we write (``mimeType`` and ``data`` strings) are read: another
    server's tool results may carry image parts of their own shape, which we do not replay."""
    if not isinstance(content, list):
        return ()
    return tuple(
        _decode_image(item)
        for item in content
        if isinstance(item, dict)
        and item.get("type") == "image"
        and isinstance(item.get("mimeType"), str)
        and isinstance(item.get("data"), str)
    )


def _load(data: bytes | str) -> dict[str, Any]:
    try:
        value = decode_json(data)
    except msgspec.DecodeError as error:
        raise CheckpointJsonError(f"Cursor message is not JSON: {error}") from error
    if not isinstance(value, dict):
        raise CheckpointJsonError("Cursor message is not a JSON object")
    return value


def _object_at(value: dict[str, Any], *path: str) -> dict[str, Any]:
    """The object at ``path``, or an empty one when any step is missing or not an object."""
    for key in path:
        child = value.get(key)
        if not isinstance(child, dict):
            return {}
        value = child
    return value


def _required_str(part: dict[str, Any], key: str) -> str:
    value = part.get(key)
    if not isinstance(value, str):
        raise CheckpointJsonError(f"Cursor message is missing {key}")
    return value


def _optional_str(part: dict[str, Any], key: str) -> str:
    value = part.get(key)
    return value if isinstance(value, str) else ""
