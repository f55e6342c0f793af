"""Providers, their models and service settings: typed, synchronous queries over migration 2
(with migration 5's ``replay_reasoning``, migration 8's model prices and migration 11's
``prompt_cache_key``). The image model is a
setting naming one model (no column: a second image model cannot exist).

Why typed records instead of peewee rows: the console, the model catalog and the provider
router all read this data, and none of them should see a peewee object or, except for the one
record built for sending requests (``ProviderConnection``), a provider's key. ``ProviderRecord``
is safe to serialise to a client: it says ``has_api_key`` and nulls every sealed header value.

Secrets are sealed at rest (``store.secrets``): a provider's key, every custom header value the
user did not mark public (``public_headers``; a name ``is_secret_header`` recognises is never
public) and the web search key are written sealed and opened only where the real value is
needed (``ProviderConnection``, ``WebSearchConfig``). The stored form is the flag: a sealed
header value is secret, a plaintext one public, so no second record of it can disagree. One
that does not open under this server's key raises ``KeyUnreadable`` naming its owner there, and
shows as ``unreadable`` / ``key_unreadable`` ("key unreadable, set it again") in the client's
records.

Every function takes the peewee database and runs on the calling thread (callers on an event
loop use ``asyncio.to_thread``). Writes run in one transaction each; validation failures raise
``Invalid`` (naming the field), a missing row ``NotFound`` and a rule that the current state
forbids ``Conflict``, each carrying a message that never contains a key or header value.
Times are stored as UTC milliseconds since the epoch and shown as ISO-8601 UTC with
milliseconds (``2025-01-02T03:04:05.678Z``).
"""

from __future__ import annotations

import datetime
import math
import re
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import Annotated, Any
from urllib.parse import urlsplit

import msgspec
import peewee

from store import urls
from store.clock import now_ms
from store.secrets import SEALED_PREFIX, SecretUnreadable, is_sealed, secret_box
from store.url_targets import NO_OWN_ADDRESSES, OwnAddresses, refused_target

PROVIDER_TYPES = ("openai-chat", "openai-responses", "anthropic", "gemini")
ANTHROPIC = "anthropic"
GEMINI = "gemini"
# The reasoning efforts each format takes: OpenAI's ``ReasoningEffort`` enum, and Anthropic's
# ``output_config.effort`` values. ``none`` asks for no reasoning (on Anthropic: no thinking).
_OPENAI_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
REASONING_EFFORTS: dict[str, tuple[str, ...]] = {
    "openai-chat": _OPENAI_EFFORTS,
    "openai-responses": _OPENAI_EFFORTS,
    ANTHROPIC: ("none", "low", "medium", "high", "xhigh", "max"),
    # Gemini's ``thinkingLevel`` values; ``none`` is sent as ``thinkingBudget: 0``.
    GEMINI: ("none", "minimal", "low", "medium", "high"),
}
OBSERVABILITY_KEY = "observability"
# What each kind of sealed value is for (the cipher's associated data, ``store.secrets``).
_KEY_PURPOSE = "provider api_key"
_HEADER_PURPOSE = "provider header"
_SEARCH_KEY_PURPOSE = "web search api_key"
# What the console shows for a secret that does not open under this server's key.
KEY_UNREADABLE = "key unreadable, set it again"

# Custom header names whose values are always sealed (never marked public) and always dropped
# from recorded requests: these exact names (case-insensitive) and any name containing one of
# the fragments (``x-goog-api-key``, ``x-auth-token``, ``x-secret``). Every other custom header
# is sealed too unless the user marks it public.
SECRET_HEADER_NAMES = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
SECRET_HEADER_FRAGMENTS = ("token", "secret", "key", "password", "auth")
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
_KEY_RE = re.compile(r"[\x21-\x7e]*")

# The longest free text the catalog stores, so a client cannot fill the database (or every
# model list Cursor fetches) with one value; beyond one: ``Invalid`` naming the field.
MAX_NAME_CHARS = 200  # a provider's name, a model's display name
MAX_MODEL_ID_CHARS = 200
MAX_URL_CHARS = 2048  # a provider's base URL, a SearXNG instance's URL
MAX_KEY_CHARS = 8192  # an API key
MAX_HEADERS = 64  # custom headers per provider
MAX_HEADER_NAME_CHARS = 100
MAX_HEADER_VALUE_CHARS = 8192  # printable ASCII, so 8 KiB

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
# The range of the catalog's integer columns (``INTEGER``: 32 bits on PostgreSQL); a larger
# number is refused naming its field instead of failing the INSERT.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# A model's prices, USD per million tokens, one per usage bucket (migration 8). None is
# "unknown": a call that used a bucket without a price has an unknown cost, never a zero one.
PRICE_FIELDS = (
    "price_input_per_mtok",
    "price_output_per_mtok",
    "price_cache_read_per_mtok",
    "price_cache_write_per_mtok",
)


# --- errors ------------------------------------------------------------------------------------


class CatalogError(Exception):
    """A refused catalog operation; ``message`` is safe to show (no key, no header value)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Invalid(CatalogError):
    """An input value breaks a rule; ``field`` names it (``models[2].max_output_tokens``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class NotFound(CatalogError):
    """The provider or model does not exist."""


class KeyUnreadable(CatalogError):
    """A stored secret does not open under this server's key (a database copied without its
    key file, another ``CURSOR_SECRET_KEY``); the message names its owner, never the value."""

    def __init__(self, owner: str, field: str, reason: str) -> None:
        super().__init__(f"{owner}: {KEY_UNREADABLE} in the console ({field}: {reason})")
        self.owner = owner
        self.field = field


class Conflict(CatalogError):
    """The operation is valid in itself but the current data forbids it.

    ``code`` is the error code a client gets: ``failed_precondition`` when the data must change
    first, ``already_exists`` when the public id is taken by another model.
    """

    def __init__(self, message: str, code: str = "failed_precondition") -> None:
        super().__init__(message)
        self.code = code


# --- records -----------------------------------------------------------------------------------


# ``prompt_cache_key``: "auto" (only to OpenAI's own API), "on" or "off".
CACHE_KEY_AUTO = "auto"
CACHE_KEY_SETTINGS = (CACHE_KEY_AUTO, "on", "off")
OPENAI_API_HOST = "api.openai.com"


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
            f"headers={sorted(self.headers)!r})"
        )


class ModelInput(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One model to save under a provider, keyed on (provider, trimmed ``model_id``)."""

    model_id: str
    display_name: str
    enabled: bool = True
    max_output_tokens: PositiveInt | None = None
    context_window_tokens: PositiveInt | None = None
    reasoning_enabled: bool = False
    reasoning_effort: str | None = None
    sort_order: int = 0
    # USD per million tokens (``PRICE_FIELDS``); None is unknown. Absent on an upsert clears
    # the stored price, as for every other field.
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    price_cache_read_per_mtok: float | None = None
    price_cache_write_per_mtok: float | None = None


class ModelRecord(msgspec.Struct, frozen=True):
    """A saved model with its provider's name and type; ``public_id`` is what Cursor sees."""

    public_id: str
    provider_id: int
    provider_name: str
    provider_type: str
    model_id: str
    display_name: str
    enabled: bool
    sort_order: int
    max_output_tokens: int | None
    context_window_tokens: int | None
    reasoning_enabled: bool
    reasoning_effort: str | None
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    price_cache_read_per_mtok: float | None = None
    price_cache_write_per_mtok: float | None = None


class ObservabilitySettings(msgspec.Struct, frozen=True):
    """Whether calls record full payloads, and how many call records to keep."""

    verbose: bool = False
    retained_calls: int = 10000


# --- table models ------------------------------------------------------------------------------


class _Tables(msgspec.Struct, frozen=True):
    provider: Any
    model: Any
    setting: Any


_TABLES: weakref.WeakKeyDictionary[peewee.Database, _Tables] = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def _tables(db: peewee.Database) -> _Tables:
    """peewee models of the migration-2 tables bound to ``db`` (built once per database)."""
    with _TABLES_LOCK:
        tables = _TABLES.get(db)
        if tables is None:
            tables = _TABLES[db] = _build_tables(db)
        return tables


def _build_tables(db: peewee.Database) -> _Tables:
    class Provider(peewee.Model):
        id = peewee.AutoField()
        name = peewee.TextField()
        type = peewee.TextField()
        base_url = peewee.TextField()
        api_key = peewee.TextField()
        headers_json = peewee.TextField()
        replay_reasoning = peewee.BooleanField(default=True)
        prompt_cache_key = peewee.TextField(default=CACHE_KEY_AUTO)
        created_at_ms = peewee.BigIntegerField()
        updated_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "providers"

    class Model(peewee.Model):
        public_id = peewee.CharField(max_length=8, primary_key=True)
        provider = peewee.ForeignKeyField(Provider, column_name="provider_id", on_delete="CASCADE")
        model_id = peewee.TextField()
        display_name = peewee.TextField()
        enabled = peewee.BooleanField()
        sort_order = peewee.IntegerField()
        max_output_tokens = peewee.IntegerField(null=True)
        context_window_tokens = peewee.IntegerField(null=True)
        reasoning_enabled = peewee.BooleanField()
        reasoning_effort = peewee.TextField(null=True)
        price_input_per_mtok = peewee.FloatField(null=True)
        price_output_per_mtok = peewee.FloatField(null=True)
        price_cache_read_per_mtok = peewee.FloatField(null=True)
        price_cache_write_per_mtok = peewee.FloatField(null=True)
        created_at_ms = peewee.BigIntegerField()
        updated_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "models"

    class Setting(peewee.Model):
        key = peewee.TextField(primary_key=True)
        value_json = peewee.TextField()
        updated_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "settings"

    return _Tables(provider=Provider, model=Model, setting=Setting)


# --- helpers -----------------------------------------------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def iso_utc(ms: int) -> str:
    """``2025-01-02T03:04:05.678Z`` for UTC milliseconds: one fixed shape for every time."""
    instant = _EPOCH + datetime.timedelta(milliseconds=ms)
    return instant.strftime("%Y-%m-%dT%H:%M:%S.") + f"{instant.microsecond // 1000:03d}Z"


def is_secret_header(name: str) -> bool:
    """Whether a header's name says it carries a credential: such a value is always sealed
    (it cannot be marked public) and the header is dropped from recorded requests."""
    lowered = name.lower()
    return lowered in SECRET_HEADER_NAMES or any(f in lowered for f in SECRET_HEADER_FRAGMENTS)


def _is_public(name: str, stored: str) -> bool:
    """Whether a stored header value is public: plaintext under a name that is not
    secret-looking (a plaintext secret-looking value is an older version's, sealed at start)."""
    return not is_sealed(stored) and not is_secret_header(name)


def _redacted(headers: dict[str, str]) -> dict[str, str | None]:
    return {name: value if _is_public(name, value) else None for name, value in headers.items()}


def _public_names(headers: dict[str, str]) -> list[str]:
    return [name for name, value in headers.items() if _is_public(name, value)]


def _lock_row(query: peewee.Select, db: peewee.Database) -> peewee.Select:
    """``FOR UPDATE`` where supported (PostgreSQL); SQLite's IMMEDIATE transactions already lock."""
    return query.for_update() if db.for_update else query


# --- providers ---------------------------------------------------------------------------------


def _provider_record(db: peewee.Database, row: Any) -> ProviderRecord:
    return ProviderRecord(
        id=row.id,
        name=row.name,
        type=row.type,
        base_url=row.base_url,
        has_api_key=bool(row.api_key),
        headers=_redacted(_stored_headers(row)),
        public_headers=_public_names(_stored_headers(row)),
        replay_reasoning=bool(row.replay_reasoning),
        prompt_cache_key=row.prompt_cache_key,
        created_at=iso_utc(row.created_at_ms),
        updated_at=iso_utc(row.updated_at_ms),
        unreadable=_unreadable_provider_secrets(db, row.api_key, _stored_headers(row)),
    )


# --- secrets at rest (``store.secrets``) -------------------------------------------------------


def _seal(db: peewee.Database, value: str, purpose: str) -> str:
    """``value`` sealed under the database's key; an empty value stays empty (no secret)."""
    return secret_box(db).seal(value, purpose) if value else ""


def _open(db: peewee.Database, stored: str, purpose: str) -> str:
    """The plaintext of a stored secret (``SecretUnreadable`` if it does not open)."""
    return secret_box(db).open(stored, purpose) if stored else ""


def _seal_header(db: peewee.Database, value: str) -> str:
    """A header value sealed, even an empty one: a sealed value is what marks it secret."""
    return secret_box(db).seal(value, _HEADER_PURPOSE)


def _sealed_headers(db: peewee.Database, headers: dict[str, str]) -> dict[str, str]:
    """Secret-looking plaintext header values (an older version's) sealed; the rest as stored."""
    return {
        name: _seal_header(db, value) if is_secret_header(name) and not is_sealed(value) else value
        for name, value in headers.items()
    }


def _open_provider_secrets(
    db: peewee.Database, name: str, api_key: str, headers: dict[str, str]
) -> tuple[str, dict[str, str], frozenset[str]]:
    """The real key and header values of provider ``name``, and the lower-cased names of its
    public headers; ``KeyUnreadable`` names the provider."""
    owner = f"provider {name!r}"
    try:
        key = _open(db, api_key, _KEY_PURPOSE)
    except SecretUnreadable as exc:
        raise KeyUnreadable(owner, "api_key", exc.reason) from None
    opened = {}
    for header, value in headers.items():
        if not is_sealed(value):
            opened[header] = value
            continue
        try:
            opened[header] = _open(db, value, _HEADER_PURPOSE)
        except SecretUnreadable as exc:
            raise KeyUnreadable(owner, f"headers.{header}", exc.reason) from None
    public = frozenset(n.lower() for n, v in headers.items() if _is_public(n, v))
    return key, opened, public


def _unreadable_provider_secrets(
    db: peewee.Database, api_key: str, headers: dict[str, str]
) -> dict[str, str]:
    sealed = [("api_key", api_key, _KEY_PURPOSE)] + [
        (f"headers.{name}", value, _HEADER_PURPOSE)
        for name, value in headers.items()
        if is_sealed(value)
    ]
    unreadable = {}
    for field, value, purpose in sealed:
        try:
            _open(db, value, purpose)
        except SecretUnreadable:
            unreadable[field] = KEY_UNREADABLE
    return unreadable


def seal_plaintext_secrets(db: peewee.Database) -> int:
    """Seal every secret an older version stored as plaintext (run at startup, re-runnable):
    providers' keys and secret-looking header values, the web search key. Other plaintext
    header values an older version stored stay as they were: public. Values sealed
    already, under this key or another, are left as they are. Returns how many were sealed."""
    tables = _tables(db)
    sealed = 0
    with db.atomic():
        for row in _lock_row(tables.provider.select(), db):
            headers = _stored_headers(row)
            new_headers = _sealed_headers(db, headers)
            changed = [name for name in headers if headers[name] != new_headers[name]]
            key_plain = bool(row.api_key) and not is_sealed(row.api_key)
            if key_plain:
                row.api_key = _seal(db, row.api_key, _KEY_PURPOSE)
            if changed:
                row.headers_json = msgspec.json.encode(new_headers).decode()
            if key_plain or changed:
                row.save()
                sealed += key_plain + len(changed)
        search = _stored_web_search(db)
        if search.api_key and not is_sealed(search.api_key):
            _write_web_search(db, search)
            sealed += 1
    return sealed


def _stored_headers(row: Any) -> dict[str, str]:
    return msgspec.json.decode(row.headers_json, type=dict[str, str])


def _check_length(field: str, text: str, limit: int) -> None:
    """``Invalid`` naming ``field`` when ``text`` is longer than ``limit`` (never echoing it)."""
    if len(text) > limit:
        raise Invalid(field, f"is longer than {limit} characters ({len(text)})")


def _check_name(name: str) -> str:
    trimmed = name.strip()
    if not trimmed:
        raise Invalid("name", "provider name cannot be empty")
    _check_length("name", trimmed, MAX_NAME_CHARS)
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
    _check_length("base_url", base_url.strip(), MAX_URL_CHARS)
    try:
        normalized = urls.normalize_base_url(base_url)
    except urls.InvalidBaseUrl as exc:
        raise Invalid("base_url", str(exc)) from None
    _refuse_target("base_url", normalized, own)
    return normalized


def _refuse_target(field: str, url: str, own: OwnAddresses) -> None:
    """``Invalid`` when the server must not send requests to ``url`` (``store.url_targets``)."""
    reason = refused_target(url, own)
    if reason is not None:
        raise Invalid(field, f"the server does not send requests there: {reason}")


def _check_api_key(api_key: str, field: str = "api_key") -> str:
    _check_length(field, api_key, MAX_KEY_CHARS)
    if not _KEY_RE.fullmatch(api_key):
        # Never echo the value: it is (part of) a secret.
        raise Invalid(field, "must be printable ASCII without spaces or control characters")
    if is_sealed(api_key):
        raise Invalid(field, f"must not start with {SEALED_PREFIX!r} (the stored form of a key)")
    return api_key


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
            _check_length(f"headers.{name}", value, MAX_HEADER_VALUE_CHARS)


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


def _headers_to_store(
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
    for name, value in given.items():
        field = f"headers.{name}"
        lowered = name.lower()
        if not _HEADER_NAME_RE.fullmatch(name):
            raise Invalid(field, "header name must be an HTTP token")
        if lowered in RESERVED_HEADER_NAMES:
            raise Invalid(field, "this header is set by the HTTP client and cannot be custom")
        if lowered in seen:
            raise Invalid(field, "header given twice (names are case-insensitive)")
        seen.add(lowered)
        is_public = lowered in public_names
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
                merged[name] = value  # kept as stored (sealed, even under another key)
                continue
        elif not _HEADER_VALUE_RE.fullmatch(value):
            raise Invalid(field, "header value must be printable ASCII (spaces and tabs allowed)")
        elif is_sealed(value):
            raise Invalid(field, f"must not start with {SEALED_PREFIX!r} (the stored form)")
        merged[name] = value if is_public else _seal_header(db, value)
    return merged


def list_providers(db: peewee.Database) -> list[ProviderRecord]:
    """Every provider, oldest first."""
    provider = _tables(db).provider
    return [_provider_record(db, row) for row in provider.select().order_by(provider.id)]


def provider_connection(db: peewee.Database, provider_id: int) -> ProviderConnection | None:
    """The real URL, key and headers of a provider (for discovery and routing)."""
    row = _tables(db).provider.get_or_none(id=provider_id)
    return None if row is None else _connection(db, row)


def _connection(db: peewee.Database, row: Any) -> ProviderConnection:
    """The provider's real values; ``KeyUnreadable`` when a secret does not open."""
    api_key, headers, public = _open_provider_secrets(
        db, row.name, row.api_key, _stored_headers(row)
    )
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
    )


def create_provider(
    db: peewee.Database, data: ProviderInput, own: OwnAddresses = NO_OWN_ADDRESSES
) -> ProviderRecord:
    """Validate and store a new provider (name trimmed, URL normalised); ``own`` are the
    server's listeners, which its URL may not point at."""
    fields = {
        "name": _check_name(data.name),
        "type": _check_type(data.type),
        "base_url": _check_base_url(data.base_url, own),
        "api_key": _seal(db, _check_api_key(data.api_key or ""), _KEY_PURPOSE),
        "headers_json": msgspec.json.encode(
            _headers_to_store(db, data.headers or {}, data.public_headers)
        ).decode(),
        "replay_reasoning": data.replay_reasoning is not False,
        "prompt_cache_key": _check_cache_key(data.prompt_cache_key or CACHE_KEY_AUTO),
    }
    provider = _tables(db).provider
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
    name = _check_name(data.name)
    provider_type = _check_type(data.type)
    base_url = _check_base_url(data.base_url, own)
    api_key = None if data.api_key is None else _check_api_key(data.api_key)
    cache_key = None if data.prompt_cache_key is None else _check_cache_key(data.prompt_cache_key)
    tables = _tables(db)
    with db.atomic():
        row = _lock_row(tables.provider.select().where(tables.provider.id == provider_id), db)
        row = row.first()
        if row is None:
            raise NotFound(f"provider {provider_id} not found")
        if (provider_type, base_url) != (row.type, row.base_url) and _has_models(db, provider_id):
            raise Conflict(
                "provider URL and type cannot change once it has models "
                "(delete its models or create a new provider)"
            )
        stored = _stored_headers(row)
        if data.headers is None:
            if data.public_headers is not None:
                raise Invalid("public_headers", "give the headers it refers to with it")
            headers = stored
        else:
            headers = _headers_to_store(db, data.headers, data.public_headers, stored)
        row.name = name
        row.type = provider_type
        row.base_url = base_url
        if api_key is not None:
            row.api_key = _seal(db, api_key, _KEY_PURPOSE)
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
    model = _tables(db).model
    return model.select().where(model.provider == provider_id).exists()


def delete_provider(db: peewee.Database, provider_id: int) -> None:
    """Delete a provider and its models; its call records stay (they hold no foreign key)."""
    tables = _tables(db)
    with db.atomic():
        models = tables.model.select(tables.model.public_id).where(
            tables.model.provider == provider_id
        )
        _forget_image_model(db, [row.public_id for row in models])
        tables.model.delete().where(tables.model.provider == provider_id).execute()
        deleted = tables.provider.delete().where(tables.provider.id == provider_id).execute()
        if not deleted:
            raise NotFound(f"provider {provider_id} not found")


# --- models ------------------------------------------------------------------------------------


def _models_query(db: peewee.Database, *, whole_provider: bool = False) -> peewee.Select:
    """Models with their provider: only the columns a model record shows, unless the whole
    provider row is wanted (to connect to it)."""
    tables = _tables(db)
    model, provider = tables.model, tables.provider
    columns = (provider,) if whole_provider else (provider.id, provider.name, provider.type)
    return (
        model.select(model, *columns)
        .join(provider)
        .order_by(model.sort_order, model.display_name, model.public_id)
    )


def all_models(db: peewee.Database) -> list[ModelRecord]:
    """Every model, enabled or not, ordered by sort_order then display_name."""
    return [_record_of(row) for row in db.execute_sql(_models_sql("")).fetchall()]


def enabled_models(db: peewee.Database) -> list[ModelRecord]:
    """The models Cursor may list and use, ordered by sort_order then display_name."""
    # Read when every run starts (the Task tool's model list): written SQL, as the route's.
    cursor = db.execute_sql(_ENABLED_SQL.format(param=db.param), (True,))
    return [_record_of(row) for row in cursor.fetchall()]


def has_model(db: peewee.Database, public_id: str) -> bool:
    """Whether a model (enabled or not) has this public id: its runs are served here."""
    cursor = db.execute_sql(
        f'SELECT 1 FROM "models" WHERE "public_id" = {db.param} LIMIT 1', (public_id,)
    )
    return cursor.fetchone() is not None


def model_route_parts(
    db: peewee.Database, public_id: str
) -> tuple[ModelRecord, ProviderConnection] | None:
    """The model behind a public id and its provider's real connection values, or None.

    Disabled models are returned too (``record.enabled`` is False) so the caller can say
    "disabled" rather than "unknown"; the caller must refuse to route to them. A provider
    secret that does not open under this server's key raises ``KeyUnreadable`` naming it.
    """
    # Read on the path of every run, so its SQL is written once instead of built by peewee
    # each time (~1 ms of Python per call).
    cursor = db.execute_sql(_ROUTE_SQL.format(param=db.param), (public_id,))
    row = cursor.fetchone()
    if row is None:
        return None
    record = _record_of(row)
    base_url, api_key, headers_json, replay_reasoning, prompt_cache_key = row[
        len(_RECORD_COLUMNS) :
    ]
    key, headers, public = _open_provider_secrets(
        db, record.provider_name, api_key, msgspec.json.decode(headers_json, type=dict[str, str])
    )
    connection = ProviderConnection(
        provider_id=record.provider_id,
        name=record.provider_name,
        type=record.provider_type,
        base_url=base_url,
        api_key=key,
        headers=headers,
        replay_reasoning=bool(replay_reasoning),
        prompt_cache_key=prompt_cache_key,
        public_headers=public,
    )
    return record, connection


# The hot reads' SQL, written once instead of built by peewee at each call (~0.3-1 ms of
# Python each): a model record's columns, in ``_record_of``'s order.
_RECORD_COLUMNS = (
    'm."public_id"',
    'm."provider_id"',
    'p."name"',
    'p."type"',
    'm."model_id"',
    'm."display_name"',
    'm."enabled"',
    'm."sort_order"',
    'm."max_output_tokens"',
    'm."context_window_tokens"',
    'm."reasoning_enabled"',
    'm."reasoning_effort"',
    *(f'm."{field}"' for field in PRICE_FIELDS),
)
_MODELS_FROM = ' FROM "models" AS m JOIN "providers" AS p ON p."id" = m."provider_id" '


def _models_sql(where: str) -> str:
    """Model records (``_record_of``'s rows) matching ``where``, in the order Cursor lists them."""
    return (
        f"SELECT {', '.join(_RECORD_COLUMNS)}{_MODELS_FROM}{where}"
        ' ORDER BY m."sort_order", m."display_name", m."public_id"'
    )


# Compared with a parameter, so SQLite uses the (enabled, sort_order, display_name) index.
_ENABLED_SQL = _models_sql('WHERE m."enabled" = {param}')
_ROUTE_SQL = (
    f"SELECT {', '.join(_RECORD_COLUMNS)}, "
    'p."base_url", p."api_key", p."headers_json", p."replay_reasoning", p."prompt_cache_key"'
    + _MODELS_FROM
    + 'WHERE m."public_id" = {param}'
)


def _record_of(row: tuple[Any, ...]) -> ModelRecord:
    """The record from a row that starts with ``_RECORD_COLUMNS``."""
    fixed = len(_RECORD_COLUMNS) - len(PRICE_FIELDS)
    (
        public_id,
        provider_id,
        provider_name,
        provider_type,
        model_id,
        display_name,
        enabled,
        sort_order,
        max_output,
        context,
        reasoning,
        effort,
    ) = row[:fixed]
    prices = row[fixed : len(_RECORD_COLUMNS)]
    return ModelRecord(
        public_id=public_id,
        provider_id=provider_id,
        provider_name=provider_name,
        provider_type=provider_type,
        model_id=model_id,
        display_name=display_name,
        enabled=bool(enabled),
        sort_order=sort_order,
        max_output_tokens=max_output,
        context_window_tokens=context,
        reasoning_enabled=bool(reasoning),
        reasoning_effort=effort,
        **dict(zip(PRICE_FIELDS, prices, strict=True)),
    )


def delete_model(db: peewee.Database, public_id: str) -> None:
    """Delete one model by public id; ``NotFound`` if there is none."""
    model = _tables(db).model
    with db.atomic():
        _forget_image_model(db, [public_id])
        if not model.delete().where(model.public_id == public_id).execute():
            raise NotFound(f"model {public_id} not found")


def _check_model(index: int, item: ModelInput, provider_type: str) -> ModelInput:
    """Trimmed, validated copy of one input model; fields are named ``models[i].field``."""
    prefix = f"models[{index}]"
    model_id = item.model_id.strip()
    if not model_id:
        raise Invalid(f"{prefix}.model_id", "model id cannot be empty")
    _check_length(f"{prefix}.model_id", model_id, MAX_MODEL_ID_CHARS)
    display_name = item.display_name.strip()
    if not display_name:
        raise Invalid(f"{prefix}.display_name", "display name cannot be empty")
    _check_length(f"{prefix}.display_name", display_name, MAX_NAME_CHARS)
    for field in ("max_output_tokens", "context_window_tokens"):
        value = getattr(item, field)
        if value is not None and (isinstance(value, bool) or not 1 <= value <= INT32_MAX):
            raise Invalid(f"{prefix}.{field}", f"must be a positive integer up to {INT32_MAX}")
    if not INT32_MIN <= item.sort_order <= INT32_MAX:
        raise Invalid(f"{prefix}.sort_order", f"must be an integer from {INT32_MIN} to {INT32_MAX}")
    for field in PRICE_FIELDS:
        price = getattr(item, field)
        if price is not None and (
            isinstance(price, bool)
            or not isinstance(price, int | float)
            or not math.isfinite(price)
            or price < 0
        ):
            raise Invalid(
                f"{prefix}.{field}",
                "must be null (unknown) or a finite number of USD per million tokens, at least 0",
            )
    effort = None if item.reasoning_effort is None else item.reasoning_effort.strip().lower()
    allowed = REASONING_EFFORTS.get(provider_type, ())
    if effort is not None and effort not in allowed:
        raise Invalid(
            f"{prefix}.reasoning_effort",
            f"must be null (the provider's default) or one of {', '.join(allowed)} "
            f"for an {provider_type} provider, got {item.reasoning_effort!r}",
        )
    if provider_type == ANTHROPIC and item.enabled and item.max_output_tokens is None:
        raise Invalid(
            f"{prefix}.max_output_tokens",
            "required to enable an Anthropic model (the server never guesses a limit)",
        )
    return msgspec.structs.replace(
        item,
        model_id=model_id,
        display_name=display_name,
        reasoning_effort=effort,
    )


def save_models(
    db: peewee.Database, provider_id: int, models: Sequence[ModelInput]
) -> list[ModelRecord]:
    """Upsert models under a provider in one transaction: all are saved or none.

    Keyed on (provider, model_id): an existing model keeps its public id and creation time.
    A public id that already belongs to another (provider, model) is a ``Conflict``.
    """
    tables = _tables(db)
    model = tables.model
    with db.atomic():
        columns = (tables.provider.id, tables.provider.type, tables.provider.base_url)
        query = tables.provider.select(*columns).where(tables.provider.id == provider_id)
        provider = _lock_row(query, db).first()
        if provider is None:
            raise NotFound(f"provider {provider_id} not found")
        checked = [_check_model(i, item, provider.type) for i, item in enumerate(models)]
        _refuse_duplicates(checked)
        stamp = now_ms()
        public_ids = []
        for item in checked:
            public_id = urls.public_model_id(provider.base_url, provider.type, item.model_id)
            _refuse_collision(db, public_id, provider_id, item.model_id)
            fields = {
                "display_name": item.display_name,
                "enabled": item.enabled,
                "sort_order": item.sort_order,
                "max_output_tokens": item.max_output_tokens,
                "context_window_tokens": item.context_window_tokens,
                "reasoning_enabled": item.reasoning_enabled,
                "reasoning_effort": item.reasoning_effort,
                **{field: getattr(item, field) for field in PRICE_FIELDS},
                "updated_at_ms": stamp,
            }
            updated = (
                model.update(**fields)
                .where((model.provider == provider_id) & (model.model_id == item.model_id))
                .execute()
            )
            if not updated:
                model.insert(
                    public_id=public_id,
                    provider=provider_id,
                    model_id=item.model_id,
                    created_at_ms=stamp,
                    **fields,
                ).execute()
            public_ids.append(public_id)
        if not public_ids:  # PostgreSQL refuses an empty IN ()
            return []
        marks = ", ".join([db.param] * len(public_ids))
        saved = db.execute_sql(_models_sql(f'WHERE m."public_id" IN ({marks})'), public_ids)
        records = {record.public_id: record for record in map(_record_of, saved.fetchall())}
    return [records[public_id] for public_id in public_ids]


def _refuse_duplicates(models: Iterable[ModelInput]) -> None:
    seen: set[str] = set()
    for index, item in enumerate(models):
        if item.model_id in seen:
            raise Invalid(f"models[{index}].model_id", f"{item.model_id!r} is given twice")
        seen.add(item.model_id)


def _refuse_collision(db: peewee.Database, public_id: str, provider_id: int, model_id: str) -> None:
    model = _tables(db).model
    holder = model.get_or_none(model.public_id == public_id)
    if holder is not None and (holder.provider_id, holder.model_id) != (provider_id, model_id):
        raise Conflict(
            f"public model id {public_id} already belongs to model {holder.model_id!r} "
            f"of provider {holder.provider_id} (8-hex id collision)",
            code="already_exists",
        )


# --- settings ----------------------------------------------------------------------------------


def get_observability(db: peewee.Database) -> ObservabilitySettings:
    """The stored observability settings, or the defaults when none were saved."""
    # Read at the start of every provider call: SQL written once, not built by peewee each time.
    sql = _SETTING_SQL.format(param=db.param)
    row = db.execute_sql(sql, (OBSERVABILITY_KEY,)).fetchone()
    if row is None:
        return ObservabilitySettings()
    return msgspec.json.decode(row[0], type=ObservabilitySettings)


_SETTING_SQL = 'SELECT "value_json" FROM "settings" WHERE "key" = {param}'


def update_observability(
    db: peewee.Database, *, verbose: bool | None = None, retained_calls: int | None = None
) -> ObservabilitySettings:
    """Change the given settings (None leaves one as it is) and return the result."""
    if verbose is not None and not isinstance(verbose, bool):
        raise Invalid("verbose", "must be true or false")
    if retained_calls is not None and (
        type(retained_calls) is not int or not 1 <= retained_calls <= INT32_MAX
    ):
        raise Invalid("retained_calls", f"must be an integer from 1 to {INT32_MAX}")
    setting = _tables(db).setting
    with db.atomic():
        # Make sure the row exists, then lock it, so concurrent partial updates both survive.
        default = msgspec.json.encode(ObservabilitySettings()).decode()
        setting.insert(
            key=OBSERVABILITY_KEY, value_json=default, updated_at_ms=now_ms()
        ).on_conflict_ignore().execute()
        _lock_row(setting.select().where(setting.key == OBSERVABILITY_KEY), db).first()
        current = get_observability(db)
        changes: dict[str, Any] = {}
        if verbose is not None:
            changes["verbose"] = verbose
        if retained_calls is not None:
            changes["retained_calls"] = retained_calls
        result = msgspec.structs.replace(current, **changes)
        setting.update(
            value_json=msgspec.json.encode(result).decode(), updated_at_ms=now_ms()
        ).where(setting.key == OBSERVABILITY_KEY).execute()
    return result


# --- web search backend ------------------------------------------------------------------------

WEB_SEARCH_KEY = "web_search"
# The backends the server can search with: a SearXNG instance (its URL, no key), or the
# Tavily or Brave Search API (fixed endpoints, a key).
WEB_SEARCH_BACKENDS = ("searxng", "tavily", "brave")
_KEYED_BACKENDS = {"tavily": "Tavily", "brave": "Brave Search"}


class WebSearchInput(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The backend as the console sends it. ``backend`` null turns web search off (and forgets
    the URL and key); ``api_key`` absent or null keeps the stored key, ``""`` clears it."""

    backend: str | None
    url: str | None = None
    api_key: str | None = None


class WebSearchSettings(msgspec.Struct, frozen=True, omit_defaults=True):
    """The backend as shown to a client: never the key, only whether one is set (and, when
    it does not open under this server's key, ``KEY_UNREADABLE`` in ``key_unreadable``,
    left out otherwise)."""

    backend: str | None
    url: str | None
    has_api_key: bool
    key_unreadable: str | None = None


class WebSearchConfig(msgspec.Struct, frozen=True):
    """The stored backend with its real key. Internal only: never serialise it."""

    backend: str
    url: str
    api_key: str

    def __repr__(self) -> str:
        return f"WebSearchConfig(backend={self.backend!r}, url={self.url!r}, api_key=<redacted>)"


class _StoredWebSearch(msgspec.Struct, frozen=True):
    backend: str | None = None
    url: str = ""
    api_key: str = ""


def _stored_web_search(db: peewee.Database) -> _StoredWebSearch:
    # Read at the start of every run (it decides whether WebSearch is offered): fixed SQL.
    sql = _SETTING_SQL.format(param=db.param)
    row = db.execute_sql(sql, (WEB_SEARCH_KEY,)).fetchone()
    if row is None:
        return _StoredWebSearch()
    return msgspec.json.decode(row[0], type=_StoredWebSearch)


def _shown(db: peewee.Database, stored: _StoredWebSearch) -> WebSearchSettings:
    try:
        _open(db, stored.api_key, _SEARCH_KEY_PURPOSE)
        unreadable = None
    except SecretUnreadable:
        unreadable = KEY_UNREADABLE
    return WebSearchSettings(
        backend=stored.backend,
        url=stored.url or None,
        has_api_key=bool(stored.api_key),
        key_unreadable=unreadable,
    )


def get_web_search(db: peewee.Database) -> WebSearchSettings:
    """The configured backend (off when none was saved), without its key."""
    return _shown(db, _stored_web_search(db))


def web_search_config(db: peewee.Database) -> WebSearchConfig | None:
    """The backend a search uses, with its key; None when web search is off.
    ``KeyUnreadable`` when its key does not open under this server's key."""
    stored = _stored_web_search(db)
    if stored.backend is None:
        return None
    try:
        key = _open(db, stored.api_key, _SEARCH_KEY_PURPOSE)
    except SecretUnreadable as exc:
        owner = f"the web search backend {_KEYED_BACKENDS.get(stored.backend, stored.backend)}"
        raise KeyUnreadable(owner, "api_key", exc.reason) from None
    return WebSearchConfig(stored.backend, stored.url, key)


def _check_search_url(url: str | None, own: OwnAddresses) -> str:
    text = (url or "").strip()
    if not text:
        raise Invalid("url", "a SearXNG instance needs its URL (https://search.example.org)")
    _check_length("url", text, MAX_URL_CHARS)
    try:
        parts = urlsplit(text)
        host = parts.hostname
    except ValueError:
        raise Invalid("url", "not a valid URL") from None
    if parts.scheme not in ("http", "https") or not host:
        raise Invalid("url", "must be an http:// or https:// URL with a host")
    if parts.query or parts.fragment:
        raise Invalid("url", "must not have a query or fragment")
    if parts.username is not None or parts.password is not None:
        # The URL is shown back by the settings API: a credential in it would leak.
        raise Invalid("url", "must not hold a user name or password")
    _refuse_target("url", text, own)
    return text.rstrip("/")


def _web_search_change(
    data: WebSearchInput, current: _StoredWebSearch, own: OwnAddresses
) -> _StoredWebSearch:
    """What ``data`` makes of the stored backend; a rule it breaks raises ``Invalid``."""
    backend = data.backend
    if backend is None:
        return _StoredWebSearch()
    if backend not in WEB_SEARCH_BACKENDS:
        raise Invalid("backend", f"must be one of {', '.join(WEB_SEARCH_BACKENDS)}, or null")
    if backend == "searxng":
        if data.api_key:
            raise Invalid("api_key", "a SearXNG instance takes no key")
        return _StoredWebSearch(backend, _check_search_url(data.url, own), "")
    if data.url:
        raise Invalid("url", f"{_KEYED_BACKENDS[backend]} has a fixed address; leave it empty")
    if data.api_key is not None:
        key = _check_api_key(data.api_key)
    elif current.backend == backend:
        key = current.api_key
    else:
        key = ""  # a key is never carried over to another service
    if not key:
        raise Invalid("api_key", f"{_KEYED_BACKENDS[backend]} needs an API key")
    return _StoredWebSearch(backend, "", key)


def update_web_search(
    db: peewee.Database, data: WebSearchInput, own: OwnAddresses = NO_OWN_ADDRESSES
) -> WebSearchSettings:
    """Replace the web search backend and return it as shown (without the key); its URL may
    not point at ``own``, the server's listeners."""
    setting = _tables(db).setting
    with db.atomic():
        default = msgspec.json.encode(_StoredWebSearch()).decode()
        setting.insert(
            key=WEB_SEARCH_KEY, value_json=default, updated_at_ms=now_ms()
        ).on_conflict_ignore().execute()
        _lock_row(setting.select().where(setting.key == WEB_SEARCH_KEY), db).first()
        result = _web_search_change(data, _stored_web_search(db), own)
        written = _write_web_search(db, result)
    return _shown(db, written)


def _write_web_search(db: peewee.Database, stored: _StoredWebSearch) -> _StoredWebSearch:
    """Store ``stored``, its key sealed (a key kept from before is sealed already)."""
    if stored.api_key and not is_sealed(stored.api_key):
        stored = msgspec.structs.replace(
            stored, api_key=_seal(db, stored.api_key, _SEARCH_KEY_PURPOSE)
        )
    setting = _tables(db).setting
    setting.update(value_json=msgspec.json.encode(stored).decode(), updated_at_ms=now_ms()).where(
        setting.key == WEB_SEARCH_KEY
    ).execute()
    return stored


# --- the image model ---------------------------------------------------------------------------

IMAGE_MODEL_KEY = "image_model"
# The provider types whose API has OpenAI's ``POST /images/generations``.
IMAGE_PROVIDER_TYPES = ("openai-chat", "openai-responses")


class ImageModelSetting(msgspec.Struct, frozen=True):
    """Which saved model generates images (GenerateImage); None: none, so the tool is not
    offered. One setting names one model, so there is never more than one image model."""

    public_id: str | None = None


def get_image_model(db: peewee.Database) -> ImageModelSetting:
    """The marked image model (a model deleted since is no longer one)."""
    found = _image_model_row(db)
    return ImageModelSetting(None if found is None else found[0].public_id)


def _image_model_row(db: peewee.Database) -> tuple[Any, Any] | None:
    """The marked model's row and its provider's row, or None."""
    row = _tables(db).setting.get_or_none(key=IMAGE_MODEL_KEY)
    if row is None:
        return None
    public_id = msgspec.json.decode(row.value_json, type=ImageModelSetting).public_id
    if public_id is None:
        return None
    query = _models_query(db, whole_provider=True)
    model = query.where(_tables(db).model.public_id == public_id).first()
    return None if model is None else (model, model.provider)


def has_image_model(db: peewee.Database) -> bool:
    """Whether GenerateImage can run: read when a run starts, to decide the tools it offers
    (so its SQL is written, as the route's)."""
    cursor = db.execute_sql(_IMAGE_SETTING_SQL.format(param=db.param), (IMAGE_MODEL_KEY,))
    row = cursor.fetchone()
    if row is None:
        return False
    public_id = msgspec.json.decode(row[0], type=ImageModelSetting).public_id
    return public_id is not None and has_model(db, public_id)


_IMAGE_SETTING_SQL = 'SELECT "value_json" FROM "settings" WHERE "key" = {param}'


def image_model_connection(db: peewee.Database) -> tuple[str, ProviderConnection] | None:
    """The image model's id at its provider and the provider's real connection values."""
    found = _image_model_row(db)
    return None if found is None else (found[0].model_id, _connection(db, found[1]))


def set_image_model(db: peewee.Database, public_id: str | None) -> ImageModelSetting:
    """Mark ``public_id`` as the image model (None: no image model). ``Invalid`` names a
    model that does not exist or whose provider has no OpenAI images API."""
    setting = _tables(db).setting
    with db.atomic():
        if public_id is not None:
            model = _models_query(db).where(_tables(db).model.public_id == public_id).first()
            if model is None:
                raise Invalid("public_id", f"there is no model {public_id}")
            if model.provider.type not in IMAGE_PROVIDER_TYPES:
                raise Invalid(
                    "public_id",
                    f"model {public_id} is on an {model.provider.type} provider; the image "
                    "model must be on an OpenAI-compatible one "
                    f"({', '.join(IMAGE_PROVIDER_TYPES)})",
                )
        value = msgspec.json.encode(ImageModelSetting(public_id)).decode()
        setting.insert(key=IMAGE_MODEL_KEY, value_json=value, updated_at_ms=now_ms()).on_conflict(
            conflict_target=[setting.key],
            update={setting.value_json: value, setting.updated_at_ms: now_ms()},
        ).execute()
    return ImageModelSetting(public_id)


def _forget_image_model(db: peewee.Database, public_ids: Iterable[str]) -> None:
    """Unmark the image model when it is among the models being deleted (in their
    transaction), so a model added again later is not an image model by surprise."""
    row = _tables(db).setting.get_or_none(key=IMAGE_MODEL_KEY)
    if row is None:
        return
    if msgspec.json.decode(row.value_json, type=ImageModelSetting).public_id in set(public_ids):
        _tables(db).setting.delete().where(_tables(db).setting.key == IMAGE_MODEL_KEY).execute()
