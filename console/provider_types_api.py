"""Console API for the provider types: ``GET /console/api/provider-types``.

The browser app reads the types a provider may have, which of them can generate images and the
reasoning efforts each takes from here instead of keeping its own copies, so a type the store
adds or an effort it changes reaches the provider form and the model editor unwritten. The
lists are the store's (``store.catalog``), the same ones its rules check a save against; only
the labels are the console's, and a type without one is shown by its id.
"""

from __future__ import annotations

import msgspec
from aiohttp import web

from console.json_api import API_PREFIX
from store.catalog import IMAGE_PROVIDER_TYPES, PROVIDER_TYPES, REASONING_EFFORTS

# What the provider form shows for each type (the API format it speaks).
LABELS = {
    "openai-chat": "OpenAI Chat Completions",
    "openai-responses": "OpenAI Responses",
    "anthropic": "Anthropic Messages",
    "gemini": "Gemini (native)",
}


class ProviderTypeInfo(msgspec.Struct, frozen=True):
    """One provider type: its id (a provider's ``type``), its label, whether its models can be
    the image model, and the ``reasoning_effort`` values its models take (in the store's order;
    empty: none)."""

    type: str
    label: str
    generates_images: bool
    reasoning_efforts: tuple[str, ...]


def provider_types() -> list[ProviderTypeInfo]:
    """Every provider type the store takes, in its order."""
    return [
        ProviderTypeInfo(
            type=name,
            label=LABELS.get(name, name),
            generates_images=name in IMAGE_PROVIDER_TYPES,
            reasoning_efforts=tuple(REASONING_EFFORTS.get(name, ())),
        )
        for name in PROVIDER_TYPES
    ]


class ProviderTypesApi:
    """The provider-types route; its answer is fixed while the server runs, so it is encoded
    once."""

    def __init__(self) -> None:
        self._body = msgspec.json.encode(provider_types())

    def register(self, app: web.Application) -> None:
        app.router.add_get(f"{API_PREFIX}/provider-types", self.get_types, allow_head=False)

    async def get_types(self, request: web.Request) -> web.Response:
        return web.Response(body=self._body, content_type="application/json")
