"""Console login: ``GET /console/api/session``, ``POST /console/api/login`` and ``/logout``.

These three pass the guard without a login (the page asks ``session`` whether to show its login
form); login and logout are mutations, so they still need JSON and this server's own origin.
"""

from __future__ import annotations

import logging

import msgspec
from aiohttp import web

from console.auth import (
    COOKIE_PATH,
    LOGIN_PATH,
    LOGOUT_PATH,
    SESSION_COOKIE,
    SESSION_LIFETIME_S,
    SESSION_PATH,
    ConsoleAuth,
    unauthenticated,
)
from console.json_api import error_answer, typed_error
from wire.http.responses import json_error
from wire.http.token_throttle import too_many_wrong_tokens
from wire.json_input import decode_json
from wire.log import log_event

logger = logging.getLogger("cursor_server.console.auth")


class SessionStatus(msgspec.Struct, frozen=True):
    auth_required: bool
    authenticated: bool


class LoginBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    token: str


def _status(value: SessionStatus) -> web.Response:
    return web.Response(body=msgspec.json.encode(value), content_type="application/json")


class SessionApi:
    """The login routes, bound to the server's one ``ConsoleAuth``."""

    def __init__(self, auth: ConsoleAuth) -> None:
        self._auth = auth

    def register(self, app: web.Application) -> None:
        app.router.add_get(SESSION_PATH, self.session, allow_head=False)
        app.router.add_post(LOGIN_PATH, self.login)
        app.router.add_post(LOGOUT_PATH, self.logout)

    async def session(self, request: web.Request) -> web.StreamResponse:
        """Asked without a token (the page's first request) this compares nothing; with a
        bearer token from a throttled peer it is 429 like every other route."""
        verdict = await self._auth.access(request)
        if verdict.throttled:
            return too_many_wrong_tokens(verdict)
        return _status(SessionStatus(self._auth.required, verdict.matched))

    async def login(self, request: web.Request) -> web.StreamResponse:
        """Without a token there is nothing to log in to: the answer says so and sets no cookie.
        Messages never echo the body (msgspec names the field, not the value). A throttled
        peer gets 429 and its token is not compared; a wrong token is logged on its own line
        only until the peer's throttle engages (the burst then has one line, the throttle's)."""
        try:
            body = decode_json(await request.read(), type=LoginBody)
        except msgspec.ValidationError as exc:
            return error_answer(typed_error(exc, LoginBody))
        except msgspec.DecodeError:
            return json_error(400, "invalid_argument", "request body is not valid JSON")
        if not self._auth.required:
            return _status(SessionStatus(auth_required=False, authenticated=True))
        verdict = self._auth.check_token(request.remote, body.token, "login")
        if verdict.throttled:
            return too_many_wrong_tokens(verdict)
        if not verdict.matched:
            if not verdict.quiet:
                log_event(logger, logging.WARNING, "console login refused", peer=request.remote)
            return unauthenticated("the console token is wrong")
        response = _status(SessionStatus(auth_required=True, authenticated=True))
        response.set_cookie(
            SESSION_COOKIE,
            await self._auth.start_session(),
            path=COOKIE_PATH,
            max_age=SESSION_LIFETIME_S,
            httponly=True,
            samesite="Strict",
            secure=request.secure or None,
        )
        log_event(logger, logging.INFO, "console login", peer=request.remote)
        return response

    async def logout(self, request: web.Request) -> web.StreamResponse:
        """Ends the cookie's session (if any) and clears the cookie; a bearer token stays valid."""
        session_id = request.cookies.get(SESSION_COOKIE)
        if session_id is not None:
            await self._auth.end_session(session_id)
        response = web.Response(status=204)
        response.set_cookie(
            SESSION_COOKIE,
            "",
            path=COOKIE_PATH,
            max_age=0,
            httponly=True,
            samesite="Strict",
            secure=request.secure or None,
        )
        return response
