"""What a provider's model listing says a model is for, read from the listing's own fields
where it has them: Gemini's ``supportedGenerationMethods``, an OpenAI-compatible server's
``type`` (Together, LM Studio), ``capabilities`` (Mistral's ``completion_chat``, or a list of
names) or ``architecture.output_modalities`` (OpenRouter). Anthropic lists chat models only.
None: the listing says nothing usable, so the id's name decides (``catalog.kind_by_name``).
Each kind comes with where it was read: a listing that only says "not chat" leaves the kind
to the name, and then the name is what is reported. Some listings publish prices too
(OpenRouter's ``pricing``), read here into our per-million-token fields."""

from __future__ import annotations

import decimal
import math
from decimal import Decimal

from store import catalog
from store.catalog import Prices
from store.catalog.model_kinds import (
    CHAT,
    EMBEDDING,
    IMAGE,
    MODERATION,
    OTHER,
    SPEECH,
    TRANSCRIPTION,
)

# An OpenAI-compatible listing's ``type`` values, lower-cased, by the kind they mean; any other
# value (Anthropic-style ``"model"`` included) says nothing.
_TYPES = {
    CHAT: {"chat", "language", "code", "llm", "vlm", "text", "text-generation", "chat-completion"},
    IMAGE: {"image", "image-generation", "text-to-image"},
    EMBEDDING: {"embedding", "embeddings"},
    MODERATION: {"moderation"},
    SPEECH: {"audio", "tts", "text-to-speech"},
    TRANSCRIPTION: {"transcribe", "transcription", "speech-to-text", "stt"},
    OTHER: {"rerank", "video"},
}
_KIND_OF_TYPE = {name: kind for kind, names in _TYPES.items() for name in names}

# OpenRouter's ``pricing`` fields (USD per token, as decimal strings) by the price field each
# fills (USD per million tokens).
_PRICING_FIELDS = {
    "prompt": "price_input_per_mtok",
    "completion": "price_output_per_mtok",
    "input_cache_read": "price_cache_read_per_mtok",
    "input_cache_write": "price_cache_write_per_mtok",
}
# The fields where "0" is a price (a free model); elsewhere it means "no such price".
_ZERO_IS_A_PRICE = {"prompt", "completion"}
_PER_MILLION = Decimal(1_000_000)

# Where a discovered model's kind was read: the provider's listing, or the id's name.
KIND_FROM_PROVIDER = "provider"
KIND_FROM_NAME = "name"

# A kind and where it was read (``KIND_FROM_PROVIDER`` or ``KIND_FROM_NAME``).
Sourced = tuple[str, str]


def _listed(kind: str | None) -> Sourced | None:
    return None if kind is None else (kind, KIND_FROM_PROVIDER)


def gemini_kind(model_id: str, methods: list[str]) -> Sourced:
    """A Gemini model's kind by the methods it supports: ``generateContent`` is what a turn
    calls, unless the name says otherwise (TTS and image models take it too:
    ``gemini-2.5-flash-preview-tts``, ``gemini-2.5-flash-image``); ``embedContent`` embeds;
    ``predict`` is Imagen's (an image model by its name)."""
    if "generateContent" in methods:
        by_name = catalog.kind_by_name(model_id)
        return (by_name, KIND_FROM_NAME) if by_name != CHAT else (CHAT, KIND_FROM_PROVIDER)
    if "embedContent" in methods or "embedText" in methods:
        return EMBEDDING, KIND_FROM_PROVIDER
    return _not_chat(model_id)


def listed_kind(
    model_id: str, type_: object, capabilities: object, architecture: object
) -> Sourced | None:
    """An OpenAI-compatible listing entry's kind by its own fields, or None."""
    found = _listed(_kind_of_type(type_))
    if found is None:
        found = _kind_of_capabilities(model_id, capabilities)
    if found is None:
        found = _listed(_kind_of_architecture(architecture))
    return found


def _kind_of_type(value: object) -> str | None:
    return _KIND_OF_TYPE.get(value.lower()) if isinstance(value, str) else None


def _kind_of_capabilities(model_id: str, value: object) -> Sourced | None:
    if isinstance(value, dict):
        chat = value.get("completion_chat", value.get("chat"))
        if isinstance(chat, bool):
            return (CHAT, KIND_FROM_PROVIDER) if chat else _not_chat(model_id)
        return None
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        names = {name.lower() for name in value}
        if names & {"chat", "completion", "completion_chat"}:
            return CHAT, KIND_FROM_PROVIDER
        if names & {"embedding", "embeddings"}:
            return EMBEDDING, KIND_FROM_PROVIDER
    return None


def _not_chat(model_id: str) -> Sourced:
    """A model its listing says does not chat: what its name says (so the name is the
    source), or else "other" (the listing's word)."""
    by_name = catalog.kind_by_name(model_id)
    return (OTHER, KIND_FROM_PROVIDER) if by_name == CHAT else (by_name, KIND_FROM_NAME)


def _kind_of_architecture(value: object) -> str | None:
    if not isinstance(value, dict):
        return None
    outputs = value.get("output_modalities")
    if not isinstance(outputs, list):
        return None
    if "text" in outputs:
        return CHAT
    if "image" in outputs:
        return IMAGE
    if "embeddings" in outputs or "embedding" in outputs:
        return EMBEDDING
    return OTHER if outputs else None


def listing_prices(pricing: object) -> Prices | None:
    """A listing entry's prices (OpenRouter's ``pricing``: USD per token as decimal strings)
    in USD per million tokens, or None when it gives no usable input or output price. A
    negative value (OpenRouter's ``"-1"`` for its router, whose price depends on the model it
    picks), a value that is not a number, or a missing one is unknown; ``"0"`` is free for
    input and output, and no price (unknown) for the cache fields, where it is how a model
    without caching is listed."""
    if not isinstance(pricing, dict):
        return None
    found = {
        field: _per_million(pricing.get(name), zero_is_a_price=name in _ZERO_IS_A_PRICE)
        for name, field in _PRICING_FIELDS.items()
    }
    if found["price_input_per_mtok"] is None and found["price_output_per_mtok"] is None:
        return None
    return Prices(**found)


def _per_million(value: object, *, zero_is_a_price: bool) -> float | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        per_token = Decimal(str(value).strip())
        if not per_token.is_finite() or per_token < 0 or (per_token == 0 and not zero_is_a_price):
            return None
        price = float(per_token * _PER_MILLION)
    except decimal.DecimalException:  # not a number, or past Decimal's exponent range
        return None
    return price if math.isfinite(price) else None
