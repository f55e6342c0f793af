"""The price list: what well-known models cost, as their makers publish it, shipped as package
data (``price_list.json``) and read here only. A model added without prices gets the list's,
marked ``list`` so the console can say where they came from; a price the user sets is theirs
(``user``) and the list never replaces it."""

from __future__ import annotations

import functools
from importlib import resources

import msgspec

# Where a model's stored prices came from (``ModelRecord.price_source``); None: no prices yet.
FROM_LIST = "list"
FROM_USER = "user"


class Prices(msgspec.Struct, frozen=True):
    """A model's prices in USD per million tokens, one per usage bucket; None is unknown (a
    call that used that bucket has an unknown cost, never a zero one). Its field names are the
    model columns' (``PRICE_FIELDS`` is derived from them)."""

    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    price_cache_read_per_mtok: float | None = None
    price_cache_write_per_mtok: float | None = None


class _ListedPrices(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


class _PriceFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    source: str
    as_of: str
    unit: str
    models: dict[str, _ListedPrices]


class PriceList(msgspec.Struct, frozen=True):
    """The whole list as the console shows it: where it comes from, the day its prices were
    read, and each model id's prices."""

    source: str
    as_of: str
    models: dict[str, Prices]


@functools.cache
def price_list() -> PriceList:
    """The shipped list, read once per process (a broken file fails the first reader loudly:
    it is part of the package, not input)."""
    raw = resources.files("store.catalog").joinpath("price_list.json").read_bytes()
    shipped = msgspec.json.decode(raw, type=_PriceFile)
    return PriceList(
        source=shipped.source,
        as_of=shipped.as_of,
        models={
            model_id: Prices(item.input, item.output, item.cache_read, item.cache_write)
            for model_id, item in shipped.models.items()
        },
    )


def listed_prices(model_id: str) -> Prices | None:
    """The list's prices for a model id as a provider names it (Gemini's ``models/`` prefix
    ignored), or None for a model the list does not know."""
    return price_list().models.get(model_id.strip().removeprefix("models/"))
