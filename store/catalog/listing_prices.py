"""The prices each provider's last model discovery read from its own listing, kept in the
database (the ``listing_prices`` table, one row per provider) for the add that follows:
the server re-reads what it heard from the provider instead of trusting prices a browser sends
back, and every instance and worker process sees what any of them heard.

A discovery replaces its provider's row (one that found no listing prices deletes it); a save
reads it inside its own transaction and uses it only while it is younger than
``LISTING_PRICES_TTL_S`` and the provider's base URL is still the one it was read from. The
row goes with its provider (a reused id never inherits it).
"""

from __future__ import annotations

import msgspec
import peewee

from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql
from store.catalog.errors import NotFound
from store.catalog.price_list import ListingPrices, Prices
from store.catalog.tables import lock_row, tables_of

# How long a discovery's listing prices stay usable for adding its models.
LISTING_PRICES_TTL_S = 3600.0
_TTL_MS = int(LISTING_PRICES_TTL_S * 1000)

_PRICES = msgspec.json.Decoder(dict[str, Prices])


def keep_listing(
    db: peewee.Database, provider_id: int, listing: ListingPrices, *, read_at_ms: int | None = None
) -> None:
    """Replace the provider's listing prices with a discovery's (read at ``read_at_ms``, now
    by default); a listing that priced nothing deletes the older ones. ``NotFound`` when the
    provider was deleted meanwhile."""
    read_at = now_ms() if read_at_ms is None else read_at_ms
    provider = tables_of(db).provider
    query = provider.select(provider.id).where(provider.id == provider_id)
    with db.atomic():
        # Locked: a provider deleted meanwhile is NotFound, never a foreign key error.
        if lock_row(query, db).first() is None:
            raise NotFound(f"provider {provider_id} not found")
        forget_listing(db, provider_id)
        if listing.models:
            execute_sql(
                db,
                'INSERT INTO "listing_prices" ("provider_id", "base_url", "read_at_ms", '
                f'"prices_json") VALUES ({", ".join([db.param] * 4)})',
                (
                    provider_id,
                    listing.base_url,
                    read_at,
                    msgspec.json.encode(listing.models).decode(),
                ),
            )


def fresh_listing(
    db: peewee.Database, provider_id: int, base_url: str, *, at_ms: int | None = None
) -> dict[str, Prices]:
    """The provider's listing prices by model id, if they were read from ``base_url`` (the
    provider's now) less than ``LISTING_PRICES_TTL_S`` before ``at_ms`` (now by default);
    else none."""
    at = now_ms() if at_ms is None else at_ms
    row = execute_sql(
        db,
        'SELECT "base_url", "read_at_ms", "prices_json" FROM "listing_prices" '
        f'WHERE "provider_id" = {db.param}',
        (provider_id,),
    ).fetchone()
    if row is None:
        return {}
    read_from, read_at, prices_json = row
    # A reading stamped later than ``at`` (another instance's clock a little ahead) is fresh.
    if read_from != base_url or at - int(read_at) >= _TTL_MS:
        return {}
    return _PRICES.decode(prices_json)


def forget_listing(db: peewee.Database, provider_id: int) -> None:
    """Delete the provider's listing prices: a discovery replacing them, or the provider's
    deletion (said there as for its other rows, beside the foreign key's cascade)."""
    execute_sql(
        db, f'DELETE FROM "listing_prices" WHERE "provider_id" = {db.param}', (provider_id,)
    )
