"""The prices each provider's last model discovery read from its own listing, kept in this
process for the add that follows: the server re-reads what it heard from the provider instead
of trusting prices a browser sends back. A discovery replaces its provider's entry; an entry
older than ``LISTING_PRICES_TTL_S`` is forgotten (the model added then gets the price list's,
or none). Another instance, or this one after a restart, has not heard the listing: its add
gets the price list's."""

from __future__ import annotations

import time
from collections.abc import Callable

from store.catalog import ListingPrices

# How long a discovery's listing prices stay usable for adding its models.
LISTING_PRICES_TTL_S = 3600.0


class ListingMemory:
    """The last listing prices per provider id, each with when it was read."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[int, tuple[float, ListingPrices]] = {}

    def remember(self, provider_id: int, listing: ListingPrices) -> None:
        """Keep a discovery's prices (none: forget the provider's older ones)."""
        now = self._clock()
        self._entries = {
            pid: entry
            for pid, entry in self._entries.items()
            if now - entry[0] < LISTING_PRICES_TTL_S
        }
        if listing.models:
            self._entries[provider_id] = (now, listing)
        else:
            self._entries.pop(provider_id, None)

    def recall(self, provider_id: int) -> ListingPrices | None:
        """The provider's last listing prices if still fresh, else None."""
        entry = self._entries.get(provider_id)
        if entry is None or self._clock() - entry[0] >= LISTING_PRICES_TTL_S:
            return None
        return entry[1]
