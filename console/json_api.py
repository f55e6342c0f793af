"""What the console's JSON routes for providers, models and settings share: their errors, bodies,
answers and store calls.

Every answer is JSON; every error is ``{"code","message"}`` (400 malformed JSON, 422 a value
that breaks a rule, 404 unknown, 409 forbidden by the current data, 502 provider trouble), never
aiohttp's plain text. A 422 also carries ``fields``: every broken field with its own message
(``[{"field": "base_url", "message": "..."}]``), so a form shows each at its place at once; it
is ``[]`` only when the body names no field (not a JSON object at all).
Request bodies decode straight into the store's msgspec Structs, which
refuse unknown fields so a typo (``apikey``) is an error instead of a silently ignored value.

The database is synchronous (peewee), so every store call runs in ``asyncio.to_thread``: the
event loop also carries the agent streams and must never wait on a disk write.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec, TypeVar

import msgspec
import peewee
from aiohttp import web

from console.numbers import bigint_of
from console.typed_errors import typed_message, typed_problem
from store import catalog
from wire.http.responses import json_error
from wire.json_input import decode_json

API_PREFIX = "/console/api"

T = TypeVar("T")
P = ParamSpec("P")
Api = TypeVar("Api")
Method = Callable[[Api, web.Request], Awaitable[web.StreamResponse]]


class FieldProblem(msgspec.Struct, frozen=True):
    """One broken field of a refused request, and what is wrong with it (without the id)."""

    field: str
    message: str


class InvalidAnswer(msgspec.Struct, frozen=True):
    """A 422's body: the usual ``code`` and ``message`` and every broken field."""

    code: str
    message: str
    fields: list[FieldProblem]


class ApiError(Exception):
    """An error answer: HTTP status, error code and a message safe to show; ``fields`` the
    broken fields when the request names them."""

    def __init__(
        self, status: int, code: str, message: str, fields: tuple[FieldProblem, ...] = ()
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields


def error_answer(exc: ApiError) -> web.Response:
    """``exc`` as its JSON answer, with ``fields`` when it is a 422 (every 422 has them)."""
    if not exc.fields and exc.status != 422:
        return json_error(exc.status, exc.code, exc.message)
    body = InvalidAnswer(exc.code, exc.message, list(exc.fields))
    return json_response(body, status=exc.status)


def invalid_error(exc: catalog.Invalid) -> ApiError:
    """A catalog refusal as a 422 naming each broken field; the problems it left out are one
    last entry without a field (``and 7 more problems``)."""
    fields = tuple(FieldProblem(field, message) for field, message in exc.problems)
    if exc.more:
        fields += (FieldProblem("", catalog.more_problems(exc.more)),)
    return ApiError(422, "invalid_argument", exc.message, fields)


def answers_errors(method: Method[Api]) -> Method[Api]:
    """Turn the errors a handler raises into ``{"code","message"}`` answers."""

    @functools.wraps(method)
    async def wrapper(self: Api, request: web.Request) -> web.StreamResponse:
        try:
            return await method(self, request)
        except ApiError as exc:
            return error_answer(exc)
        except catalog.Invalid as exc:
            return error_answer(invalid_error(exc))
        except catalog.NotFound as exc:
            return json_error(404, "not_found", exc.message)
        except catalog.Conflict as exc:
            return json_error(409, exc.code, exc.message)
        except catalog.KeyUnreadable as exc:
            return json_error(409, "failed_precondition", exc.message)

    return wrapper


async def decode_body(request: web.Request, type_: type[T]) -> T:
    """The request body as ``type_``: 400 if it is not JSON, 422 if it does not fit the type.

    msgspec's messages name the field and the expected type, never the value sent.
    """
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ApiError(413, "resource_exhausted", "request body is too large") from None
    return decode_body_bytes(body, type_)


def decode_body_bytes(body: bytes, type_: type[T]) -> T:
    """The bytes of a request body as ``type_`` (``decode_body`` without the read)."""
    try:
        return decode_json(body, type=type_)
    except msgspec.ValidationError as exc:
        raise typed_error(exc, type_) from None
    except msgspec.DecodeError as exc:
        raise ApiError(400, "invalid_argument", f"request body is not valid JSON: {exc}") from None


def typed_error(exc: msgspec.ValidationError, type_: object) -> ApiError:
    """A body that does not fit ``type_`` as a 422 naming its field in words; neither the
    message nor the field holds the value sent (msgspec quotes a choice's value)."""
    problem = typed_problem(str(exc), type_)
    if problem is None:
        return ApiError(422, "invalid_argument", f"invalid request body: {typed_message(str(exc))}")
    field, words = problem
    message = f"invalid request body: {field}: {words}"
    return ApiError(422, "invalid_argument", message, (FieldProblem(field, words),))


def json_response(value: object, status: int = 200) -> web.Response:
    return web.Response(
        status=status, body=msgspec.json.encode(value), content_type="application/json"
    )


def provider_id_of(request: web.Request) -> int:
    """The ``{provider_id}`` path part; anything but a row id is an unknown provider (404)."""
    text = request.match_info["provider_id"]
    provider_id = bigint_of(text)
    if provider_id is None:
        raise ApiError(404, "not_found", f"provider {text} not found")
    return provider_id


async def in_thread(
    database: peewee.Database,
    fn: Callable[Concatenate[peewee.Database, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """Run a synchronous store function on ``database`` off the event loop."""
    return await asyncio.to_thread(fn, database, *args, **kwargs)
