"""The routing settings in the store (``store.catalog.routing``): defaults, validation naming
the field, and what deleting a model does to settings that name it (SQLite, and PostgreSQL
when configured)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import peewee
import pytest

from store import Store, connect_store
from store import catalog as cat
from store.catalog import AutoSetting, RoutingEntry, RoutingSettings


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[peewee.Database]:
    url = (
        request.getfixturevalue("pg_url")
        if request.param == "postgres"
        else f"sqlite:///{tmp_path}/routing.db"
    )
    store: Store = connect_store(url)
    yield store.database
    store.close()


def _models(db: peewee.Database, *names: str, provider: str = "P") -> list[str]:
    created = cat.create_provider(
        db,
        cat.ProviderInput(
            name=provider,
            type="openai-chat",
            base_url=f"https://{provider.lower()}.example.com/v1",
            api_key="sk-x",
        ),
    )
    saved = cat.save_models(
        db, created.id, [cat.ModelInput(model_id=n, display_name=n.upper()) for n in names]
    )
    return [m.public_id for m in saved]


def test_nothing_saved_is_auto_to_the_first_enabled_model_and_no_table(db: peewee.Database) -> None:
    assert cat.get_routing(db) == RoutingSettings(AutoSetting("first-enabled"), ())


def test_a_saved_routing_reads_back_in_order(db: peewee.Database) -> None:
    first, second = _models(db, "m1", "m2")
    routes = [RoutingEntry(" claude-* ", second), RoutingEntry("gpt-5", first)]
    saved = cat.update_routing(db, auto=AutoSetting("model", second), routes=routes)
    assert saved.routes == (RoutingEntry("claude-*", second), RoutingEntry("gpt-5", first))
    assert cat.get_routing(db) == saved
    # Either part alone leaves the other as it was.
    cat.update_routing(db, auto=AutoSetting("cursor"))
    assert cat.get_routing(db).routes == saved.routes
    cat.update_routing(db, routes=[])
    assert cat.get_routing(db) == RoutingSettings(AutoSetting("cursor"), ())


@pytest.mark.parametrize(
    ("auto", "routes", "field", "fragment"),
    [
        (AutoSetting("model", "ffff0000"), None, "auto.public_id", "there is no model ffff0000"),
        (AutoSetting("model"), None, "auto.public_id", "name the model"),
        (AutoSetting("cursor", "{m1}"), None, "auto.public_id", "must be null"),
        (None, [RoutingEntry("x", "ffff0000")], "routes[0].public_id", "no model"),
        (None, [RoutingEntry("  ", "{m1}")], "routes[0].pattern", "must not be empty"),
        (
            None,
            [RoutingEntry("a", "{m1}"), RoutingEntry("a", "{m1}")],
            "routes[1].pattern",
            "already in the table",
        ),
        (None, [RoutingEntry("{m1}", "{m1}")], "routes[0].pattern", "one of your models' ids"),
        (None, [RoutingEntry("Default", "{m1}")], "routes[0].pattern", "Cursor's Auto"),
        (None, [RoutingEntry("auto", "{m1}")], "routes[0].pattern", "Cursor's Auto"),
        (None, [RoutingEntry("gpt-5/high", "{m1}")], "routes[0].pattern", "must not contain"),
        (None, [RoutingEntry("x" * 201, "{m1}")], "routes[0].pattern", "longer than 200"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(
    db: peewee.Database,
    auto: AutoSetting | None,
    routes: list[RoutingEntry] | None,
    field: str,
    fragment: str,
) -> None:
    (m1,) = _models(db, "m1")
    if auto is not None and auto.public_id == "{m1}":
        auto = AutoSetting(auto.kind, m1)
    routes = (
        None
        if routes is None
        else [
            RoutingEntry(
                r.pattern.replace("{m1}", m1), m1 if r.public_id == "{m1}" else r.public_id
            )
            for r in routes
        ]
    )
    with pytest.raises(cat.Invalid) as refused:
        cat.update_routing(db, auto=auto, routes=routes)
    assert refused.value.field == field
    assert fragment in refused.value.message
    assert cat.get_routing(db) == RoutingSettings()  # nothing of it was kept


def test_the_table_has_a_size_limit(db: peewee.Database) -> None:
    (m1,) = _models(db, "m1")
    full = [RoutingEntry(f"id-{i}", m1) for i in range(cat.MAX_ROUTES)]
    assert len(cat.update_routing(db, routes=full).routes) == cat.MAX_ROUTES
    with pytest.raises(cat.Invalid) as refused:
        cat.update_routing(db, routes=[*full, RoutingEntry("one-more", m1)])
    assert refused.value.field == "routes"
    assert len(cat.get_routing(db).routes) == cat.MAX_ROUTES


def test_deleting_a_model_forgets_the_settings_that_name_it(db: peewee.Database) -> None:
    first, second = _models(db, "m1", "m2")
    (other,) = _models(db, "o1", provider="Q")
    cat.update_routing(
        db,
        auto=AutoSetting("model", second),
        routes=[
            RoutingEntry("a", second),
            RoutingEntry("b", first),
            RoutingEntry("c*", second),
            RoutingEntry("d", other),
        ],
    )
    cat.delete_model(db, second)
    assert cat.get_routing(db) == RoutingSettings(
        AutoSetting("first-enabled"), (RoutingEntry("b", first), RoutingEntry("d", other))
    )
    # A provider's delete takes its models' entries with it; an Auto naming another stays.
    cat.update_routing(db, auto=AutoSetting("model", other))
    provider_id = next(m.provider_id for m in cat.all_models(db) if m.public_id == first)
    cat.delete_provider(db, provider_id)
    assert cat.get_routing(db) == RoutingSettings(
        AutoSetting("model", other), (RoutingEntry("d", other),)
    )


def test_model_ids_are_every_model_in_catalog_order(db: peewee.Database) -> None:
    first, second = _models(db, "m1", "m2")
    provider_id = cat.all_models(db)[0].provider_id
    cat.save_models(
        db,
        provider_id,
        [cat.ModelInput(model_id="m1", display_name="M1", enabled=False, sort_order=5)],
    )
    assert cat.model_ids(db) == [(second, True), (first, False)]
