"""The neutral projection every provider request body is built from, and the route it goes to.

The projection knows no provider format and no Cursor protobuf: the agent loop produces it from
the stored canonical messages, and each adapter turns it into its own body. Tool results are
text with optional images; assistant thinking is carried as replay state for the provider that
made it.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Any

import msgspec

from actors.conversation.model import ReplayState
from actors.conversation.secret import Secret


class ProviderType(StrEnum):
    """The provider formats: the one list every layer reads (the store's checks, the adapters'
    table, the console's API and through it its pages)."""

    OPENAI_CHAT = "openai-chat"
    OPENAI_RESPONSES = "openai-responses"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"


# The reasoning efforts each format takes: OpenAI's ``ReasoningEffort`` enum, Anthropic's
# ``output_config.effort`` values and Gemini's ``thinkingLevel`` values (``none`` is sent as
# ``thinkingBudget: 0``). ``none`` asks for no reasoning (on Anthropic: no thinking).
_OPENAI_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
REASONING_EFFORTS: dict[ProviderType, tuple[str, ...]] = {
    ProviderType.OPENAI_CHAT: _OPENAI_EFFORTS,
    ProviderType.OPENAI_RESPONSES: _OPENAI_EFFORTS,
    ProviderType.ANTHROPIC: ("none", "low", "medium", "high", "xhigh", "max"),
    ProviderType.GEMINI: ("none", "minimal", "low", "medium", "high"),
}
# The provider types whose API has OpenAI's ``POST /images/generations``.
IMAGE_PROVIDER_TYPES = (ProviderType.OPENAI_CHAT, ProviderType.OPENAI_RESPONSES)


class ToolSpec(msgspec.Struct, frozen=True):
    """A tool the model may call; ``parameters`` is a JSON schema object."""

    name: str
    description: str
    parameters: dict[str, Any]


class ProviderTextPart(msgspec.Struct, frozen=True, tag="text"):
    text: str


class ProviderImagePart(msgspec.Struct, frozen=True, tag="image"):
    mime_type: str
    data: bytes


class UserMessage(msgspec.Struct, frozen=True, tag="user"):
    """A user-role message (what the user typed, or the runtime's rendered context)."""

    parts: tuple[ProviderTextPart | ProviderImagePart, ...]


class ProviderToolCall(msgspec.Struct, frozen=True):
    """One call the assistant made; ``arguments_json`` is the exact JSON text it produced."""

    index: int
    call_id: str
    name: str
    arguments_json: str


class AssistantMessage(msgspec.Struct, frozen=True, tag="assistant"):
    """One assistant turn: its text, its calls (sorted by index) and its replay state.

    ``thinking`` is the display text of the model's reasoning; only ``replay`` is sent back.
    """

    text: str = ""
    thinking: str = ""
    replay: ReplayState | None = None
    calls: tuple[ProviderToolCall, ...] = ()


class ToolResultMessage(msgspec.Struct, frozen=True, tag="tool"):
    """A tool's result: its text, and any images it shows (each adapter places them where its
    format allows images)."""

    call_id: str
    name: str
    content: str
    images: tuple[ProviderImagePart, ...] = ()


ProjectedMessage = UserMessage | AssistantMessage | ToolResultMessage


class LlmRequest(msgspec.Struct, frozen=True):
    """Everything one provider call needs besides the route: system text, tools, history.

    ``cache_key`` names the conversation for a provider's prompt cache (OpenAI's
    ``prompt_cache_key``, sent only where the route allows it); None for a call outside one."""

    instructions: str
    tools: tuple[ToolSpec, ...]
    messages: tuple[ProjectedMessage, ...]
    cache_key: str | None = None


def conversation_cache_key(conversation_id: str) -> str:
    """The prompt-cache key of a conversation: a digest, so the provider never learns the
    editor's conversation id, stable across the conversation's runs (32 hex digits)."""
    digest = hashlib.sha256(b"cursor-server:conversation:" + conversation_id.encode())
    return digest.hexdigest()[:32]


# The effort that asks for no reasoning at all (OpenAI's ``none``; Anthropic: no thinking).
NO_EFFORT = "none"


class Reasoning(msgspec.Struct, frozen=True):
    """Whether to ask for reasoning and with which effort (never made up when absent).

    ``effort`` None leaves it to the provider's default; ``NO_EFFORT`` asks for no reasoning
    (and then ``enabled`` is False). Any other value is one the route's format accepts.
    """

    enabled: bool = False
    effort: str | None = None


class RouteKey(msgspec.Struct, frozen=True):
    """One key of a provider's pool: ``key_id`` (0 for the provider's own key), its label (what
    records and logs name) and the key, a ``Secret``."""

    key_id: int
    label: str
    secret: Secret


class ModelRoute(msgspec.Struct, frozen=True):
    """Where one call goes and with which model settings, resolved from the store.

    ``api_key`` is a ``Secret``: it is revealed only when the request headers are built. It is
    the key this attempt sends; ``keys`` is the provider's pool the ProviderActor picks each
    attempt's key from (empty: ``api_key`` is the only key, as for a route built by hand).
    """

    provider_id: int
    provider_name: str
    provider_type: ProviderType
    base_url: str
    api_key: Secret
    headers: tuple[tuple[str, str], ...]
    public_id: str
    model_id: str
    display_name: str
    max_output_tokens: int | None = None
    context_window_tokens: int | None = None
    reasoning: Reasoning = Reasoning()
    fast: bool = False
    # Send a streamed reasoning text back to the endpoint that streamed it (OpenAI Chat only).
    replay_reasoning: bool = True
    # Send the request's ``cache_key`` as ``prompt_cache_key`` (both OpenAI formats): on for
    # OpenAI's own endpoint, a provider setting elsewhere (a strict server refuses the field).
    prompt_cache_key: bool = False
    # Lower-cased names of the custom headers whose values are public; every other header
    # value is a credential, redacted like the key.
    public_headers: frozenset[str] = frozenset()
    # The model id the run's request asked for, as Cursor sent it ("default", one of Cursor's
    # ids the routing settings map, or ``public_id`` itself); "" for a call outside a run.
    asked_model_id: str = ""
    # Who the run is for (``wire.identity``: a claim of the editor's token, never the token;
    # a subagent run's is its parent's); None for a call outside a run. Kept on the run and
    # on each call record.
    user_id: str | None = None
    keys: tuple[RouteKey, ...] = ()
    # The model's ordered fallbacks: where a call goes when this route fails before its first
    # token after its retries. Each is a whole route of its own (its provider, key, format and
    # stored settings) with no fallbacks of its own.
    fallbacks: tuple[ModelRoute, ...] = ()

    def for_user(self, user_id: str) -> ModelRoute:
        """This route and its fallbacks, each for ``user_id``."""
        fallbacks = tuple(msgspec.structs.replace(f, user_id=user_id) for f in self.fallbacks)
        return msgspec.structs.replace(self, user_id=user_id, fallbacks=fallbacks)

    def chain(self) -> tuple[ModelRoute, ...]:
        """This route, then its fallbacks, in the order a call tries them."""
        return (self, *self.fallbacks)


class HttpCall(msgspec.Struct, frozen=True):
    """The one HTTP request an adapter wants sent (the transport does the IO)."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
