"""Console API for the server's settings under ``/console/api/settings/``: recording
(``observability``), the web search backend (``web-search``), the image model
(``image-model``), where Cursor's Auto and model ids run (``routing``) and the budgets and
limits per person (``budgets``).

The web search backend's key is write-only like a provider's: answers carry ``has_api_key``,
and logs name the backend by its kind only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec
import peewee
from aiohttp import web

from console.json_api import API_PREFIX, answers_errors, decode_body, in_thread, json_response
from store import catalog
from store.catalog.url_targets import NO_OWN_ADDRESSES, OwnAddresses
from wire.log import log_event

logger = logging.getLogger("cursor_server.console")

T = TypeVar("T")


class ObservabilityBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A settings change: any key may be left out (null is refused, not "unchanged")."""

    verbose: bool | msgspec.UnsetType = msgspec.UNSET
    retained_calls: catalog.PositiveInt | msgspec.UnsetType = msgspec.UNSET
    metrics_per_user: bool | msgspec.UnsetType = msgspec.UNSET


class ImageModelBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``{"public_id": "…"}`` marks that model as the image model; ``null`` unmarks it."""

    public_id: str | None


class RoutingBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A routing change: ``auto`` and/or the whole ``routes`` table (either may be left out)."""

    auto: catalog.AutoSetting | msgspec.UnsetType = msgspec.UNSET
    routes: list[catalog.RoutingEntry] | msgspec.UnsetType = msgspec.UNSET


class RoutingAnswer(msgspec.Struct, frozen=True):
    """The routing settings, with the table's size limit for the editor."""

    auto: catalog.AutoSetting
    routes: tuple[catalog.RoutingEntry, ...]
    max_routes: int = catalog.MAX_ROUTES


class BudgetsBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A budgets change: the ``default`` limits and/or the whole set of ``overrides`` by user
    id (either may be left out); in each, a limit left out or null is no limit."""

    default: catalog.Limits | msgspec.UnsetType = msgspec.UNSET
    overrides: dict[str, catalog.Limits] | msgspec.UnsetType = msgspec.UNSET


class BudgetsAnswer(msgspec.Struct, frozen=True):
    """The budgets, with their size limits for the editor."""

    default: catalog.Limits
    overrides: dict[str, catalog.Limits]
    max_overrides: int = catalog.MAX_BUDGET_OVERRIDES
    max_allowed_models: int = catalog.MAX_ALLOWED_MODELS
    max_usd: float = catalog.MAX_BUDGET_USD


def _budgets_answer(settings: catalog.BudgetsSettings) -> BudgetsAnswer:
    return BudgetsAnswer(settings.default, settings.overrides)


async def _nothing() -> None:
    return None


def _routing_answer(settings: catalog.RoutingSettings) -> RoutingAnswer:
    return RoutingAnswer(settings.auto, settings.routes)


def _given(body: msgspec.Struct) -> dict[str, Any]:
    """A change's fields by name, each one left out as None: what the store's settings updates
    read as "leave it as it is" (a body refuses null, so None means left out only)."""
    return {
        name: None if (value := getattr(body, name)) is msgspec.UNSET else value
        for name in body.__struct_fields__
    }


class SettingsApi:
    """The settings routes, bound to one database."""

    def __init__(
        self,
        database: peewee.Database,
        own_addresses: Callable[[], OwnAddresses] = lambda: NO_OWN_ADDRESSES,
        budgets_saved: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._db = database
        # The server's budget counters re-read the settings (awaited before the answer).
        self._budgets_saved = budgets_saved or _nothing
        # Where this server listens (known once bound): a SearXNG URL may not point there.
        self._own = own_addresses

    def register(self, app: web.Application) -> None:
        router = app.router
        router.add_get(f"{API_PREFIX}/settings/observability", self.get_observability)
        router.add_put(f"{API_PREFIX}/settings/observability", self.put_observability)
        router.add_get(f"{API_PREFIX}/settings/web-search", self.get_web_search)
        router.add_put(f"{API_PREFIX}/settings/web-search", self.put_web_search)
        router.add_get(f"{API_PREFIX}/settings/image-model", self.get_image_model)
        router.add_put(f"{API_PREFIX}/settings/image-model", self.put_image_model)
        router.add_get(f"{API_PREFIX}/settings/routing", self.get_routing)
        router.add_put(f"{API_PREFIX}/settings/routing", self.put_routing)
        router.add_get(f"{API_PREFIX}/settings/budgets", self.get_budgets)
        router.add_put(f"{API_PREFIX}/settings/budgets", self.put_budgets)

    async def _update(
        self, request: web.Request, body_type: type[msgspec.Struct], update: Callable[..., T]
    ) -> T:
        """The request's change (``body_type``) made by the store's ``update`` off the event
        loop, its fields as keywords; what ``update`` saved."""
        body = await decode_body(request, body_type)
        return await in_thread(self._db, update, **_given(body))

    @answers_errors
    async def get_observability(self, request: web.Request) -> web.StreamResponse:
        return json_response(await in_thread(self._db, catalog.get_observability))

    @answers_errors
    async def put_observability(self, request: web.Request) -> web.StreamResponse:
        saved = await self._update(request, ObservabilityBody, catalog.update_observability)
        return json_response(saved)

    @answers_errors
    async def get_web_search(self, request: web.Request) -> web.StreamResponse:
        return json_response(await in_thread(self._db, catalog.get_web_search))

    @answers_errors
    async def put_web_search(self, request: web.Request) -> web.StreamResponse:
        data = await decode_body(request, catalog.WebSearchInput)
        shown = await in_thread(self._db, catalog.update_web_search, data, self._own())
        log_event(
            logger,
            logging.INFO,
            "web search backend saved",
            backend=shown.backend,
            has_api_key=shown.has_api_key,
        )
        return json_response(shown)

    @answers_errors
    async def get_image_model(self, request: web.Request) -> web.StreamResponse:
        return json_response(await in_thread(self._db, catalog.get_image_model))

    @answers_errors
    async def put_image_model(self, request: web.Request) -> web.StreamResponse:
        body = await decode_body(request, ImageModelBody)
        saved = await in_thread(self._db, catalog.set_image_model, body.public_id)
        log_event(logger, logging.INFO, "image model marked", public_id=saved.public_id)
        return json_response(saved)

    @answers_errors
    async def get_routing(self, request: web.Request) -> web.StreamResponse:
        return json_response(_routing_answer(await in_thread(self._db, catalog.get_routing)))

    @answers_errors
    async def put_routing(self, request: web.Request) -> web.StreamResponse:
        saved = await self._update(request, RoutingBody, catalog.update_routing)
        log_event(
            logger,
            logging.INFO,
            "routing saved",
            auto=saved.auto.kind,
            auto_model=saved.auto.public_id,
            routes=len(saved.routes),
        )
        return json_response(_routing_answer(saved))

    @answers_errors
    async def get_budgets(self, request: web.Request) -> web.StreamResponse:
        return json_response(_budgets_answer(await in_thread(self._db, catalog.get_budgets)))

    @answers_errors
    async def put_budgets(self, request: web.Request) -> web.StreamResponse:
        saved = await self._update(request, BudgetsBody, catalog.update_budgets)
        await self._budgets_saved()
        log_event(logger, logging.INFO, "budgets saved", overrides=len(saved.overrides))
        return json_response(_budgets_answer(saved))
