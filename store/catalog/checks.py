"""The checks a provider and the web search backend share: a text's length, an API key's
characters, and the addresses the server must not send requests to. Each failure is
``Invalid`` naming the field and never echoing a secret."""

from __future__ import annotations

import re

from store.base.secrets import SEALED_PREFIX, is_sealed
from store.catalog.errors import Invalid
from store.catalog.limits import MAX_KEY_CHARS
from store.catalog.url_targets import OwnAddresses, refused_target

_KEY_RE = re.compile(r"[\x21-\x7e]*")


def check_length(field: str, text: str, limit: int) -> None:
    """``Invalid`` naming ``field`` when ``text`` is longer than ``limit`` (never echoing it)."""
    if len(text) > limit:
        raise Invalid(field, f"is longer than {limit} characters ({len(text)})")


def refuse_target(field: str, url: str, own: OwnAddresses) -> None:
    """``Invalid`` when the server must not send requests to ``url``
    (``store.catalog.url_targets``)."""
    reason = refused_target(url, own)
    if reason is not None:
        raise Invalid(field, f"the server does not send requests there: {reason}")


def check_api_key(api_key: str, field: str = "api_key") -> str:
    check_length(field, api_key, MAX_KEY_CHARS)
    if not _KEY_RE.fullmatch(api_key):
        # Never echo the value: it is (part of) a secret.
        raise Invalid(field, "must be printable ASCII without spaces or control characters")
    if is_sealed(api_key):
        raise Invalid(field, f"must not start with {SEALED_PREFIX!r} (the stored form of a key)")
    return api_key
