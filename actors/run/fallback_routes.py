"""A run's fallback routes: the stored fallback models of the model it runs on, each resolved
to a route of its own, read once when the run's model is resolved.

Each fallback takes its own stored settings (``route_of``: the route a run without Cursor's
parameters would take), never the request's: an effort or context Cursor asked of the primary
may not fit another provider's format. A fallback that cannot run is left out, so a call never
fails over onto it: a disabled or deleted model quietly, one whose key or stored settings are
unreadable with a warning (the user has something to fix).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import peewee

from actors.conversation.request import ModelRoute
from actors.run.selection_error import ModelSelectionError
from store.catalog import KeyUnreadable, ModelRecord, ProviderConnection, model_route_parts
from wire.log import log_event

logger = logging.getLogger("cursor_server.run")

# The route of a stored model; ``ModelSelectionError`` when its settings are unusable.
RouteOf = Callable[[ModelRecord, ProviderConnection], ModelRoute]


def fallback_routes(
    database: peewee.Database, record: ModelRecord, route_of: RouteOf
) -> tuple[ModelRoute, ...]:
    """The routes of ``record``'s fallbacks that can run, in its order (each with no fallbacks
    of its own). A store failure propagates, as the primary's read does."""
    routes: list[ModelRoute] = []
    for public_id in record.fallbacks:
        try:
            parts = model_route_parts(database, public_id)
        except KeyUnreadable as exc:
            _skipped(record, public_id, exc.message)
            continue
        if parts is None or not parts[0].enabled:
            continue  # deleted meanwhile, or switched off: not a fallback now
        try:
            routes.append(route_of(*parts))
        except ModelSelectionError as exc:
            _skipped(record, public_id, exc.error.message)
    return tuple(routes)


def _skipped(record: ModelRecord, public_id: str, reason: str) -> None:
    log_event(
        logger,
        logging.WARNING,
        "fallback model skipped",
        model=record.public_id,
        fallback=public_id,
        reason=reason,
    )
