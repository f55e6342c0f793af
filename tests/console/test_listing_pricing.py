"""Reading a listing's ``pricing`` (OpenRouter's: USD per token as decimal strings) into our
per-million-token prices (how long a discovery's prices are kept for the add that follows is
the store's: tests/store/test_listing_prices_store.py)."""

from __future__ import annotations

from typing import Any

import pytest

from console.model_metadata import listing_prices
from store.catalog import Prices


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
