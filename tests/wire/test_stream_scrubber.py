"""A stream's raw chunks scrubbed one for one, a credential split over several included.

The secrets here are upper case and digits and the text around them lower case, so any piece
of a secret left in a chunk shows as an upper-case letter or a digit outside the markers.
"""

from __future__ import annotations

import itertools
import re

from wire.providers.redaction import REDACTED, StreamScrubber, scrub_bytes

KEY = "SKLIVE0123456789ABCDEF"
TOKEN = "TOK9876"  # also found inside a longer header value, as ``Bearer TOK9876`` is
SECRETS = (f"XB {TOKEN}", KEY, TOKEN)
TEXT = f"echo {KEY} and xb {TOKEN} and {KEY}{KEY} done".encode()


def scrubbed(pieces: list[bytes]) -> list[bytes]:
    scrubber = StreamScrubber(SECRETS)
    out = [chunk for piece in pieces for chunk in scrubber.feed(piece)]
    return out + scrubber.finish()


def collapsed(data: bytes) -> bytes:
    """Runs of markers as one: a secret split over two chunks leaves one marker in each."""
    marker = re.escape(REDACTED.encode())
    return re.sub(b"(?:" + marker + b")+", REDACTED.encode(), data)


def assert_clean(pieces: list[bytes]) -> None:
    out = scrubbed(pieces)
    assert len(out) == len(pieces)  # one for one, in order
    for chunk in out:
        assert not re.search(rb"[A-Z0-9]", chunk.replace(REDACTED.encode(), b"")), out
    assert collapsed(b"".join(out)) == collapsed(scrub_bytes(b"".join(pieces), SECRETS))


def test_every_split_into_two_or_three_chunks_leaves_no_piece_of_a_secret() -> None:
    for cuts in itertools.combinations(range(1, len(TEXT)), 2):
        first, second = cuts
        assert_clean([TEXT[:first], TEXT[first:second], TEXT[second:]])
        assert_clean([TEXT[:first], TEXT[first:]])


def test_one_byte_chunks_and_empty_chunks() -> None:
    assert_clean([TEXT[i : i + 1] for i in range(len(TEXT))])
    assert_clean([b"", TEXT[:9], b"", TEXT[9:], b""])


def test_chunks_are_held_only_as_long_as_a_secret_may_reach() -> None:
    scrubber = StreamScrubber(SECRETS)
    assert scrubber.feed(b"abc") == []  # a secret starting here could still be coming
    released = scrubber.feed(b"x" * len(KEY))
    assert released == [b"abc"]
    assert scrubber.finish() == [b"x" * len(KEY)]


def test_no_secrets_passes_every_chunk_at_once() -> None:
    scrubber = StreamScrubber(())
    assert scrubber.feed(b"abc") == [b"abc"]
    assert scrubber.finish() == []


def test_a_credential_repeated_over_itself_leaves_no_piece() -> None:
    """``2020`` twice, overlapping (``2020 20``): scanned from wherever a release left the
    window, a one-pass scan would pair the digits up unlike a scan of the whole stream."""
    scrubber = StreamScrubber(("2020",))
    pieces = [b"v=2", b"020", b"2020."]
    out = [chunk for piece in pieces for chunk in scrubber.feed(piece)] + scrubber.finish()
    assert len(out) == 3
    assert not re.search(rb"[0-9]", b"".join(out).replace(REDACTED.encode(), b"")), out
