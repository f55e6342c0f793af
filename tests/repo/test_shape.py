"""The shape a reader can hold: no module of ours over 700 lines, no class over 400, and no
module that imports itself through others. Read from the source with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.repo.test_layers import imports_of, our_modules
from tests.support.process import REPO as ROOT

MAX_FILE_LINES = 700
MAX_CLASS_LINES = 400


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_the_file_limit() -> None:
    over = {}
    for path in our_modules().values():
        if (lines := _lines(path)) > MAX_FILE_LINES:
            over[path.relative_to(ROOT).as_posix()] = lines
    assert over == {}


def test_no_class_is_over_the_class_limit() -> None:
    over = {}
    for path in our_modules().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    over[f"{path.relative_to(ROOT)}:{node.name}"] = lines
    assert over == {}


def test_no_module_imports_itself_through_others() -> None:
    modules = our_modules()
    graph = {name: {t for t in imports_of(path) if t in modules} for name, path in modules.items()}
    cycles = []
    for start in sorted(graph):
        stack: list[tuple[str, tuple[str, ...]]] = [(start, (start,))]
        seen = {start}
        while stack:
            node, trail = stack.pop()
            for nxt in sorted(graph[node]):
                if nxt == start:
                    cycles.append(" -> ".join((*trail, nxt)))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, (*trail, nxt)))
    assert cycles == []
