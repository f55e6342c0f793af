"""The runtime's request to go on with an answer the output limit cut (our own words, shipped
as ``cursor/continuation.md``)."""

from __future__ import annotations

import functools
from importlib.resources import files


@functools.cache
def continuation_text() -> str:
    """The user-side text of a continuation request, read once."""
    text = files("prompt").joinpath("cursor", "continuation.md").read_text(encoding="utf-8")
    return text.strip()
