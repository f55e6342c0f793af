"""The prompt assets: tool schemas, per-mode tool lists, system prompts and runtime templates.

They ship inside the ``prompt`` package (``prompt/cursor/``) and are read through
``importlib.resources``, so an installed server uses exactly the files it was built with; there
is no per-file override from a runtime directory. They are loaded once, at startup, and
validated as a whole: a broken asset stops the server with a ``PromptAssetError`` naming the
file and the problem, rather than failing the first run that happens to touch it.

Layout under ``prompt/cursor/``:

- ``tools.json``: the only source of tool schemas, ``{"tools": [tool, …], "variants": {…}}``.
  A tool is an OpenAI function tool ``{"type": "function", "function": {"name", "description",
  "parameters"}}``; ``variants`` (optional) maps ``"Name.variant"`` to another tool of the same
  shape and the same name, a different description or schema of a tool the registry runs, which
  a mode can offer instead of the base one;
- ``modes/<mode>.json``: ``{"tools": [entry, …]}``, the tools offered in that mode, in the order
  the model sees them; an entry is a tool name or ``{"name": N, "variant": V}``;
- ``<mode>/prompt.md``: the system prompt; ``{{MODEL_NAME}}`` is its only placeholder;
- ``<mode>/runtime.md``: the runtime user message template; it must use every placeholder of
  ``prompt.runtime_message.RUNTIME_PLACEHOLDERS`` exactly once, may use those of
  ``DEBUG_PLACEHOLDERS`` any number of times, and no other.
"""

from __future__ import annotations

import functools
import json
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import msgspec

from actors.conversation.request import ToolSpec
from prompt.compaction import COMPACTION_MODE
from prompt.runtime_message import (
    DEBUG_PLACEHOLDERS,
    PLACEHOLDER,
    RUNTIME_PLACEHOLDERS,
    RuntimeContext,
    render_runtime_message,
)
from wire.tools.registry import REGISTRY
from wire.tools.switch_mode import MODE_IDS

SUBAGENT_MODE = "subagent"
"""The mode of every run the editor starts for a Task (``subagent_type_name`` set), whatever
its ``UserMessage.mode``; it is no AgentMode, so SwitchMode cannot name it."""

MODES: tuple[str, ...] = (*MODE_IDS, SUBAGENT_MODE)
"""The modes this server serves (Cursor's mode ids, ``wire.tools.switch_mode.MODE_IDS``, and
Subagent mode); each needs a manifest, a prompt and a runtime template."""

SYSTEM_PROMPT_PLACEHOLDERS: tuple[str, ...] = ("MODEL_NAME",)

ASSET_DIR = "cursor"
TOOLS_FILE = "tools.json"
MODES_DIR = "modes"

# What OpenAI accepts as a function name (Anthropic's rule is the same or looser).
_TOOL_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_FUNCTION_KEYS = frozenset({"name", "description", "parameters"})


class PromptAssetError(Exception):
    """A shipped asset is missing or inconsistent; the server must not start."""


class UnknownModeError(ValueError):
    """A run asked for a mode this server has no assets for (the run ends ``invalid_argument``)."""

    def __init__(self, mode: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown agent mode {mode!r} (this server has: {', '.join(known)})")
        self.mode = mode


class ModeAssets(msgspec.Struct, frozen=True, kw_only=True):
    """What one mode gives a run: its tools in manifest order and its two templates."""

    name: str
    tools: tuple[ToolSpec, ...]
    system_prompt_template: str
    runtime_template: str

    @property
    def label(self) -> str:
        """The mode as the user knows it ("Ask"), for text the model reads."""
        return self.name.capitalize()

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the tools this mode offers, in order."""
        return tuple(tool.name for tool in self.tools)

    def system_prompt(self, model_name: str) -> str:
        """The system prompt with the model's name filled in (one pass, nothing re-expanded)."""
        values = {"MODEL_NAME": model_name}
        return PLACEHOLDER.sub(lambda match: values[match.group(1)], self.system_prompt_template)

    def runtime_message(self, context: RuntimeContext) -> str:
        """The runtime user message for one request (see ``prompt.runtime_message``)."""
        return render_runtime_message(self.runtime_template, context)


class PromptAssets(msgspec.Struct, frozen=True, kw_only=True):
    """Every validated asset: the whole tool catalogue and each mode's assets."""

    tools: tuple[ToolSpec, ...]
    modes: tuple[ModeAssets, ...]

    def mode(self, name: str) -> ModeAssets:
        """The assets of mode ``name``; ``UnknownModeError`` names a mode that does not exist."""
        for mode in self.modes:
            if mode.name == name:
                return mode
        raise UnknownModeError(name, tuple(mode.name for mode in self.modes))


@functools.cache
def load_prompt_assets() -> PromptAssets:
    """Load and validate the assets shipped in the package (once; later calls share them)."""
    return _load(files("prompt").joinpath(ASSET_DIR))


def load_prompt_assets_from(path: Path) -> PromptAssets:
    """Load and validate a copy of the asset directory at ``path``. For tests only: the server
    never reads assets from anywhere but its own package."""
    return _load(path)


def _load(root: Traversable) -> PromptAssets:
    catalog, variants = _load_tools(root)
    _refuse_unknown_manifests(root)
    modes = tuple(_load_mode(root, name, catalog, variants) for name in MODES)
    return PromptAssets(tools=tuple(catalog.values()), modes=modes)


def _load_tools(root: Traversable) -> tuple[dict[str, ToolSpec], dict[str, ToolSpec]]:
    """The base tools by name and the variants by ``"Name.variant"``."""
    data = _read_json(root, TOOLS_FILE)
    if not isinstance(data, dict) or not isinstance(data.get("tools"), list):
        raise PromptAssetError(f'{TOOLS_FILE}: expected {{"tools": [function tool, …]}}')
    if extra := sorted(set(data) - {"tools", "variants"}):
        raise PromptAssetError(f"{TOOLS_FILE}: unexpected key(s) {', '.join(extra)}")
    catalog: dict[str, ToolSpec] = {}
    for index, entry in enumerate(data["tools"]):
        tool = _tool_spec(entry, f"{TOOLS_FILE}: tool #{index}")
        if tool.name in catalog:
            raise PromptAssetError(f"{TOOLS_FILE}: duplicate tool {tool.name!r}")
        catalog[tool.name] = tool
    raw_variants = data.get("variants", {})
    if not isinstance(raw_variants, dict):
        raise PromptAssetError(f'{TOOLS_FILE}: "variants" must be an object')
    variants = {key: _variant(key, entry, catalog) for key, entry in raw_variants.items()}
    return catalog, variants


def _variant(key: str, entry: Any, catalog: dict[str, ToolSpec]) -> ToolSpec:
    """A variant ``"Name.variant"`` of a base tool the registry runs, under the base's name
    (the model calls it by that name, so the call runs as the base tool)."""
    where = f"{TOOLS_FILE}: variant {key!r}"
    base, dot, variant = key.partition(".")
    if not dot or not base or not variant or "." in variant:
        raise PromptAssetError(f'{where}: the key must be "ToolName.variant"')
    if base not in catalog:
        raise PromptAssetError(f"{where}: no base tool {base!r} in {TOOLS_FILE}")
    if base not in REGISTRY:
        raise PromptAssetError(
            f"{where}: base tool {base!r} is not one this server runs "
            "(no row in wire.tools.registry)"
        )
    tool = _tool_spec(entry, where, named=where)
    if tool.name != base:
        raise PromptAssetError(f"{where}: its function name must be {base!r}, not {tool.name!r}")
    return tool


def _tool_spec(entry: Any, where: str, named: str | None = None) -> ToolSpec:
    """A function tool; errors after its name is known say ``named`` (else "tool 'Name'")."""
    if not isinstance(entry, dict) or entry.get("type") != "function":
        raise PromptAssetError(f'{where}: expected {{"type": "function", "function": {{…}}}}')
    if set(entry) != {"type", "function"} or not isinstance(entry["function"], dict):
        raise PromptAssetError(f'{where}: expected exactly the keys "type" and "function"')
    function = entry["function"]
    name = function.get("name")
    if not isinstance(name, str) or not name or len(name) > 64 or set(name) - _TOOL_NAME_CHARS:
        raise PromptAssetError(f"{where}: name must be 1-64 letters, digits, '_' or '-'")
    where = named or f"{TOOLS_FILE}: tool {name!r}"
    if extra := sorted(set(function) - _FUNCTION_KEYS):
        raise PromptAssetError(f"{where}: unexpected key(s) {', '.join(extra)}")
    description = function.get("description")
    if not isinstance(description, str) or not description.strip():
        raise PromptAssetError(f"{where}: missing description")
    parameters = function.get("parameters")
    _check_object_schema(parameters, f"{where}: parameters")
    assert isinstance(parameters, dict)  # _check_object_schema refused anything else
    return ToolSpec(name=name, description=description, parameters=parameters)


def _check_object_schema(schema: Any, where: str) -> None:
    """An object schema: ``type: object``, ``properties`` of typed schemas, ``required`` among
    them. Nested object schemas (array items, object properties) are checked the same way."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise PromptAssetError(f'{where}: not a JSON-schema object ("type": "object")')
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise PromptAssetError(f"{where}: properties must be an object")
    for key, value in properties.items():
        _check_value_schema(value, f"{where}.{key}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(item, str) for item in required):
        raise PromptAssetError(f"{where}: required must be a list of property names")
    if missing := [item for item in required if item not in properties]:
        raise PromptAssetError(f"{where}: required names unknown properties {missing}")
    if len(set(required)) != len(required):
        raise PromptAssetError(f"{where}: required lists a property twice")


def _check_value_schema(schema: Any, where: str) -> None:
    if not isinstance(schema, dict) or not isinstance(schema.get("type"), str):
        raise PromptAssetError(f'{where}: a property schema needs a "type"')
    if schema["type"] == "object":
        _check_object_schema(schema, where)
    elif schema["type"] == "array" and "items" in schema:
        _check_value_schema(schema["items"], f"{where}[]")


def _refuse_unknown_manifests(root: Traversable) -> None:
    """A manifest for a mode the server does not know would be silently ignored; refuse it."""
    modes_dir = root.joinpath(MODES_DIR)
    if not modes_dir.is_dir():
        raise PromptAssetError(f"{MODES_DIR}/: missing")
    for entry in modes_dir.iterdir():
        name = entry.name[: -len(".json")]
        if entry.name.endswith(".json") and name not in MODES and name != COMPACTION_MODE:
            raise PromptAssetError(
                f"{MODES_DIR}/{entry.name}: no such mode (this server has: {', '.join(MODES)})"
            )


def _load_mode(
    root: Traversable, name: str, catalog: dict[str, ToolSpec], variants: dict[str, ToolSpec]
) -> ModeAssets:
    manifest_path = f"{MODES_DIR}/{name}.json"
    manifest = _read_json(root, manifest_path)
    entries = manifest.get("tools") if isinstance(manifest, dict) else None
    if not isinstance(entries, list) or len(manifest) != 1:
        raise PromptAssetError(f'{manifest_path}: expected {{"tools": [tool name, …]}}')
    tools: list[ToolSpec] = []
    for entry in entries:
        tool = _manifest_tool(entry, manifest_path, catalog, variants)
        if tool.name in (seen.name for seen in tools):
            raise PromptAssetError(f"{manifest_path}: duplicate tool {tool.name!r}")
        tools.append(tool)
    prompt_path = f"{name}/prompt.md"
    runtime_path = f"{name}/runtime.md"
    system_prompt = _read_text(root, prompt_path)
    runtime = _read_text(root, runtime_path)
    _check_placeholders(system_prompt, prompt_path, SYSTEM_PROMPT_PLACEHOLDERS)
    _check_placeholders(
        runtime, runtime_path, DEBUG_PLACEHOLDERS, exactly_once=RUNTIME_PLACEHOLDERS
    )
    return ModeAssets(
        name=name,
        tools=tuple(tools),
        system_prompt_template=system_prompt,
        runtime_template=runtime,
    )


def _manifest_tool(
    entry: Any, where: str, catalog: dict[str, ToolSpec], variants: dict[str, ToolSpec]
) -> ToolSpec:
    """One manifest entry: a base tool by name, or ``{"name": N, "variant": V}``."""
    if isinstance(entry, dict) and set(entry) == {"name", "variant"}:
        key = f"{entry['name']}.{entry['variant']}"
        if key not in variants:
            raise PromptAssetError(f"{where}: unknown variant {key!r} (not in {TOOLS_FILE})")
        return variants[key]
    if not isinstance(entry, str):
        raise PromptAssetError(
            f'{where}: an entry is a tool name or {{"name": …, "variant": …}}, got {entry!r}'
        )
    if entry not in catalog:
        raise PromptAssetError(f"{where}: unknown tool {entry!r} (not in {TOOLS_FILE})")
    if entry not in REGISTRY:
        raise PromptAssetError(
            f"{where}: tool {entry!r} is not one this server runs (no row in wire.tools.registry)"
        )
    return catalog[entry]


def _check_placeholders(
    text: str, where: str, allowed: tuple[str, ...], *, exactly_once: tuple[str, ...] = ()
) -> None:
    """Only known placeholders: each of ``exactly_once`` exactly once, ``allowed`` ones any
    number of times; no stray braces left."""
    known = (*exactly_once, *allowed)
    used = [match.group(1) for match in PLACEHOLDER.finditer(text)]
    for name in used:
        if name not in known:
            raise PromptAssetError(
                f"{where}: unknown placeholder {{{{{name}}}}} (known: {', '.join(known)})"
            )
    for name in exactly_once:
        count = used.count(name)
        if count == 0:
            raise PromptAssetError(f"{where}: missing placeholder {{{{{name}}}}}")
        if count > 1:
            raise PromptAssetError(f"{where}: placeholder {{{{{name}}}}} appears {count} times")
    rest = PLACEHOLDER.sub("", text)
    if "{{" in rest or "}}" in rest:
        raise PromptAssetError(f"{where}: unbalanced '{{{{' or '}}}}' outside a placeholder")


def _read_text(root: Traversable, relative: str) -> str:
    entry = _resolve(root, relative)
    if not entry.is_file():
        raise PromptAssetError(f"{relative}: missing")
    try:
        text = entry.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptAssetError(
            f"{relative}: not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None
    if not text.strip():
        raise PromptAssetError(f"{relative}: empty")
    return text


def _read_json(root: Traversable, relative: str) -> Any:
    text = _read_text(root, relative)
    try:
        return json.loads(text, object_pairs_hook=functools.partial(_unique_keys, relative))
    except json.JSONDecodeError as exc:
        raise PromptAssetError(
            f"{relative}: invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None


def _unique_keys(relative: str, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` keeps the last of two equal keys; a repeated key is a mistake, say so."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise PromptAssetError(f"{relative}: duplicate key {key!r} in one object")
        result[key] = value
    return result


def _resolve(root: Traversable, relative: str) -> Traversable:
    entry = root
    for part in relative.split("/"):
        entry = entry.joinpath(part)
    return entry
