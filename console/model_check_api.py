"""The console's model checks: ``POST /console/api/models/{public_id}/test`` and
``…/check-tools``.

Both send real requests through the ProviderActor on the route a run would take (the stored
model and provider, no Cursor parameters; a disabled model is checked too and the answer says
``model_enabled: false``), so each call is recorded in ``llm_calls`` with no run. A check
that ran answers 200 with its verdict in the body, the provider's refusal included; an unknown
model is 404, a check that outlived ``timeout_s`` (``MODEL_CHECK_TIMEOUT_S`` per provider call)
is 504 ``deadline_exceeded``. Nothing here blocks the loop: the store is read in a thread and
the call is awaited through the bridge (``console.provider_call``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import peewee
from aiohttp import web

from actors.conversation.events import Usage
from actors.conversation.request import LlmRequest, ModelRoute
from actors.providers.actor import ProviderDeps
from actors.run.model_selection import ModelSelectionError, stored_model_route
from console import model_checks
from console.model_checks import Step
from console.provider_call import AwaitedCall, CallTimedOut, await_provider_call
from store.catalog import KeyUnreadable, model_route_parts
from store.llm_calls import CallStatus
from wire.http.responses import connect_error_response, json_error
from wire.log import log_event
from wire.providers.grammar import CallResult
from wire.providers.redaction import route_secrets, scrub_text

logger = logging.getLogger("cursor_server.console")

API_PREFIX = "/console/api"
# One provider call of a check must end within this many seconds (then it is cancelled, 504).
MODEL_CHECK_TIMEOUT_S = 60.0


class ModelCheckDeps(msgspec.Struct, frozen=True):
    """What the checks need from the composition root: the ProviderActors' deps, the bound."""

    provider: ProviderDeps
    timeout_s: float = MODEL_CHECK_TIMEOUT_S


class PingAnswered(msgspec.Struct, frozen=True):
    """The provider answered: its text (credentials removed), times in ms, reported usage."""

    answer: str
    finish_reason: str
    ttfb_ms: float | None
    ttft_ms: float | None
    total_ms: float
    usage: Usage
    call_id: int | None
    model_enabled: bool
    ok: bool = True


class PingRefused(msgspec.Struct, frozen=True):
    """The provider (or the request's configuration) refused: its message as recorded."""

    error: str
    http_status: int | None
    call_id: int | None
    model_enabled: bool
    ok: bool = False


class ToolCheck(msgspec.Struct, frozen=True):
    steps: list[Step]
    ok: bool
    model_enabled: bool


class _Refusal(Exception):
    """An error answer: HTTP status, code and a message safe to show."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


Handler = Callable[[Any, web.Request], Awaitable[web.StreamResponse]]


def _answers_errors(method: Handler) -> Handler:
    @functools.wraps(method)
    async def wrapper(self: Any, request: web.Request) -> web.StreamResponse:
        try:
            return await method(self, request)
        except _Refusal as exc:
            return json_error(exc.status, exc.code, exc.message)
        except ModelSelectionError as exc:
            return connect_error_response(exc.error)
        except CallTimedOut as exc:
            return json_error(504, "deadline_exceeded", f"model check failed: {exc}")

    return wrapper


def _json(value: object) -> web.Response:
    return web.Response(body=msgspec.json.encode(value), content_type="application/json")


class ModelCheckApi:
    """The two check routes; without ``deps`` (no provider actors) they answer 503."""

    def __init__(self, database: peewee.Database, deps: ModelCheckDeps | None) -> None:
        self._db = database
        self._deps = deps

    def register(self, app: web.Application) -> None:
        router = app.router
        router.add_post(f"{API_PREFIX}/models/{{public_id}}/test", self.test_model)
        router.add_post(f"{API_PREFIX}/models/{{public_id}}/check-tools", self.check_tools)

    @_answers_errors
    async def test_model(self, request: web.Request) -> web.StreamResponse:
        route, enabled = await self._route(request.match_info["public_id"])
        awaited = await self._call(route, model_checks.ping_request())
        ended, result = awaited.ended, _result_of(awaited)
        if result is None:
            message, http_status = _refusal_of(awaited)
            return _json(PingRefused(message, http_status, ended.record_id, enabled))
        answer = scrub_text(result.text, route_secrets(route))
        usage = result.usage or Usage()
        return _json(
            PingAnswered(
                answer,
                result.finish.value,
                _ms(awaited.ttfb_ms),
                _ms(awaited.ttft_ms),
                round(awaited.total_ms, 1),
                usage,
                ended.record_id,
                enabled,
            )
        )

    @_answers_errors
    async def check_tools(self, request: web.Request) -> web.StreamResponse:
        route, enabled = await self._route(request.match_info["public_id"])
        first = await self._call(route, model_checks.tool_call_request())
        step_one = _judged(first, route, model_checks.STEP_TOOL_CALL, model_checks.judge_tool_call)
        result = _result_of(first)
        if not step_one.ok or result is None:
            skipped = Step(model_checks.STEP_REPLAY, False, model_checks.NOT_RUN)
            return _json(ToolCheck([step_one, skipped], False, enabled))
        replay = model_checks.replay_request(result, first.ended.model_call_id)
        second = await self._call(route, replay)
        step_two = _judged(second, route, model_checks.STEP_REPLAY, model_checks.judge_replay)
        steps = [step_one, step_two]
        return _json(ToolCheck(steps, model_checks.overall(steps), enabled))

    async def _route(self, public_id: str) -> tuple[ModelRoute, bool]:
        """The route a run would take to the model, and whether the model is enabled; a check
        sends the provider's own key (the first), never another key of its pool."""
        try:
            parts = await asyncio.to_thread(model_route_parts, self._db, public_id)
        except peewee.DatabaseError as exc:
            raise _Refusal(500, "internal", f"store error: {exc}") from None
        except KeyUnreadable as exc:
            raise _Refusal(409, "failed_precondition", exc.message) from None
        if parts is None:
            raise _Refusal(404, "not_found", f"model {public_id} not found")
        record, _connection = parts
        route = msgspec.structs.replace(stored_model_route(*parts), keys=())
        return route, record.enabled

    async def _call(self, route: ModelRoute, request: LlmRequest) -> AwaitedCall:
        if self._deps is None:
            raise _Refusal(503, "unavailable", "model checks need the provider actors")
        try:
            awaited = await await_provider_call(
                self._deps.provider, route, request, self._deps.timeout_s
            )
        except CallTimedOut:
            log_event(
                logger,
                logging.WARNING,
                "model check timed out",
                model=route.public_id,
                timeout_s=self._deps.timeout_s,
            )
            raise
        if awaited.ended.status is CallStatus.CANCELLED:
            raise _Refusal(
                503, "unavailable", "the model check was cancelled: the server is stopping"
            )
        return awaited


def _result_of(awaited: AwaitedCall) -> CallResult | None:
    """The completed call's result; None when the provider refused (its failure says why)."""
    return awaited.ended.result if awaited.ended.status is CallStatus.COMPLETED else None


def _refusal_of(awaited: AwaitedCall) -> tuple[str, int | None]:
    """A failed call's message (the provider's own words, credentials removed, as recorded)
    and the provider's HTTP status."""
    failure = awaited.ended.failure
    if failure is None:  # a failed end always carries its failure; never guessed
        return "the call ended without a result", None
    return failure.message, failure.http_status


def _judged(
    awaited: AwaitedCall,
    route: ModelRoute,
    name: str,
    judge: Callable[[CallResult, ModelRoute], Step],
) -> Step:
    """A step's verdict with its call record: the provider's refusal verbatim, else the judge's."""
    ended = awaited.ended
    result = _result_of(awaited)
    if result is None:
        return Step(name, False, _refusal_of(awaited)[0], ended.record_id)
    return msgspec.structs.replace(judge(result, route), call_id=ended.record_id)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
