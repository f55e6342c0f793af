"""Sealing and opening the catalog's secrets under the database's key (``store.base.secrets``): one
purpose per kind of value, bound into the cipher as associated data, so a sealed value cannot
be moved to another kind of field and opened there."""

from __future__ import annotations

import peewee

from store.base.secrets import secret_box

# What each kind of sealed value is for (the cipher's associated data, ``store.base.secrets``).
KEY_PURPOSE = "provider api_key"
HEADER_PURPOSE = "provider header"
SEARCH_KEY_PURPOSE = "web search api_key"


def seal(db: peewee.Database, value: str, purpose: str) -> str:
    """``value`` sealed under the database's key; an empty value stays empty (no secret)."""
    return secret_box(db).seal(value, purpose) if value else ""


def open_secret(db: peewee.Database, stored: str, purpose: str) -> str:
    """The plaintext of a stored secret (``SecretUnreadable`` if it does not open)."""
    return secret_box(db).open(stored, purpose) if stored else ""


def seal_header(db: peewee.Database, value: str) -> str:
    """A header value sealed, even an empty one: a sealed value is what marks it secret."""
    return secret_box(db).seal(value, HEADER_PURPOSE)
