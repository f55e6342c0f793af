"""Shared pieces of the decoder fuzz tests: settings and byte-level mutations of valid inputs.

Random bytes rarely get past a decoder's first check; mutating a valid input (a recorded
stream, a serialized message) reaches the checks behind it. ``FUZZ_EXAMPLES`` raises the
number of examples per test for a longer run by hand (e.g. ``FUZZ_EXAMPLES=20000``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "200"))


def fuzz_settings(examples: int = EXAMPLES) -> Callable[..., object]:
    """Modest by default; the deadline is the hang guard (generous: the machine is shared)."""
    return settings(
        max_examples=examples,
        deadline=2000,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )


@st.composite
def mutated(draw: st.DrawFn, base: bytes, max_ops: int = 4) -> bytes:
    """``base`` with up to ``max_ops`` edits: flip, set, insert, delete, duplicate, truncate."""
    data = bytearray(base)
    for _ in range(draw(st.integers(0, max_ops))):
        op = draw(st.sampled_from(("flip", "set", "insert", "delete", "duplicate", "truncate")))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and at < len(data):
            data[at] = draw(st.sampled_from((0x00, 0x01, 0x7F, 0x80, 0xFF, 0x0A, 0x0D, 0x22)))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif op == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 64))]
        elif op == "truncate":
            del data[at:]
    return bytes(data)


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` split at arbitrary points (a network delivers any chunking)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=6)))
    pieces, start = [], 0
    for cut in cuts:
        pieces.append(data[start:cut])
        start = cut
    pieces.append(data[start:])
    return pieces
