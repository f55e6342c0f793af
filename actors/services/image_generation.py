"""The server work behind GenerateImage: one ``POST {base_url}/images/generations``.

The image model is the one marked in the console (``store.catalog.set_image_model``), read
when the work starts, on a thread (the handler runs on the loop). Its provider's key and
custom headers go in the request and nowhere else: a refusal is answered with the provider's
own words with every credential replaced, a transport failure by its kind only, and the log
line names the provider and the status, never a header. ``response_format`` is not sent (the
GPT image models refuse it and always answer base64); an answer holding a ``url`` instead (the
DALL-E default) is fetched without the provider's headers, since the URL is signed and on
another host.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any

import httpx
import msgspec
import peewee

from actors.providers.transport import read_error_body
from store.catalog import KeyUnreadable, ProviderConnection, image_model_connection
from wire.json_input import decode_json
from wire.log import log_event
from wire.providers.adapter import provider_error_message
from wire.providers.redaction import credential_strings, scrub_text
from wire.tools.base import ServerWorkFailed
from wire.tools.generate_image import GeneratedImage, ImageRequest

logger = logging.getLogger("cursor_server.image_generation")

# One image, from the request to its last byte (a URL answer's download included).
IMAGE_GENERATION_TIMEOUT_S = 180.0
# An answer (base64 JSON, or the downloaded file) larger than this is refused unread.
MAX_IMAGE_ANSWER_BYTES = 48 * 1024 * 1024


class _Image(msgspec.Struct, frozen=True):
    b64_json: str | None = None
    url: str | None = None


class _ImagesResponse(msgspec.Struct, frozen=True):
    data: list[_Image] = []


class _Failed(Exception):
    """The work fails with ``message`` (safe for the model: no credential in it)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def generation_body(model_id: str, request: ImageRequest) -> dict[str, Any]:
    """The request body: one image of the prompt, at the size asked for (else the default)."""
    body: dict[str, Any] = {"model": model_id, "prompt": request.prompt, "n": 1}
    if request.size is not None:
        body["size"] = request.size
    return body


def _headers(connection: ProviderConnection) -> dict[str, str]:
    headers = {"authorization": f"Bearer {connection.api_key}"} if connection.api_key else {}
    headers.update(connection.headers)
    return headers


async def _read(response: httpx.Response, limit: int) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise _Failed(f"the image model's answer is larger than {limit} bytes")
    return bytes(body)


class ImageGenerator:
    """The ``ImageRequest`` handler ``actors.services.handlers.server_work_handlers`` registers."""

    def __init__(
        self,
        database: peewee.Database,
        client: httpx.AsyncClient,
        timeout_s: float = IMAGE_GENERATION_TIMEOUT_S,
    ) -> None:
        self._db = database
        self._client = client
        self._timeout_s = timeout_s

    async def __call__(self, request: ImageRequest) -> GeneratedImage | ServerWorkFailed:
        try:
            found = await asyncio.to_thread(image_model_connection, self._db)
        except KeyUnreadable as exc:
            log_event(logger, logging.WARNING, "image model key unreadable", reason=exc.message)
            return ServerWorkFailed(exc.message)
        if found is None:
            return ServerWorkFailed("no image model is marked in the server's console")
        model_id, connection = found
        secrets = credential_strings(
            connection.api_key, connection.headers.items(), connection.public_headers
        )
        try:
            async with asyncio.timeout(self._timeout_s):
                data = await self._generate(model_id, connection, request)
        except TimeoutError:
            failure = f"the image model did not answer within {self._timeout_s:g} s"
        except _Failed as exc:
            failure = scrub_text(exc.message, secrets)
        except httpx.HTTPError as exc:
            failure = f"could not reach the image model ({type(exc).__name__})"
        else:
            return GeneratedImage(data)
        log_event(
            logger,
            logging.WARNING,
            "image generation failed",
            provider_id=connection.provider_id,
            model=model_id,
            error=failure,
        )
        return ServerWorkFailed(failure)

    async def _generate(
        self, model_id: str, connection: ProviderConnection, request: ImageRequest
    ) -> bytes:
        url = f"{connection.base_url.rstrip('/')}/images/generations"
        body = msgspec.json.encode(generation_body(model_id, request))
        headers = {**_headers(connection), "content-type": "application/json"}
        async with self._client.stream("POST", url, content=body, headers=headers) as response:
            if not response.is_success:  # a redirect too: it is never followed
                error = await _read_error(response)
                raise _Failed(f"the image model refused ({response.status_code}): {error}")
            answer = await _read(response, MAX_IMAGE_ANSWER_BYTES)
        try:
            images = decode_json(answer, type=_ImagesResponse).data
        except msgspec.DecodeError:
            raise _Failed("the image model's answer is not the images API's JSON") from None
        if not images:
            raise _Failed("the image model answered with no image")
        image = images[0]
        if image.b64_json:
            try:
                return base64.b64decode(image.b64_json, validate=True)
            except ValueError:  # binascii.Error, and ValueError for a non-ASCII string
                raise _Failed("the image model's b64_json is not base64") from None
        if image.url:
            return await self._download(image.url)
        raise _Failed("the image model's answer holds neither b64_json nor url")

    async def _download(self, url: str) -> bytes:
        async with self._client.stream("GET", url) as response:
            if not response.is_success:
                status = response.status_code
                raise _Failed(f"the generated image could not be downloaded ({status})")
            return await _read(response, MAX_IMAGE_ANSWER_BYTES)


async def _read_error(response: httpx.Response) -> str:
    return provider_error_message(await read_error_body(response))
