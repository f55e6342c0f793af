"""What discovery says each model is for, by the listing's own metadata where a server gives
some and by name otherwise; the price list the console reads; prices filled from it when a
model is added and never over a price the user set; a model added by hand by its id; and the
image model refused for a model that does not generate images. Over a real server and the fake
provider on loopback."""

from __future__ import annotations

from typing import Any

import pytest

from store import catalog as cat
from tests.console.test_console_api import Console, assert_error, console
from tests.support.fake_provider import FakeProvider

__all__ = ["console"]

PRICES = cat.PRICE_FIELDS


def by_id(answer: dict[str, Any]) -> dict[str, tuple[str, bool, str]]:
    return {m["id"]: (m["kind"], m["chat"], m["kind_from"]) for m in answer["models"]}


async def test_an_openai_compatible_listing_is_read_by_its_metadata_else_by_name(
    console: Console,
) -> None:
    names = [
        "gpt-4o",
        "text-embedding-3-small",
        "whisper-1",
        "gpt-image-1",
        "together-chat",
        "together-embed-v2",
        "mistral-large",
        "mistral-embed",
        "router-chat",
        "router-painter",
        "studio-llm",
        "studio-nomic",
    ]
    async with FakeProvider(models=names) as fake:
        fake.listing_extra = {
            "together-chat": {"type": "chat"},
            "together-embed-v2": {"type": "embedding"},
            "mistral-large": {"capabilities": {"completion_chat": True, "vision": False}},
            "mistral-embed": {"capabilities": {"completion_chat": False}},
            "router-chat": {"architecture": {"output_modalities": ["text"]}},
            "router-painter": {"architecture": {"output_modalities": ["image"]}},
            "studio-llm": {"type": "llm"},
            "studio-nomic": {"type": "embeddings"},
            "gpt-4o": {"type": 7, "capabilities": "odd"},  # unusable shapes say nothing
        }
        provider = await console.provider(base_url=fake.base_url)
        answer = await console.call("POST", f"/providers/{provider['id']}/models/discover")
    assert answer.status_code == 200, answer.text
    assert by_id(answer.json()) == {
        "gpt-4o": ("chat", True, "name"),
        "gpt-image-1": ("image", False, "name"),
        # The listing says only "not chat"; the kind is the name's, so the name is the source.
        "mistral-embed": ("embedding", False, "name"),
        "mistral-large": ("chat", True, "provider"),
        "router-chat": ("chat", True, "provider"),
        "router-painter": ("image", False, "provider"),
        "studio-llm": ("chat", True, "provider"),
        "studio-nomic": ("embedding", False, "provider"),
        "text-embedding-3-small": ("embedding", False, "name"),
        "together-chat": ("chat", True, "provider"),
        "together-embed-v2": ("embedding", False, "provider"),
        "whisper-1": ("transcription", False, "name"),
    }


async def test_a_gemini_listing_is_read_by_its_generation_methods(console: Console) -> None:
    names = [
        "gemini-2.5-flash",
        "imagen-4.0-generate-001",
        "gemini-live-x",
        "gemini-2.5-flash-preview-tts",
        "gemini-2.5-flash-image",
    ]
    async with FakeProvider(models=names, models_style="gemini") as fake:
        fake.listing_extra = {
            "imagen-4.0-generate-001": {"supportedGenerationMethods": ["predict"]},
            "gemini-live-x": {"supportedGenerationMethods": ["bidiGenerateContent"]},
            # Gemini lists TTS and image models with generateContent, as its chat models.
            "gemini-2.5-flash-preview-tts": {
                "supportedGenerationMethods": ["countTokens", "generateContent"]
            },
            "gemini-2.5-flash-image": {
                "supportedGenerationMethods": ["generateContent", "countTokens"]
            },
        }
        provider = await console.provider(type="gemini", base_url=fake.base_url)
        answer = await console.call("POST", f"/providers/{provider['id']}/models/discover")
    found = by_id(answer.json())
    assert found["gemini-2.5-flash"] == ("chat", True, "provider")
    assert found["imagen-4.0-generate-001"] == ("image", False, "name")
    assert found["gemini-live-x"] == ("other", False, "provider")
    assert found["gemini-2.5-flash-preview-tts"] == ("speech", False, "name")
    assert found["gemini-2.5-flash-image"] == ("image", False, "name")


async def test_a_provider_that_lists_nothing_answers_an_empty_list(console: Console) -> None:
    async with FakeProvider(models=[]) as fake:
        provider = await console.provider(base_url=fake.base_url)
        answer = await console.call("POST", f"/providers/{provider['id']}/models/discover")
    assert answer.status_code == 200 and answer.json() == {"models": []}


async def test_the_price_list_route_names_its_source_and_date(console: Console) -> None:
    answer = await console.call("GET", "/price-list")
    assert answer.status_code == 200
    listed = answer.json()
    assert set(listed) == {"source", "as_of", "models", "makers"}
    assert listed["makers"]["anthropic"] == ["claude-"]
    assert "OpenAI" in listed["source"] and listed["as_of"][:2] == "20"
    assert listed["models"]["gpt-4o"]["price_input_per_mtok"] > 0
    assert set(listed["models"]["claude-sonnet-4-5"]) == set(PRICES)


async def test_added_models_get_list_prices_and_a_users_price_is_never_replaced(
    console: Console,
) -> None:
    listed = (await console.call("GET", "/price-list")).json()["models"]
    pid = (await console.provider(type="anthropic", base_url="https://a.example/v1"))["id"]
    added = await console.save(
        pid,
        {"model_id": "claude-sonnet-4-5", "display_name": "Sonnet", "enabled": False},
        {"model_id": "claude-private", "display_name": "Private", "enabled": False},
    )
    sonnet, private = added.json()
    assert {field: sonnet[field] for field in PRICES} == listed["claude-sonnet-4-5"]
    assert sonnet["price_source"] == "list"
    assert {field: private[field] for field in PRICES} == dict.fromkeys(PRICES)
    assert private["price_source"] is None
    # The user sets a price (the editor sends every field): it is theirs from then on.
    mine = {**dict.fromkeys(PRICES), "price_input_per_mtok": 2.0, "price_output_per_mtok": 9.0}
    edited = await console.save(
        pid, {"model_id": "claude-sonnet-4-5", "display_name": "Sonnet", "enabled": False, **mine}
    )
    assert edited.json()[0]["price_source"] == "user"
    # Discovered and added again, as the discovery checklist sends it: the price stays.
    again = await console.save(
        pid, {"model_id": "claude-sonnet-4-5", "display_name": "Sonnet", "enabled": False}
    )
    assert {field: again.json()[0][field] for field in PRICES} == mine
    assert again.json()[0]["price_source"] == "user"
    (stored,) = [
        m
        for m in (await console.call("GET", "/models")).json()
        if m["model_id"] != "claude-private"
    ]
    assert (stored["price_input_per_mtok"], stored["price_source"]) == (2.0, "user")


@pytest.mark.parametrize(
    ("typed", "fragment"),
    [
        ("  ", "cannot be empty"),
        ("gpt 4o", "cannot contain spaces or control characters"),
        ("gpt\t4o", "cannot contain spaces or control characters"),
        ("gpt\x004o", "cannot contain spaces or control characters"),
    ],
)
async def test_a_model_id_typed_by_hand_is_checked(
    console: Console, typed: str, fragment: str
) -> None:
    pid = (await console.provider())["id"]
    answer = await console.save(pid, {"model_id": typed, "display_name": "x"})
    assert_error(answer, 422, "invalid_argument", "models[0].model_id", fragment)
    assert (await console.call("GET", "/models")).json() == []


async def test_only_an_image_model_can_be_marked_for_images(console: Console) -> None:
    pid = (await console.provider())["id"]
    chat, image = (
        await console.save(
            pid,
            {"model_id": "gpt-4o", "display_name": "GPT-4o"},
            {"model_id": "gpt-image-1", "display_name": "Image", "enabled": False},
        )
    ).json()
    assert (chat["kind"], image["kind"]) == ("chat", "image")
    refused = await console.call(
        "PUT", "/settings/image-model", json={"public_id": chat["public_id"]}
    )
    assert_error(refused, 422, "invalid_argument", "public_id", "does not generate images")
    marked = await console.call(
        "PUT", "/settings/image-model", json={"public_id": image["public_id"]}
    )
    assert marked.status_code == 200 and marked.json() == {"public_id": image["public_id"]}
    bad_kind = await console.save(pid, {"model_id": "x", "display_name": "x", "kind": "painter"})
    assert_error(bad_kind, 422, "invalid_argument", "models[0].kind", "chat, image")
    assert "painter" not in bad_kind.text  # the value is never echoed
    # The record says what the kind means, so a client never restates the rule.
    assert (chat["chat"], chat["generates_images"]) == (True, False)
    assert (image["chat"], image["generates_images"]) == (False, True)


async def test_adding_by_id_an_id_already_saved_is_refused_and_changes_nothing(
    console: Console,
) -> None:
    pid = (await console.provider())["id"]
    mine = {"price_input_per_mtok": 1.25, "price_output_per_mtok": 5.0}
    (saved,) = (
        await console.save(
            pid, {"model_id": "gpt-4o", "display_name": "Mine", "sort_order": 7, **mine}
        )
    ).json()
    body = {"models": [{"model_id": "gpt-4o", "display_name": "gpt-4o"}], "only_new": True}
    refused = await console.call("POST", f"/providers/{pid}/models", json=body)
    assert_error(
        refused, 422, "invalid_argument", "models[0].model_id", "already has the model gpt-4o"
    )
    assert (await console.call("GET", "/models")).json() == [saved]
    added = {"models": [{"model_id": "gpt-4.1", "display_name": "gpt-4.1"}], "only_new": True}
    (new,) = (await console.call("POST", f"/providers/{pid}/models", json=added)).json()
    assert new["price_source"] == "list" and new["price_list_as_of"] == cat.price_list().as_of
