"""The names the request's MCP tools are offered to the model under (dynamic MCP tools).

Every provider format we speak takes function names matching ``^[a-zA-Z0-9_-]{1,64}$``, while
Cursor's MCP servers and tools may be named anything. A tool ``(server, tool)`` is offered as
``mcp_<server>_<tool>`` when that spelling is *exact*: both parts already use only those
characters, the server has no ``_`` (so the name reads back unambiguously), the tool has no
``__`` and does not start with ``_``, the whole fits in 64 characters and it is not a built-in
tool's name (compared the way built-in names are, ``normalize_tool_name``). Any other tool is
offered as that spelling with every other character turned into ``_``, cut to 54 characters,
then ``__`` and 8 hex digits of a SHA-256 of the exact pair. Exact names never hold ``__`` and
hashed ones always do, so the two never meet; two hashed names can only meet on a 32-bit hash
collision, and then (as for a hashed name equal to a built-in's) the pairs involved take the
next salt of the hash, decided over the sorted set. So each tool's name depends on itself only:
it is the same whatever order the tools come in, and adding a tool renames no other.

``DynamicMcpTools`` is the run's table from the offered name back to the exact definition.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable

import msgspec

from wire.tools.mcp_catalog import McpTool

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_NAME = 64
PREFIX = "mcp_"
_HASH_DIGITS = 8
_HASH_SEPARATOR = "__"
_KEPT = MAX_NAME - len(_HASH_SEPARATOR) - _HASH_DIGITS
_ALLOWED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")

Key = tuple[str, str]  # (server identifier, tool name)


def _normalized(name: str) -> str:
    """As ``wire.tools.registry.normalize_tool_name`` (which this module cannot import)."""
    return "".join(ch for ch in name if ch.isascii() and ch.isalnum()).lower()


@functools.lru_cache(maxsize=8)
def _normalized_names(names: frozenset[str]) -> frozenset[str]:
    """The built-in names normalised, once per set of names (the registry's, nearly always)."""
    return frozenset(_normalized(name) for name in names)


def _clean(text: str) -> str:
    return "".join(ch if ch in _ALLOWED else "_" for ch in text)


def _spelling(key: Key) -> str:
    server, tool = key
    return f"{PREFIX}{_clean(server)}_{_clean(tool)}"


def _exact(key: Key, builtins: frozenset[str]) -> bool:
    server, tool = key
    name = f"{PREFIX}{server}_{tool}"
    return (
        bool(server)
        and _clean(server) == server
        and "_" not in server
        and _clean(tool) == tool
        and not tool.startswith("_")
        and _HASH_SEPARATOR not in tool
        and len(name) <= MAX_NAME
        and _normalized(name) not in builtins
    )


def _hashed(key: Key, salt: int) -> str:
    server, tool = key
    material = f"{salt}:{len(server)}:{server}{tool}".encode()
    digest = hashlib.sha256(material).hexdigest()[:_HASH_DIGITS]
    return f"{_spelling(key)[:_KEPT]}{_HASH_SEPARATOR}{digest}"


def offered_names(keys: Iterable[Key], builtin_names: Iterable[str]) -> dict[Key, str]:
    """The name each ``(server, tool)`` is offered under: matches ``NAME_PATTERN``, distinct
    per key and from every built-in name (normalised), independent of the keys' order."""
    ordered = sorted(set(keys))
    if not ordered:  # every turn without MCP tools: nothing to name
        return {}
    builtins = _normalized_names(frozenset(builtin_names))
    exact = {key for key in ordered if _exact(key, builtins)}
    salts = dict.fromkeys(ordered, 0)
    names = {key: _spelling(key) if key in exact else _hashed(key, 0) for key in ordered}
    while True:
        holders: dict[str, list[Key]] = {}
        for key in ordered:
            holders.setdefault(names[key], []).append(key)
        moving = [
            key
            for name, group in holders.items()
            for key in group
            if key not in exact and (len(group) > 1 or _normalized(name) in builtins)
        ]
        if not moving:
            return names
        for key in moving:
            salts[key] += 1
            names[key] = _hashed(key, salts[key])


class DynamicMcpTool(msgspec.Struct, frozen=True):
    """One request-defined MCP tool offered to the model under ``name``."""

    name: str
    tool: McpTool


class DynamicMcpTools(msgspec.Struct, frozen=True):
    """The run's dynamic MCP tools, sorted by offered name (the order the model sees them)."""

    tools: tuple[DynamicMcpTool, ...] = ()

    def find(self, name: str) -> McpTool | None:
        """The definition offered under exactly ``name``, None when there is none."""
        for entry in self.tools:
            if entry.name == name:
                return entry.tool
        return None

    def names(self) -> tuple[str, ...]:
        return tuple(entry.name for entry in self.tools)


NO_DYNAMIC_TOOLS = DynamicMcpTools()


def dynamic_tools(tools: Iterable[McpTool], builtin_names: Iterable[str]) -> DynamicMcpTools:
    """``tools`` (one per server and tool name) under their offered names, sorted by name."""
    by_key = {(tool.server, tool.tool_name): tool for tool in tools}
    if not by_key:
        return DynamicMcpTools(())
    names = offered_names(by_key, builtin_names)
    entries = sorted((DynamicMcpTool(names[key], by_key[key]) for key in by_key), key=_by_name)
    return DynamicMcpTools(tuple(entries))


def _by_name(entry: DynamicMcpTool) -> str:
    return entry.name
