"""The provider formats by provider type: the one table from a configured type to its adapter.

Apart from ``adapter`` so that the format modules, which build on ``adapter``'s interface and
helpers, and the lookup that names them do not import each other.
"""

from __future__ import annotations

from collections.abc import Callable

from actors.conversation.request import ProviderType
from wire.providers.adapter import ProviderAdapter
from wire.providers.anthropic import AnthropicAdapter
from wire.providers.gemini import GeminiAdapter
from wire.providers.openai_chat import OpenAiChatAdapter
from wire.providers.openai_responses import OpenAiResponsesAdapter

ADAPTERS: dict[ProviderType, Callable[[], ProviderAdapter]] = {
    ProviderType.OPENAI_CHAT: OpenAiChatAdapter,
    ProviderType.OPENAI_RESPONSES: OpenAiResponsesAdapter,
    ProviderType.ANTHROPIC: AnthropicAdapter,
    ProviderType.GEMINI: GeminiAdapter,
}


def adapter_for(provider_type: ProviderType) -> ProviderAdapter:
    """The adapter for a configured provider type."""
    return ADAPTERS[ProviderType(provider_type)]()


def honours_replay_reasoning(provider_type: ProviderType) -> bool:
    """Whether a provider's ``replay_reasoning`` setting does anything for this type."""
    return adapter_for(provider_type).honours_replay_reasoning
