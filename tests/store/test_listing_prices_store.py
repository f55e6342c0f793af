"""Prices from a provider's own listing, on SQLite and PostgreSQL: a new model its listing
priced gets those prices marked ``provider`` (over the price list's), never over a price the
user set, kept by an unchanged save, and only from a listing of the provider's base URL now;
and the price list's lookup of a router's ``maker/name`` id by its name."""

from __future__ import annotations

import peewee
import pytest

from store import Store
from store import catalog as cat

BASE_URL = "https://router.test/api/v1"
LISTING = cat.ListingPrices(
    BASE_URL,
    {
        "openai/gpt-4o": cat.Prices(2.0, 9.0, None, None),
        "vendor/house-model": cat.Prices(0.5, 1.5, 0.05, None),
    },
)


def provider(db: peewee.Database, base_url: str = BASE_URL) -> int:
    return cat.create_provider(
        db, cat.ProviderInput(name="Router", type="openai-chat", base_url=base_url)
    ).id


def save(
    db: peewee.Database,
    pid: int,
    listing: cat.ListingPrices | None = LISTING,
    **fields: object,
) -> cat.ModelRecord:
    fields.setdefault("display_name", str(fields["model_id"]))
    (saved,) = cat.save_models(db, pid, [cat.ModelInput(**fields)], listing=listing)  # type: ignore[arg-type]
    return saved


def priced(record: cat.ModelRecord) -> tuple[object, ...]:
    return (
        record.price_source,
        record.price_list_as_of,
        *(getattr(record, field) for field in cat.PRICE_FIELDS),
    )


def test_a_new_model_gets_its_listings_prices_over_the_lists(opened: Store) -> None:
    db = opened.database
    pid = provider(db)
    assert priced(save(db, pid, model_id="openai/gpt-4o")) == (
        "provider",
        None,
        2.0,
        9.0,
        None,
        None,
    )
    house = save(db, pid, model_id="vendor/house-model")
    assert priced(house) == ("provider", None, 0.5, 1.5, 0.05, None)
    # Read back by the store's own reader, with its source.
    (read,) = [m for m in cat.all_models(db) if m.model_id == "vendor/house-model"]
    assert read.price_source == cat.FROM_PROVIDER
    # Saved back unchanged (the editor sends every field): still the listing's.
    fields = {field: getattr(house, field) for field in cat.PRICE_FIELDS}
    again = save(db, pid, None, model_id="vendor/house-model", **fields)
    assert priced(again) == priced(house)
    # A price changed is the user's, and a later listing never replaces it.
    mine = save(
        db, pid, None, model_id="vendor/house-model", **{**fields, "price_input_per_mtok": 0.4}
    )
    assert priced(mine) == ("user", None, 0.4, 1.5, 0.05, None)
    assert priced(save(db, pid, model_id="vendor/house-model")) == priced(mine)


def test_a_listing_of_another_base_url_is_not_used(opened: Store) -> None:
    db = opened.database
    pid = provider(db, "https://elsewhere.test/v1")
    # The list's gpt-4o prices, by the name, marked with the list's date.
    saved = save(db, pid, model_id="openai/gpt-4o")
    listed = cat.listed_prices("gpt-4o")
    assert listed is not None
    assert priced(saved) == (
        "list",
        cat.price_list().as_of,
        *(getattr(listed, field) for field in cat.PRICE_FIELDS),
    )
    assert priced(save(db, pid, model_id="vendor/house-model"))[:3] == (None, None, None)


@pytest.mark.parametrize(
    ("model_id", "as_listed"),
    [
        ("openai/gpt-4o", "gpt-4o"),
        ("OpenAI/gpt-4.1-mini", "gpt-4.1-mini"),
        ("openai/o3", "o3"),
        ("google/gemini-2.5-pro", "gemini-2.5-pro"),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
        # The router's spelling of Anthropic's names: dots as hyphens, the latest snapshot.
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("anthropic/claude-sonnet-4", "claude-sonnet-4-0"),
        ("anthropic/claude-3.7-sonnet", "claude-3-7-sonnet-latest"),
        # Another maker's name, an unknown maker, a variant, a deeper path: not the list's.
        ("openai/claude-sonnet-4-5", None),
        ("anthropic/gpt-4o", None),
        ("acme/gpt-4o", None),
        ("openai/gpt-4o:free", None),
        ("openrouter/openai/gpt-4o", None),
        ("openai/", None),
        ("/gpt-4o", None),
    ],
)
def test_a_router_id_is_looked_up_by_its_name_for_the_same_maker(
    model_id: str, as_listed: str | None
) -> None:
    expected = None if as_listed is None else cat.price_list().models[as_listed]
    assert cat.listed_prices(model_id) == expected


def test_every_listed_model_belongs_to_exactly_one_maker() -> None:
    listed = cat.price_list()
    for model_id in listed.models:
        makers = [m for m, starts in listed.makers.items() if model_id.startswith(starts)]
        assert len(makers) == 1, (model_id, makers)
