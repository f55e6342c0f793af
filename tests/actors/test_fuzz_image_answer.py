"""An image model's ``b64_json`` that is not ASCII (found while fuzzing the checkpoint's image
parts: ``base64.b64decode`` raises a plain ValueError for it, not ``binascii.Error``) is an
answer in safe words like any other bad base64, not an exception out of the generator."""

from __future__ import annotations

import asyncio

from actors.services.image_generation import ImageGenerator
from tests.console.test_image_model import client, generator  # noqa: F401 (fixtures)
from tests.support.fake_provider import FakeProvider, Script
from wire.tools.base import ServerWorkFailed
from wire.tools.generate_image import ImageRequest


async def test_non_ascii_b64_json_is_not_base64(
    generator: ImageGenerator,  # noqa: F811
    fake: FakeProvider,
) -> None:
    fake.image_scripts.append(Script.image_json({"data": [{"b64_json": "é"}]}))
    answer = await asyncio.wait_for(generator(ImageRequest("a cat", None)), 5)
    assert answer == ServerWorkFailed("the image model's b64_json is not base64")
