"""The largest values the catalog stores, so a client cannot fill the database (or every model
list Cursor fetches) with one value, nor fail an INSERT with a number its column cannot hold;
beyond one: ``Invalid`` naming the field."""

from __future__ import annotations

from typing import Annotated

import msgspec

MAX_NAME_CHARS = 200  # a provider's name, a model's display name
MAX_MODEL_ID_CHARS = 200
MAX_URL_CHARS = 2048  # a provider's base URL, a SearXNG instance's URL
MAX_KEY_CHARS = 8192  # an API key
MAX_KEYS_PER_PROVIDER = 16  # a provider's key pool, its own key included
MAX_KEY_LABEL_CHARS = 64
MAX_HEADERS = 64  # custom headers per provider
MAX_HEADER_NAME_CHARS = 100
MAX_HEADER_VALUE_CHARS = 8192  # printable ASCII, so 8 KiB
# A model's fallback models: each failed model costs its own retries, so a longer chain would
# hold a turn for minutes before it ends.
MAX_FALLBACKS = 5

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
# The range of the catalog's integer columns (``INTEGER``: 32 bits on PostgreSQL); a larger
# number is refused naming its field instead of failing the INSERT.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
