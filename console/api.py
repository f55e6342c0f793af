"""The console's JSON API for providers, models and settings (recording, the web search
backend), under ``/console/api/``.

Every answer is JSON; every error is ``{"code","message"}`` (400 malformed JSON, 422 a value
that breaks a rule, 404 unknown, 409 forbidden by the current data, 502 provider trouble), never
aiohttp's plain text. Request bodies decode straight into the store's msgspec Structs, which
refuse unknown fields so a typo (``apikey``) is an error instead of a silently ignored value.

The database is synchronous (peewee), so every store call runs in ``asyncio.to_thread``: the
event loop also carries the agent streams and must never wait on a disk write.

A provider's key, like the web search backend's, is write-only. Answers carry ``has_api_key``
and null every sealed header value (all but those marked public); discovery errors replace the
key and sealed header values with ``[redacted]`` in case a provider echoes them; logs name
providers by id, name and URL only, and the web search backend by its kind.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import msgspec
import peewee
from aiohttp import web

from console.auth import ConsoleAuth, ConsoleGuard
from console.calls_api import CallsApi
from console.connection_api import ConnectionApi
from console.conversations_api import ConversationsApi
from console.model_check_api import ModelCheckApi, ModelCheckDeps
from console.numbers import bigint_of
from console.session_api import SessionApi
from console.static_routes import StaticRoutes
from console.stats_api import StatsApi
from store import catalog
from store.catalog import ModelInput, ProviderConnection, ProviderInput
from store.clock import now_ms
from store.url_targets import NO_OWN_ADDRESSES, OwnAddresses
from wire.http.agent_activity import AgentActivity
from wire.http.responses import json_error
from wire.json_input import decode_json
from wire.log import log_event
from wire.providers.adapter import provider_error_message
from wire.providers.redaction import credential_strings, scrub_text

logger = logging.getLogger("cursor_server.console")

API_PREFIX = "/console/api"
# One model discovery, all pages included, must finish within this many seconds.
DISCOVERY_TIMEOUT_S = 30.0
# A model list larger than this is refused rather than read into memory.
DISCOVERY_MAX_BODY_BYTES = 8 * 1024 * 1024
# Anthropic pages its model list; a provider that never stops paging is an error.
DISCOVERY_MAX_PAGES = 100
ANTHROPIC_PAGE_LIMIT = 100
ANTHROPIC_VERSION = "2023-06-01"
GEMINI_PAGE_SIZE = 1000
# The method a Gemini model must list to be callable by the adapter's streamGenerateContent.
GEMINI_METHOD = "generateContent"
# How much of a provider's error body (when it has no JSON message) goes into our message.
PROVIDER_MESSAGE_MAX_CHARS = 500
FAILED = "model discovery failed"

T = TypeVar("T")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# --- errors and bodies -------------------------------------------------------------------------


class ApiError(Exception):
    """An error answer: HTTP status, error code and a message safe to show."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def answers_errors(
    method: Callable[[Any, web.Request], Awaitable[web.StreamResponse]],
) -> Callable[[Any, web.Request], Awaitable[web.StreamResponse]]:
    """Turn the errors a handler raises into ``{"code","message"}`` answers."""

    @functools.wraps(method)
    async def wrapper(self: Any, request: web.Request) -> web.StreamResponse:
        try:
            return await method(self, request)
        except ApiError as exc:
            return json_error(exc.status, exc.code, exc.message)
        except catalog.Invalid as exc:
            return json_error(422, "invalid_argument", exc.message)
        except catalog.NotFound as exc:
            return json_error(404, "not_found", exc.message)
        except catalog.Conflict as exc:
            return json_error(409, exc.code, exc.message)
        except catalog.KeyUnreadable as exc:
            return json_error(409, "failed_precondition", exc.message)
        except DiscoveryError as exc:
            return json_error(502, "unavailable", exc.message)

    return wrapper


async def decode_body(request: web.Request, type_: type[T]) -> T:
    """The request body as ``type_``: 400 if it is not JSON, 422 if it does not fit the type.

    msgspec's messages name the field and the expected type, never the value sent.
    """
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ApiError(413, "resource_exhausted", "request body is too large") from None
    return decode_body_bytes(body, type_)


def decode_body_bytes(body: bytes, type_: type[T]) -> T:
    """The bytes of a request body as ``type_`` (``decode_body`` without the read)."""
    try:
        return decode_json(body, type=type_)
    except msgspec.ValidationError as exc:
        raise ApiError(422, "invalid_argument", f"invalid request body: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ApiError(400, "invalid_argument", f"request body is not valid JSON: {exc}") from None


def json_response(value: object, status: int = 200) -> web.Response:
    return web.Response(
        status=status, body=msgspec.json.encode(value), content_type="application/json"
    )


def provider_id_of(request: web.Request) -> int:
    """The ``{provider_id}`` path part; anything but a row id is an unknown provider (404)."""
    text = request.match_info["provider_id"]
    provider_id = bigint_of(text)
    if provider_id is None:
        raise ApiError(404, "not_found", f"provider {text} not found")
    return provider_id


class SaveModelsBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    models: list[ModelInput]


class ObservabilityBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A settings change: either key may be left out (null is refused, not "unchanged")."""

    verbose: bool | msgspec.UnsetType = msgspec.UNSET
    retained_calls: catalog.PositiveInt | msgspec.UnsetType = msgspec.UNSET


class ImageModelBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``{"public_id": "…"}`` marks that model as the image model; ``null`` unmarks it."""

    public_id: str | None


class DiscoveredModels(msgspec.Struct, frozen=True):
    models: list[str]


# --- model discovery ---------------------------------------------------------------------------


class DiscoveryError(Exception):
    """Listing a provider's models failed; ``message`` has the status and the provider's words."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _ListedModel(msgspec.Struct, frozen=True):
    id: str


class _ModelPage(msgspec.Struct, frozen=True):
    """One ``/models`` answer: OpenAI's ``{"data": [...]}`` or one of Anthropic's pages."""

    data: list[_ListedModel]
    has_more: bool = False
    last_id: str | None = None


class _GeminiModel(msgspec.Struct, frozen=True, rename="camel"):
    name: str
    supported_generation_methods: list[str] = []


class _GeminiPage(msgspec.Struct, frozen=True, rename="camel"):
    """One Gemini ``/models`` page: ``models[].name`` is ``models/<id>``."""

    models: list[_GeminiModel] = []
    next_page_token: str | None = None


def new_discovery_client() -> httpx.AsyncClient:
    """A client for one discovery: bounded timeouts and no redirects (a redirect would carry
    custom credential headers to another host)."""
    return httpx.AsyncClient(timeout=httpx.Timeout(DISCOVERY_TIMEOUT_S), follow_redirects=False)


def discovery_request_headers(connection: ProviderConnection) -> httpx.Headers:
    """The provider's auth headers, then its custom headers (which win on a clash)."""
    headers = httpx.Headers()
    if connection.type == catalog.ANTHROPIC:
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if connection.api_key:
            headers["x-api-key"] = connection.api_key
    elif connection.type == catalog.GEMINI:
        if connection.api_key:
            headers["x-goog-api-key"] = connection.api_key
    elif connection.api_key:
        headers["authorization"] = f"Bearer {connection.api_key}"
    for name, value in connection.headers.items():
        headers[name] = value
    return headers


async def discover_models(connection: ProviderConnection, client: httpx.AsyncClient) -> list[str]:
    """The ids a provider lists at ``{base}/models``, sorted and de-duplicated; saves nothing.

    Anthropic pages with ``limit``/``after_id`` while ``has_more``. Every failure (network, a
    non-2xx status, a body that is not a model list, the whole thing taking longer than
    ``DISCOVERY_TIMEOUT_S``) is a ``DiscoveryError`` whose message never holds a secret.
    """
    try:
        async with asyncio.timeout(DISCOVERY_TIMEOUT_S):
            if connection.type == catalog.ANTHROPIC:
                ids = await _anthropic_ids(connection, client)
            elif connection.type == catalog.GEMINI:
                ids = await _gemini_ids(connection, client)
            else:
                page = await _get_page(connection, client, {})
                ids = [item.id for item in page.data]
    except TimeoutError:
        raise DiscoveryError(f"model discovery timed out after {DISCOVERY_TIMEOUT_S:g} s") from None
    except httpx.HTTPError as exc:
        reason = _redact(f"{type(exc).__name__}: {exc}", connection)
        raise DiscoveryError(f"{FAILED}: cannot reach the provider: {reason}") from None
    return sorted(set(ids))


async def _anthropic_ids(connection: ProviderConnection, client: httpx.AsyncClient) -> list[str]:
    ids: list[str] = []
    params: dict[str, str | int] = {"limit": ANTHROPIC_PAGE_LIMIT}
    for _ in range(DISCOVERY_MAX_PAGES):
        page = await _get_page(connection, client, params)
        ids.extend(item.id for item in page.data)
        if not page.has_more:
            return ids
        if not page.last_id:
            raise DiscoveryError(f"{FAILED}: Anthropic answered has_more without last_id")
        if page.last_id == params.get("after_id"):
            raise DiscoveryError(f"{FAILED}: Anthropic repeated the same page")
        params = {"limit": ANTHROPIC_PAGE_LIMIT, "after_id": page.last_id}
    raise DiscoveryError(f"{FAILED}: more than {DISCOVERY_MAX_PAGES} pages")


async def _gemini_ids(connection: ProviderConnection, client: httpx.AsyncClient) -> list[str]:
    """The models that take ``generateContent``, following ``nextPageToken``."""
    ids: list[str] = []
    params: dict[str, str | int] = {"pageSize": GEMINI_PAGE_SIZE}
    for _ in range(DISCOVERY_MAX_PAGES):
        page = await _get_page(connection, client, params, _GeminiPage)
        for model in page.models:
            if GEMINI_METHOD in model.supported_generation_methods:
                ids.append(model.name.removeprefix("models/"))
        if not page.next_page_token:
            return ids
        if page.next_page_token == params.get("pageToken"):
            raise DiscoveryError(f"{FAILED}: Gemini repeated the same page")
        params = {"pageSize": GEMINI_PAGE_SIZE, "pageToken": page.next_page_token}
    raise DiscoveryError(f"{FAILED}: more than {DISCOVERY_MAX_PAGES} pages")


_Page = TypeVar("_Page", _ModelPage, _GeminiPage)


async def _get_page(
    connection: ProviderConnection,
    client: httpx.AsyncClient,
    params: dict[str, str | int],
    page_type: type[_Page] = _ModelPage,  # type: ignore[assignment]
) -> _Page:
    url = f"{connection.base_url}/models"
    headers = discovery_request_headers(connection)
    async with client.stream("GET", url, params=params, headers=headers) as response:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > DISCOVERY_MAX_BODY_BYTES:
                raise DiscoveryError(
                    f"{FAILED}: the model list is larger than {DISCOVERY_MAX_BODY_BYTES} bytes"
                )
    status = response.status_code
    if not 200 <= status < 300:
        message = _redact(_truncated(provider_error_message(bytes(body))), connection)
        raise DiscoveryError(f"{FAILED}: provider answered {status}: {message}")
    try:
        return decode_json(bytes(body), type=page_type)
    except msgspec.DecodeError as exc:
        raise DiscoveryError(
            f"{FAILED}: provider answered {status} without a model list: {exc}"
        ) from None


def _truncated(text: str) -> str:
    if len(text) > PROVIDER_MESSAGE_MAX_CHARS:
        return text[:PROVIDER_MESSAGE_MAX_CHARS] + "…"
    return text


def _redact(text: str, connection: ProviderConnection) -> str:
    """``text`` with the key and every sealed header value replaced by ``[redacted]``."""
    secrets = credential_strings(
        connection.api_key, connection.headers.items(), connection.public_headers
    )
    return scrub_text(text, secrets)


# --- handlers ----------------------------------------------------------------------------------


class ConsoleApi:
    """The handlers, bound to one database and a factory for discovery's HTTP client."""

    def __init__(
        self,
        database: peewee.Database,
        discovery_client: Callable[[], httpx.AsyncClient] = new_discovery_client,
        own_addresses: Callable[[], OwnAddresses] = lambda: NO_OWN_ADDRESSES,
    ) -> None:
        self._db = database
        self._discovery_client = discovery_client
        # Where this server listens (known once bound): no stored URL may point there.
        self._own = own_addresses

    async def _store(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a synchronous store function off the event loop."""
        return await asyncio.to_thread(fn, self._db, *args, **kwargs)

    def register(self, app: web.Application) -> None:
        router = app.router
        router.add_get(f"{API_PREFIX}/providers", self.list_providers)
        router.add_post(f"{API_PREFIX}/providers", self.create_provider)
        router.add_put(f"{API_PREFIX}/providers/{{provider_id}}", self.update_provider)
        router.add_delete(f"{API_PREFIX}/providers/{{provider_id}}", self.delete_provider)
        router.add_post(
            f"{API_PREFIX}/providers/{{provider_id}}/models/discover", self.discover_models
        )
        router.add_post(f"{API_PREFIX}/providers/{{provider_id}}/models", self.save_models)
        router.add_get(f"{API_PREFIX}/models", self.list_models)
        router.add_delete(f"{API_PREFIX}/models/{{public_id}}", self.delete_model)
        router.add_get(f"{API_PREFIX}/settings/observability", self.get_observability)
        router.add_put(f"{API_PREFIX}/settings/observability", self.put_observability)
        router.add_get(f"{API_PREFIX}/settings/web-search", self.get_web_search)
        router.add_put(f"{API_PREFIX}/settings/web-search", self.put_web_search)
        router.add_get(f"{API_PREFIX}/settings/image-model", self.get_image_model)
        router.add_put(f"{API_PREFIX}/settings/image-model", self.put_image_model)

    @answers_errors
    async def list_providers(self, request: web.Request) -> web.StreamResponse:
        return json_response(await self._store(catalog.list_providers))

    @answers_errors
    async def create_provider(self, request: web.Request) -> web.StreamResponse:
        data = await decode_body(request, ProviderInput)
        record = await self._store(catalog.create_provider, data, self._own())
        _log_provider("provider created", record)
        return json_response(record, status=201)

    @answers_errors
    async def update_provider(self, request: web.Request) -> web.StreamResponse:
        provider_id = provider_id_of(request)
        data = await decode_body(request, ProviderInput)
        record = await self._store(catalog.update_provider, provider_id, data, self._own())
        _log_provider("provider updated", record)
        return json_response(record)

    @answers_errors
    async def delete_provider(self, request: web.Request) -> web.StreamResponse:
        provider_id = provider_id_of(request)
        await self._store(catalog.delete_provider, provider_id)
        log_event(logger, logging.INFO, "provider deleted", provider_id=provider_id)
        return web.Response(status=204)

    @answers_errors
    async def discover_models(self, request: web.Request) -> web.StreamResponse:
        provider_id = provider_id_of(request)
        connection = await self._store(catalog.provider_connection, provider_id)
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
                raise
        return json_response(DiscoveredModels(models=ids))

    @answers_errors
    async def save_models(self, request: web.Request) -> web.StreamResponse:
        provider_id = provider_id_of(request)
        body = await decode_body(request, SaveModelsBody)
        saved = await self._store(catalog.save_models, provider_id, body.models)
        return json_response(saved, status=201)

    @answers_errors
    async def list_models(self, request: web.Request) -> web.StreamResponse:
        return json_response(await self._store(catalog.all_models))

    @answers_errors
    async def delete_model(self, request: web.Request) -> web.StreamResponse:
        await self._store(catalog.delete_model, request.match_info["public_id"])
        return web.Response(status=204)

    @answers_errors
    async def get_observability(self, request: web.Request) -> web.StreamResponse:
        return json_response(await self._store(catalog.get_observability))

    @answers_errors
    async def put_observability(self, request: web.Request) -> web.StreamResponse:
        body = await decode_body(request, ObservabilityBody)
        changes = {
            name: value
            for name in ("verbose", "retained_calls")
            if (value := getattr(body, name)) is not msgspec.UNSET
        }
        return json_response(await self._store(catalog.update_observability, **changes))

    @answers_errors
    async def get_web_search(self, request: web.Request) -> web.StreamResponse:
        return json_response(await self._store(catalog.get_web_search))

    @answers_errors
    async def put_web_search(self, request: web.Request) -> web.StreamResponse:
        data = await decode_body(request, catalog.WebSearchInput)
        shown = await self._store(catalog.update_web_search, data, self._own())
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
        return json_response(await self._store(catalog.get_image_model))

    @answers_errors
    async def put_image_model(self, request: web.Request) -> web.StreamResponse:
        body = await decode_body(request, ImageModelBody)
        saved = await self._store(catalog.set_image_model, body.public_id)
        log_event(logger, logging.INFO, "image model marked", public_id=saved.public_id)
        return json_response(saved)


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
    the providers, models and settings API, the call records, the model checks (given the
    provider actors' deps by the composition root), the dashboard's statistics, then the
    catch-alls that answer unknown ``/console/api/`` and ``/console/`` paths locally. Without
    ``auth`` there is no token (loopback only, no login); without ``activity`` the connection
    status never sees a client."""

    def __init__(
        self,
        database: peewee.Database,
        discovery_client: Callable[[], httpx.AsyncClient] = new_discovery_client,
        model_checks: ModelCheckDeps | None = None,
        *,
        auth: ConsoleAuth | None = None,
        activity: AgentActivity | None = None,
        listen_host: str = "127.0.0.1",
        own_addresses: Callable[[], OwnAddresses] = lambda: NO_OWN_ADDRESSES,
    ) -> None:
        self._database = database
        self._discovery_client = discovery_client
        self._model_checks = model_checks
        self._auth = auth if auth is not None else ConsoleAuth(None)
        self._activity = activity if activity is not None else AgentActivity(now_ms)
        self._listen_host = listen_host
        self._own_addresses = own_addresses

    def register(self, app: web.Application) -> None:
        ConsoleGuard(self._auth).register(app)
        SessionApi(self._auth).register(app)
        ConnectionApi(self._activity, self._listen_host).register(app)
        StaticRoutes().register(app)
        ConsoleApi(self._database, self._discovery_client, self._own_addresses).register(app)
        CallsApi(self._database).register(app)
        ModelCheckApi(self._database, self._model_checks).register(app)
        StatsApi(self._database).register(app)
        ConversationsApi(self._database).register(app)
        app.router.add_route("*", f"{API_PREFIX}/{{tail:.*}}", unknown_console_route)
        app.router.add_route("*", "/console/{tail:.*}", unknown_console_page)
