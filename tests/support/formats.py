"""One agent turn scripted in each of the provider formats, for end-to-end tool tests.

A ``ProviderFormat`` configures the fake provider as a provider of that format in the test
server's store, builds the SSE scripts of a tool round and of a final answer in that format,
and reads back what the model was sent: the tool results of a request body and the names of
the tools offered. Tests parametrize over ``FORMATS`` so each tool is proven in every format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from store import Store
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from tests.support.fake_provider import (
    FakeProvider,
    FakeToolCall,
    Script,
    anthropic_events,
    chat_events,
    gemini_events,
    responses_events,
)

FAKE_FORMAT_KEY = "sk-fake-format-key"


def _text_of(content: Any) -> str:
    """A tool result's text: a plain string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


@dataclass(frozen=True)
class ProviderFormat:
    """One provider format: its store type and how its requests and answers look."""

    type: str

    @property
    def streams_arguments(self) -> bool:
        """Whether a call's arguments arrive in pieces; Gemini sends each call whole."""
        return self.type != "gemini"

    def add_model(self, store: Store, fake: FakeProvider) -> str:
        """The fake provider as a provider of this format with one model; its public id."""
        provider = create_provider(
            store.database,
            ProviderInput(
                name=f"fake-{self.type}",
                type=self.type,
                base_url=fake.base_url,
                api_key=FAKE_FORMAT_KEY,
            ),
        )
        model = ModelInput(
            model_id="fake-model",
            display_name="Fake",
            context_window_tokens=128000,
            max_output_tokens=8192,
        )
        return save_models(store.database, provider.id, [model])[0].public_id

    def tool_round(self, tools: Sequence[FakeToolCall], text: Sequence[str] = ()) -> Script:
        """The model answers with these tool calls (and optional text before them)."""
        match self.type:
            case "openai-chat":
                return Script.sse(chat_events(text=text, tools=tools))
            case "openai-responses":
                return Script.sse(responses_events(text=text, tools=tools))
            case "gemini":
                return Script.sse(gemini_events(text=text, tools=tools))
            case _:
                return Script.sse(anthropic_events(text=text, tools=tools))

    def answer(self, *text: str) -> Script:
        """The model's final text answer."""
        match self.type:
            case "openai-chat":
                return Script.sse(chat_events(text=text))
            case "openai-responses":
                return Script.sse(responses_events(text=text))
            case "gemini":
                return Script.sse(gemini_events(text=text))
            case _:
                return Script.sse(anthropic_events(text=text))

    def tool_results(self, body: dict[str, Any]) -> dict[str, str]:
        """The tool results a request body holds: call id -> the text the model reads."""
        results: dict[str, str] = {}
        match self.type:
            case "openai-chat":
                for message in body["messages"]:
                    if message["role"] == "tool":
                        results[message["tool_call_id"]] = _text_of(message["content"])
            case "openai-responses":
                for item in body["input"]:
                    if item.get("type") == "function_call_output":
                        results[item["call_id"]] = _text_of(item["output"])
            case "gemini":
                for content in body["contents"]:
                    for part in content["parts"]:
                        if "functionResponse" in part:
                            response = part["functionResponse"]
                            results[response["id"]] = response["response"]["output"]
            case _:
                for message in body["messages"]:
                    if isinstance(message["content"], str):
                        continue
                    for block in message["content"]:
                        if block.get("type") == "tool_result":
                            results[block["tool_use_id"]] = _text_of(block["content"])
        return results

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        """The text of each user message of a request body, tool results left out (Gemini
        sends a round's responses and the next user text in one ``user`` content: its text)."""
        if self.type == "gemini":
            return [
                text
                for content in body["contents"]
                if content["role"] == "user"
                if (text := _text_of(content["parts"]))
            ]
        items = body["input"] if self.type == "openai-responses" else body["messages"]
        return [
            text
            for item in items
            if item.get("role") == "user"
            if (text := _text_of(item["content"]))
        ]

    def system_prompt(self, body: dict[str, Any]) -> str:
        """The system prompt a request body carries."""
        match self.type:
            case "openai-chat":
                assert body["messages"][0]["role"] == "system"
                return str(body["messages"][0]["content"])
            case "openai-responses":
                return str(body["instructions"])
            case "gemini":
                return _text_of(body["systemInstruction"]["parts"])
            case _:
                return _text_of(body["system"])

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        """The names of the tools offered, in the order sent."""
        if self.type == "openai-chat":
            return [tool["function"]["name"] for tool in body.get("tools", [])]
        if self.type == "gemini":
            tools = body.get("tools") or [{"functionDeclarations": []}]
            return [tool["name"] for tool in tools[0]["functionDeclarations"]]
        return [tool["name"] for tool in body.get("tools", [])]


# Gemini comes last: one-format tests pick FORMATS[0], [1] or [2] by position.
GEMINI = ProviderFormat("gemini")
FORMATS = (
    ProviderFormat("openai-chat"),
    ProviderFormat("openai-responses"),
    ProviderFormat("anthropic"),
    GEMINI,
)
FORMAT_IDS = [fmt.type for fmt in FORMATS]
# A Gemini ``functionCall`` carries ``args`` as a parsed object, so a model's argument text that
# is not a JSON object (malformed, truncated, a bare value) cannot be streamed in it: the tests
# of such arguments run over these formats only.
RAW_ARGUMENT_FORMATS = tuple(fmt for fmt in FORMATS if fmt is not GEMINI)
RAW_ARGUMENT_IDS = [fmt.type for fmt in RAW_ARGUMENT_FORMATS]
