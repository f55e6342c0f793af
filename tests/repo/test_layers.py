"""Imports point downward: each layer imports only the layers its row allows, and no two
packages import each other. The rules are one table; the imports are read with ``ast`` from
every module of ours (imports inside functions count too)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.support.process import REPO as ROOT

OURS = ("actors", "wire", "store", "prompt", "console", "run")

# A module belongs to the first layer whose prefix it starts with (most specific first).
# Each layer may import itself and the layers listed, nothing else of ours.
# What the actors stand on: every actor package below them, the store, the prompts, the wire.
_BELOW_THE_ACTORS = (
    "actors.codecs",
    "actors.conversation",
    "actors.loop",
    "actors.pool",
    "actors.protocols",
    "actors.providers",
    "actors.services",
    "actors.tracing",
    "actors.turn",
    "store",
    "store.base",
    "store.catalog",
    "store.conversations",
    "prompt",
    "wire",
    "wire.tools",
    "wire.proto",
    "wire.providers",
)
LAYERS: dict[str, tuple[str, ...]] = {
    # the domain: canonical conversation, its projection, neutral request and events
    "actors.conversation": (),
    # sans-IO protocol code (our .proto subset and its generated modules included)
    "wire.proto": (),
    "wire": ("wire.proto",),
    # the tools: each one's arguments, card, result text and execution steps
    "wire.tools": ("wire", "wire.proto"),
    # the provider formats: sans-IO request builders and stream decoders over the domain
    "wire.providers": ("actors.conversation", "wire", "wire.proto", "wire.tools"),
    "wire.http": (
        "wire",
        "wire.tools",
        "wire.proto",
        "actors.protocols.edge",
        "actors.protocols.mailbox",
        "actors.protocols.run_output",
        "actors.loop",
    ),
    # what every part of the store builds on: the clock, the cipher, peewee typed
    "store.base": (),
    # providers, models and settings, one module per record; the domain's provider types and
    # the secret-header rule
    "store.catalog": ("actors.conversation", "store.base"),
    # the numbered schema migrations, each a frozen copy of the schema it changes
    "store.migrations": ("store.base",),
    # opening a database, instance leases, call records, run events, blobs
    "store": ("actors.conversation", "store.base", "store.catalog", "store.migrations"),
    # the conversation records, one module per record, over the instances' leases
    "store.conversations": ("store", "store.base"),
    "prompt": (
        "actors.conversation",
        "wire",
        "wire.tools",
    ),  # wire: the tool registry a mode's tools are in
    # the one actor/loop crossing, below every actor
    "actors.loop": ("wire", "wire.proto"),
    # the worker pool actors run on, below every actor
    "actors.pool": (),
    # pure codecs between Cursor's checkpoint and request forms and the domain
    "actors.codecs": (
        "actors.conversation",
        "prompt",
        "store",
        "store.base",
        "store.catalog",
        "wire",
        "wire.proto",
        "wire.tools",
    ),
    # every actor's messages, importing no actor
    "actors.protocols": (
        "actors.conversation",
        "actors.codecs",
        "wire",
        "wire.tools",
        "wire.proto",
        "wire.providers",
        "store",
        "store.base",
        "store.catalog",
        "store.conversations",
    ),
    # the pure phases of a turn: decisions, no IO, no actor
    "actors.turn": (
        "actors.conversation",
        "actors.codecs",
        "actors.protocols",
        "prompt",
        "store",
        "store.base",
        "store.catalog",
        "store.conversations",
        "wire",
        "wire.tools",
        "wire.proto",
        "wire.providers",
    ),
    # work the server itself does for a tool call or for the process (search, images, lease)
    "actors.services": (
        "actors.conversation",
        "actors.loop",
        "actors.providers",
        "store",
        "store.base",
        "store.catalog",
        "store.conversations",
        "wire",
        "wire.tools",
        "wire.proto",
        "wire.providers",
    ),
    # the spans two recorders derive from their facts (run events, call attempts)
    "actors.tracing": ("actors.conversation", "actors.protocols", "store", "store.base"),
    "actors.providers": (
        "actors.conversation",
        "actors.loop",
        "actors.pool",
        "actors.protocols",
        "actors.tracing",
        "store",
        "store.base",
        "store.catalog",
        "store.conversations",
        "wire",
        "wire.tools",
        "wire.proto",
        "wire.providers",
    ),
    # the actors that serve a run, each the one owner of its facts
    "actors": _BELOW_THE_ACTORS,
    # the SessionActor and the run kinds it drives: above every other actor
    "actors.run": ("actors", *_BELOW_THE_ACTORS),
    # actors.loop: the model checks await a ProviderActor's messages through the bridge;
    # actors.run.model_selection: they test a model on the route a run would take to it
    "console": (
        "store",
        "store.base",
        "store.catalog",
        "store.conversations",
        "actors.providers",
        "actors.protocols",
        "actors.conversation",
        "actors.loop",
        "actors.run.model_selection",
        "wire",
        "wire.tools",
        "wire.http",
        "wire.providers",
    ),
    # the composition root (``actors.server``) knows everything; ``run.py`` is the process
    "actors.server": ("*",),
    "run": ("*",),
}
# Small modules an upper layer's row names on their own (message types, the output port).
_SINGLE_MODULES = (
    "actors.protocols.edge",
    "actors.protocols.mailbox",
    "actors.protocols.run_output",
    "actors.run.model_selection",
)


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
    if _package(target) == source_layer or _package(target) in allowed:
        return True
    return layer_of(target) in allowed  # a single module a row names on its own


def test_every_import_points_to_an_allowed_layer() -> None:
    wrong = []
    for module, path in sorted(our_modules().items()):
        source = _package(module)
        for target in sorted(imports_of(path)):
            if not _allowed(source, target):
                wrong.append(f"{module} ({source}) imports {target} ({layer_of(target)})")
    assert wrong == [], "\n".join(wrong)


def _package(module: str) -> str:
    """The layer a module's folder is (``run`` is its own): a single module counts in the
    layer of its folder."""
    for name in sorted(LAYERS, key=len, reverse=True):
        if module == name or module.startswith(name + "."):
            return name
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


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
    assert not _allowed("actors.conversation", "actors.run.session")
    assert not _allowed("wire", "store.catalog")
    assert not _allowed("wire", "actors.conversation.model")
    assert not _allowed("wire.http", "console.api")
    assert not _allowed("actors.providers", "actors.run.session")
    assert not _allowed("actors.turn", "actors.tool_runtime")
    assert not _allowed("actors.protocols", "actors.checkpoint")
    assert not _allowed("actors", "actors.run.session")
    assert not _allowed("wire.providers", "actors.providers.actor")
    assert _allowed("actors", "actors.providers.actor")
    assert _allowed("actors.turn", "actors.protocols.tool_runtime")
    assert _allowed("run", "console.api")
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from store.catalog import x\nimport wire.errors\n")
    assert imports_of(source) == {"store.catalog", "wire.errors"}


def test_every_package_is_a_row() -> None:
    """A new package gets a row of its own: one that fell silently into its parent's layer
    could import whatever the parent may."""
    packages = {
        _module_name(path.parent / "__init__.py")
        for package in OURS[:-1]
        for path in (ROOT / package).rglob("__init__.py")
    }
    assert packages - set(LAYERS) == set()
    folders = {
        ".".join(path.relative_to(ROOT).parent.parts)
        for package in OURS[:-1]
        for path in (ROOT / package).rglob("*.py")
    }
    assert folders - packages == set(), "a folder of modules without an __init__.py"
