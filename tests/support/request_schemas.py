"""Checks a provider request body against the published request schema of its format.

OpenAI's two formats are checked against ``CreateChatCompletionRequest`` and ``CreateResponse``
(and an image generation, GenerateImage's, against ``CreateImageRequest``) from OpenAI's own
OpenAPI description (extracted into ``tests/data``), read the way the shared
reference says: ``nullable: true`` as ``anyOf [schema, null]`` and ``oneOf`` as ``anyOf`` (some
choices overlap, so a body matching two would otherwise fail). A strict pass lists the keys no
schema declares: what a server validating against the SDK's types may refuse.

Anthropic publishes no schema, so its bodies are checked against the Messages API facts the
reference notes give (``notes/providers-console.md`` §5): the block types of each role, role
alternation, and ``thinking`` blocks first in an assistant message that uses a tool.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

# Whether OpenAI bodies are checked against OpenAI's schemas, which needs jsonschema (the test
# extra). Without it every other check still runs, and the session's header says what is not;
# the two names imported here are used only when it is true.
try:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match
except ImportError:  # the test extra's
    CHECKS_OPENAI = False
else:
    CHECKS_OPENAI = True

_DATA = Path(__file__).resolve().parent.parent / "data" / "openai_request_schemas.json"
_PREFIX = "#/components/schemas/"

# The schema each endpoint's body must satisfy, by the request path's last segment.
OPENAI_SCHEMAS = {
    "/chat/completions": "CreateChatCompletionRequest",
    "/responses": "CreateResponse",
    "/images/generations": "CreateImageRequest",
}


def _as_read(node: Any) -> Any:
    """The spec's schema with ``nullable`` and ``oneOf`` read as the reference says."""
    if isinstance(node, list):
        return [_as_read(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {("anyOf" if key == "oneOf" else key): _as_read(value) for key, value in node.items()}
    if out.pop("nullable", False):
        return {"anyOf": [out, {"type": "null"}]}
    return out


@cache
def _components() -> dict[str, Any]:
    document = json.loads(_DATA.read_text(encoding="utf-8"))
    components: dict[str, Any] = _as_read(document["components"])
    return components


@cache
def _validator(schema_name: str) -> Draft202012Validator:
    components = _components()
    if schema_name not in components["schemas"]:
        raise KeyError(f"{schema_name} is not in {_DATA.name}")
    return Draft202012Validator({"$ref": _PREFIX + schema_name, "components": components})


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = _components()["schemas"][schema["$ref"][len(_PREFIX) :]]
    return schema


_BRANCH_VALIDATORS: dict[int, tuple[dict[str, Any], Draft202012Validator]] = {}


def _matches(schema: dict[str, Any], instance: Any) -> bool:
    # Branches are nodes of the cached components tree, so their ids are stable (the entry
    # keeps the node alive).
    entry = _BRANCH_VALIDATORS.get(id(schema))
    if entry is None:
        validator = Draft202012Validator({**schema, "components": _components()})
        entry = _BRANCH_VALIDATORS[id(schema)] = (schema, validator)
    return entry[1].is_valid(instance)


def schema_errors(schema_name: str, body: Any) -> list[str]:
    """Every validation error of ``body`` against the named OpenAI schema, as ``path: message``."""
    errors = sorted(_validator(schema_name).iter_errors(body), key=lambda e: list(e.path))
    out = []
    for error in errors:
        # anyOf failures say only "is not valid under any of the given schemas"; name the
        # deepest reason of each branch so a report says which field is off.
        reasons = sorted({_short(e) for e in _leaves(error) if e.validator == "required"})
        best = best_match(error.context) if error.context else None
        hint = [_short(best)] if best is not None else []
        out.append(f"{_short(error)} [{'; '.join([*hint, *reasons[:8]])}]")
    return out


def _leaves(error: Any) -> list[Any]:
    if not error.context:
        return [error]
    return [leaf for e in error.context for leaf in _leaves(e)]


def _short(error: Any) -> str:
    """``path: validator`` and a message without the (possibly huge) instance in it."""
    message = error.message if len(error.message) <= 120 else error.message[:117] + "..."
    return f"{_path(error.absolute_path)}: {error.validator} ({message})"


def _path(path: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "$"


def undeclared_keys(schema_name: str, body: Any) -> set[str]:
    """Paths (array indexes as ``[]``) of object keys no matching schema declares."""
    return _undeclared({"$ref": _PREFIX + schema_name}, body, "")


def _alternatives(schema: dict[str, Any], instance: Any) -> list[list[dict[str, Any]]]:
    """``schema`` as alternatives of plain parts (no ``$ref``/``allOf``/``anyOf`` left): an
    ``allOf`` joins parts, an ``anyOf`` splits into the branches ``instance`` matches."""
    schema = _resolve(schema)
    alternatives = [[{k: v for k, v in schema.items() if k not in ("allOf", "anyOf")}]]
    for part in schema.get("allOf", ()):
        alternatives = [a + b for a in alternatives for b in _alternatives(part, instance)]
    if "anyOf" in schema:
        branches = [b for b in schema["anyOf"] if _matches(b, instance)] or schema["anyOf"]
        split = [alt for branch in branches for alt in _alternatives(branch, instance)]
        alternatives = [a + b for a in alternatives for b in split]
    return alternatives


def _undeclared(schema: dict[str, Any], instance: Any, path: str) -> set[str]:
    # The alternative that explains the body best: the one leaving the fewest keys undeclared
    # (not a per-key intersection, which would let one branch excuse one key and another
    # branch another, though no single branch declares them all).
    found = [_undeclared_in(parts, instance, path) for parts in _alternatives(schema, instance)]
    return min(found, key=lambda keys: (len(keys), sorted(keys)))


def _undeclared_in(parts: list[dict[str, Any]], instance: Any, path: str) -> set[str]:
    if isinstance(instance, list):
        items = [p["items"] for p in parts if isinstance(p.get("items"), dict)]
        if not items:
            return set()
        return set().union(*(_undeclared({"allOf": items}, item, f"{path}[]") for item in instance))
    if not isinstance(instance, dict):
        return set()
    declared: dict[str, list[dict[str, Any]]] = {}
    open_map = False
    for part in parts:
        for key, sub in part.get("properties", {}).items():
            declared.setdefault(key, []).append(sub)
        extra = part.get("additionalProperties")
        open_map = open_map or extra is True or isinstance(extra, dict)
    found: set[str] = set()
    for key, value in instance.items():
        where = f"{path}.{key}" if path else key
        if key in declared:
            found |= _undeclared({"allOf": declared[key]}, value, where)
        elif not open_map:
            found.add(where)
    return found


# Keys we send that no OpenAI schema declares, each with why. Nothing else may appear.
ALLOWED_UNDECLARED: dict[str, dict[str, str]] = {
    "CreateChatCompletionRequest": {
        "messages[].reasoning_content": (
            "DeepSeek and Kimi require their streamed reasoning back on an assistant message "
            "with tool calls; sent only to the endpoint that streamed it, and only while the "
            "provider's replay_reasoning is on"
        ),
        "messages[].reasoning_details": (
            "OpenRouter's own field for the reasoning details it streamed (signed or encrypted "
            "blocks), sent back only to the endpoint that streamed them, under the same switch"
        ),
        "messages[].reasoning": (
            "OpenRouter's reasoning text when it streamed no details, under the same rule"
        ),
    },
    "CreateResponse": {},
    "CreateImageRequest": {},
}


_REASONING_KEYS = ("reasoning_content", "reasoning_details", "reasoning")


def _misplaced_reasoning(schema_name: str, body: Any) -> list[str]:
    """The replayed reasoning fields are allowed on an assistant message only."""
    if schema_name != "CreateChatCompletionRequest" or not isinstance(body, dict):
        return []
    return [
        f"{schema_name} messages[{i}].{key}: only an assistant message carries it"
        for i, message in enumerate(body.get("messages") or ())
        for key in _REASONING_KEYS
        if isinstance(message, dict) and key in message and message.get("role") != "assistant"
    ]


def request_problems(path: str, body: Any) -> list[str]:
    """What is wrong with a request body sent to ``path`` (an OpenAI or Anthropic endpoint):
    schema errors, and keys no schema declares that ``ALLOWED_UNDECLARED`` does not name."""
    if body is None:
        return [f"{path}: the body is not JSON"]
    for suffix, schema_name in OPENAI_SCHEMAS.items():
        if path.endswith(suffix):
            if not CHECKS_OPENAI:
                return _misplaced_reasoning(schema_name, body)
            allowed = ALLOWED_UNDECLARED[schema_name]
            extra = sorted(undeclared_keys(schema_name, body) - allowed.keys())
            return [
                *(f"{schema_name} {e}" for e in schema_errors(schema_name, body)),
                *(f"{schema_name} {key}: no schema declares this key" for key in extra),
                *_misplaced_reasoning(schema_name, body),
            ]
    if path.endswith("/messages"):
        return [f"Messages API {e}" for e in anthropic_errors(body)]
    if path.endswith(":streamGenerateContent"):
        return [f"Gemini {e}" for e in gemini_errors(body)]
    return [f"{path}: no request schema is known for this endpoint"]


# -- Anthropic Messages: the reference's facts, checked by hand ---------------------------------

_USER_BLOCKS = {"text", "image", "tool_result"}
_ASSISTANT_BLOCKS = {"text", "thinking", "redacted_thinking", "tool_use"}
_TOP_LEVEL = {
    "model",
    "max_tokens",
    "messages",
    "stream",
    "system",
    "tools",
    "thinking",
    "output_config",
}


def anthropic_errors(body: Any) -> list[str]:
    """What in ``body`` breaks the Messages API request shape; empty when it conforms."""
    errors: list[str] = []
    if not isinstance(body, dict):
        return ["$: body is not an object"]
    for key in sorted(set(body) - _TOP_LEVEL):
        errors.append(f"{key}: not a Messages API request key we expect to send")
    if not isinstance(body.get("model"), str) or not body.get("model"):
        errors.append("model: required non-empty string")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        errors.append("max_tokens: required positive integer")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*errors, "messages: required non-empty array"]
    if messages[0].get("role") != "user":
        errors.append("messages[0].role: the first message must be the user's")
    for i, message in enumerate(messages):
        errors.extend(_anthropic_message(i, message, messages[i - 1] if i else None))
    for j, tool in enumerate(body.get("tools", ())):
        if set(tool) - {"name", "description", "input_schema", "cache_control"}:
            errors.append(f"tools[{j}]: unexpected keys {sorted(set(tool))}")
        if not isinstance(tool.get("input_schema"), dict):
            errors.append(f"tools[{j}].input_schema: required object")
    thinking = body.get("thinking")
    if thinking is not None and thinking.get("type") not in ("adaptive", "enabled", "disabled"):
        errors.append(f"thinking.type: unknown {thinking.get('type')!r}")
    errors.extend(_anthropic_system(body.get("system")))
    errors.extend(_cache_marks(body))
    return errors


def _anthropic_system(system: Any) -> list[str]:
    """``system``: a string, or a non-empty list of text blocks."""
    if system is None or isinstance(system, str):
        return []
    if not isinstance(system, list) or not system:
        return ["system: a string or a non-empty array of text blocks"]
    return [
        f"system[{j}]: a text block with a string text"
        for j, block in enumerate(system)
        if not isinstance(block, dict)
        or block.get("type") != "text"
        or not isinstance(block.get("text"), str)
        or set(block) - {"type", "text", "cache_control"}
    ]


def _cache_marks(body: dict[str, Any]) -> list[str]:
    """Prompt-cache breakpoints: ``{"type": "ephemeral"}`` (a ``ttl`` of 5m or 1h allowed), at
    most four in the request, never on a thinking block."""
    marked: list[tuple[str, Any]] = []
    for j, tool in enumerate(body.get("tools") or ()):
        marked.append((f"tools[{j}]", tool))
    system = body.get("system")
    for j, block in enumerate(system if isinstance(system, list) else ()):
        marked.append((f"system[{j}]", block))
    for i, message in enumerate(body.get("messages") or ()):
        content = message.get("content") if isinstance(message, dict) else None
        for j, block in enumerate(content if isinstance(content, list) else ()):
            marked.append((f"messages[{i}].content[{j}]", block))
    errors: list[str] = []
    count = 0
    for where, block in marked:
        if not isinstance(block, dict) or "cache_control" not in block:
            continue
        count += 1
        mark = block["cache_control"]
        extra = set(mark) - {"type", "ttl"} if isinstance(mark, dict) else {"?"}
        if not isinstance(mark, dict) or mark.get("type") != "ephemeral" or extra:
            errors.append(f"{where}.cache_control: must be {{'type': 'ephemeral'}}")
        elif mark.get("ttl", "5m") not in ("5m", "1h"):
            errors.append(f"{where}.cache_control.ttl: 5m or 1h")
        if block.get("type") in ("thinking", "redacted_thinking"):
            errors.append(f"{where}: a thinking block cannot carry cache_control")
    if count > 4:
        errors.append(f"cache_control: at most 4 breakpoints, found {count}")
    return errors


def _anthropic_message(i: int, message: Any, previous: Any) -> list[str]:
    where = f"messages[{i}]"
    role = message.get("role")
    if role not in ("user", "assistant"):
        return [f"{where}.role: must be user or assistant, got {role!r}"]
    errors = []
    if previous is not None and previous.get("role") == role:
        errors.append(f"{where}.role: two {role} messages in a row (roles must alternate)")
    content = message.get("content")
    if isinstance(content, str):
        return errors
    if not isinstance(content, list) or not content:
        return [*errors, f"{where}.content: a string or a non-empty array of blocks"]
    allowed = _USER_BLOCKS if role == "user" else _ASSISTANT_BLOCKS
    kinds = [block.get("type") for block in content]
    for j, kind in enumerate(kinds):
        if kind not in allowed:
            errors.append(f"{where}.content[{j}].type: {kind!r} is not a {role} block")
    if "tool_use" in kinds:
        thinking = [k in ("thinking", "redacted_thinking") for k in kinds]
        first_other = thinking.index(False) if False in thinking else len(kinds)
        if any(thinking[first_other:]):
            errors.append(f"{where}: thinking blocks must come first when a tool is used")
    for j, block in enumerate(content):
        errors.extend(_anthropic_block(f"{where}.content[{j}]", block))
    return errors


def _anthropic_block(where: str, block: dict[str, Any]) -> list[str]:
    kind = block.get("type")
    needs: dict[object, dict[str, type]] = {
        "text": {"text": str},
        "image": {"source": dict},
        "tool_result": {"tool_use_id": str},
        "thinking": {"thinking": str, "signature": str},
        "redacted_thinking": {"data": str},
        "tool_use": {"id": str, "name": str, "input": dict},
    }
    need = needs.get(kind, {})
    errors = [
        f"{where}.{field}: required {kind_.__name__}"
        for field, kind_ in need.items()
        if not isinstance(block.get(field), kind_)
    ]
    if kind == "image":
        source = block.get("source", {})
        if source.get("type") != "base64" or not source.get("media_type") or not source.get("data"):
            errors.append(f"{where}.source: a base64 source with media_type and data")
    if kind == "tool_result":
        errors.extend(_tool_result_content(where, block.get("content")))
    return errors


def _tool_result_content(where: str, content: Any) -> list[str]:
    """A tool_result's content: a string, or a non-empty list of text and image blocks."""
    if content is None or isinstance(content, str):
        return []
    if not isinstance(content, list) or not content:
        return [f"{where}.content: a string or a non-empty array of text and image blocks"]
    errors = []
    for j, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind not in ("text", "image"):
            errors.append(f"{where}.content[{j}].type: {kind!r} is not a tool_result block")
            continue
        errors.extend(_anthropic_block(f"{where}.content[{j}]", block))
    return errors


# -- Gemini generateContent: the public API reference's shapes, checked by hand -----------------

_GEMINI_TOP_LEVEL = {"contents", "systemInstruction", "tools", "generationConfig"}
_GEMINI_PART_DATA = {"text", "inlineData", "functionCall", "functionResponse"}
_GEMINI_PART_KEYS = _GEMINI_PART_DATA | {"thought", "thoughtSignature"}
_GEMINI_GENERATION = {"maxOutputTokens", "thinkingConfig"}
_GEMINI_THINKING = {"includeThoughts", "thinkingBudget", "thinkingLevel"}


def gemini_errors(body: Any) -> list[str]:
    """A ``GenerateContentRequest`` as we send it: known keys only, ``user``/``model`` contents
    of well-formed parts, function responses that name their function."""
    if not isinstance(body, dict):
        return ["$: not an object"]
    errors = [f"{key}: not a request field" for key in sorted(set(body) - _GEMINI_TOP_LEVEL)]
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        errors.append("contents: must be a non-empty list")
        contents = []
    for i, content in enumerate(contents):
        if not isinstance(content, dict) or content.get("role") not in ("user", "model"):
            errors.append(f"contents[{i}]: needs role user or model")
            continue
        parts = content.get("parts")
        if not isinstance(parts, list) or not parts:
            errors.append(f"contents[{i}].parts: must be a non-empty list")
            continue
        for j, part in enumerate(parts):
            errors += _gemini_part(f"contents[{i}].parts[{j}]", part, content["role"])
    system = body.get("systemInstruction")
    if system is not None and not (
        isinstance(system, dict) and all("text" in p for p in system.get("parts") or [{}])
    ):
        errors.append("systemInstruction: must hold text parts")
    for k, tool in enumerate(body.get("tools") or ()):
        for n, declaration in enumerate(tool.get("functionDeclarations") or ()):
            keys = set(declaration)
            if not {"name", "description"} <= keys or keys - {
                "name",
                "description",
                "parametersJsonSchema",
            }:
                errors.append(f"tools[{k}].functionDeclarations[{n}]: unexpected shape {keys}")
    generation = body.get("generationConfig") or {}
    errors += [f"generationConfig.{key}: not sent" for key in set(generation) - _GEMINI_GENERATION]
    thinking = generation.get("thinkingConfig") or {}
    errors += [f"thinkingConfig.{key}: unknown" for key in set(thinking) - _GEMINI_THINKING]
    if "thinkingBudget" in thinking and "thinkingLevel" in thinking:
        errors.append("thinkingConfig: thinkingBudget and thinkingLevel are exclusive")
    return errors


def _gemini_part(where: str, part: Any, role: str) -> list[str]:
    if not isinstance(part, dict):
        return [f"{where}: not an object"]
    errors = [f"{where}.{key}: unknown part field" for key in set(part) - _GEMINI_PART_KEYS]
    data = set(part) & _GEMINI_PART_DATA
    if len(data) != 1:
        errors.append(f"{where}: needs exactly one of {sorted(_GEMINI_PART_DATA)}, has {data}")
    if "functionCall" in part and role != "model":
        errors.append(f"{where}: a functionCall belongs to a model content")
    if "functionResponse" in part:
        response = part["functionResponse"]
        if role != "user":
            errors.append(f"{where}: a functionResponse belongs to a user content")
        if not isinstance(response, dict) or not response.get("name"):
            errors.append(f"{where}.functionResponse: must name its function")
        elif not isinstance(response.get("response"), dict):
            errors.append(f"{where}.functionResponse.response: must be an object")
    inline = part.get("inlineData")
    if inline is not None and not (
        isinstance(inline, dict) and set(inline) == {"mimeType", "data"}
    ):
        errors.append(f"{where}.inlineData: needs mimeType and data")
    return errors
