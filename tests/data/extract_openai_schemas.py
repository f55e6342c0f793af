"""Extract the three OpenAI request schemas our conformance tests need, with every schema they
reference, from OpenAI's published OpenAPI description into ``openai_request_schemas.json``.

Run by hand when the spec is updated (needs PyYAML, which is not a dependency)::

    python tests/data/extract_openai_schemas.py ../shared/reference/openai-openapi/openapi.yaml

The output keeps the spec's own layout (``components.schemas``) so every ``$ref`` resolves as
written. It is data from openai/openai-openapi under the MIT licence (``OPENAI_LICENSE``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

ROOTS = ("CreateChatCompletionRequest", "CreateResponse", "CreateImageRequest")
PREFIX = "#/components/schemas/"
OUT = Path(__file__).with_name("openai_request_schemas.json")


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"][len(PREFIX) :]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            found |= _refs(value)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(item) for item in node)) if node else set()
    return set()


def closure(schemas: dict[str, Any], roots: tuple[str, ...]) -> dict[str, Any]:
    """Every schema reachable from ``roots`` through ``$ref``."""
    keep: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep[name] = schemas[name]
        todo.extend(_refs(schemas[name]) - keep.keys())
    return dict(sorted(keep.items()))


def main(spec_path: str) -> None:
    spec = yaml.safe_load(Path(spec_path).read_text(encoding="utf-8"))
    schemas = closure(spec["components"]["schemas"], ROOTS)
    document = {
        "source": "openai/openai-openapi openapi.yaml, API version "
        f"{spec['info']['version']} (MIT licence, see OPENAI_LICENSE)",
        "roots": list(ROOTS),
        "components": {"schemas": schemas},
    }
    OUT.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(schemas)} schemas")


if __name__ == "__main__":
    main(sys.argv[1])
