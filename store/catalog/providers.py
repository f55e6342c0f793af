"""Providers: the console's input and the record a client may see (no key, sealed header values
as None), their checks, and their reads and writes. A provider's URL and type are part of each
of its models' public ids, so they cannot change once it has models."""

from __future__ import annotations

import datetime

import msgspec
import peewee

from actors.conversation.request import ProviderType
from store.base.clock import now_ms
from store.base.secrets import SecretUnreadable, is_sealed
from store.base.typed_peewee import RuntimeModel
from store.catalog.budgets import forget_budget_models
from store.catalog.checks import check_api_key, check_length, refuse_target
from store.catalog.connections import ProviderConnection, connection
from store.catalog.errors import KEY_UNREADABLE, Conflict, Invalid, NotFound, Problems
from store.catalog.fallbacks import forget_fallbacks
from store.catalog.headers import (
    headers_to_store,
    public_header_names,
    redacted_headers,
    stored_headers,
)
from store.catalog.image_mark import forget_image_model
from store.catalog.limits import MAX_NAME_CHARS, MAX_URL_CHARS
from store.catalog.listing_prices import forget_listing
from store.catalog.routing import forget_routing
from store.catalog.sealing import HEADER_PURPOSE, KEY_PURPOSE, open_secret, seal
from store.catalog.tables import CACHE_KEY_AUTO, CACHE_KEY_SETTINGS, lock_row, tables_of
from store.catalog.url_targets import NO_OWN_ADDRESSES, OwnAddresses
from store.catalog.urls import InvalidBaseUrl, normalize_base_url

# The provider types as the store keeps them (``ProviderType``'s values).
PROVIDER_TYPES = tuple(kind.value for kind in ProviderType)
ANTHROPIC = ProviderType.ANTHROPIC.value
GEMINI = ProviderType.GEMINI.value


class ProviderInput(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A provider as the console sends it (create and update).

    ``api_key``: None keeps the stored key on update, ``""`` clears it. ``headers``: None keeps
    the stored headers on update; an object replaces them, and a ``null`` value keeps that
    header's stored value (so a redacted object read back from the API can be sent again).
    ``public_headers`` names the headers whose values may be stored and shown in plaintext;
    every other header value is sealed (the default), so a record read back and sent again
    keeps each header as it was.
    """

    name: str
    type: str
    base_url: str
    api_key: str | None = None
    headers: dict[str, str | None] | None = None
    public_headers: list[str] | None = None
    # Send a streamed reasoning text back (OpenAI Chat ``reasoning_content``); None keeps the
    # stored value on update and means True on create.
    replay_reasoning: bool | None = None
    # Send OpenAI's ``prompt_cache_key`` (``CACHE_KEY_SETTINGS``); None keeps the stored value
    # on update and means "auto" on create.
    prompt_cache_key: str | None = None


class ProviderRecord(msgspec.Struct, frozen=True, omit_defaults=True):
    """A provider as shown to a client: no key, sealed header values as None."""

    id: int
    name: str
    type: str
    base_url: str
    has_api_key: bool
    headers: dict[str, str | None]
    # The headers whose values are public (shown above); every other value is sealed.
    public_headers: list[str]
    replay_reasoning: bool
    prompt_cache_key: str
    created_at: str
    updated_at: str
    # Stored secrets that do not open under this server's key: field -> what to do. Left out
    # of an answer when every secret opens.
    unreadable: dict[str, str] = {}


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def iso_utc(ms: int) -> str:
    """``2025-01-02T03:04:05.678Z`` for UTC milliseconds: one fixed shape for every time."""
    instant = _EPOCH + datetime.timedelta(milliseconds=ms)
    return instant.strftime("%Y-%m-%dT%H:%M:%S.") + f"{instant.microsecond // 1000:03d}Z"


def _provider_record(db: peewee.Database, row: RuntimeModel) -> ProviderRecord:
    return ProviderRecord(
        id=row.id,
        name=row.name,
        type=row.type,
        base_url=row.base_url,
        has_api_key=bool(row.api_key),
        headers=redacted_headers(stored_headers(row)),
        public_headers=public_header_names(stored_headers(row)),
        replay_reasoning=bool(row.replay_reasoning),
        prompt_cache_key=row.prompt_cache_key,
        created_at=iso_utc(row.created_at_ms),
        updated_at=iso_utc(row.updated_at_ms),
        unreadable=_unreadable_provider_secrets(db, row.api_key, stored_headers(row)),
    )


def _unreadable_provider_secrets(
    db: peewee.Database, api_key: str, headers: dict[str, str]
) -> dict[str, str]:
    sealed = [("api_key", api_key, KEY_PURPOSE)] + [
        (f"headers.{name}", value, HEADER_PURPOSE)
        for name, value in headers.items()
        if is_sealed(value)
    ]
    unreadable = {}
    for field, value, purpose in sealed:
        try:
            open_secret(db, value, purpose)
        except SecretUnreadable:
            unreadable[field] = KEY_UNREADABLE
    return unreadable


def _check_name(name: str) -> str:
    trimmed = name.strip()
    if not trimmed:
        raise Invalid("name", "provider name cannot be empty")
    check_length("name", trimmed, MAX_NAME_CHARS)
    return trimmed


def _check_type(provider_type: str) -> str:
    if provider_type not in PROVIDER_TYPES:
        raise Invalid("type", f"must be one of {', '.join(PROVIDER_TYPES)}")
    return provider_type


def _check_cache_key(setting: str) -> str:
    if setting not in CACHE_KEY_SETTINGS:
        raise Invalid("prompt_cache_key", f"must be one of {', '.join(CACHE_KEY_SETTINGS)}")
    return setting


def _check_base_url(base_url: str, own: OwnAddresses) -> str:
    check_length("base_url", base_url.strip(), MAX_URL_CHARS)
    try:
        normalized = normalize_base_url(base_url)
    except InvalidBaseUrl as exc:
        raise Invalid("base_url", str(exc)) from None
    refuse_target("base_url", normalized, own)
    return normalized


def list_providers(db: peewee.Database) -> list[ProviderRecord]:
    """Every provider, oldest first."""
    provider = tables_of(db).provider
    return [_provider_record(db, row) for row in provider.select().order_by(provider.id)]


def provider_connection(db: peewee.Database, provider_id: int) -> ProviderConnection | None:
    """The real URL, key and headers of a provider (for discovery and routing)."""
    row = tables_of(db).provider.get_or_none(id=provider_id)
    return None if row is None else connection(db, row)


def create_provider(
    db: peewee.Database, data: ProviderInput, own: OwnAddresses = NO_OWN_ADDRESSES
) -> ProviderRecord:
    """Validate and store a new provider (name trimmed, URL normalised); ``own`` are the
    server's listeners, which its URL may not point at."""
    problems = Problems()
    name = problems.check(_check_name, data.name)
    provider_type = problems.check(_check_type, data.type)
    base_url = problems.check(_check_base_url, data.base_url, own)
    api_key = problems.check(check_api_key, data.api_key or "")
    cache_key = problems.check(_check_cache_key, data.prompt_cache_key or CACHE_KEY_AUTO)
    headers = problems.check(headers_to_store, db, data.headers or {}, data.public_headers)
    problems.raise_any()
    fields = {
        "name": name,
        "type": provider_type,
        "base_url": base_url,
        "api_key": seal(db, api_key or "", KEY_PURPOSE),
        "headers_json": msgspec.json.encode(headers).decode(),
        "replay_reasoning": data.replay_reasoning is not False,
        "prompt_cache_key": cache_key,
    }
    provider = tables_of(db).provider
    stamp = now_ms()
    with db.atomic():
        row = provider.create(**fields, created_at_ms=stamp, updated_at_ms=stamp)
    return _provider_record(db, row)


def update_provider(
    db: peewee.Database,
    provider_id: int,
    data: ProviderInput,
    own: OwnAddresses = NO_OWN_ADDRESSES,
) -> ProviderRecord:
    """Replace a provider's fields, keeping the key/headers the input leaves as None.

    The URL and type are part of every model's public id, so they cannot change while the
    provider has models (``Conflict``): the ids Cursor holds would silently point elsewhere.
    """
    problems = Problems()
    name = problems.check(_check_name, data.name)
    provider_type = problems.check(_check_type, data.type)
    base_url = problems.check(_check_base_url, data.base_url, own)
    api_key = None if data.api_key is None else problems.check(check_api_key, data.api_key)
    cache_key = (
        None
        if data.prompt_cache_key is None
        else problems.check(_check_cache_key, data.prompt_cache_key)
    )
    if data.headers is None and data.public_headers is not None:
        problems.add("public_headers", "give the headers it refers to with it")
    tables = tables_of(db)
    with db.atomic():
        row = lock_row(tables.provider.select().where(tables.provider.id == provider_id), db)
        row = row.first()
        if row is None:
            raise NotFound(f"provider {provider_id} not found")
        stored = stored_headers(row)
        given = (
            None
            if data.headers is None
            else problems.check(headers_to_store, db, data.headers, data.public_headers, stored)
        )
        problems.raise_any()
        headers = stored if given is None else given
        if (provider_type, base_url) != (row.type, row.base_url) and _has_models(db, provider_id):
            raise Conflict(
                "provider URL and type cannot change once it has models "
                "(delete its models or create a new provider)"
            )
        row.name = name
        row.type = provider_type
        row.base_url = base_url
        if api_key is not None:
            row.api_key = seal(db, api_key, KEY_PURPOSE)
        # Kept sealed values stay as stored (even under another key); new ones are sealed
        # unless public.
        row.headers_json = msgspec.json.encode(headers).decode()
        if data.replay_reasoning is not None:
            row.replay_reasoning = data.replay_reasoning
        if cache_key is not None:
            row.prompt_cache_key = cache_key
        row.updated_at_ms = now_ms()
        row.save()
    return _provider_record(db, row)


def _has_models(db: peewee.Database, provider_id: int) -> bool:
    model = tables_of(db).model
    return model.select().where(model.provider == provider_id).exists()


def delete_provider(db: peewee.Database, provider_id: int) -> None:
    """Delete a provider, its models, its other keys and its listing prices (SQLite may give
    its id to the next provider); its call records stay (they hold no foreign key)."""
    tables = tables_of(db)
    with db.atomic():
        models = tables.model.select(tables.model.public_id).where(
            tables.model.provider == provider_id
        )
        doomed = [row.public_id for row in models]
        forget_image_model(db, doomed)
        forget_fallbacks(db, doomed)
        forget_routing(db, doomed)
        forget_budget_models(db, doomed)
        tables.model.delete().where(tables.model.provider == provider_id).execute()
        tables.provider_key.delete().where(tables.provider_key.provider == provider_id).execute()
        forget_listing(db, provider_id)
        deleted = tables.provider.delete().where(tables.provider.id == provider_id).execute()
        if not deleted:
            raise NotFound(f"provider {provider_id} not found")
