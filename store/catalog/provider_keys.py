"""A provider's key pool as the console edits it: its own key (``providers.api_key``, id
``MAIN_KEY_ID``, labelled by ``providers.key_label``) and its other keys (``provider_keys``,
migration 14), each sealed with ``KEY_PURPOSE`` and write-only: a record says whether a key is
set, never the key or any part of it.

Labels are trimmed, non-empty, at most ``MAX_KEY_LABEL_CHARS`` and unique per provider; a
provider holds at most ``MAX_KEYS_PER_PROVIDER`` keys, its own included. The provider's own key
cannot be deleted here (it is the key discovery, model checks and image generation send;
saving the provider with an empty key clears it), only relabelled or replaced.
"""

from __future__ import annotations

import msgspec
import peewee

from store.base.clock import now_ms
from store.base.secrets import SecretUnreadable
from store.base.typed_peewee import RuntimeModel
from store.catalog.checks import check_api_key, check_length
from store.catalog.connections import MAIN_KEY_ID
from store.catalog.errors import KEY_UNREADABLE, Conflict, Invalid, NotFound, Problems
from store.catalog.limits import MAX_KEY_LABEL_CHARS, MAX_KEYS_PER_PROVIDER
from store.catalog.sealing import KEY_PURPOSE, open_secret, seal
from store.catalog.tables import MAIN_KEY_LABEL, lock_row, tables_of


class ProviderKeyInput(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A key to add to a provider's pool: its label and the key."""

    label: str
    api_key: str


class ProviderKeyUpdate(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A key's new label and/or new key; None keeps what is stored."""

    label: str | None = None
    api_key: str | None = None


class ProviderKeyRecord(msgspec.Struct, frozen=True, omit_defaults=True):
    """One key as a client may see it: never the key. ``main`` marks the provider's own key
    (the first, sent where one key is sent); ``unreadable`` says the stored key does not open
    under this server's key."""

    id: int
    label: str
    position: int
    main: bool
    has_api_key: bool
    created_at_ms: int | None = None
    unreadable: str | None = None


def _check_label(label: str) -> str:
    trimmed = label.strip()
    if not trimmed:
        raise Invalid("label", "cannot be empty")
    check_length("label", trimmed, MAX_KEY_LABEL_CHARS)
    return trimmed


def _readable(db: peewee.Database, stored: str) -> str | None:
    try:
        open_secret(db, stored, KEY_PURPOSE)
    except SecretUnreadable:
        return KEY_UNREADABLE
    return None


def _provider(db: peewee.Database, provider_id: int, *, lock: bool = False) -> RuntimeModel:
    provider = tables_of(db).provider
    query = provider.select().where(provider.id == provider_id)
    row: RuntimeModel | None = (lock_row(query, db) if lock else query).first()
    if row is None:
        raise NotFound(f"provider {provider_id} not found")
    return row


def _others(db: peewee.Database, provider_id: int) -> list[RuntimeModel]:
    key = tables_of(db).provider_key
    return list(key.select().where(key.provider == provider_id).order_by(key.position, key.id))


def _records(db: peewee.Database, row: RuntimeModel) -> list[ProviderKeyRecord]:
    main = ProviderKeyRecord(
        id=MAIN_KEY_ID,
        label=row.key_label or MAIN_KEY_LABEL,
        position=0,
        main=True,
        has_api_key=bool(row.api_key),
        unreadable=_readable(db, row.api_key),
    )
    others = [
        ProviderKeyRecord(
            id=key.id,
            label=key.label,
            position=index,
            main=False,
            has_api_key=bool(key.api_key),
            created_at_ms=key.created_at_ms,
            unreadable=_readable(db, key.api_key),
        )
        for index, key in enumerate(_others(db, row.id), start=1)
    ]
    return [main, *others]


def list_provider_keys(db: peewee.Database, provider_id: int) -> list[ProviderKeyRecord]:
    """The provider's keys in pool order, its own first; ``NotFound`` for no provider."""
    return _records(db, _provider(db, provider_id))


def _refuse_taken(records: list[ProviderKeyRecord], label: str, key_id: int | None) -> None:
    if any(r.label == label and r.id != key_id for r in records):
        raise Invalid("label", f"the provider already has a key labelled {label!r}")


def add_provider_key(
    db: peewee.Database, provider_id: int, data: ProviderKeyInput
) -> ProviderKeyRecord:
    """Add a key at the end of the pool; ``Invalid`` names a bad field or a taken label,
    ``Conflict`` a full pool."""
    problems = Problems()
    label = problems.check(_check_label, data.label)
    api_key = problems.check(check_api_key, data.api_key)
    if api_key == "":
        problems.add("api_key", "cannot be empty")
    problems.raise_any()
    assert label is not None and api_key is not None
    table = tables_of(db).provider_key
    with db.atomic():
        records = _records(db, _provider(db, provider_id, lock=True))
        _refuse_taken(records, label, None)
        if len(records) >= MAX_KEYS_PER_PROVIDER:
            raise Conflict(
                f"provider {provider_id} already holds {MAX_KEYS_PER_PROVIDER} keys, the most "
                "it may (delete one first)"
            )
        # After every stored key: positions keep the gaps that deletes leave.
        position = max((key.position for key in _others(db, provider_id)), default=0) + 1
        row = table.create(
            provider=provider_id,
            label=label,
            api_key=seal(db, api_key, KEY_PURPOSE),
            position=position,
            created_at_ms=now_ms(),
        )
    return ProviderKeyRecord(
        id=row.id,
        label=label,
        position=len(records),
        main=False,
        has_api_key=True,
        created_at_ms=row.created_at_ms,
    )


def update_provider_key(
    db: peewee.Database, provider_id: int, key_id: int, data: ProviderKeyUpdate
) -> ProviderKeyRecord:
    """Relabel a key and/or replace it; the provider's own key too (an empty ``api_key``
    clears only that one: another key needs one)."""
    problems = Problems()
    label = None if data.label is None else problems.check(_check_label, data.label)
    api_key = None if data.api_key is None else problems.check(check_api_key, data.api_key)
    if api_key == "" and key_id != MAIN_KEY_ID:
        problems.add("api_key", "cannot be empty (delete the key instead)")
    problems.raise_any()
    tables = tables_of(db)
    with db.atomic():
        provider = _provider(db, provider_id, lock=True)
        records = _records(db, provider)
        if not any(r.id == key_id for r in records):
            raise NotFound(f"key {key_id} of provider {provider_id} not found")
        if label is not None:
            _refuse_taken(records, label, key_id)
        sealed = None if api_key is None else seal(db, api_key, KEY_PURPOSE)
        # The provider's own key lives on its row; the others in theirs.
        changes: dict[str, object] = {}
        if key_id == MAIN_KEY_ID:
            table, row_id, label_column = tables.provider, provider_id, "key_label"
            changes["updated_at_ms"] = now_ms()
        else:
            table, row_id, label_column = tables.provider_key, key_id, "label"
        if label is not None:
            changes[label_column] = label
        if sealed is not None:
            changes["api_key"] = sealed
        if changes:
            table.update(**changes).where(table.id == row_id).execute()
        updated = _records(db, _provider(db, provider_id))
    return next(r for r in updated if r.id == key_id)


def delete_provider_key(db: peewee.Database, provider_id: int, key_id: int) -> None:
    """Delete one of the provider's other keys; its own key is refused (``Conflict``)."""
    if key_id == MAIN_KEY_ID:
        raise Conflict(
            "the provider's own key cannot be deleted (it is the key its model discovery and "
            "image generation send): replace it, or clear it by saving the provider with an "
            "empty key"
        )
    table = tables_of(db).provider_key
    with db.atomic():
        _provider(db, provider_id, lock=True)
        deleted = (
            table.delete().where((table.id == key_id) & (table.provider == provider_id)).execute()
        )
    if not deleted:
        raise NotFound(f"key {key_id} of provider {provider_id} not found")
