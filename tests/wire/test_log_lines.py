"""Log lines take any text a client sent, bytes that were not UTF-8 included."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from wire.log import format_event


def test_bytes_that_were_not_utf8_are_shown_escaped() -> None:
    line = format_event("edge request refused", {"path": "/healthz?\udcff", "peer": "::1"})
    assert line == 'edge request refused path="/healthz?\\\\xff" peer=::1'


@given(st.text(alphabet=st.characters(exclude_categories=())))
def test_any_text_makes_one_line(text: str) -> None:
    line = format_event("event", {"value": text})
    line.encode("utf-8")  # always encodable: it reaches a UTF-8 log
    assert "\n" not in line and line.startswith("event")
