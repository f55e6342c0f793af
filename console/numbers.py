"""Numbers the console reads from paths and queries: what a BIGINT column holds, or nothing."""

from __future__ import annotations

# The widest id, time or count a console path or query may name (a BIGINT column).
MAX_BIGINT = 2**63 - 1


def bigint_of(text: str) -> int | None:
    """``text`` as a non-negative integer a BIGINT column holds (ASCII digits only), else None."""
    if text.isascii() and text.isdigit() and int(text) <= MAX_BIGINT:
        return int(text)
    return None
