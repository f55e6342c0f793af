"""Who an agent request is from: a user id read from its ``authorization: Bearer`` token.

Sans-IO. Attribution, not authentication: the editor sends the user's Cursor login token,
which this server cannot verify (it holds no key of Cursor's and must not call Cursor to ask),
so a token is never *trusted*, only *read*. When it is a JWT (three base64url parts) its
payload's claims are decoded, unverified, and ``email`` (lower-cased) or else ``sub`` names
the user; anything else (no header, another scheme, not a JWT, a payload that is not a JSON
object, claims too long or not printable) is ``ANONYMOUS_USER``.

The token itself never leaves this module: the id is one claim's value, never the token or a
part of it, so nothing stored, logged or answered can carry the credential.
"""

from __future__ import annotations

import base64
import binascii
from typing import Final

import msgspec

ANONYMOUS_USER: Final = "anonymous"
# An ``authorization`` header longer than this is not read (anonymous): real Cursor tokens
# are well under 2 KiB, and decoding is bounded by it.
MAX_TOKEN_CHARS: Final = 8192
# The longest user id kept; a longer claim is ignored (never cut: two users must not share
# an id through truncation). 254 is the longest e-mail address SMTP allows.
MAX_USER_ID_CHARS: Final = 254


class _Claims(msgspec.Struct):
    """The claims read; every other claim is ignored, and a wrong type is no claim."""

    sub: object = None
    email: object = None


_CLAIMS = msgspec.json.Decoder(_Claims)


def _claim(value: object) -> str | None:
    """A claim usable as an id: a non-empty string of visible characters (no control
    characters, so it is safe in a log line and a page), at most ``MAX_USER_ID_CHARS``."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or len(value) > MAX_USER_ID_CHARS or not value.isprintable():
        return None
    return value


def _payload(token: str) -> bytes | None:
    """The JWT's decoded payload (its middle part), or None when the token is not one."""
    parts = token.split(".")
    if len(parts) != 3 or not all(parts):
        return None
    body = parts[1]
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None


def user_from_token(token: str) -> str:
    """The user id a bearer token names (``ANONYMOUS_USER`` when it names none)."""
    if len(token) > MAX_TOKEN_CHARS:
        return ANONYMOUS_USER
    payload = _payload(token)
    if payload is None:
        return ANONYMOUS_USER
    try:
        claims = _CLAIMS.decode(payload)
    except (msgspec.DecodeError, RecursionError):
        return ANONYMOUS_USER
    email = _claim(claims.email)
    if email is not None:
        return email.lower()
    return _claim(claims.sub) or ANONYMOUS_USER


def user_from_authorization(header: str | None) -> str:
    """The user id of an ``authorization`` header value (``Bearer <token>``, the scheme in
    any case); ``ANONYMOUS_USER`` without one."""
    if header is None or len(header) > MAX_TOKEN_CHARS + 16:
        return ANONYMOUS_USER
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return ANONYMOUS_USER
    return user_from_token(token.strip())


def is_user_id(value: str) -> bool:
    """Whether ``value`` could be a user id (a console filter's check)."""
    return value == ANONYMOUS_USER or _claim(value) == value
