"""Keeping provider credentials out of everything we store, log or show.

The credentials of a route are its key and the values of its secret-looking custom headers
(the console's rule, ``store.catalog.is_secret_header``, so what the API shows as null is never
recorded either). Before a request, a stream chunk or an error message is recorded or shown,
secret headers are dropped and every credential string is replaced.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from actors.conversation.request import ModelRoute
from store.catalog import is_secret_header

REDACTED = "[redacted]"


def route_secrets(route: ModelRoute) -> tuple[str, ...]:
    """The key and the secret header values (and the token part of ``Bearer x``), longest first
    so that a whole value is replaced before a token inside it."""
    return credential_strings(route.api_key.reveal(), route.headers)


def credential_strings(api_key: str, headers: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """``route_secrets`` for a key and headers held outside a route (the image model's)."""
    found = [api_key]
    for name, value in headers:
        if is_secret_header(name):
            found.append(value)
            found.extend(value.split()[1:])
    return tuple(sorted({s for s in found if s}, key=len, reverse=True))


def redacted_headers(headers: Iterable[tuple[str, str]], secrets: Sequence[str]) -> dict[str, str]:
    """Headers fit to store: secret-looking names dropped, credentials removed from the rest."""
    return {
        name.lower(): scrub_text(value, secrets)
        for name, value in headers
        if not is_secret_header(name)
    }


def scrub_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every credential replaced."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def scrub_bytes(data: bytes, secrets: Sequence[str]) -> bytes:
    """``data`` with every UTF-8 credential replaced."""
    for secret in secrets:
        data = data.replace(secret.encode(), REDACTED.encode())
    return data
