"""Fuzzing the incremental tool-argument decoder against msgspec, the decoder of record: for
argument text cut into any pieces (mutated valid arguments, escapes and surrogate pairs cut
in half), ``feed`` never raises; when msgspec accepts the whole text as an object, the
streamed decoder did not fail, finished, and its content deltas and completed fields are
exactly msgspec's values; when it fails, msgspec refuses the text too."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzz import chunked, fuzz_settings, mutated
from wire.streamed_args import ContentDelta, ContentEnded, FieldCompleted, StreamedArgsDecoder

SEEDS = [
    json.dumps({"path": "/w/a.py", "contents": 'line 1\r\nline "2"\té 😀\\'}),
    json.dumps(
        {"contents": "x", "path": "p", "n": [1, {"a": None}], "b": True}, ensure_ascii=False
    ),
    json.dumps({"path": "p", "contents": "\ud83d\ude00 \u00e9 \\u", "path2": 1.5e3}),
    '{"path" : "a" , "contents":"b\\u00e9\\ud83d\\ude00","x":{"contents":"inner"}}',
]


@st.composite
def argument_pieces(draw: st.DrawFn) -> list[str]:
    text = draw(st.sampled_from(SEEDS))
    if draw(st.booleans()):
        raw = draw(mutated(text.encode("utf-8"), max_ops=3))
        text = raw.decode("utf-8", errors="replace")
    cuts = draw(chunked(text.encode("utf-8")))
    # Cut the text (not its bytes) at the same places, so every piece is a whole str.
    pieces, at = [], 0
    for piece in cuts:
        size = len(piece.decode("utf-8", errors="ignore"))
        pieces.append(text[at : at + size])
        at += size
    pieces.append(text[at:])
    return pieces


def _streamed(
    pieces: list[str], normalize: bool
) -> tuple[StreamedArgsDecoder, str, dict[str, str], bool]:
    decoder = StreamedArgsDecoder("contents", normalize_newlines=normalize)
    content: list[str] = []
    fields: dict[str, str] = {}
    ended = False
    for piece in pieces:
        for event in decoder.feed(piece):
            match event:
                case ContentDelta(text=text):
                    assert not ended
                    content.append(text)
                case ContentEnded():
                    ended = True
                case FieldCompleted(name=name, value=value):
                    fields.setdefault(name, value)
    return decoder, "".join(content), fields, ended


@fuzz_settings()
@given(argument_pieces(), st.booleans())
def test_streamed_arguments_agree_with_msgspec(pieces: list[str], normalize: bool) -> None:
    text = "".join(pieces)
    decoder, content, fields, ended = _streamed(pieces, normalize)
    try:
        value: Any = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        value = None
    if not isinstance(value, dict):
        return  # the text is refused at the call's end; what was streamed is only a preview
    if len(value) != len(json.loads(text, object_pairs_hook=list)):
        return  # a repeated key: msgspec keeps the last, the stream documents the first
    assert not decoder.failed, (decoder.error, text)
    assert decoder.finished
    expected = value.get("contents")
    if isinstance(expected, str):
        if normalize:
            expected = expected.replace("\r\n", "\n").replace("\r", "\n")
        assert ended and content == expected
    for name, got in fields.items():
        assert value[name] == got
    for name, want in value.items():
        if isinstance(want, str) and name != "contents":
            assert fields.get(name) == want, name
