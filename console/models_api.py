"""Console API for models: discover a provider's models (each with what it is for), save its
chosen models (discovered or typed in by id) in one transaction, list every model, delete one,
and the shipped price list a new model's prices come from.

A save with ``?check=1`` is checked only: the same rules run on the whole body (in a transaction
that is rolled back), a refusal is the save's own answer (a 422 naming every broken field) and an
accepted body is a 204; nothing is written either way. The model editor checks this way when
the browser could not read a box, so one answer names the server's problems with the others.

Discovery (``console.discovery``) saves no model but keeps, for the add that follows, the
prices the provider's own listing gave (``store.catalog``'s ``keep_listing``: in the database,
so the add may reach another worker process or instance); its failure is a 502 whose
message holds the provider's own words with every credential redacted, and a log line naming
the provider by id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx
import msgspec
import peewee
from aiohttp import web

from console.discovery import (
    DiscoveredModel,
    DiscoveryError,
    discover_models,
    listing_of,
    new_discovery_client,
)
from console.json_api import (
    API_PREFIX,
    ApiError,
    answers_errors,
    decode_body,
    in_thread,
    json_response,
    provider_id_of,
)
from store import catalog
from store.catalog import ModelInput
from wire.log import log_event

logger = logging.getLogger("cursor_server.console")


class SaveModelsBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    models: list[ModelInput]
    # A model added by hand: refused (422 naming ``models[i].model_id``) when the provider
    # already has that id, so adding never overwrites a saved model and its prices.
    only_new: bool = False


# The query flag of a check-only save, and the one value it takes.
CHECK_QUERY = "check"
CHECK_ON = "1"


def check_only_of(request: web.Request) -> bool:
    """Whether the save is checked only (``?check=1``); any other value of the flag is a 400,
    so a typo never turns a check into a save."""
    value = request.query.get(CHECK_QUERY)
    if value is None:
        return False
    if value != CHECK_ON:
        raise ApiError(400, "invalid_argument", f"{CHECK_QUERY} must be {CHECK_ON} or absent")
    return True


class DiscoveredModels(msgspec.Struct, frozen=True):
    models: list[DiscoveredModel]


class ModelsApi:
    """The model routes, bound to one database and a factory for discovery's HTTP client."""

    def __init__(
        self,
        database: peewee.Database,
        discovery_client: Callable[[], httpx.AsyncClient] = new_discovery_client,
    ) -> None:
        self._db = database
        self._discovery_client = discovery_client

    def register(self, app: web.Application) -> None:
        router = app.router
        router.add_post(
            f"{API_PREFIX}/providers/{{provider_id}}/models/discover", self.discover_models
        )
        router.add_post(f"{API_PREFIX}/providers/{{provider_id}}/models", self.save_models)
        router.add_get(f"{API_PREFIX}/models", self.list_models)
        router.add_get(f"{API_PREFIX}/price-list", self.get_price_list, allow_head=False)
        router.add_delete(f"{API_PREFIX}/models/{{public_id}}", self.delete_model)

    @answers_errors
    async def discover_models(self, request: web.Request) -> web.StreamResponse:
        provider_id = provider_id_of(request)
        connection = await in_thread(self._db, catalog.provider_connection, provider_id)
        if connection is None:
            raise catalog.NotFound(f"provider {provider_id} not found")
        async with self._discovery_client() as client:
            try:
                ids = await discover_models(connection, client)
            except DiscoveryError as exc:
                log_event(
                    logger,
                    logging.WARNING,
                    "model discovery failed",
                    provider_id=provider_id,
                    reason=exc.message,
                )
                raise ApiError(502, "unavailable", exc.message) from None
        listing = listing_of(connection.base_url, ids)
        await in_thread(self._db, catalog.keep_listing, provider_id, listing)
        return json_response(DiscoveredModels(models=ids))

    @answers_errors
    async def save_models(self, request: web.Request) -> web.StreamResponse:
        provider_id = provider_id_of(request)
        check_only = check_only_of(request)
        body = await decode_body(request, SaveModelsBody)
        saved = await in_thread(
            self._db,
            catalog.save_models,
            provider_id,
            body.models,
            only_new=body.only_new,
            check_only=check_only,
        )
        if check_only:
            return web.Response(status=204)
        return json_response(saved, status=201)

    @answers_errors
    async def list_models(self, request: web.Request) -> web.StreamResponse:
        return json_response(await in_thread(self._db, catalog.all_models))

    @answers_errors
    async def get_price_list(self, request: web.Request) -> web.StreamResponse:
        return json_response(catalog.price_list())

    @answers_errors
    async def delete_model(self, request: web.Request) -> web.StreamResponse:
        await in_thread(self._db, catalog.delete_model, request.match_info["public_id"])
        return web.Response(status=204)
