"""The web search backend: a SearXNG instance (its URL), or the Tavily or Brave Search API (a
key, sealed at rest). One row of the settings table, read at the start of every run: it decides
whether WebSearch is offered."""

from __future__ import annotations

from urllib.parse import urlsplit

import msgspec
import peewee

from store.base.secrets import SecretUnreadable, is_sealed
from store.catalog.checks import check_api_key, check_length, refuse_target
from store.catalog.errors import KEY_UNREADABLE, Invalid, KeyUnreadable, Problems
from store.catalog.limits import MAX_URL_CHARS
from store.catalog.sealing import SEARCH_KEY_PURPOSE, open_secret, seal
from store.catalog.setting_rows import (
    locked_setting,
    read_setting,
    write_setting,
)
from store.catalog.url_targets import NO_OWN_ADDRESSES, OwnAddresses

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


class StoredWebSearch(msgspec.Struct, frozen=True):
    backend: str | None = None
    url: str = ""
    api_key: str = ""


def stored_web_search(db: peewee.Database) -> StoredWebSearch:
    # Read at the start of every run (it decides whether WebSearch is offered): fixed SQL.
    return read_setting(db, WEB_SEARCH_KEY, StoredWebSearch)


def _shown(db: peewee.Database, stored: StoredWebSearch) -> WebSearchSettings:
    try:
        open_secret(db, stored.api_key, SEARCH_KEY_PURPOSE)
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
    return _shown(db, stored_web_search(db))


def web_search_config(db: peewee.Database) -> WebSearchConfig | None:
    """The backend a search uses, with its key; None when web search is off.
    ``KeyUnreadable`` when its key does not open under this server's key."""
    stored = stored_web_search(db)
    if stored.backend is None:
        return None
    try:
        key = open_secret(db, stored.api_key, SEARCH_KEY_PURPOSE)
    except SecretUnreadable as exc:
        owner = f"the web search backend {_KEYED_BACKENDS.get(stored.backend, stored.backend)}"
        raise KeyUnreadable(owner, "api_key", exc.reason) from None
    return WebSearchConfig(stored.backend, stored.url, key)


def _check_search_url(url: str | None, own: OwnAddresses) -> str:
    text = (url or "").strip()
    if not text:
        raise Invalid("url", "a SearXNG instance needs its URL (https://search.example.org)")
    check_length("url", text, MAX_URL_CHARS)
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
    refuse_target("url", text, own)
    return text.rstrip("/")


def _web_search_change(
    data: WebSearchInput, current: StoredWebSearch, own: OwnAddresses
) -> StoredWebSearch:
    """What ``data`` makes of the stored backend; the rules it breaks raise one ``Invalid``
    naming every broken field (a keyed backend given a URL and no key names both)."""
    backend = data.backend
    if backend is None:
        return StoredWebSearch()
    if backend not in WEB_SEARCH_BACKENDS:
        raise Invalid("backend", f"must be one of {', '.join(WEB_SEARCH_BACKENDS)}, or null")
    problems = Problems()
    if backend == "searxng":
        url = problems.check(_check_search_url, data.url, own)
        if data.api_key:
            problems.add("api_key", "a SearXNG instance takes no key")
        problems.raise_any()
        assert url is not None
        return StoredWebSearch(backend, url, "")
    if data.url:
        problems.add("url", f"{_KEYED_BACKENDS[backend]} has a fixed address; leave it empty")
    if data.api_key is not None:
        key = problems.check(check_api_key, data.api_key)
    elif current.backend == backend:
        key = current.api_key
    else:
        key = ""  # a key is never carried over to another service
    if key == "":
        problems.add("api_key", f"{_KEYED_BACKENDS[backend]} needs an API key")
    problems.raise_any()
    assert key
    return StoredWebSearch(backend, "", key)


def update_web_search(
    db: peewee.Database, data: WebSearchInput, own: OwnAddresses = NO_OWN_ADDRESSES
) -> WebSearchSettings:
    """Replace the web search backend and return it as shown (without the key); its URL may
    not point at ``own``, the server's listeners."""
    with db.atomic():
        current = locked_setting(db, WEB_SEARCH_KEY, StoredWebSearch)
        result = _web_search_change(data, current, own)
        written = write_web_search(db, result)
    return _shown(db, written)


def write_web_search(db: peewee.Database, stored: StoredWebSearch) -> StoredWebSearch:
    """Store ``stored``, its key sealed (a key kept from before is sealed already)."""
    if stored.api_key and not is_sealed(stored.api_key):
        stored = msgspec.structs.replace(
            stored, api_key=seal(db, stored.api_key, SEARCH_KEY_PURPOSE)
        )
    write_setting(db, WEB_SEARCH_KEY, stored)
    return stored
