"""The observability settings: whether calls record full payloads, how many call records to
keep, and whether ``GET /metrics`` shows each user's totals. One row of the settings table,
read at the start of every provider call and by every scrape."""

from __future__ import annotations

from typing import Any

import msgspec
import peewee

from store.catalog.errors import Invalid
from store.catalog.limits import INT32_MAX
from store.catalog.setting_rows import locked_setting, read_setting, write_setting

OBSERVABILITY_KEY = "observability"


class ObservabilitySettings(msgspec.Struct, frozen=True):
    """Whether calls record full payloads, how many call records to keep, and whether the
    metrics carry a series per user (off: a team's size is not the scrape's cardinality)."""

    verbose: bool = False
    retained_calls: int = 10000
    metrics_per_user: bool = False


def get_observability(db: peewee.Database) -> ObservabilitySettings:
    """The stored observability settings, or the defaults when none were saved."""
    # Read at the start of every provider call: SQL written once, not built by peewee each time.
    return read_setting(db, OBSERVABILITY_KEY, ObservabilitySettings)


def update_observability(
    db: peewee.Database,
    *,
    verbose: bool | None = None,
    retained_calls: int | None = None,
    metrics_per_user: bool | None = None,
) -> ObservabilitySettings:
    """Change the given settings (None leaves one as it is) and return the result."""
    if verbose is not None and not isinstance(verbose, bool):
        raise Invalid("verbose", "must be true or false")
    if metrics_per_user is not None and not isinstance(metrics_per_user, bool):
        raise Invalid("metrics_per_user", "must be true or false")
    if retained_calls is not None and (
        type(retained_calls) is not int or not 1 <= retained_calls <= INT32_MAX
    ):
        raise Invalid("retained_calls", f"must be an integer from 1 to {INT32_MAX}")
    with db.atomic():
        current = locked_setting(db, OBSERVABILITY_KEY, ObservabilitySettings)
        changes: dict[str, Any] = {}
        if verbose is not None:
            changes["verbose"] = verbose
        if retained_calls is not None:
            changes["retained_calls"] = retained_calls
        if metrics_per_user is not None:
            changes["metrics_per_user"] = metrics_per_user
        result = msgspec.structs.replace(current, **changes)
        write_setting(db, OBSERVABILITY_KEY, result)
    return result
