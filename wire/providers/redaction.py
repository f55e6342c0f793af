"""Keeping provider credentials out of everything we store, log or show.

The credentials of a route are its key and the values of every custom header the user did not
mark public (the store's rule: what the console API shows as null is never recorded either).
Before a request, a stream chunk or an error message is recorded or shown, headers whose names
say they carry a credential (``actors.conversation.secret.is_secret_header``) are dropped and every
credential string is replaced.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet

from actors.conversation.request import ModelRoute
from actors.conversation.secret import is_secret_header

REDACTED = "[redacted]"
# A value sealed only because it was not marked public (``X-Version: 2``) is replaced in text
# from this length: a shorter one would rewrite every ``2`` of a recorded answer, and leaks
# next to nothing if it is echoed.
MIN_SCRUBBED_CHARS = 4


def route_secrets(route: ModelRoute) -> tuple[str, ...]:
    """Every key of the pool and the secret header values (and the token part of ``Bearer x``)
    of the route and of each of its fallbacks (a call may go to any of them), longest first so
    that a whole value is replaced before a token inside it."""
    found = {
        secret
        for each in route.chain()
        for secret in credential_strings(
            (each.api_key.reveal(), *(key.secret.reveal() for key in each.keys)),
            each.headers,
            each.public_headers,
        )
    }
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


def credential_strings(
    api_key: str | Iterable[str],
    headers: Iterable[tuple[str, str]],
    public: AbstractSet[str] = frozenset(),
) -> tuple[str, ...]:
    """``route_secrets`` for a key (or several) and headers held outside a route (the image
    model's); ``public`` holds the lower-cased names of the headers whose values are not
    secret."""
    found = [api_key] if isinstance(api_key, str) else list(api_key)
    for name, value in headers:
        if is_secret_header(name):
            found.append(value)
            found.extend(value.split()[1:])
        elif name.lower() not in public:
            parts = (value, *value.split()[1:])
            found.extend(part for part in parts if len(part) >= MIN_SCRUBBED_CHARS)
    return tuple(sorted({s for s in found if s}, key=len, reverse=True))


def redacted_headers(headers: Iterable[tuple[str, str]], secrets: Sequence[str]) -> dict[str, str]:
    """Headers fit to store: secret-looking names dropped, credentials removed from the rest."""
    return {
        name.lower(): scrub_text(value, secrets)
        for name, value in headers
        if not is_secret_header(name)
    }


def scrub_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every credential replaced, in one pass: a short credential (a sealed
    header such as ``X-Version: r``) never rewrites the marker another one left."""
    secrets = tuple(filter(None, secrets))
    return _pattern(secrets).sub(REDACTED, text) if secrets else text


class StreamScrubber:
    """Scrubs a stream's chunks one for one, including a credential split over several.

    Each chunk is kept whole (its place and timing are what a verbose record shows) but held
    back until the bytes after it are enough to hold the rest of any credential that starts in
    it: every credential is then wholly inside the bytes looked at. Each piece of a split one
    is replaced in its own chunk, so no chunk shows a part of it. ``feed`` answers the chunks
    now released, in order; ``finish`` the rest."""

    def __init__(self, secrets: Sequence[str]) -> None:
        encoded = tuple(s.encode() for s in filter(None, secrets))
        self._pattern = _bytes_pattern(tuple(filter(None, secrets))) if encoded else None
        # How many bytes after a chunk may still belong to a credential that starts in it.
        self._reach = max((len(s) for s in encoded), default=1) - 1
        self._held: list[tuple[bytes, list[tuple[int, int]]]] = []  # raw bytes, masked spans
        self._held_bytes = 0

    def feed(self, data: bytes) -> list[bytes]:
        """Take the next chunk; answer the chunks released by it (scrubbed)."""
        if self._pattern is None:
            return [data]
        self._held.append((data, []))
        self._held_bytes += len(data)
        self._mask()
        released = []
        while self._held and self._held_bytes - len(self._held[0][0]) >= self._reach:
            released.append(self._release())
        return released

    def finish(self) -> list[bytes]:
        """The stream ended: every chunk still held, scrubbed."""
        return [self._release() for _ in range(len(self._held))]

    def _mask(self) -> None:
        """Mark each credential found in the held bytes on the chunks it falls in. Every
        occurrence, overlapping ones too: the held window starts wherever the last release
        left it, so a one-pass scan could pair a repeated credential up differently from a
        scan of the whole stream and leave a piece of one bare."""
        assert self._pattern is not None
        joined = b"".join(data for data, _ in self._held)
        at = 0
        while (match := self._pattern.search(joined, at)) is not None:
            start, end = match.span()
            at = start + 1
            offset = 0
            for data, spans in self._held:
                low, high = max(start, offset), min(end, offset + len(data))
                if low < high:
                    spans.append((low - offset, high - offset))
                offset += len(data)

    def _release(self) -> bytes:
        """The first held chunk, each run of masked bytes (overlapping or touching spans
        joined) replaced by one marker."""
        data, spans = self._held.pop(0)
        self._held_bytes -= len(data)
        runs: list[list[int]] = []
        for start, end in sorted(spans):
            if runs and start <= runs[-1][1]:
                runs[-1][1] = max(runs[-1][1], end)
            else:
                runs.append([start, end])
        out, at = bytearray(), 0
        for start, end in runs:
            out += data[at:start] + REDACTED.encode()
            at = end
        return bytes(out + data[at:])


def scrub_bytes(data: bytes, secrets: Sequence[str]) -> bytes:
    """``data`` with every UTF-8 credential replaced, in one pass (as ``scrub_text``)."""
    secrets = tuple(filter(None, secrets))
    return _bytes_pattern(secrets).sub(REDACTED.encode(), data) if secrets else data


@functools.lru_cache(maxsize=64)
def _pattern(secrets: tuple[str, ...]) -> re.Pattern[str]:
    # Longest first, so a whole value is replaced before a token inside it.
    return re.compile("|".join(map(re.escape, sorted(secrets, key=len, reverse=True))))


@functools.lru_cache(maxsize=64)
def _bytes_pattern(secrets: tuple[str, ...]) -> re.Pattern[bytes]:
    ordered = sorted((s.encode() for s in secrets), key=len, reverse=True)
    return re.compile(b"|".join(map(re.escape, ordered)))
