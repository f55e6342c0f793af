"""Secrets at rest in the store (SQLite and PostgreSQL): what is written is sealed, plaintext
an older version left is sealed at startup, and a database opened under another key says
"key unreadable, set it again" for the owner, which setting the key again fixes."""

from __future__ import annotations

from typing import Any

import msgspec
import peewee
import pytest

from store import catalog as cat
from store import connect_store
from store.base.secrets import SEALED_PREFIX, new_secret_key
from store.base.typed_peewee import execute_sql

KEY = "sk-at-rest-0123456789"
HEADER = "Bearer header-at-rest-42"
SEARCH_KEY = "tvly-at-rest-987"


def provider(**fields: object) -> cat.ProviderInput:
    values: dict[str, Any] = {
        "name": "Main",
        "type": "openai-chat",
        "base_url": "https://example.com/v1",
        "api_key": KEY,
        "headers": {"x-route": "r1", "Authorization": HEADER},
        "public_headers": ["x-route"],
    }
    if "headers" in fields:  # other headers: none of them public unless the test says
        values.pop("public_headers")
    values.update(fields)
    return cat.ProviderInput(**values)


def stored_row(db: peewee.Database) -> tuple[str, dict[str, str]]:
    api_key, headers_json = execute_sql(
        db, 'SELECT "api_key", "headers_json" FROM "providers"'
    ).fetchone()
    return api_key, msgspec.json.decode(headers_json)


def stored_search_key(db: peewee.Database) -> str:
    (value,) = execute_sql(
        db, f'SELECT "value_json" FROM "settings" WHERE "key" = {db.param}', ("web_search",)
    ).fetchone()
    return str(msgspec.json.decode(value)["api_key"])


def add_model(db: peewee.Database, provider_id: int) -> str:
    models = [cat.ModelInput(model_id="m1", display_name="M1")]
    return cat.save_models(db, provider_id, models)[0].public_id


def test_keys_are_sealed_when_saved_and_open_for_the_route(db_url: str) -> None:
    key = new_secret_key()
    store = connect_store(db_url, key)
    db = store.database
    try:
        record = cat.create_provider(db, provider())
        cat.update_web_search(db, cat.WebSearchInput(backend="tavily", api_key=SEARCH_KEY))
        api_key, headers = stored_row(db)
        assert api_key.startswith(SEALED_PREFIX) and KEY not in api_key
        assert headers["x-route"] == "r1"  # shown by the console anyway: not a secret
        assert headers["Authorization"].startswith(SEALED_PREFIX)
        assert stored_search_key(db).startswith(SEALED_PREFIX)
        public_id = add_model(db, record.id)
        parts = cat.model_route_parts(db, public_id)
        assert parts is not None
        assert (parts[1].api_key, parts[1].headers["Authorization"]) == (KEY, HEADER)
        config = cat.web_search_config(db)
        assert config is not None and config.api_key == SEARCH_KEY
        # A rename that keeps the key and the redacted header leaves both readable.
        cat.update_provider(
            db,
            record.id,
            provider(
                name="Renamed", api_key=None, headers={"x-route": "r2", "Authorization": None}
            ),
        )
        connection = cat.provider_connection(db, record.id)
        assert connection is not None and connection.headers == {
            "x-route": "r2",
            "Authorization": HEADER,
        }
        assert connection.api_key == KEY
        (listed,) = cat.list_providers(db)
        assert listed.unreadable == {} and "unreadable" not in msgspec.json.encode(listed).decode()
    finally:
        store.close()
    reopened = connect_store(db_url, key)
    try:
        search = cat.web_search_config(reopened.database)
        assert search is not None and search.api_key == SEARCH_KEY
    finally:
        reopened.close()


def test_plaintext_an_older_version_stored_is_sealed_at_startup(db_url: str) -> None:
    """Seeded the way a version before sealing wrote rows: plain columns, plain settings."""
    first = connect_store(db_url)
    db = first.database
    p = db.param
    execute_sql(
        db,
        "INSERT INTO providers (name, type, base_url, api_key, headers_json, replay_reasoning, "
        f"created_at_ms, updated_at_ms) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, 0, 0)",
        (
            "Old",
            "openai-chat",
            "https://old.example/v1",
            KEY,
            msgspec.json.encode({"x-route": "r1", "X-Api-Key": HEADER}).decode(),
            True,
        ),
    )
    search = msgspec.json.encode({"backend": "brave", "url": "", "api_key": SEARCH_KEY}).decode()
    execute_sql(
        db,
        f'INSERT INTO settings ("key", value_json, updated_at_ms) VALUES ({p}, {p}, 0)',
        ("web_search", search),
    )
    first.close()
    key = new_secret_key()
    store = connect_store(db_url, key)
    db = store.database
    try:
        api_key, headers = stored_row(db)
        assert api_key.startswith(SEALED_PREFIX)
        assert headers["X-Api-Key"].startswith(SEALED_PREFIX) and headers["x-route"] == "r1"
        assert stored_search_key(db).startswith(SEALED_PREFIX)
        (record,) = cat.list_providers(db)
        connection = cat.provider_connection(db, record.id)
        assert connection is not None
        assert (connection.api_key, connection.headers["X-Api-Key"]) == (KEY, HEADER)
        config = cat.web_search_config(db)
        assert config is not None and config.api_key == SEARCH_KEY
        assert cat.seal_plaintext_secrets(db) == 0  # re-runnable: nothing left to seal
    finally:
        store.close()


def test_another_key_says_set_it_again_and_setting_it_again_fixes_it(db_url: str) -> None:
    first = connect_store(db_url, new_secret_key())
    record = cat.create_provider(first.database, provider())
    public_id = add_model(first.database, record.id)
    cat.update_web_search(first.database, cat.WebSearchInput(backend="tavily", api_key=SEARCH_KEY))
    first.close()
    store = connect_store(db_url, new_secret_key())  # the key file was lost
    db = store.database
    try:
        (listed,) = cat.list_providers(db)
        assert listed.has_api_key
        assert listed.unreadable == {
            "api_key": "key unreadable, set it again",
            "headers.Authorization": "key unreadable, set it again",
        }
        with pytest.raises(cat.KeyUnreadable) as caught:
            cat.model_route_parts(db, public_id)
        assert caught.value.message.startswith(
            "provider 'Main': key unreadable, set it again in the console (api_key: it was "
            "stored under another secret key"
        )
        assert KEY not in caught.value.message
        shown = cat.get_web_search(db)
        assert shown.key_unreadable == "key unreadable, set it again"
        with pytest.raises(cat.KeyUnreadable, match="the web search backend Tavily: key unread"):
            cat.web_search_config(db)
        # Startup sealing leaves values sealed under another key as they are.
        assert cat.seal_plaintext_secrets(db) == 0
        cat.update_provider(
            db,
            record.id,
            provider(
                api_key="sk-new-key-1",
                headers={"x-route": "r1", "Authorization": "Bearer new-header"},
            ),
        )
        cat.update_web_search(db, cat.WebSearchInput(backend="tavily", api_key="tvly-new"))
        (fixed,) = cat.list_providers(db)
        assert fixed.unreadable == {}
        parts = cat.model_route_parts(db, public_id)
        assert parts is not None and parts[1].api_key == "sk-new-key-1"
        assert cat.get_web_search(db).key_unreadable is None
    finally:
        store.close()


def test_a_value_in_the_stored_form_is_refused_as_input(db_url: str) -> None:
    store = connect_store(db_url)
    try:
        for fields, field in (
            ({"api_key": f"{SEALED_PREFIX}x"}, "api_key"),
            ({"headers": {"x-token": f"{SEALED_PREFIX}x"}}, "headers.x-token"),
        ):
            with pytest.raises(cat.Invalid) as caught:
                cat.create_provider(store.database, provider(**fields))
            assert caught.value.field == field
    finally:
        store.close()


def test_stores_opened_without_a_key_share_the_processs_key(db_url: str) -> None:
    """Tests reopen a store within one process (a restart in-process): without a key given
    both use the process's own, so the provider's key still opens."""
    first = connect_store(db_url)
    record = cat.create_provider(first.database, provider())
    first.close()
    second = connect_store(db_url)
    try:
        connection = cat.provider_connection(second.database, record.id)
        assert connection is not None and connection.api_key == KEY
    finally:
        second.close()
