"""What calling a provider needs: its real URL, keys and header values, opened from their sealed
form. The one record that holds a provider's secrets (``ProviderConnection``), built only where
a request is sent (discovery, a model's route, the image model), never serialised.

A provider's keys are its pool (migration 14): its own key first (``api_key``, labelled by
``providers.key_label``), then the ``provider_keys`` rows in their order. Everything that sends
one request with one key (discovery, model checks, image generation) sends ``api_key``;
a model's route carries the whole pool (``keys``) and the ProviderActor picks per attempt."""

from __future__ import annotations

from urllib.parse import urlsplit

import msgspec
import peewee

from store.base.secrets import SecretUnreadable, is_sealed
from store.base.typed_peewee import RuntimeModel, execute_sql
from store.catalog.errors import KeyUnreadable
from store.catalog.headers import is_public_header, stored_headers
from store.catalog.sealing import HEADER_PURPOSE, KEY_PURPOSE, open_secret
from store.catalog.tables import CACHE_KEY_AUTO, MAIN_KEY_LABEL

OPENAI_API_HOST = "api.openai.com"
# The id a provider's own key (``providers.api_key``) has in its pool; ``provider_keys`` ids
# start at 1.
MAIN_KEY_ID = 0

# A provider's other keys, read when every run resolves its route: written SQL.
_POOL_SQL = (
    'SELECT "id", "label", "api_key" FROM "provider_keys" WHERE "provider_id" = {param} '
    'ORDER BY "position", "id"'
)


class OpenedKey(msgspec.Struct, frozen=True):
    """One key of a provider's pool, opened: ``key_id`` (``MAIN_KEY_ID`` for the provider's own
    key), its label and the real key. Internal only: never serialise it."""

    key_id: int
    label: str
    api_key: str

    def __repr__(self) -> str:
        return f"OpenedKey(key_id={self.key_id}, label={self.label!r}, api_key=<redacted>)"


class ProviderConnection(msgspec.Struct, frozen=True):
    """The real stored values needed to call a provider. Internal only: never serialise it."""

    provider_id: int
    name: str
    type: str
    base_url: str
    api_key: str
    headers: dict[str, str]
    replay_reasoning: bool = True
    prompt_cache_key: str = CACHE_KEY_AUTO
    # Lower-cased names of the headers whose values are public; every other value is a
    # credential (kept out of records, logs and error messages).
    public_headers: frozenset[str] = frozenset()
    # The key pool, ``api_key`` first (``provider_pool``); empty where only ``api_key`` is sent.
    keys: tuple[OpenedKey, ...] = ()

    @property
    def sends_prompt_cache_key(self) -> bool:
        """Whether requests carry ``prompt_cache_key``: "auto" sends it to OpenAI's own API
        only, which documents it; a compatible server may refuse an unknown field."""
        if self.prompt_cache_key == CACHE_KEY_AUTO:
            return urlsplit(self.base_url).hostname == OPENAI_API_HOST
        return self.prompt_cache_key == "on"

    def __repr__(self) -> str:
        return (
            f"ProviderConnection(provider_id={self.provider_id}, name={self.name!r}, "
            f"type={self.type!r}, base_url={self.base_url!r}, api_key=<redacted>, "
            f"headers={sorted(self.headers)!r}, keys={[k.label for k in self.keys]!r})"
        )


def open_provider_secrets(
    db: peewee.Database, name: str, api_key: str, headers: dict[str, str]
) -> tuple[str, dict[str, str], frozenset[str]]:
    """The real key and header values of provider ``name``, and the lower-cased names of its
    public headers; ``KeyUnreadable`` names the provider."""
    owner = f"provider {name!r}"
    try:
        key = open_secret(db, api_key, KEY_PURPOSE)
    except SecretUnreadable as exc:
        raise KeyUnreadable(owner, "api_key", exc.reason) from None
    opened = {}
    for header, value in headers.items():
        if not is_sealed(value):
            opened[header] = value
            continue
        try:
            opened[header] = open_secret(db, value, HEADER_PURPOSE)
        except SecretUnreadable as exc:
            raise KeyUnreadable(owner, f"headers.{header}", exc.reason) from None
    public = frozenset(n.lower() for n, v in headers.items() if is_public_header(n, v))
    return key, opened, public


def provider_pool(
    db: peewee.Database, provider_id: int, name: str, main_label: str, main_key: str
) -> tuple[OpenedKey, ...]:
    """The provider's keys that are set, its own (``main_key``, opened) first, each opened;
    with none set, its own empty key alone (a provider that needs no key). ``KeyUnreadable``
    names a key that does not open."""
    pool = [OpenedKey(MAIN_KEY_ID, main_label, main_key)] if main_key else []
    for key_id, label, stored in execute_sql(
        db, _POOL_SQL.format(param=db.param), (provider_id,)
    ).fetchall():
        try:
            pool.append(OpenedKey(key_id, label, open_secret(db, stored, KEY_PURPOSE)))
        except SecretUnreadable as exc:
            raise KeyUnreadable(f"provider {name!r}", f"keys.{label}", exc.reason) from None
    return tuple(pool) or (OpenedKey(MAIN_KEY_ID, main_label, ""),)


def connection(db: peewee.Database, row: RuntimeModel) -> ProviderConnection:
    """The provider's real values (its key pool too); ``KeyUnreadable`` when a secret does
    not open."""
    api_key, headers, public = open_provider_secrets(db, row.name, row.api_key, stored_headers(row))
    return ProviderConnection(
        provider_id=row.id,
        name=row.name,
        type=row.type,
        base_url=row.base_url,
        api_key=api_key,
        headers=headers,
        replay_reasoning=bool(row.replay_reasoning),
        prompt_cache_key=row.prompt_cache_key,
        public_headers=public,
        keys=provider_pool(db, row.id, row.name, row.key_label or MAIN_KEY_LABEL, api_key),
    )
