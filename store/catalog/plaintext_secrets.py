"""Sealing what an older version stored in plaintext, run at startup: providers' keys and
secret-looking header values, and the web search key."""

from __future__ import annotations

import msgspec
import peewee

from store.base.secrets import is_sealed
from store.catalog.headers import sealed_headers, stored_headers
from store.catalog.sealing import KEY_PURPOSE, seal
from store.catalog.setting_rows import locked_saved_setting
from store.catalog.tables import lock_row, tables_of
from store.catalog.web_search import WEB_SEARCH_KEY, StoredWebSearch, write_web_search


def seal_plaintext_secrets(db: peewee.Database) -> int:
    """Seal every secret an older version stored as plaintext (run at startup, re-runnable):
    providers' keys and secret-looking header values, the web search key. Other plaintext
    header values an older version stored stay as they were: public. Values sealed
    already, under this key or another, are left as they are. Returns how many were sealed."""
    tables = tables_of(db)
    sealed = 0
    with db.atomic():
        for row in lock_row(tables.provider.select(), db):
            headers = stored_headers(row)
            new_headers = sealed_headers(db, headers)
            changed = [name for name in headers if headers[name] != new_headers[name]]
            key_plain = bool(row.api_key) and not is_sealed(row.api_key)
            if key_plain:
                row.api_key = seal(db, row.api_key, KEY_PURPOSE)
            if changed:
                row.headers_json = msgspec.json.encode(new_headers).decode()
            if key_plain or changed:
                row.save()
                sealed += key_plain + len(changed)
        search = locked_saved_setting(db, WEB_SEARCH_KEY, StoredWebSearch)
        if search is not None and search.api_key and not is_sealed(search.api_key):
            write_web_search(db, search)
            sealed += 1
    return sealed
