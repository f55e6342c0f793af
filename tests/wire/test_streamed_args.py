"""The incremental argument decoder: any split of the text decodes the same; bad text stops it."""

from __future__ import annotations

import itertools
import json
from typing import Any

import msgspec
import pytest

pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wire.streamed_args import (
    ArgsEvent,
    ContentDelta,
    ContentEnded,
    FieldCompleted,
    StreamedArgsDecoder,
)

# ---- helpers -------------------------------------------------------------------------------


def split_at(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at the given offsets (clamped, sorted, repeats give empty pieces)."""
    points = sorted(min(max(cut, 0), len(text)) for cut in cuts)
    bounds = [0, *points, len(text)]
    return [text[start:end] for start, end in itertools.pairwise(bounds)]


def run(decoder: StreamedArgsDecoder, pieces: list[str]) -> list[ArgsEvent]:
    events: list[ArgsEvent] = []
    for piece in pieces:
        events.extend(decoder.feed(piece))
    return events


def content_of(events: list[ArgsEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, ContentDelta))


def completed(events: list[ArgsEvent]) -> dict[str, str]:
    return {event.name: event.value for event in events if isinstance(event, FieldCompleted)}


def lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def encode(value: Any, style: int) -> str:
    """The same JSON written the ways providers write it: compact, spaced, indented, ASCII-only."""
    match style:
        case 0:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        case 1:
            return json.dumps(value, ensure_ascii=True)
        case 2:
            return json.dumps(value, indent=2, ensure_ascii=False)
        case _:
            return " \n" + json.dumps(value, indent="\t", ensure_ascii=True) + "\r\n "


# Text that exercises the escapes: quotes, backslashes, controls, line endings, non-BMP.
tricky_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(['"', "\\", "/", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f"]),
        st.sampled_from(["é", "世", "\u2028", "😀", "𝄞", "\U0010ffff"]),
        st.characters(exclude_categories=["Cs"]),
    ),
    max_size=60,
)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    tricky_text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(tricky_text, inner, max_size=4)
    ),
    max_leaves=12,
)
cut_lists = st.lists(st.integers(min_value=0, max_value=2000), max_size=40)


@st.composite
def arguments(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """An arguments object with ``contents`` among other fields, and its JSON text."""
    value: dict[str, Any] = draw(st.dictionaries(tricky_text, json_values, max_size=5))
    value.pop("contents", None)
    value["contents"] = draw(tricky_text)
    if draw(st.booleans()):
        value["path"] = draw(tricky_text)
    items = list(value.items())
    order = draw(st.permutations(range(len(items))))
    value = dict(items[index] for index in order)
    return value, encode(value, draw(st.integers(0, 3)))


# ---- every split decodes the same ------------------------------------------------------------


@given(arguments(), cut_lists)
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_any_split_yields_exactly_the_decoded_field(
    case: tuple[dict[str, Any], str], cuts: list[int]
) -> None:
    value, text = case
    decoder = StreamedArgsDecoder("contents")
    events = run(decoder, split_at(text, cuts))
    assert content_of(events) == value["contents"]
    assert all(event.text for event in events if isinstance(event, ContentDelta))
    # One ContentEnded, after the last ContentDelta.
    ends = [index for index, event in enumerate(events) if isinstance(event, ContentEnded)]
    deltas = [index for index, event in enumerate(events) if isinstance(event, ContentDelta)]
    assert len(ends) == 1 and all(index < ends[0] for index in deltas)
    strings = {k: v for k, v in value.items() if isinstance(v, str) and k != "contents"}
    assert completed(events) == strings
    assert not decoder.failed and decoder.finished and decoder.error is None


@given(arguments(), cut_lists)
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_normalized_content_is_the_lf_form_of_the_value(
    case: tuple[dict[str, Any], str], cuts: list[int]
) -> None:
    value, text = case
    events = run(StreamedArgsDecoder("contents", normalize_newlines=True), split_at(text, cuts))
    assert content_of(events) == lf(value["contents"])
    assert all(event.text for event in events if isinstance(event, ContentDelta))


@given(st.lists(st.sampled_from(["a", "\r", "\n", "\r\n"]), max_size=30).map("".join), cut_lists)
def test_line_endings_split_across_pieces_are_normalized_once(text: str, cuts: list[int]) -> None:
    arguments_text = json.dumps({"contents": text})
    decoder = StreamedArgsDecoder("contents", normalize_newlines=True)
    assert content_of(run(decoder, split_at(arguments_text, cuts))) == lf(text)


def test_a_crlf_cut_between_its_characters_gives_one_newline() -> None:
    decoder = StreamedArgsDecoder("contents", normalize_newlines=True)
    pieces = ['{"contents":"a\\r', "\\nb\\r", '\\n"}']
    assert [decoder.feed(piece) for piece in pieces] == [
        [ContentDelta("a")],
        [ContentDelta("\nb")],
        [ContentDelta("\n"), ContentEnded()],
    ]


def test_a_trailing_cr_is_given_when_the_string_closes() -> None:
    decoder = StreamedArgsDecoder("contents", normalize_newlines=True)
    assert decoder.feed('{"contents":"x\\r') == [ContentDelta("x")]
    assert decoder.feed('"') == [ContentDelta("\n"), ContentEnded()]
    assert decoder.feed("}") == []


ESCAPED = (
    '{"path":"/tmp/a\\u0020b","contents":"l1\\nq\\"\\\\/\\/\\t\\u00e9\\ud83d\\ude00\\uD834\\uDD1E"}'
)
ESCAPED_CONTENT = 'l1\nq"\\//\té😀𝄞'


def test_escapes_split_at_every_pair_of_points() -> None:
    """Every cut into three pieces, so each escape is split everywhere, twice over."""
    assert json.loads(ESCAPED)["contents"] == ESCAPED_CONTENT
    for first in range(len(ESCAPED) + 1):
        for second in range(first, len(ESCAPED) + 1):
            decoder = StreamedArgsDecoder("contents")
            events = run(decoder, split_at(ESCAPED, [first, second]))
            assert content_of(events) == ESCAPED_CONTENT, (first, second)
            assert completed(events) == {"path": "/tmp/a b"}
            assert decoder.finished


def test_one_character_at_a_time_gives_each_character_once_complete() -> None:
    decoder = StreamedArgsDecoder("contents")
    outputs = [decoder.feed(char) for char in ESCAPED]
    texts = [event.text for out in outputs for event in out if isinstance(event, ContentDelta)]
    # A surrogate pair is never given in halves: each delta is whole characters.
    assert texts == list(ESCAPED_CONTENT)


def test_content_before_the_path_and_a_streamed_string_value() -> None:
    decoder = StreamedArgsDecoder("new_string", report_fields=("path",))
    assert decoder.feed('{"new_string": "ne') == [ContentDelta("ne")]
    assert decoder.feed('w", "old_string": "o", "pa') == [ContentDelta("w"), ContentEnded()]
    assert decoder.feed('th": "/x"}') == [FieldCompleted("path", "/x")]
    assert decoder.finished


def test_empty_content_ends_without_a_delta() -> None:
    decoder = StreamedArgsDecoder("contents")
    assert decoder.feed('{"contents": ""}') == [ContentEnded()]


def test_report_fields_limits_what_is_reported() -> None:
    text = '{"path": "p", "old_string": "o", "contents": "c", "extra": "e"}'
    everything = run(StreamedArgsDecoder("contents"), [text])
    assert completed(everything) == {"path": "p", "old_string": "o", "extra": "e"}
    only_path = run(StreamedArgsDecoder("contents", report_fields=("path",)), [text])
    assert completed(only_path) == {"path": "p"}
    nothing = run(StreamedArgsDecoder("contents", report_fields=()), [text])
    assert completed(nothing) == {}


# ---- what yields nothing -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"path": "a"}',
        "{}",
        '{"contents": 5}',
        '{"contents": null}',
        '{"contents": true}',
        '{"contents": ["text"]}',
        '{"contents": {"contents": "nested"}}',
        '{"x": {"contents": "nested"}, "y": ["contents", "z"]}',
        '{"other": "contents"}',
    ],
)
def test_a_missing_or_non_string_field_yields_no_content(text: str) -> None:
    decoder = StreamedArgsDecoder("contents", report_fields=())
    for cuts in ([], list(range(len(text)))):
        decoder = StreamedArgsDecoder("contents", report_fields=())
        assert run(decoder, split_at(text, cuts)) == []
        assert decoder.finished and not decoder.failed


def test_non_string_reported_fields_and_nested_strings_are_not_reported() -> None:
    text = '{"path": 3, "n": {"path": "inner"}, "l": ["s"], "s": "top"}'
    assert completed(run(StreamedArgsDecoder("contents"), [text])) == {"s": "top"}


def test_only_the_first_occurrence_of_a_key_counts() -> None:
    text = '{"contents": 1, "contents": "late", "path": "a", "path": "b"}'
    events = run(StreamedArgsDecoder("contents"), [text])
    assert events == [FieldCompleted("path", "a")]


# ---- invalid text stops it, never raises -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "good_prefix"),
    [
        ('["contents"]', ""),
        ('"contents"', ""),
        ("  42", ""),
        ('{"contents": "ab\x01cd"}', "ab"),
        ('{"contents": "ab\\qcd"}', "ab"),
        ('{"contents": "ab\\u12G4cd"}', "ab"),
        ('{"contents": "ab\\ud83dcd"}', "ab"),
        ('{"contents": "ab\\ud83d\\n"}', "ab"),
        ('{"contents": "ab\\ude00"}', "ab"),
        ('{"contents": "ab\\ud83d"}', "ab"),
        ('{"contents": "ab\ud83dcd"}', "ab"),
        ('{"a": 01, "contents": "x"}', ""),
        ('{"a": tru, "contents": "x"}', ""),
        ('{"a": [1,], "contents": "x"}', ""),
        ('{"a": 1,, "contents": "x"}', ""),
        ('{"a" 1, "contents": "x"}', ""),
        ('{"a": 1]', ""),
        ('{"a": [1}', ""),
        ('{"contents": "x"} {"contents": "y"}', "x"),
        ('{"contents": "x"}}', "x"),
        ("{'contents': 'x'}", ""),
    ],
)
def test_invalid_text_stops_without_raising(text: str, good_prefix: str) -> None:
    for pieces in ([text], list(text)):
        decoder = StreamedArgsDecoder("contents")
        events = run(decoder, pieces)
        assert content_of(events) == good_prefix
        assert decoder.failed and not decoder.finished and decoder.error
        assert decoder.feed('", "contents": "more"}') == []
        assert decoder.failed


@given(st.text(alphabet=st.sampled_from('{}[]:,"\\ u0123456789abcdefnrtlsx-.+eE\n'), max_size=60))
def test_arbitrary_text_never_raises(text: str) -> None:
    decoder = StreamedArgsDecoder("contents")
    run(decoder, list(text))
    run(StreamedArgsDecoder("contents"), [text])


def _msgspec_accepts(text: str) -> bool:
    try:
        return isinstance(msgspec.json.decode(text.encode("utf-8", "surrogatepass")), dict)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return False


@st.composite
def mutated_arguments(draw: st.DrawFn) -> str:
    """A valid arguments text with a few characters inserted, deleted or replaced."""
    _, text = draw(arguments())
    chars = list(text)
    noise = st.sampled_from([*'{}[]:,"\\ ux0eE-.+\x01', "\\u", "\\ud83d", "true", "1"])
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(chars)))
        match draw(st.integers(0, 2)):
            case 0:
                chars.insert(position, draw(noise))
            case 1 if position < len(chars):
                del chars[position]
            case _ if position < len(chars):
                chars[position] = draw(noise)
            case _:
                pass
    return "".join(chars)


@given(mutated_arguments(), cut_lists)
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_the_decoder_accepts_what_the_final_decoding_accepts(text: str, cuts: list[int]) -> None:
    """Valid for msgspec ⇒ the decoder finishes without failing, showing the right content.

    Not the converse: a number msgspec refuses as out of range (``1e1117``) is syntax the
    decoder lets pass; the full arguments are validated when the call completes anyway."""
    decoder = StreamedArgsDecoder("contents")
    events = run(decoder, split_at(text, cuts))
    accepted = decoder.finished and not decoder.failed
    valid = _msgspec_accepts(text)
    if valid:
        assert accepted, (text, decoder.error)
    if valid:
        value = msgspec.json.decode(text.encode())
        first = json.loads(text, object_pairs_hook=lambda pairs: dict(reversed(pairs)))
        if isinstance(first.get("contents"), str):
            assert content_of(events) == first["contents"]
        else:
            assert content_of(events) == ""
        assert isinstance(value, dict)
