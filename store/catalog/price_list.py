"""The price list: what well-known models cost, as their makers publish it, shipped as package
data (``price_list.json``) and read here only. A model added without prices gets the list's,
marked ``list`` so the console can say where they came from; a price the user sets is theirs
(``user``) and the list never replaces it. A provider that publishes prices in its own model
listing (``provider``, read at discovery by ``console.model_metadata``) is preferred over the
list, and never replaces a price the user set either."""

from __future__ import annotations

import functools
from importlib import resources

import msgspec

# Where a model's stored prices came from (``ModelRecord.price_source``); None: no prices yet.
FROM_LIST = "list"
FROM_USER = "user"
FROM_PROVIDER = "provider"


class Prices(msgspec.Struct, frozen=True):
    """A model's prices in USD per million tokens, one per usage bucket; None is unknown (a
    call that used that bucket has an unknown cost, never a zero one). Its field names are the
    model columns' (``PRICE_FIELDS`` is derived from them)."""

    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    price_cache_read_per_mtok: float | None = None
    price_cache_write_per_mtok: float | None = None


class ListingPrices(msgspec.Struct, frozen=True):
    """The prices a provider's own model listing gave, by model id, and the base URL it was
    read from (a provider whose URL changed since is another listing: its prices are not
    used)."""

    base_url: str
    models: dict[str, Prices]


class _ListedPrices(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


class _PriceFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    source: str
    as_of: str
    unit: str
    # Each maker's name as a router prefixes its ids (``openai/gpt-4o``), with the beginnings
    # of the names of its models on the list.
    makers: dict[str, list[str]]
    models: dict[str, _ListedPrices]


class PriceList(msgspec.Struct, frozen=True):
    """The whole list as the console shows it: where it comes from, the day its prices were
    read, and each model id's prices."""

    source: str
    as_of: str
    models: dict[str, Prices]
    makers: dict[str, tuple[str, ...]] = {}


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
        makers={maker: tuple(starts) for maker, starts in shipped.makers.items()},
    )


def listed_prices(model_id: str) -> Prices | None:
    """The list's prices for a model id as a provider names it, or None for a model the list
    does not know. Gemini's ``models/`` prefix is ignored. A router's ``maker/name`` id
    (OpenRouter's ``openai/gpt-4o``) is looked up by its name, only when the maker is one the
    list knows and the name is one of that maker's (``openai/claude-x`` or ``acme/gpt-4o`` get
    nothing: another maker's model, or a re-host, may cost anything), under the maker's own
    spelling when the router's differs: dots in a version as hyphens (``claude-sonnet-4.5`` is
    ``claude-sonnet-4-5``), and a name without a snapshot as the maker's alias for its latest
    one (``claude-sonnet-4`` is ``claude-sonnet-4-0``). A variant suffix (``:free``,
    ``:thinking``) is never dropped: such a variant may cost otherwise."""
    listed = price_list()
    name = model_id.strip().removeprefix("models/")
    found = listed.models.get(name)
    if found is not None or name.count("/") != 1:
        return found
    maker, name = name.split("/")
    starts = listed.makers.get(maker.lower(), ())
    if not name.startswith(starts):
        return None
    for candidate in _spellings(name):
        if candidate in listed.models:
            return listed.models[candidate]
    return None


def _spellings(name: str) -> list[str]:
    """A router's model name as its maker may spell it, the name as given first."""
    hyphens = name.replace(".", "-")
    bases = [name] if hyphens == name else [name, hyphens]
    return [*bases, *(f"{base}{alias}" for alias in ("-latest", "-0") for base in bases)]
