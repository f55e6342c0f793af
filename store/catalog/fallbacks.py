"""A model's fallbacks: the ordered models a call moves to when this model fails before its
first token (``models.fallbacks_json``, migration 15, a JSON array of public ids).

Apart from ``models.py`` because deleting a model or a provider must take the deleted models
out of every other model's list in its own transaction, as the image model's mark is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec
import peewee

from store.catalog.errors import Invalid
from store.catalog.limits import MAX_FALLBACKS
from store.catalog.tables import tables_of

# A public id's length (``store.catalog.urls.public_model_id``: 4 bytes in hex).
PUBLIC_ID_CHARS = 8


def decode_fallbacks(stored: str | None) -> tuple[str, ...]:
    """The stored list (NULL or unreadable JSON reads as none: it can only be ours)."""
    if not stored:
        return ()
    try:
        return tuple(msgspec.json.decode(stored, type=list[str]))
    except msgspec.DecodeError:
        return ()


def check_fallbacks(
    db: peewee.Database, field: str, public_id: str, fallbacks: Sequence[str]
) -> tuple[str, ...]:
    """The list as it is stored, or ``Invalid`` naming ``field`` (or its entry): at most
    ``MAX_FALLBACKS``, each an existing model's public id, not the model itself, none twice."""
    if len(fallbacks) > MAX_FALLBACKS:
        raise Invalid(field, f"at most {MAX_FALLBACKS} fallback models, got {len(fallbacks)}")
    checked = tuple(item.strip().lower() for item in fallbacks)
    seen: set[str] = set()
    model = tables_of(db).model
    for index, item in enumerate(checked):
        entry = f"{field}[{index}]"
        if len(item) != PUBLIC_ID_CHARS:
            raise Invalid(entry, "must be a model's public id (8 hex digits)")
        if item == public_id:
            raise Invalid(entry, "a model cannot be its own fallback")
        if item in seen:
            raise Invalid(entry, f"model {item!r} is given twice")
        seen.add(item)
        if not model.select(model.public_id).where(model.public_id == item).exists():
            raise Invalid(entry, f"no model has the public id {item!r}")
    return checked


def write_fallbacks(db: peewee.Database, public_id: str, fallbacks: Iterable[str]) -> None:
    """Store ``public_id``'s list (already checked, in its transaction)."""
    model = tables_of(db).model
    encoded = msgspec.json.encode(list(fallbacks)).decode()
    model.update(fallbacks_json=encoded).where(model.public_id == public_id).execute()


def forget_fallbacks(db: peewee.Database, public_ids: Iterable[str]) -> None:
    """Take the models being deleted out of every other model's list, in their transaction:
    a list never names a model that is gone (and one added again later is not a fallback by
    surprise)."""
    doomed = set(public_ids)
    if not doomed:
        return
    model = tables_of(db).model
    rows = model.select(model.public_id, model.fallbacks_json).where(model.fallbacks_json != "[]")
    for row in list(rows):
        stored = decode_fallbacks(row.fallbacks_json)
        kept = [item for item in stored if item not in doomed]
        if len(kept) != len(stored):
            write_fallbacks(db, row.public_id, kept)
