"""Prices from a provider's own listing, on SQLite and PostgreSQL: a new model its listing
priced gets those prices marked ``provider`` (over the price list's), never over a price the
user set, kept by an unchanged save, and only from a listing of the provider's base URL now;
the listing's record (one per provider, in the database): replaced by the next discovery,
cleared by one that priced nothing, used only while younger than its TTL, and deleted with its
provider; and the price list's lookup of a router's ``maker/name`` id by its name."""

from __future__ import annotations

import peewee
import pytest

from store import Store
from store import catalog as cat
from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql

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


def save(db: peewee.Database, pid: int, **fields: object) -> cat.ModelRecord:
    fields.setdefault("display_name", str(fields["model_id"]))
    (saved,) = cat.save_models(db, pid, [cat.ModelInput(**fields)])  # type: ignore[arg-type]
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
    cat.keep_listing(db, pid, LISTING)
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
    again = save(db, pid, model_id="vendor/house-model", **fields)
    assert priced(again) == priced(house)
    # A price changed is the user's, and a later listing never replaces it.
    mine = save(db, pid, model_id="vendor/house-model", **{**fields, "price_input_per_mtok": 0.4})
    assert priced(mine) == ("user", None, 0.4, 1.5, 0.05, None)
    assert priced(save(db, pid, model_id="vendor/house-model")) == priced(mine)


def test_a_listing_of_another_base_url_is_not_used(opened: Store) -> None:
    db = opened.database
    pid = provider(db, "https://elsewhere.test/v1")
    cat.keep_listing(db, pid, LISTING)  # read from BASE_URL, not the provider's
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


def rows(db: peewee.Database, pid: int) -> int:
    sql = f'SELECT COUNT(*) FROM "listing_prices" WHERE "provider_id" = {db.param}'
    return int(execute_sql(db, sql, (pid,)).fetchone()[0])


def test_a_discovery_replaces_its_providers_listing_and_one_without_prices_clears_it(
    opened: Store,
) -> None:
    db = opened.database
    pid, other = provider(db), provider(db)
    cat.keep_listing(db, pid, LISTING)
    cat.keep_listing(db, other, LISTING)
    newer = cat.ListingPrices(BASE_URL, {"vendor/house-model": cat.Prices(0.7, 2.1, None, None)})
    cat.keep_listing(db, pid, newer)
    assert rows(db, pid) == 1
    assert cat.fresh_listing(db, pid, BASE_URL) == newer.models
    # The replaced listing priced gpt-4o; the newer one does not: the price list's.
    assert priced(save(db, pid, model_id="openai/gpt-4o"))[0] == "list"
    assert priced(save(db, pid, model_id="vendor/house-model")) == (
        "provider",
        None,
        0.7,
        2.1,
        None,
        None,
    )
    # A discovery whose listing priced nothing clears the provider's; the other keeps its own.
    cat.keep_listing(db, pid, cat.ListingPrices(BASE_URL, {}))
    assert rows(db, pid) == 0
    assert cat.fresh_listing(db, pid, BASE_URL) == {}
    assert priced(save(db, pid, model_id="vendor/else", display_name="e"))[0] is None
    assert cat.fresh_listing(db, other, BASE_URL) == LISTING.models


def test_a_listing_is_used_only_while_younger_than_its_ttl(opened: Store) -> None:
    db = opened.database
    pid = provider(db)
    ttl_ms = int(cat.LISTING_PRICES_TTL_S * 1000)
    assert ttl_ms == 3_600_000
    cat.keep_listing(db, pid, LISTING, read_at_ms=1_000)
    assert cat.fresh_listing(db, pid, BASE_URL, at_ms=1_000 + ttl_ms - 1) == LISTING.models
    assert cat.fresh_listing(db, pid, BASE_URL, at_ms=1_000 + ttl_ms) == {}
    # Read by an instance whose clock is a little ahead: fresh.
    assert cat.fresh_listing(db, pid, BASE_URL, at_ms=500) == LISTING.models
    # The save reads it with its own clock, now: a reading a minute short of the TTL is used,
    # one the TTL old is not.
    cat.keep_listing(db, pid, LISTING, read_at_ms=now_ms() - ttl_ms + 60_000)
    assert priced(save(db, pid, model_id="vendor/house-model"))[0] == "provider"
    cat.keep_listing(db, pid, LISTING, read_at_ms=now_ms() - ttl_ms)
    assert priced(save(db, pid, model_id="openai/gpt-4o"))[0] == "list"


def test_a_listing_is_used_only_for_the_base_url_it_was_read_from(opened: Store) -> None:
    db = opened.database
    pid = provider(db)
    cat.keep_listing(db, pid, LISTING)
    moved = cat.ProviderInput(name="Router", type="openai-chat", base_url="https://moved.test/v1")
    cat.update_provider(db, pid, moved)
    assert cat.fresh_listing(db, pid, "https://moved.test/v1") == {}
    # Checked only (a provider's URL may change only while it has no models).
    gpt = cat.ModelInput(model_id="openai/gpt-4o", display_name="4o")
    (checked,) = cat.save_models(db, pid, [gpt], check_only=True)
    assert (checked.price_source, cat.all_models(db)) == ("list", [])
    back = cat.ProviderInput(name="Router", type="openai-chat", base_url=BASE_URL)
    cat.update_provider(db, pid, back)
    assert priced(save(db, pid, model_id="vendor/house-model"))[0] == "provider"


def test_a_providers_listing_goes_with_it(opened: Store) -> None:
    db = opened.database
    pid = provider(db)
    cat.keep_listing(db, pid, LISTING)
    cat.delete_provider(db, pid)
    assert rows(db, pid) == 0
    # SQLite may give the next provider the same id: it starts without a listing.
    again = provider(db)
    assert cat.fresh_listing(db, again, BASE_URL) == {}
    assert priced(save(db, again, model_id="vendor/house-model"))[0] is None
    # A discovery that ends after its provider was deleted keeps nothing.
    with pytest.raises(cat.NotFound):
        cat.keep_listing(db, pid + 1000, LISTING)
    assert rows(db, pid + 1000) == 0


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
