"""Console API for a provider's key pool under ``/console/api/providers/{id}/keys``: list the
keys with their health, add one, relabel or replace one, delete one.

Keys are write-only: an answer names a key by its id and label and says whether it is set,
never the key or any part of it. A key's health (cooling until when, its last refusal) is this
server instance's (``actors.providers.key_health``): each instance learns on its own.
"""

from __future__ import annotations

import logging

import msgspec
import peewee
from aiohttp import web

from actors.providers.key_health import KeyHealth
from console.json_api import (
    API_PREFIX,
    ApiError,
    answers_errors,
    decode_body,
    in_thread,
    json_response,
    provider_id_of,
)
from console.numbers import bigint_of
from store import catalog
from store.base.clock import now_ms
from store.catalog import ProviderKeyInput, ProviderKeyRecord, ProviderKeyUpdate
from wire.log import log_event
from wire.providers.key_pool import HEALTHY, KeyRefusal, is_cooling

logger = logging.getLogger("cursor_server.console")

HEALTHY_STATE = "healthy"
COOLING_STATE = "cooling"


class KeyView(msgspec.Struct, frozen=True):
    """One key as the console shows it: the store's record and this instance's health."""

    id: int
    label: str
    position: int
    main: bool
    has_api_key: bool
    state: str  # HEALTHY_STATE or COOLING_STATE
    cooling_until_ms: int | None
    last_error: KeyRefusal | None
    created_at_ms: int | None = None
    unreadable: str | None = None


def _view(provider_id: int, record: ProviderKeyRecord, health: KeyHealth | None) -> KeyView:
    state = HEALTHY if health is None else health.states(provider_id).get(record.id, HEALTHY)
    cooling = is_cooling(state, now_ms())
    return KeyView(
        id=record.id,
        label=record.label,
        position=record.position,
        main=record.main,
        has_api_key=record.has_api_key,
        state=COOLING_STATE if cooling else HEALTHY_STATE,
        cooling_until_ms=state.cooling_until_ms if cooling else None,
        last_error=state.last_error,
        created_at_ms=record.created_at_ms,
        unreadable=record.unreadable,
    )


def _key_id_of(request: web.Request) -> int:
    text = request.match_info["key_id"]
    key_id = bigint_of(text)
    if key_id is None:
        raise ApiError(404, "not_found", f"key {text} not found")
    return key_id


class ProviderKeysApi:
    """The key pool routes, bound to one database and this process's key health."""

    def __init__(self, database: peewee.Database, health: KeyHealth | None = None) -> None:
        self._db = database
        self._health = health

    def register(self, app: web.Application) -> None:
        base = f"{API_PREFIX}/providers/{{provider_id}}/keys"
        router = app.router
        router.add_get(base, self.list_keys)
        router.add_post(base, self.add_key)
        router.add_put(f"{base}/{{key_id}}", self.update_key)
        router.add_delete(f"{base}/{{key_id}}", self.delete_key)

    @answers_errors
    async def list_keys(self, request: web.Request) -> web.StreamResponse:
        provider_id = provider_id_of(request)
        records = await in_thread(self._db, catalog.list_provider_keys, provider_id)
        return json_response([_view(provider_id, r, self._health) for r in records])

    @answers_errors
    async def add_key(self, request: web.Request) -> web.StreamResponse:
        provider_id = provider_id_of(request)
        data = await decode_body(request, ProviderKeyInput)
        record = await in_thread(self._db, catalog.add_provider_key, provider_id, data)
        _log_key("provider key added", provider_id, record)
        return json_response(_view(provider_id, record, self._health), status=201)

    @answers_errors
    async def update_key(self, request: web.Request) -> web.StreamResponse:
        provider_id, key_id = provider_id_of(request), _key_id_of(request)
        data = await decode_body(request, ProviderKeyUpdate)
        record = await in_thread(self._db, catalog.update_provider_key, provider_id, key_id, data)
        if data.api_key is not None and self._health is not None:
            self._health.forget(provider_id, key_id)  # a new key: nothing is known of it
        _log_key("provider key updated", provider_id, record)
        return json_response(_view(provider_id, record, self._health))

    @answers_errors
    async def delete_key(self, request: web.Request) -> web.StreamResponse:
        provider_id, key_id = provider_id_of(request), _key_id_of(request)
        await in_thread(self._db, catalog.delete_provider_key, provider_id, key_id)
        if self._health is not None:
            self._health.forget(provider_id, key_id)
        log_event(
            logger, logging.INFO, "provider key deleted", provider_id=provider_id, key_id=key_id
        )
        return web.Response(status=204)


def _log_key(event: str, provider_id: int, record: ProviderKeyRecord) -> None:
    log_event(
        logger, logging.INFO, event, provider_id=provider_id, key_id=record.id, label=record.label
    )
