"""Every test the README and docs/ cite exists: each ``tests/...py`` file, and each test named
after it (``file.py::test_name``, or ``::test_name`` for the file last cited on that line), so
moving or renaming a test cannot leave the docs pointing at nothing."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests.support.process import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# A cited test file, or a ``::test_name`` after one (that file's test, or the last file's).
CITATION = re.compile(r"(tests/[\w/]+\.py)|::(test_\w+)")


def citations(text: str) -> list[tuple[str, str | None]]:
    """(file, test name or None) for each citation, line by line."""
    found: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        last: str | None = None
        for match in CITATION.finditer(line):
            path, name = match.group(1), match.group(2)
            if path is not None:
                last = path
                found.append((path, None))
            elif last is not None:
                found.append((last, name))
    return found


@cache
def defined_names(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    )


def test_every_cited_test_file_and_test_exists() -> None:
    missing = []
    for doc in DOCS:
        for cited, name in citations(doc.read_text(encoding="utf-8")):
            path = REPO / cited
            where = f"{doc.relative_to(REPO)}: {cited}"
            if not path.is_file():
                missing.append(where)
            elif name is not None and name not in defined_names(path):
                missing.append(f"{where}::{name}")
    assert missing == [], "cited but not found:\n" + "\n".join(sorted(set(missing)))


def test_the_check_reads_every_form_of_citation() -> None:
    line = (
        "`tests/wire/test_a.py::test_x`, `::test_y`, `[::1]`, `tests/e2e/test_b.py`, `tests/c.py`"
    )
    assert citations(line) == [
        ("tests/wire/test_a.py", None),
        ("tests/wire/test_a.py", "test_x"),
        ("tests/wire/test_a.py", "test_y"),
        ("tests/e2e/test_b.py", None),
        ("tests/c.py", None),
    ]
