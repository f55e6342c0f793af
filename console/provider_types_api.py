"""Console API for the provider types: ``GET /console/api/provider-types``.

The browser app reads the types a provider may have, which of them can generate images, the
reasoning efforts each takes and whether its ``replay_reasoning`` setting does anything from
here instead of keeping its own copies, so a type added or an effort changed reaches the
provider form and the model editor unwritten. The lists are the domain's (``ProviderType`` and
the tables beside it), the same ones the store checks a save against, and the format adapters'
(``wire.providers.formats``); only the labels are the console's, one for every type (a type
without one stops the server at start with a KeyError naming it).
"""

from __future__ import annotations

import msgspec
from aiohttp import web

from actors.conversation.request import IMAGE_PROVIDER_TYPES, REASONING_EFFORTS, ProviderType
from console.json_api import API_PREFIX
from wire.providers.formats import honours_replay_reasoning

# What the provider form shows for each type (the API format it speaks).
LABELS = {
    ProviderType.OPENAI_CHAT: "OpenAI Chat Completions",
    ProviderType.OPENAI_RESPONSES: "OpenAI Responses",
    ProviderType.ANTHROPIC: "Anthropic Messages",
    ProviderType.GEMINI: "Gemini (native)",
}


class ProviderTypeInfo(msgspec.Struct, frozen=True):
    """One provider type: its id (a provider's ``type``), its label, whether its models can be
    the image model, the ``reasoning_effort`` values its models take (in the store's order;
    empty: none), and whether a provider's ``replay_reasoning`` setting does anything (its
    format's adapter says)."""

    type: str
    label: str
    generates_images: bool
    reasoning_efforts: tuple[str, ...]
    replay_reasoning: bool


def provider_types() -> list[ProviderTypeInfo]:
    """Every provider type the store takes, in its order."""
    return [
        ProviderTypeInfo(
            type=kind.value,
            label=LABELS[kind],
            generates_images=kind in IMAGE_PROVIDER_TYPES,
            reasoning_efforts=REASONING_EFFORTS[kind],
            replay_reasoning=honours_replay_reasoning(kind),
        )
        for kind in ProviderType
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
