"""Every console route in one entry point, ``ConsoleRoutes(database, …).register(app)``, and the
catch-alls that keep every ``/console`` path away from the upstream proxy.

Each group of routes has its own module: provider types (``provider_types_api``), providers
(``providers_api``), models and their discovery (``models_api``), settings (``settings_api``),
call records, model checks, statistics, conversations, the connection status, login and the
browser app's files.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import peewee
from aiohttp import web

from actors.providers.key_health import KeyHealth
from console.auth import ConsoleAuth, ConsoleGuard
from console.calls_api import CallsApi
from console.connection_api import ConnectionApi
from console.conversations_api import ConversationsApi
from console.discovery import new_discovery_client
from console.json_api import API_PREFIX
from console.model_check_api import ModelCheckApi, ModelCheckDeps
from console.models_api import ModelsApi
from console.people_api import PeopleApi
from console.provider_keys_api import ProviderKeysApi
from console.provider_types_api import ProviderTypesApi
from console.providers_api import ProvidersApi
from console.session_api import SessionApi
from console.settings_api import SettingsApi
from console.static_routes import StaticRoutes
from console.stats_api import StatsApi
from store.base.clock import now_ms
from store.catalog.url_targets import NO_OWN_ADDRESSES, OwnAddresses
from wire.http.agent_activity import AgentActivity
from wire.http.protocol_drift import ProtocolDrift
from wire.http.responses import json_error

# --- no console request goes upstream ----------------------------------------------------------


CATCH_ALL_PATH = f"{API_PREFIX}/{{tail}}"  # the canonical form of the catch-all's path


async def unknown_console_route(request: web.Request) -> web.StreamResponse:
    """404/405 JSON for ``/console/api/…`` paths no route serves.

    Without it the proxy fallback would stream them, bodies (keys!) included, to Cursor's
    backend. aiohttp tries the most specific path prefix first, so routes other modules add
    under ``/console/api/`` later still win over this catch-all.
    """
    allowed: set[str] = set()
    for resource in request.app.router.resources():
        if resource.canonical == CATCH_ALL_PATH:
            continue
        match, methods = await resource.resolve(request)
        if match is None:
            allowed |= methods
    if allowed:
        message = f"{request.method} is not allowed on {request.path}"
        response = json_error(405, "unimplemented", message)
        response.headers["Allow"] = ", ".join(sorted(allowed))
        return response
    return json_error(404, "not_found", f"no console API route {request.path}")


async def unknown_console_page(request: web.Request) -> web.StreamResponse:
    """404 JSON for any other ``/console/…`` path: nothing under ``/console`` goes upstream."""
    return json_error(404, "not_found", f"no console page {request.path} (the app is /console/)")


class ConsoleRoutes:
    """Every console route, registered like the edge's route groups (``register(app)``): the
    guard in front of ``/console/api/``, login, the connection status, the browser app's files,
    the provider types, the providers and their key pools, models and settings API, the call
    records, the model checks (given the provider actors' deps by the composition root), the
    dashboard's statistics, then the catch-alls that answer unknown ``/console/api/`` and
    ``/console/`` paths locally. Without ``auth`` there is no token (loopback only, no login);
    without ``activity`` the connection status never sees a client."""

    def __init__(
        self,
        database: peewee.Database,
        discovery_client: Callable[[], httpx.AsyncClient] = new_discovery_client,
        model_checks: ModelCheckDeps | None = None,
        *,
        auth: ConsoleAuth | None = None,
        activity: AgentActivity | None = None,
        drift: ProtocolDrift | None = None,
        listen_host: str = "127.0.0.1",
        own_addresses: Callable[[], OwnAddresses] = lambda: NO_OWN_ADDRESSES,
        key_health: KeyHealth | None = None,
        budgets_saved: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._database = database
        self._discovery_client = discovery_client
        self._model_checks = model_checks
        self._auth = auth if auth is not None else ConsoleAuth(None)
        self._activity = activity if activity is not None else AgentActivity(now_ms)
        self._drift = drift
        self._listen_host = listen_host
        self._own_addresses = own_addresses
        # The health of the provider keys this process's calls sent (the key list shows it).
        self._key_health = key_health
        # Awaited after the budgets are saved: this server's budget check reads them at once.
        self._budgets_saved = budgets_saved

    def register(self, app: web.Application) -> None:
        ConsoleGuard(self._auth).register(app)
        SessionApi(self._auth).register(app)
        ConnectionApi(self._activity, self._listen_host, self._database, self._drift).register(app)
        StaticRoutes().register(app)
        ProviderTypesApi().register(app)
        ProvidersApi(self._database, self._own_addresses, self._key_health).register(app)
        ProviderKeysApi(self._database, self._key_health).register(app)
        ModelsApi(self._database, self._discovery_client).register(app)
        SettingsApi(self._database, self._own_addresses, self._budgets_saved).register(app)
        CallsApi(self._database).register(app)
        ModelCheckApi(self._database, self._model_checks).register(app)
        StatsApi(self._database).register(app)
        PeopleApi(self._database).register(app)
        ConversationsApi(self._database).register(app)
        app.router.add_route("*", f"{API_PREFIX}/{{tail:.*}}", unknown_console_route)
        app.router.add_route("*", "/console/{tail:.*}", unknown_console_page)
