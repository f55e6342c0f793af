"""The catalog store: URL normalisation, public model ids, and the typed provider/model/settings
functions other modules code against (SQLite file, and PostgreSQL when configured)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import peewee
import pytest

from actors.conversation.request import ProviderType
from store import Store, apply_migrations, connect_store, open_database
from store import catalog as cat
from store.base.typed_peewee import execute_sql
from store.catalog.tables import tables_of
from store.catalog.urls import InvalidBaseUrl, InvalidModelId, normalize_base_url, public_model_id
from store.migrations import latest_version, provider_replay_reasoning, registered_migrations
from wire.providers.formats import ADAPTERS

# --- pure functions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("HTTPS://Example.COM:443/v1/", "https://example.com/v1"),
        ("HTTPS://Example.COM/v1/", "https://example.com/v1"),
        ("http://h:80", "http://h"),
        ("http://h:80/", "http://h"),
        ("https://h:80/v1", "https://h:80/v1"),
        ("http://h:443", "http://h:443"),
        ("  https://api.openai.com/v1  ", "https://api.openai.com/v1"),
        ("https://h/v1///", "https://h/v1"),
        ("https://h/a/./b/../v1/", "https://h/a/v1"),
        ("https://h/", "https://h"),
        ("https://h:/v1", "https://h/v1"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
        ("http://[0:0:0:0:0:0:0:1]:8080/v1", "http://[::1]:8080/v1"),
        ("https://h/caf\u00e9", "https://h/caf%C3%A9"),
        ("https://h/a%20b", "https://h/a%20b"),
    ],
)
def test_base_url_normalisation(raw: str, normalized: str) -> None:
    assert normalize_base_url(raw) == normalized
    assert normalize_base_url(normalized) == normalized  # idempotent


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("https://h/v1?", "query or fragment"),
        ("https://h/v1#", "query or fragment"),
        ("https://h/v1?a=1", "query or fragment"),
        ("https://h/v1#frag", "query or fragment"),
        ("ftp://h/v1", "http:// or https://"),
        ("h/v1", "http:// or https://"),
        ("https:/h/v1", "http:// or https://"),
        ("https:h", "http:// or https://"),
        ("", "empty"),
        ("   ", "empty"),
        ("https://", "no host"),
        ("https://:443/v1", "no host"),
        ("https://user:pw@h/v1", "user name or password"),
        ("https://h:99999/v1", "invalid port"),
        ("https://h:x/v1", "invalid port"),
        ("https://h/a b", "spaces"),
        ("https://h\\v1", "spaces, control characters or \\"),
        ("https://ex ample.com", "spaces"),
        ("https://b\u00fccher.de/v1", "invalid host"),
        ("https://[::1/v1", "cannot be parsed"),
        ("https://[nonsense]/v1", "cannot be parsed"),
        ("https://[::1]x/v1", "invalid IPv6"),
    ],
)
def test_bad_base_urls_are_refused(raw: str, reason: str) -> None:
    with pytest.raises(InvalidBaseUrl) as info:
        normalize_base_url(raw)
    assert reason in str(info.value)
    assert "pw" not in str(info.value)


def test_public_model_id_vector() -> None:
    assert public_model_id("HTTPS://Example.COM/v1/", "openai-chat", "model-a") == "f246010a"
    assert public_model_id("https://example.com/v1", "openai-chat", "  model-a ") == "f246010a"
    assert public_model_id("https://example.com/v1", "anthropic", "model-a") == "34e3fa65"
    expected = hashlib.sha256(b"https://example.com/v1\0openai-responses\0m").digest()[:4].hex()
    assert public_model_id("https://example.com/v1/", "openai-responses", "m") == expected
    with pytest.raises(InvalidModelId):
        public_model_id("https://example.com/v1", "openai-chat", "  ")


def test_every_provider_type_has_an_adapter_and_is_one_the_store_takes() -> None:
    assert set(ADAPTERS) == set(ProviderType)
    assert tuple(kind.value for kind in ProviderType) == cat.PROVIDER_TYPES


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("Authorization", True),
        ("proxy-authorization", True),
        ("X-API-Key", True),
        ("api-key", True),
        ("Cookie", True),
        ("set-cookie", True),
        ("x-goog-api-key", True),
        ("X-Auth-Token", True),
        ("x-client-secret", True),
        ("x-db-password", True),
        ("x-route", False),
        ("OpenAI-Organization", False),
        ("anthropic-beta", False),
    ],
)
def test_secret_header_names(name: str, secret: bool) -> None:
    assert cat.is_secret_header(name) is secret


def test_iso_utc_has_one_shape() -> None:
    assert cat.iso_utc(0) == "1970-01-01T00:00:00.000Z"
    assert cat.iso_utc(1_700_000_000_123) == "2023-11-14T22:13:20.123Z"


def test_connection_repr_hides_the_key_and_header_values() -> None:
    connection = cat.ProviderConnection(
        provider_id=1,
        name="p",
        type="anthropic",
        base_url="https://h",
        api_key="sk-hidden-1",
        headers={"x-api-key": "hidden-2"},
    )
    assert "hidden" not in repr(connection)
    assert "hidden" not in str(connection)


# --- store functions ---------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[peewee.Database]:
    """A migrated database: a SQLite file, and PostgreSQL when configured."""
    url = (
        request.getfixturevalue("pg_url")
        if request.param == "postgres"
        else f"sqlite:///{tmp_path}/catalog.db"
    )
    store: Store = connect_store(url)
    yield store.database
    store.close()


def provider_input(**fields: object) -> cat.ProviderInput:
    values: dict[str, Any] = {
        "name": "Main",
        "type": "openai-chat",
        "base_url": "HTTPS://Example.COM/v1/",
        "api_key": "sk-store-secret",
        "headers": {"x-route": "r1", "Authorization": "Bearer header-secret"},
        "public_headers": ["x-route"],
    }
    if "headers" in fields:  # other headers: none of them public unless the test says
        values.pop("public_headers")
    values.update(fields)
    return cat.ProviderInput(**values)


def model(model_id: str, **fields: object) -> cat.ModelInput:
    values: dict[str, Any] = {"model_id": model_id, "display_name": model_id.upper()}
    values.update(fields)
    return cat.ModelInput(**values)


def model_rows(db: peewee.Database) -> list[tuple[str, str]]:
    cursor = execute_sql(db, 'SELECT public_id, model_id FROM "models" ORDER BY public_id')
    return [tuple(row) for row in cursor.fetchall()]


def test_provider_record_hides_secrets_and_connection_has_them(db: peewee.Database) -> None:
    record = cat.create_provider(db, provider_input())
    assert record.base_url == "https://example.com/v1"
    assert record.has_api_key is True
    assert record.headers == {"x-route": "r1", "Authorization": None}
    assert record.created_at == record.updated_at
    assert record.created_at.endswith("Z")
    assert b"secret" not in msgspec.json.encode(cat.list_providers(db))
    connection = cat.provider_connection(db, record.id)
    assert connection is not None
    assert connection.api_key == "sk-store-secret"
    assert connection.headers == {"x-route": "r1", "Authorization": "Bearer header-secret"}
    assert cat.provider_connection(db, record.id + 1) is None


def test_update_keeps_key_and_null_headers_and_clears_on_empty(db: peewee.Database) -> None:
    created = cat.create_provider(db, provider_input())
    updated = cat.update_provider(
        db,
        created.id,
        provider_input(
            name=" Renamed ", api_key=None, headers={"authorization": None, "x-new": "n"}
        ),
    )
    assert updated.name == "Renamed"
    # Not marked public: sealed like the key, so it is answered as null.
    assert updated.headers == {"authorization": None, "x-new": None}
    assert updated.public_headers == []
    connection = cat.provider_connection(db, created.id)
    assert connection is not None
    assert connection.api_key == "sk-store-secret"
    assert connection.headers == {"authorization": "Bearer header-secret", "x-new": "n"}
    # headers left out: all kept; "" clears the key.
    cat.update_provider(db, created.id, provider_input(api_key="", headers=None))
    connection = cat.provider_connection(db, created.id)
    assert connection is not None
    assert connection.api_key == ""
    assert connection.headers == {"authorization": "Bearer header-secret", "x-new": "n"}
    with pytest.raises(cat.Invalid, match=r"headers\.x-other"):
        cat.update_provider(db, created.id, provider_input(headers={"x-other": None}))
    with pytest.raises(cat.NotFound):
        cat.update_provider(db, created.id + 1, provider_input())


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": "  "}, "name"),
        ({"type": "openai"}, "type"),
        ({"base_url": "https://h/v1?"}, "base_url"),
        ({"api_key": "sk with space"}, "api_key"),
        ({"headers": {"bad name": "v"}}, "headers.bad name"),
        ({"headers": {"x-a": "line\nbreak"}}, "headers.x-a"),
        ({"headers": {"Host": "h"}}, "headers.Host"),
        ({"headers": {"x-a": "1", "X-A": "2"}}, "headers.X-A"),
        ({"headers": {"x-a": None}}, "headers.x-a"),
    ],
)
def test_provider_validation(db: peewee.Database, fields: dict[str, object], field: str) -> None:
    with pytest.raises(cat.Invalid) as info:
        cat.create_provider(db, provider_input(**fields))
    assert info.value.field == field
    for value in ("sk with space", "line\nbreak"):  # values are never echoed
        assert value not in info.value.message
    assert cat.list_providers(db) == []


def test_models_upsert_order_and_route_parts(db: peewee.Database) -> None:
    provider = cat.create_provider(db, provider_input())
    assert cat.save_models(db, provider.id, []) == []  # an empty batch saves and reads nothing
    saved = cat.save_models(
        db,
        provider.id,
        [
            model("model-a", display_name="Zeta", sort_order=1),
            model("model-b", display_name="Alpha", sort_order=1, enabled=False),
            model(" model-c ", display_name=" Omega ", sort_order=0, max_output_tokens=100),
        ],
    )
    assert [m.model_id for m in saved] == ["model-a", "model-b", "model-c"]
    assert saved[0].public_id == "f246010a"
    assert saved[2].display_name == "Omega"
    assert [m.model_id for m in cat.all_models(db)] == ["model-c", "model-b", "model-a"]
    assert [m.model_id for m in cat.enabled_models(db)] == ["model-c", "model-a"]
    again = cat.save_models(db, provider.id, [model("model-a", display_name="Renamed")])
    assert again[0].public_id == "f246010a"
    assert len(cat.all_models(db)) == 3
    parts = cat.model_route_parts(db, "f246010a")
    assert parts is not None
    record, connection = parts
    assert record.display_name == "Renamed"
    assert record.provider_name == "Main"
    assert record.provider_type == "openai-chat"
    assert connection.api_key == "sk-store-secret"
    assert connection.base_url == "https://example.com/v1"
    disabled = cat.model_route_parts(db, saved[1].public_id)
    assert disabled is not None and disabled[0].enabled is False
    assert cat.model_route_parts(db, "00000000") is None
    # The route's hand-written query reads every model field as the listings do, and the
    # provider's connection as the provider API stores it.
    for listed in cat.all_models(db):
        routed = cat.model_route_parts(db, listed.public_id)
        assert routed is not None
        assert routed[0] == listed
        assert routed[1] == cat.provider_connection(db, listed.provider_id)


def test_a_failing_batch_saves_nothing(db: peewee.Database) -> None:
    provider = cat.create_provider(db, provider_input(type="anthropic"))
    with pytest.raises(cat.Invalid) as info:
        cat.save_models(
            db, provider.id, [model("ok", max_output_tokens=10), model("no-limit", enabled=True)]
        )
    assert info.value.field == "models[1].max_output_tokens"
    assert model_rows(db) == []
    # A collision found in the middle of the batch rolls back the models before it.
    taken = public_model_id(provider.base_url, provider.type, "taken")
    execute_sql(
        db,
        'INSERT INTO "models" (public_id, provider_id, model_id, display_name, enabled, '
        "sort_order, reasoning_enabled, created_at_ms, updated_at_ms) "
        "VALUES (%s, %s, 'squatter', 'S', %s, 0, %s, 0, 0)".replace("%s", db.param),
        (taken, provider.id, False, False),
    )
    with pytest.raises(cat.Conflict) as conflict:
        cat.save_models(
            db, provider.id, [model("first", max_output_tokens=5), model("taken", enabled=False)]
        )
    assert conflict.value.code == "already_exists"
    assert model_rows(db) == [(taken, "squatter")]


def test_same_url_type_and_model_under_two_providers_collide(db: peewee.Database) -> None:
    first = cat.create_provider(db, provider_input())
    second = cat.create_provider(db, provider_input(base_url="https://example.com/v1"))
    cat.save_models(db, first.id, [model("model-a")])
    with pytest.raises(cat.Conflict, match="f246010a"):
        cat.save_models(db, second.id, [model("model-a")])


def test_identity_is_locked_while_models_exist(db: peewee.Database) -> None:
    provider = cat.create_provider(db, provider_input())
    cat.save_models(db, provider.id, [model("m")])
    for change in ({"type": "openai-responses"}, {"base_url": "https://other.example/v1"}):
        with pytest.raises(cat.Conflict):
            cat.update_provider(db, provider.id, provider_input(**change))
    same = cat.update_provider(db, provider.id, provider_input(base_url="https://EXAMPLE.com/v1"))
    assert same.base_url == "https://example.com/v1"
    cat.delete_model(db, public_model_id(provider.base_url, provider.type, "m"))
    moved = cat.update_provider(db, provider.id, provider_input(type="anthropic"))
    assert moved.type == "anthropic"


def test_delete_provider_removes_models_and_keeps_calls(db: peewee.Database) -> None:
    provider = cat.create_provider(db, provider_input())
    cat.save_models(db, provider.id, [model("m")])
    execute_sql(
        db,
        'INSERT INTO "llm_calls" (model_call_id, provider_id, provider_name, provider_type, '
        'provider_url, public_id, model_id, display_name, status, started_at_ms, "verbose", '
        "response_bytes) VALUES ('c1', %s, 'Main', 'openai-chat', 'https://example.com/v1', "
        "'x', 'm', 'M', 'completed', 0, %s, 0)".replace("%s", db.param),
        (provider.id, False),
    )
    cat.delete_provider(db, provider.id)
    assert model_rows(db) == []
    assert cat.list_providers(db) == []
    rows = execute_sql(db, 'SELECT provider_id, model_id FROM "llm_calls"').fetchall()
    assert [tuple(r) for r in rows] == [(provider.id, "m")]
    with pytest.raises(cat.NotFound):
        cat.delete_provider(db, provider.id)
    with pytest.raises(cat.NotFound):
        cat.delete_model(db, "f246010a")


def test_prices_are_stored_and_reach_the_route_and_non_finite_ones_are_refused(
    db: peewee.Database,
) -> None:
    provider = cat.create_provider(db, provider_input())
    prices = {"price_input_per_mtok": 1.25, "price_cache_write_per_mtok": 0.0}
    (saved,) = cat.save_models(db, provider.id, [model("m", **prices)])
    parts = cat.model_route_parts(db, saved.public_id)
    assert parts is not None and parts[0] == saved
    assert [getattr(saved, field) for field in cat.PRICE_FIELDS] == [1.25, None, None, 0.0]
    for bad in (float("nan"), float("inf"), -1.0, True):
        with pytest.raises(cat.Invalid, match=r"models\[1\]\.price_output_per_mtok"):
            cat.save_models(db, provider.id, [model("n"), model("m", price_output_per_mtok=bad)])
    assert [m.model_id for m in cat.all_models(db)] == ["m"]
    assert cat.all_models(db)[0].price_input_per_mtok == 1.25


def test_observability_defaults_and_partial_updates(db: peewee.Database) -> None:
    assert cat.get_observability(db) == cat.ObservabilitySettings(False, 10000)
    assert cat.update_observability(db, verbose=True) == cat.ObservabilitySettings(True, 10000)
    assert cat.update_observability(db, retained_calls=7) == cat.ObservabilitySettings(True, 7)
    assert cat.get_observability(db) == cat.ObservabilitySettings(True, 7)
    for bad in (0, -1, True, 1.5):
        with pytest.raises(cat.Invalid, match="retained_calls"):
            cat.update_observability(db, retained_calls=bad)  # type: ignore[arg-type]  # wrong on purpose: refused
    with pytest.raises(cat.Invalid, match="verbose"):
        cat.update_observability(db, verbose=1)  # type: ignore[arg-type]  # wrong on purpose: refused
    assert cat.get_observability(db) == cat.ObservabilitySettings(True, 7)
    per_user = cat.update_observability(db, metrics_per_user=True)
    assert per_user == cat.ObservabilitySettings(True, 7, metrics_per_user=True)
    with pytest.raises(cat.Invalid, match="metrics_per_user"):
        cat.update_observability(db, metrics_per_user="on")  # type: ignore[arg-type]  # wrong on purpose: refused
    assert cat.get_observability(db) == per_user


def test_settings_saved_before_metrics_per_user_read_it_off(db: peewee.Database) -> None:
    """A row written by an older version (no ``metrics_per_user``) keeps its values, off."""
    setting = tables_of(db).setting
    setting.insert(
        key=cat.OBSERVABILITY_KEY,
        value_json='{"verbose":true,"retained_calls":9}',
        updated_at_ms=1,
    ).execute()
    assert cat.get_observability(db) == cat.ObservabilitySettings(True, 9, False)


def test_migration_5_keeps_reasoning_replay_on_for_existing_providers(db_url: str) -> None:
    """A provider saved before ``replay_reasoning`` existed keeps replaying (as it did), a
    second run of the migration changes nothing, and the setting reaches the route."""
    db = open_database(db_url)
    try:
        apply_migrations(db, registered_migrations()[:4])
        p = db.param
        execute_sql(
            db,
            "INSERT INTO providers (name, type, base_url, api_key, headers_json, created_at_ms, "
            f"updated_at_ms) VALUES ({p}, {p}, {p}, {p}, {p}, 0, 0)",
            ("old", "openai-chat", "http://h/v1", "", "{}"),
        )
        assert apply_migrations(db) == list(range(5, latest_version() + 1))
        provider_replay_reasoning(db)  # re-runnable
        (old,) = cat.list_providers(db)
        assert old.replay_reasoning is True
        data = cat.ProviderInput(name="old", type="openai-chat", base_url="http://h/v1")
        cat.update_provider(db, old.id, msgspec.structs.replace(data, replay_reasoning=False))
        cat.save_models(db, old.id, [cat.ModelInput(model_id="m", display_name="M")])
        (model,) = cat.all_models(db)
        parts = cat.model_route_parts(db, model.public_id)
        assert parts is not None and parts[1].replay_reasoning is False
    finally:
        db.close()
