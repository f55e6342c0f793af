"""A model's fallback list in the store: saved in order and checked (not itself, existing
models, none twice, at most ``MAX_FALLBACKS``, the field named), kept by an upsert that leaves
it out, and cleaned of a deleted model (or a deleted provider's models) in the same
transaction; a check-only save that runs these rules and the others, then writes nothing; on
SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import peewee
import pytest

from store import Store, connect_store
from store import catalog as cat
from store.migrations.later import model_fallbacks


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[peewee.Database]:
    url = (
        request.getfixturevalue("pg_url")
        if request.param == "postgres"
        else f"sqlite:///{tmp_path}/fallbacks.db"
    )
    store: Store = connect_store(url)
    yield store.database
    store.close()


def provider(db: peewee.Database, name: str) -> int:
    return cat.create_provider(
        db,
        cat.ProviderInput(
            name=name, type="openai-chat", base_url=f"https://{name}.example.com/v1", api_key="k"
        ),
    ).id


def models(db: peewee.Database, provider_id: int, *names: str) -> list[str]:
    inputs = [cat.ModelInput(model_id=n, display_name=n) for n in names]
    return [m.public_id for m in cat.save_models(db, provider_id, inputs)]


def fallbacks_of(db: peewee.Database) -> dict[str, tuple[str, ...]]:
    return {m.model_id: m.fallbacks for m in cat.all_models(db)}


def test_a_list_is_saved_in_order_read_back_and_kept_by_an_upsert_without_it(
    db: peewee.Database,
) -> None:
    first = provider(db, "one")
    a, b = models(db, first, "a", "b")
    (c,) = models(db, provider(db, "two"), "c")
    saved = cat.save_models(db, first, [cat.ModelInput("a", "A", fallbacks=[c.upper(), b])])
    assert saved[0].fallbacks == (c, b)  # public ids are lower-case hex
    assert fallbacks_of(db)["a"] == (c, b)
    record, _connection = cat.model_route_parts(db, a) or (None, None)
    assert record is not None and record.fallbacks == (c, b)
    cat.save_models(db, first, [cat.ModelInput("a", "A renamed")])
    assert fallbacks_of(db)["a"] == (c, b)
    cat.save_models(db, first, [cat.ModelInput("a", "A", fallbacks=[])])
    assert fallbacks_of(db)["a"] == ()


def test_a_list_may_name_a_model_saved_in_the_same_request(db: peewee.Database) -> None:
    first = provider(db, "one")
    (b,) = models(db, first, "b")
    saved = cat.save_models(
        db, first, [cat.ModelInput("a", "A", fallbacks=[b]), cat.ModelInput("c", "C")]
    )
    assert saved[0].fallbacks == (b,)


@pytest.mark.parametrize(
    ("entries", "field", "says"),
    [
        (lambda a, b: [a], "models[0].fallbacks[0]", "its own fallback"),
        (lambda a, b: [b, b], "models[0].fallbacks[1]", "given twice"),
        (lambda a, b: ["0badc0de"], "models[0].fallbacks[0]", "no model has"),
        (lambda a, b: ["x" * 500], "models[0].fallbacks[0]", "8 hex digits"),
        (lambda a, b: [b] * (cat.MAX_FALLBACKS + 1), "models[0].fallbacks", "at most 5"),
    ],
    ids=["itself", "twice", "unknown", "not-an-id", "too-many"],
)
def test_a_bad_list_is_refused_naming_its_field_and_nothing_is_saved(
    db: peewee.Database, entries: object, field: str, says: str
) -> None:
    first = provider(db, "one")
    a, b = models(db, first, "a", "b")
    cat.save_models(db, first, [cat.ModelInput("a", "A", fallbacks=[b])])
    assert callable(entries)
    with pytest.raises(cat.Invalid) as refused:
        cat.save_models(db, first, [cat.ModelInput("a", "Renamed", fallbacks=entries(a, b))])
    assert refused.value.field == field and says in refused.value.message
    assert "x" * 50 not in refused.value.message  # the value is never echoed at length
    assert {m.model_id: (m.display_name, m.fallbacks) for m in cat.all_models(db)}["a"] == (
        "A",
        (b,),
    )


def test_deleting_a_model_takes_it_out_of_every_list(db: peewee.Database) -> None:
    first = provider(db, "one")
    _a, b, c = models(db, first, "a", "b", "c")
    cat.save_models(
        db,
        first,
        [cat.ModelInput("a", "a", fallbacks=[b, c]), cat.ModelInput("c", "c", fallbacks=[b])],
    )
    cat.delete_model(db, b)
    assert fallbacks_of(db) == {"a": (c,), "c": ()}


def test_deleting_a_provider_takes_its_models_out_of_every_list(db: peewee.Database) -> None:
    first, second = provider(db, "one"), provider(db, "two")
    (_a,) = models(db, first, "a")
    b, c = models(db, second, "b", "c")
    cat.save_models(db, first, [cat.ModelInput("a", "a", fallbacks=[b, c])])
    cat.delete_provider(db, second)
    assert fallbacks_of(db) == {"a": ()}


def test_a_failed_delete_leaves_every_list_as_it_was(db: peewee.Database) -> None:
    first = provider(db, "one")
    _a, b = models(db, first, "a", "b")
    cat.save_models(db, first, [cat.ModelInput("a", "a", fallbacks=[b])])

    class Boom(Exception):
        pass

    with pytest.raises(Boom), db.atomic():
        cat.delete_model(db, b)
        raise Boom
    assert fallbacks_of(db) == {"a": (b,), "b": ()}


def test_the_migration_runs_again_without_harm(db: peewee.Database) -> None:
    first = provider(db, "one")
    _a, b = models(db, first, "a", "b")
    cat.save_models(db, first, [cat.ModelInput("a", "a", fallbacks=[b])])
    model_fallbacks(db)
    assert fallbacks_of(db)["a"] == (b,)


def test_a_check_only_save_answers_what_it_would_save_or_refuse_and_writes_nothing(
    db: peewee.Database,
) -> None:
    """The console's ``?check=1``: the save's rules, the store's included, then a rollback."""
    first = provider(db, "one")
    (a,) = models(db, first, "a")
    before = cat.all_models(db)
    # A new model falling back to one saved in the same request, and an edit: the would-be records.
    body = [cat.ModelInput("a", "A renamed"), cat.ModelInput("b", "B", fallbacks=[a])]
    answered = cat.save_models(db, first, body, check_only=True)
    assert [(m.model_id, m.display_name, m.fallbacks) for m in answered] == [
        ("a", "A renamed", ()),
        ("b", "B", (a,)),
    ]
    assert cat.all_models(db) == before
    # Refused as the save is: the fields' problems, then the fallbacks' (after the upserts).
    with pytest.raises(cat.Invalid) as refused:
        cat.save_models(db, first, [cat.ModelInput("a", " ", sort_order=2**31)], check_only=True)
    assert [field for field, _ in refused.value.problems] == [
        "models[0].display_name",
        "models[0].sort_order",
    ]
    with pytest.raises(cat.Invalid) as refused:
        cat.save_models(db, first, [cat.ModelInput("c", "C", fallbacks=["nope"])], check_only=True)
    assert [field for field, _ in refused.value.problems] == ["models[0].fallbacks[0]"]
    assert cat.all_models(db) == before
    # And the database is still usable for a real save afterwards.
    cat.save_models(db, first, [cat.ModelInput("b", "B")])
    assert sorted(m.model_id for m in cat.all_models(db)) == ["a", "b"]
