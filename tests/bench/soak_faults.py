"""The soak's fault plan: seeded draws both the provider and the clients make, and what each
fault calls for.

Every decision is a pure function of the seed and a key (a turn's tag, a provider request's
tag and attempt number), so the provider process and the client decide the same way without
talking, and a seed replays the same plan whatever order the requests arrive in.
"""

from __future__ import annotations

import hashlib

from tests.support.fake_provider import PROVIDER_FAULTS

# The server's retry budget (``wire/providers/retry.py``): a call fails after this many
# transient answers in a row.
ATTEMPTS = 3
TRANSIENT = frozenset({"500", "429"})


def draw(seed: int, key: str) -> float:
    """A number in [0, 1) fixed by ``seed`` and ``key``."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def drops_stream(seed: int, rate: float, tag: str) -> bool:
    """Whether the client drops its RunSSE stream during the turn ``tag`` (and resumes)."""
    return draw(seed, f"drop:{tag}") < rate


def provider_fault(seed: int, rate: float, drop_rate: float, tag: str, attempt: int) -> str:
    """The fault of the ``attempt``-th provider request of turn ``tag`` (``ok``: none). A turn
    whose client drops its stream gets none, so each turn has one fault kind to account for."""
    if drops_stream(seed, drop_rate, tag):
        return "ok"
    value = draw(seed, f"provider:{tag}:{attempt}")
    if value >= rate:
        return "ok"
    return PROVIDER_FAULTS[int(value / rate * len(PROVIDER_FAULTS)) % len(PROVIDER_FAULTS)]


def expected_end(faults: list[str]) -> str:
    """The end code a turn's provider faults call for, in arrival order: ``unavailable`` after
    a cut stream or ``ATTEMPTS`` transient answers in a row, else ``ok`` (retried)."""
    in_a_row = 0
    for fault in faults:
        if fault == "cut":
            return "unavailable"
        in_a_row = in_a_row + 1 if fault in TRANSIENT else 0
        if in_a_row == ATTEMPTS:
            return "unavailable"
    return "ok"
