"""Imports point downward: each layer imports only the layers its row allows, and no two
packages import each other. The rules are one table; the imports are read with ``ast`` from
every module of ours (imports inside functions count too)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = ("actors", "wire", "store", "prompt", "console", "run")

# A module belongs to the first layer whose prefix it starts with (most specific first).
# Each layer may import itself and the layers listed, nothing else of ours.
LAYERS: dict[str, tuple[str, ...]] = {
    # the domain: canonical conversation, its projection, neutral request and events
    "actors.conversation": (),
    # sans-IO protocol code (our .proto subset and its generated modules included)
    "wire.proto": (),
    "wire.http": ("wire", "wire.proto", "actors.messages", "actors.run_output", "actors.loop"),
    "wire": ("wire.proto",),
    "store": (),
    "prompt": ("actors.conversation", "wire"),  # wire: the tool registry a mode's tools are in
    # the one actor/loop crossing, below every actor
    "actors.loop": ("wire", "wire.proto"),
    # the worker pool actors run on, below every actor
    "actors.pool": (),
    "actors.providers": (
        "actors.conversation",
        "actors.loop",
        "actors.pool",
        "store",
        "wire",
        "wire.proto",
    ),
    "actors": (
        "actors.conversation",
        "actors.loop",
        "actors.pool",
        "actors.providers",
        "store",
        "prompt",
        "wire",
        "wire.proto",
    ),
    # actors.loop: the model checks await a ProviderActor's messages through the bridge;
    # actors.model_selection: they test a model on the route a run would take to it
    "console": (
        "store",
        "actors.providers",
        "actors.conversation",
        "actors.loop",
        "actors.model_selection",
        "wire",
        "wire.http",
    ),
    # the composition root knows everything
    "run": ("*",),
}
# Small modules an upper layer's row names on their own (message types, the output port).
_SINGLE_MODULES = ("actors.messages", "actors.run_output", "actors.model_selection")


def layer_of(module: str) -> str:
    for name in (*_SINGLE_MODULES, *sorted(LAYERS, key=len, reverse=True)):
        if module == name or module.startswith(name + "."):
            return name
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def our_modules() -> dict[str, Path]:
    found = {"run": ROOT / "run.py"}
    for package in OURS[:-1]:
        for path in (ROOT / package).rglob("*.py"):
            if not path.name.endswith("_pb2.py"):
                found[_module_name(path)] = path
    return found


def imports_of(path: Path) -> set[str]:
    """The modules of ours ``path`` imports, as written (``from a.b import c`` gives ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found.update(name for name in names if name.split(".")[0] in OURS)
    return found


def _allowed(source_layer: str, target: str) -> bool:
    allowed = LAYERS.get(source_layer, ())
    if "*" in allowed:
        return True
    target_layer = layer_of(target)
    if target_layer == source_layer or _package(target) == source_layer:
        return True
    return target_layer in allowed


def test_every_import_points_to_an_allowed_layer() -> None:
    wrong = []
    for module, path in sorted(our_modules().items()):
        source = layer_of(module)
        if source in _SINGLE_MODULES:
            source = "actors"
        for target in sorted(imports_of(path)):
            if not _allowed(source, target):
                wrong.append(f"{module} ({source}) imports {target} ({layer_of(target)})")
    assert wrong == [], "\n".join(wrong)


def _package(module: str) -> str:
    """The package a module's folder is (``run`` is its own)."""
    layer = layer_of(module)
    return "actors" if layer in _SINGLE_MODULES else layer


def test_no_two_packages_import_each_other() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in our_modules().items():
        for target in imports_of(path):
            a, b = _package(module), _package(target)
            if a != b:
                graph[a].add(b)
    cycles = []
    for start in sorted(graph):
        stack, seen = [(start, [start])], set()
        while stack:
            node, trail = stack.pop()
            for nxt in sorted(graph[node]):
                if nxt == start:
                    cycles.append(" -> ".join([*trail, nxt]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*trail, nxt]))
    assert cycles == [], "\n".join(cycles)


def test_the_rules_catch_an_upward_import(tmp_path: Path) -> None:
    """The check itself: a domain module importing an actor, or sans-IO wire importing the
    store, is reported."""
    assert not _allowed("actors.conversation", "actors.session")
    assert not _allowed("wire", "store.catalog")
    assert not _allowed("wire", "actors.conversation.model")
    assert not _allowed("wire.http", "console.api")
    assert not _allowed("actors.providers", "actors.session")
    assert _allowed("actors", "actors.providers.actor")
    assert _allowed("run", "console.api")
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from store.catalog import x\nimport wire.errors\n")
    assert imports_of(source) == {"store.catalog", "wire.errors"}
