"""Console API for providers: list, create, update and delete under ``/console/api/providers``.

A provider's key is write-only: answers carry ``has_api_key`` and null every sealed header value
(all but those marked public); logs name a provider by its id, name, type and URL only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import peewee
from aiohttp import web

from actors.providers.key_health import KeyHealth
from console.json_api import (
    API_PREFIX,
    answers_errors,
    decode_body,
    in_thread,
    json_response,
    provider_id_of,
)
from store import catalog
from store.catalog import ProviderInput
from store.catalog.url_targets import NO_OWN_ADDRESSES, OwnAddresses
from wire.log import log_event

logger = logging.getLogger("cursor_server.console")


class ProvidersApi:
    """The provider routes, bound to one database."""

    def __init__(
        self,
        database: peewee.Database,
        own_addresses: Callable[[], OwnAddresses] = lambda: NO_OWN_ADDRESSES,
        key_health: KeyHealth | None = None,
    ) -> None:
        self._db = database
        # Where this server listens (known once bound): no stored URL may point there.
        self._own = own_addresses
        # What this process knows of the providers' keys: a replaced or deleted key's is dropped.
        self._health = key_health

    def _forget_keys(self, provider_id: int, key_id: int | None = None) -> None:
        if self._health is not None:
            self._health.forget(provider_id, key_id)

    def register(self, app: web.Application) -> None:
        router = app.router
        router.add_get(f"{API_PREFIX}/providers", self.list_providers)
        router.add_post(f"{API_PREFIX}/providers", self.create_provider)
        router.add_put(f"{API_PREFIX}/providers/{{provider_id}}", self.update_provider)
        router.add_delete(f"{API_PREFIX}/providers/{{provider_id}}", self.delete_provider)

    @answers_errors
    async def list_providers(self, request: web.Request) -> web.StreamResponse:
        return json_response(await in_thread(self._db, catalog.list_providers))

    @answers_errors
    async def create_provider(self, request: web.Request) -> web.StreamResponse:
        data = await decode_body(request, ProviderInput)
        record = await in_thread(self._db, catalog.create_provider, data, self._own())
        _log_provider("provider created", record)
        return json_response(record, status=201)

    @answers_errors
    async def update_provider(self, request: web.Request) -> web.StreamResponse:
        provider_id = provider_id_of(request)
        data = await decode_body(request, ProviderInput)
        record = await in_thread(self._db, catalog.update_provider, provider_id, data, self._own())
        if data.api_key is not None:
            self._forget_keys(provider_id, catalog.MAIN_KEY_ID)  # its own key replaced or cleared
        _log_provider("provider updated", record)
        return json_response(record)

    @answers_errors
    async def delete_provider(self, request: web.Request) -> web.StreamResponse:
        provider_id = provider_id_of(request)
        await in_thread(self._db, catalog.delete_provider, provider_id)
        self._forget_keys(provider_id)
        log_event(logger, logging.INFO, "provider deleted", provider_id=provider_id)
        return web.Response(status=204)


def _log_provider(event: str, record: catalog.ProviderRecord) -> None:
    log_event(
        logger,
        logging.INFO,
        event,
        provider_id=record.id,
        name=record.name,
        type=record.type,
        base_url=record.base_url,
    )
