"""The image model: one setting names it (store, both backends), the console API marks and
unmarks it with ``{"code","message"}`` refusals, and its handler (``ImageGenerator``) calls
OpenAI's images API over real HTTP against the fake provider, failing with safe words."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from actors.services.image_generation import ImageGenerator, generation_body
from store import Store
from store import catalog as cat
from tests.conftest import StartServer
from tests.console.test_console_api import Console, assert_error
from tests.support.fake_provider import FAKE_PNG, FakeProvider, Script
from wire.tools.base import ServerWorkFailed
from wire.tools.generate_image import GeneratedImage, ImageRequest

KEY = "sk-images-0123456789abcdef"


def add(store: Store, provider_type: str, model_id: str, base_url: str) -> str:
    provider = cat.create_provider(
        store.database,
        cat.ProviderInput(name=f"p-{model_id}", type=provider_type, base_url=base_url, api_key=KEY),
    )
    saved = cat.save_models(
        store.database,
        provider.id,
        [cat.ModelInput(model_id=model_id, display_name=model_id, enabled=False)],
    )
    return saved[0].public_id


# --- the store ---------------------------------------------------------------------------------


def test_one_setting_names_the_image_model_and_deleting_it_unmarks_it(opened: Store) -> None:
    db = opened.database
    assert cat.get_image_model(db) == cat.ImageModelSetting(None)
    assert not cat.has_image_model(db) and cat.image_model_connection(db) is None
    first = add(opened, "openai-chat", "gpt-image-1", "https://a.example/v1")
    second = add(opened, "openai-responses", "gpt-image-2", "https://b.example/v1")
    cat.set_image_model(db, first)
    cat.set_image_model(db, second)  # marking another replaces the mark
    assert cat.get_image_model(db).public_id == second and cat.has_image_model(db)
    found = cat.image_model_connection(db)
    assert found is not None
    model_id, connection = found
    assert (model_id, connection.base_url, connection.api_key) == (
        "gpt-image-2",
        "https://b.example/v1",
        KEY,
    )
    cat.delete_model(db, second)
    assert cat.get_image_model(db).public_id is None
    # Added again, the same model (same public id) is not an image model by surprise.
    assert add(opened, "openai-responses", "gpt-image-2", "https://b.example/v1") == second
    assert not cat.has_image_model(db)
    cat.set_image_model(db, first)
    cat.delete_provider(db, cat.list_providers(db)[0].id)
    assert cat.get_image_model(db).public_id is None


def test_only_an_existing_openai_compatible_model_can_be_marked(opened: Store) -> None:
    db = opened.database
    claude = add(opened, "anthropic", "claude-x", "https://c.example/v1")
    with pytest.raises(cat.Invalid, match="OpenAI-compatible"):
        cat.set_image_model(db, claude)
    with pytest.raises(cat.Invalid, match="there is no model 00000000"):
        cat.set_image_model(db, "00000000")
    assert cat.get_image_model(db).public_id is None


# --- the console API ---------------------------------------------------------------------------


@pytest.fixture
async def console(make_server: StartServer) -> AsyncIterator[Console]:
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as client:
        yield Console(client)


async def test_the_console_marks_and_unmarks_the_image_model(console: Console) -> None:
    provider = await console.provider(api_key=KEY)
    (saved,) = (
        await console.save(provider["id"], {"model_id": "gpt-image-1", "display_name": "I"})
    ).json()
    empty = await console.call("GET", "/settings/image-model")
    assert empty.status_code == 200 and empty.json() == {"public_id": None}
    marked = await console.call(
        "PUT", "/settings/image-model", json={"public_id": saved["public_id"]}
    )
    assert marked.status_code == 200 and marked.json() == {"public_id": saved["public_id"]}
    assert (await console.call("GET", "/settings/image-model")).json() == marked.json()
    cleared = await console.call("PUT", "/settings/image-model", json={"public_id": None})
    assert cleared.json() == {"public_id": None}
    assert all(KEY not in body for body in console.bodies)


async def test_the_console_refuses_a_model_that_cannot_generate_images(console: Console) -> None:
    claude = await console.provider(name="C", type="anthropic", base_url="https://c.example/v1")
    (saved,) = (
        await console.save(
            claude["id"], {"model_id": "claude-x", "display_name": "C", "enabled": False}
        )
    ).json()
    refused = await console.call(
        "PUT", "/settings/image-model", json={"public_id": saved["public_id"]}
    )
    assert_error(refused, 422, "invalid_argument", "public_id", "OpenAI-compatible")
    unknown = await console.call("PUT", "/settings/image-model", json={"public_id": "ffffffff"})
    assert_error(unknown, 422, "invalid_argument", "there is no model ffffffff")
    not_json = await console.call("PUT", "/settings/image-model", content=b"{")
    assert_error(not_json, 400, "invalid_argument", "not valid JSON")
    misspelt = await console.call("PUT", "/settings/image-model", json={"model": "x"})
    assert_error(misspelt, 422, "invalid_argument", "model")
    assert (await console.call("GET", "/settings/image-model")).json() == {"public_id": None}


# --- the handler -------------------------------------------------------------------------------


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as shared:
        yield shared


@pytest.fixture
def generator(server_store: Store, fake: FakeProvider, client: httpx.AsyncClient) -> ImageGenerator:
    add(server_store, "openai-chat", "gpt-image-1", fake.base_url)
    cat.set_image_model(server_store.database, cat.all_models(server_store.database)[0].public_id)
    return ImageGenerator(server_store.database, client, timeout_s=0.5)


async def test_the_handler_decodes_a_base64_answer(
    generator: ImageGenerator, fake: FakeProvider
) -> None:
    answer = await generator(ImageRequest("a cat", "1024x1024"))
    assert answer == GeneratedImage(FAKE_PNG)
    (request,) = fake.requests
    assert request.json == generation_body("gpt-image-1", ImageRequest("a cat", "1024x1024"))
    assert request.header("authorization") == f"Bearer {KEY}"
    assert "response_format" not in request.json  # GPT image models refuse it


async def test_a_url_answer_is_downloaded_without_the_providers_key(
    generator: ImageGenerator, fake: FakeProvider
) -> None:
    fake.image_scripts.append(
        Script.image_json({"created": 0, "data": [{"url": f"{fake.base_url}/files/x.png"}]})
    )
    assert await generator(ImageRequest("a cat", None)) == GeneratedImage(FAKE_PNG)
    generation, download = fake.requests
    assert "size" not in generation.json
    assert download.path == "/v1/files/x.png" and download.header("authorization") is None


@pytest.mark.parametrize(
    ("script", "error"),
    [
        (Script.hang_before_headers(), "the image model did not answer within 0.5 s"),
        (
            Script.error(400, {"error": {"message": f"bad prompt for key {KEY}"}}),
            "the image model refused (400): bad prompt for key [redacted]",
        ),
        (
            Script.error(307, {"error": {"message": "moved"}}),
            "the image model refused (307): moved",
        ),
        (Script.image_json({"created": 0, "data": []}), "the image model answered with no image"),
        (
            Script.image_json({"data": [{"b64_json": "not base64!"}]}),
            "the image model's b64_json is not base64",
        ),
        (
            Script.raw([b"<html>"], content_type="text/html"),
            "the image model's answer is not the images API's JSON",
        ),
    ],
)
async def test_every_failure_is_an_answer_in_safe_words(
    generator: ImageGenerator, fake: FakeProvider, script: Script, error: str
) -> None:
    fake.image_scripts.append(script)
    answer = await asyncio.wait_for(generator(ImageRequest("a cat", None)), 5)
    assert answer == ServerWorkFailed(error)


async def test_without_an_image_model_the_handler_says_so(
    server_store: Store, client: httpx.AsyncClient
) -> None:
    handler = ImageGenerator(server_store.database, client)
    assert await handler(ImageRequest("a cat", None)) == ServerWorkFailed(
        "no image model is marked in the server's console"
    )


async def test_an_unreachable_image_model_is_named_by_the_failures_kind(
    server_store: Store, client: httpx.AsyncClient
) -> None:
    public_id = add(server_store, "openai-chat", "gpt-image-1", "http://127.0.0.1:9/v1")
    cat.set_image_model(server_store.database, public_id)
    handler = ImageGenerator(server_store.database, client)
    answer: Any = await handler(ImageRequest("a cat", None))
    assert answer == ServerWorkFailed("could not reach the image model (ConnectError)")
