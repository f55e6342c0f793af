"""The compaction assets: the summarizer's system prompt, its closing request and its (empty)
tool list (``cursor/modes/compaction.json``, ``cursor/compaction/{prompt,runtime}.md``, our
own words). Compaction is no mode a run can be in: only the summary call uses them."""

from __future__ import annotations

import functools
import json
from importlib.resources import files

import msgspec

COMPACTION_MODE = "compaction"


class CompactionAssets(msgspec.Struct, frozen=True):
    """The summary call's instructions and the user message that ends its history."""

    prompt: str
    request: str


class CompactionAssetError(Exception):
    """The shipped compaction assets are missing or not as expected; the server must not start."""


@functools.cache
def compaction_assets() -> CompactionAssets:
    """Load and check the assets once: the manifest offers no tool, both texts are non-empty
    and hold no placeholder."""
    root = files("prompt").joinpath("cursor")
    manifest = json.loads(root.joinpath("modes", f"{COMPACTION_MODE}.json").read_text("utf-8"))
    if manifest != {"tools": []}:
        raise CompactionAssetError(f'modes/{COMPACTION_MODE}.json: expected {{"tools": []}}')
    texts = []
    for name in ("prompt.md", "runtime.md"):
        text = root.joinpath(COMPACTION_MODE, name).read_text("utf-8").strip()
        if not text or "{{" in text:
            raise CompactionAssetError(f"{COMPACTION_MODE}/{name}: empty or has a placeholder")
        texts.append(text)
    return CompactionAssets(prompt=texts[0], request=texts[1])
