"""A provider's custom headers: which names are credentials, which the HTTP client owns, and
their stored form, where a sealed value is secret and a plaintext one public, so no second
record of which is which can disagree with it."""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec
import peewee

from actors.conversation.secret import (
    is_secret_header,
)
from store.base.secrets import SEALED_PREFIX, is_sealed
from store.base.typed_peewee import RuntimeModel
from store.catalog.checks import check_length
from store.catalog.errors import Invalid, Problems
from store.catalog.limits import MAX_HEADER_NAME_CHARS, MAX_HEADER_VALUE_CHARS, MAX_HEADERS
from store.catalog.sealing import seal_header

# Headers the HTTP client owns (framing, routing, connection management): never custom.
RESERVED_HEADER_NAMES = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
    }
)
_HEADER_NAME_RE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Printable ASCII, space and tab: what an HTTP client sends as a header value unchanged.
_HEADER_VALUE_RE = re.compile(r"[\t\x20-\x7e]*")


def is_public_header(name: str, stored: str) -> bool:
    """Whether a stored header value is public: plaintext under a name that is not
    secret-looking (a plaintext secret-looking value is an older version's, sealed at start)."""
    return not is_sealed(stored) and not is_secret_header(name)


def redacted_headers(headers: dict[str, str]) -> dict[str, str | None]:
    return {
        name: value if is_public_header(name, value) else None for name, value in headers.items()
    }


def public_header_names(headers: dict[str, str]) -> list[str]:
    return [name for name, value in headers.items() if is_public_header(name, value)]


def stored_headers(row: RuntimeModel) -> dict[str, str]:
    return msgspec.json.decode(row.headers_json, type=dict[str, str])


def sealed_headers(db: peewee.Database, headers: dict[str, str]) -> dict[str, str]:
    """Secret-looking plaintext header values (an older version's) sealed; the rest as stored."""
    return {
        name: seal_header(db, value) if is_secret_header(name) and not is_sealed(value) else value
        for name, value in headers.items()
    }


def _check_header_lengths(given: dict[str, str | None]) -> None:
    if len(given) > MAX_HEADERS:
        raise Invalid("headers", f"at most {MAX_HEADERS} custom headers ({len(given)} given)")
    for name, value in given.items():
        if len(name) > MAX_HEADER_NAME_CHARS:
            raise Invalid(
                "headers",
                f"a header name is longer than {MAX_HEADER_NAME_CHARS} characters ({name[:40]!r}…)",
            )
        if value is not None:
            check_length(f"headers.{name}", value, MAX_HEADER_VALUE_CHARS)


def _checked_public_names(public: Sequence[str] | None, given: dict[str, str | None]) -> set[str]:
    """The lower-cased names marked public; each must be given and not secret-looking."""
    given_names = {name.lower() for name in given}
    public_names: set[str] = set()
    for name in public or ():
        if name.lower() not in given_names:
            raise Invalid("public_headers", f"{name!r} names no header in headers")
        if is_secret_header(name):
            raise Invalid(
                f"headers.{name}",
                "cannot be public: a header with this name holds a credential, so its value is "
                "always sealed",
            )
        public_names.add(name.lower())
    return public_names


def headers_to_store(
    db: peewee.Database,
    given: dict[str, str | None],
    public: Sequence[str] | None,
    stored: dict[str, str] | None = None,
) -> dict[str, str]:
    """The stored form of ``given``: public values in plaintext, every other value sealed.

    A None value takes the stored value of that name (case-insensitive). A sealed value is
    never made public without being given again: the API never reveals a secret.
    """
    _check_header_lengths(given)
    kept = {name.lower(): value for name, value in (stored or {}).items()}
    public_names = _checked_public_names(public, given)
    merged: dict[str, str] = {}
    seen: set[str] = set()
    problems = Problems()  # every header's problem at once, each at its row
    for name, value in given.items():
        lowered = name.lower()
        checked = problems.check(
            _header_to_store, db, name, value, lowered in public_names, lowered in seen, kept
        )
        seen.add(lowered)
        if checked is not None:
            merged[name] = checked
    problems.raise_any()
    return merged


def _header_to_store(
    db: peewee.Database,
    name: str,
    value: str | None,
    is_public: bool,
    seen: bool,
    kept: dict[str, str],
) -> str:
    """One header's stored value (``headers_to_store``'s rules), or ``Invalid`` naming it."""
    field = f"headers.{name}"
    lowered = name.lower()
    if not _HEADER_NAME_RE.fullmatch(name):
        raise Invalid(field, "header name must be an HTTP token")
    if lowered in RESERVED_HEADER_NAMES:
        raise Invalid(field, "this header is set by the HTTP client and cannot be custom")
    if seen:
        raise Invalid(field, "header given twice (names are case-insensitive)")
    if value is None:
        if lowered not in kept:
            raise Invalid(field, "null keeps the stored value, but there is none")
        value = kept[lowered]
        if is_sealed(value):
            if is_public:
                raise Invalid(
                    field,
                    "its stored value is sealed and never shown: give the value again "
                    "to make it public",
                )
            return value  # kept as stored (sealed, even under another key)
    elif not _HEADER_VALUE_RE.fullmatch(value):
        raise Invalid(field, "header value must be printable ASCII (spaces and tabs allowed)")
    elif is_sealed(value):
        raise Invalid(field, f"must not start with {SEALED_PREFIX!r} (the stored form)")
    return value if is_public else seal_header(db, value)
