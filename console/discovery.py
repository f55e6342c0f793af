"""Model discovery: the model ids a provider lists at ``{base}/models``, with every page read
and bounded in time, size and page count, each with what it is for (a chat model, an image
model, an embedder, …) by the listing's own metadata where it has some, else by its name
(``console.model_metadata``); nothing is saved.

A provider's key is write-only, so a discovery error replaces the key and every sealed header
value with ``[redacted]`` in case the provider echoes them.
"""

from __future__ import annotations

import asyncio
from typing import TypeVar

import httpx
import msgspec

from console.model_metadata import (
    KIND_FROM_NAME,
    KIND_FROM_PROVIDER,
    Sourced,
    gemini_kind,
    listed_kind,
    listing_prices,
)
from store import catalog
from store.catalog import ProviderConnection
from wire.json_input import decode_json
from wire.providers.adapter import provider_error_message
from wire.providers.redaction import credential_strings, scrub_text

# One model discovery, all pages included, must finish within this many seconds.
DISCOVERY_TIMEOUT_S = 30.0
# A model list larger than this is refused rather than read into memory.
DISCOVERY_MAX_BODY_BYTES = 8 * 1024 * 1024
# Anthropic pages its model list; a provider that never stops paging is an error.
DISCOVERY_MAX_PAGES = 100
ANTHROPIC_PAGE_LIMIT = 100
ANTHROPIC_VERSION = "2023-06-01"
GEMINI_PAGE_SIZE = 1000
# How much of a provider's error body (when it has no JSON message) goes into our message.
PROVIDER_MESSAGE_MAX_CHARS = 500
FAILED = "model discovery failed"


class DiscoveryError(Exception):
    """Listing a provider's models failed; ``message`` has the status and the provider's words."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class DiscoveredModel(msgspec.Struct, frozen=True):
    """One listed model: its id, what it is for (``catalog.KINDS``), whether a turn can run on
    it, and whether the provider's listing or the id's name said so; and the prices a new model
    of that id gets (``prices``, from ``price_source``: ``provider``, its listing's, else
    ``list``, the price list's; None for neither)."""

    id: str
    kind: str
    chat: bool
    kind_from: str
    prices: catalog.Prices | None = None
    price_source: str | None = None


def discovered(
    model_id: str, found: Sourced | None, listed: catalog.Prices | None = None
) -> DiscoveredModel:
    """A listed model with the kind its listing gave (and where it was read), or (None) its
    name's, and the prices its listing gave (``listed``), else the price list's."""
    kind, source = found if found is not None else (catalog.kind_by_name(model_id), KIND_FROM_NAME)
    prices, price_source = listed, catalog.FROM_PROVIDER
    if prices is None:
        prices, price_source = catalog.listed_prices(model_id), catalog.FROM_LIST
    return DiscoveredModel(
        model_id,
        kind,
        catalog.is_chat(kind),
        source,
        prices,
        price_source if prices is not None else None,
    )


def listing_of(base_url: str, models: list[DiscoveredModel]) -> catalog.ListingPrices:
    """The prices a discovery read from the provider's own listing, to be kept for the add
    that follows (the price list's are not: the store reads those itself)."""
    return catalog.ListingPrices(
        base_url,
        {
            m.id: m.prices
            for m in models
            if m.prices is not None and m.price_source == catalog.FROM_PROVIDER
        },
    )


class _ListedModel(msgspec.Struct, frozen=True):
    """One entry of an OpenAI-style list, with the fields some servers add to say what the
    model is for (read leniently: any shape, ignored when unusable)."""

    id: str
    type: object = None
    capabilities: object = None
    architecture: object = None
    pricing: object = None


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


async def discover_models(
    connection: ProviderConnection, client: httpx.AsyncClient
) -> list[DiscoveredModel]:
    """The models a provider lists at ``{base}/models``, sorted by id and de-duplicated (the
    first listing of an id wins); saves nothing.

    Anthropic pages with ``limit``/``after_id`` while ``has_more``. Every failure (network, a
    non-2xx status, a body that is not a model list, the whole thing taking longer than
    ``DISCOVERY_TIMEOUT_S``) is a ``DiscoveryError`` whose message never holds a secret.
    """
    try:
        async with asyncio.timeout(DISCOVERY_TIMEOUT_S):
            if connection.type == catalog.ANTHROPIC:
                # Anthropic's models API lists chat models only.
                found = [
                    discovered(i, (catalog.CHAT, KIND_FROM_PROVIDER))
                    for i in await _anthropic_ids(connection, client)
                ]
            elif connection.type == catalog.GEMINI:
                found = await _gemini_models(connection, client)
            else:
                page = await _get_page(connection, client, {})
                found = [
                    discovered(
                        item.id,
                        listed_kind(item.id, item.type, item.capabilities, item.architecture),
                        listing_prices(item.pricing),
                    )
                    for item in page.data
                ]
    except TimeoutError:
        raise DiscoveryError(f"model discovery timed out after {DISCOVERY_TIMEOUT_S:g} s") from None
    except httpx.HTTPError as exc:
        reason = _redact(f"{type(exc).__name__}: {exc}", connection)
        raise DiscoveryError(f"{FAILED}: cannot reach the provider: {reason}") from None
    unique: dict[str, DiscoveredModel] = {}
    for model in found:
        unique.setdefault(model.id, model)
    return [unique[model_id] for model_id in sorted(unique)]


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


async def _gemini_models(
    connection: ProviderConnection, client: httpx.AsyncClient
) -> list[DiscoveredModel]:
    """Every listed model, following ``nextPageToken``; a chat model is one that takes
    ``generateContent`` (what the adapter's streamGenerateContent calls)."""
    found: list[DiscoveredModel] = []
    params: dict[str, str | int] = {"pageSize": GEMINI_PAGE_SIZE}
    for _ in range(DISCOVERY_MAX_PAGES):
        page = await _get_page(connection, client, params, _GeminiPage)
        for model in page.models:
            model_id = model.name.removeprefix("models/")
            kind = gemini_kind(model_id, model.supported_generation_methods)
            found.append(discovered(model_id, kind))
        if not page.next_page_token:
            return found
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
