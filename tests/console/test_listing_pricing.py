"""Reading a listing's ``pricing`` (OpenRouter's: USD per token as decimal strings) into our
per-million-token prices, and how long a discovery's prices are kept for the add that
follows."""

from __future__ import annotations

from typing import Any

import pytest

from console.listing_prices import LISTING_PRICES_TTL_S, ListingMemory
from console.model_metadata import listing_prices
from store.catalog import ListingPrices, Prices


@pytest.mark.parametrize(
    ("pricing", "expected"),
    [
        (
            {
                "prompt": "0.000003",
                "completion": "0.000015",
                "input_cache_read": "0.0000003",
                "input_cache_write": "0.00000375",
                "request": "0",
                "image": "0",
            },
            Prices(3.0, 15.0, 0.3, 3.75),
        ),
        # Exact decimal arithmetic: no 0.30000000000000004.
        ({"prompt": "0.0000001", "completion": "0.0000004"}, Prices(0.1, 0.4, None, None)),
        # A free model: input and output 0; a cache price of 0 is none.
        (
            {"prompt": "0", "completion": "0", "input_cache_read": "0"},
            Prices(0.0, 0.0, None, None),
        ),
        # OpenRouter's router: -1, a price that depends on the model picked.
        ({"prompt": "-1", "completion": "-1"}, None),
        ({"prompt": "-1", "completion": "0.00001"}, Prices(None, 10.0, None, None)),
        ({"completion": "0.000002"}, Prices(None, 2.0, None, None)),
        ({"prompt": 0.000001, "completion": 2e-6}, Prices(1.0, 2.0, None, None)),
        ({"prompt": "cheap", "completion": None}, None),
        ({"prompt": "NaN", "completion": "Infinity"}, None),
        ({"prompt": True, "completion": [1]}, None),
        ({"prompt": "1e400", "completion": "1e999999"}, None),
        ({}, None),
        (None, None),
        ("0.000003", None),
    ],
)
def test_a_listings_pricing_is_read_per_million_tokens(pricing: Any, expected: Any) -> None:
    assert listing_prices(pricing) == expected


def test_a_discoverys_prices_are_kept_for_an_hour_and_replaced_by_the_next() -> None:
    now = [1000.0]
    memory = ListingMemory(clock=lambda: now[0])
    first = ListingPrices("https://r.test/v1", {"a/b": Prices(1.0, 2.0)})
    memory.remember(7, first)
    assert memory.recall(7) == first and memory.recall(8) is None
    now[0] += LISTING_PRICES_TTL_S - 1
    assert memory.recall(7) == first
    now[0] += 1
    assert memory.recall(7) is None
    memory.remember(7, first)
    # A discovery whose listing priced nothing forgets the older prices.
    memory.remember(7, ListingPrices("https://r.test/v1", {}))
    assert memory.recall(7) is None
