"""Who may use the console's JSON API: the optional token, login sessions and the CSRF rules.

Bound to loopback without ``CURSOR_CONSOLE_TOKEN`` the console needs no login, but it still
answers only loopback peers that address it by a loopback name (so a web page whose DNS name
rebinds to 127.0.0.1 cannot read it). With a token every ``/console/api/`` request but the
session, login and logout routes needs ``Authorization: Bearer <token>`` or a session cookie
from ``POST /console/api/login``. Whether or not a token is set, a mutation must be JSON and
must not come from a page of another origin: a browser sends an HTML form or a "simple" fetch
cross-origin without asking first, never with ``Content-Type: application/json``, and always
with its ``Origin``.

The cookie holds a random session id (32 bytes, URL-safe base64), never the token; the server
keeps only SHA-256 digests of the live ids (``console.login_sessions``): in the database when
there is one, so every instance sharing it accepts a login made on any of them and a logout
ends the session everywhere (and a restart keeps it); in memory without one. The token is
compared with ``hmac.compare_digest``; a session id only through its digest. The token is a
``Secret``: no repr, log line or answer shows it. When the database that holds the sessions does
not answer, a console API request is answered 503.

The token is compared only through ``check_token``, behind the server's one wrong-token
throttle (``wire.peer_throttle``), which the agent token beyond loopback shares: a peer that
sent too many wrong tokens gets 429 with ``Retry-After`` and its token is not compared. A
session cookie is not a guess at the token: its id is 32 random bytes, and after a restart or
an expiry every open console tab sends one the server no longer knows, which must not lock its
user out of the login. A cookie alone is neither counted nor throttled (a throttled bearer
token beside it is still 429).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import secrets
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from actors.conversation.secret import Secret
from console.login_sessions import LoginSessions, MemorySessions, SessionsUnavailable
from wire.edge_rules import hostname_of, is_loopback_name, is_same_origin
from wire.http.app import add_guard
from wire.http.responses import json_error
from wire.http.token_throttle import TokenThrottle, too_many_wrong_tokens
from wire.log import log_event
from wire.peer_throttle import PeerThrottle, Verdict
from wire.peers import peer_key

logger = logging.getLogger("cursor_server.console.auth")

TOKEN_VARIABLE = "CURSOR_CONSOLE_TOKEN"
MIN_TOKEN_CHARS = 16
SESSION_COOKIE = "cursor_console_session"
COOKIE_PATH = "/console"
# A login lasts this long (the cookie's Max-Age and the server's own expiry).
SESSION_LIFETIME_S = 24 * 3600
# Live sessions kept; a login beyond this ends the oldest one.
MAX_SESSIONS = 64

GUARDED_PREFIX = "/console/api"
SESSION_PATH = f"{GUARDED_PREFIX}/session"
LOGIN_PATH = f"{GUARDED_PREFIX}/login"
LOGOUT_PATH = f"{GUARDED_PREFIX}/logout"
# Reachable without being logged in: the page asks whether it must show its login form.
OPEN_PATHS = frozenset({SESSION_PATH, LOGIN_PATH, LOGOUT_PATH})
MUTATIONS = frozenset({"POST", "PUT", "DELETE", "PATCH"})
JSON_CONTENT_TYPE = "application/json"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# --- the setting -------------------------------------------------------------------------------


def is_loopback_host(host: str) -> bool:
    """An IP address in 127.0.0.0/8 or ``::1`` (``localhost`` counts only as a Host name)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_console_token(value: str | None, listen_host: str) -> Secret | None:
    """``CURSOR_CONSOLE_TOKEN`` checked against the listen address; ``ValueError`` (whose text
    never holds the value) when a non-loopback bind has none or the token is unfit."""
    if value is None:
        if is_loopback_host(listen_host):
            return None
        raise ValueError(
            f"required when CURSOR_LISTEN_ADDR is not a loopback address (127.0.0.0/8 or "
            f"[::1]): anyone who can reach {listen_host} could use the console; set a token of "
            f"at least {MIN_TOKEN_CHARS} characters"
        )
    if len(value) < MIN_TOKEN_CHARS:
        raise ValueError(f"must be at least {MIN_TOKEN_CHARS} characters long")
    if not all("!" <= ch <= "~" for ch in value):
        raise ValueError(
            "must be visible ASCII characters only (no spaces), so it fits an Authorization header"
        )
    return Secret(value)


# --- sessions ----------------------------------------------------------------------------------


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


class ConsoleAuth:
    """The token (or none), the login sessions and the wrong-token throttle; on the event loop
    only. ``sessions``: where the sessions live (in memory on ``clock`` if none is given);
    ``throttle``: the server's one (a fresh one on ``clock`` if none is given)."""

    def __init__(
        self,
        token: Secret | None,
        clock: Callable[[], float] = time.monotonic,
        max_sessions: int = MAX_SESSIONS,
        throttle: TokenThrottle | None = None,
        sessions: LoginSessions | None = None,
    ) -> None:
        self._token = token
        self._max_sessions = max_sessions
        self._sessions = sessions if sessions is not None else MemorySessions(clock)
        self._throttle = throttle if throttle is not None else TokenThrottle(PeerThrottle(clock))

    @property
    def required(self) -> bool:
        return self._token is not None

    def check_token(self, peer: str | None, candidate: str, via: str) -> Verdict:
        """The one comparison of a token from outside: not made while ``peer`` is throttled;
        a wrong one counts against ``peer``. ``via``: which token, for the log."""
        return self._throttle.check(peer, via, lambda: self._token_matches(candidate))

    def _token_matches(self, candidate: str) -> bool:
        if self._token is None:
            return False
        expected = self._token.reveal().encode("ascii")
        return hmac.compare_digest(candidate.encode("utf-8", "surrogatepass"), expected)

    async def start_session(self) -> str:
        """A new session id for the cookie; the oldest session goes when there are too many."""
        session_id = secrets.token_urlsafe(32)
        await self._sessions.start(_digest(session_id), SESSION_LIFETIME_S, self._max_sessions)
        return session_id

    async def end_session(self, session_id: str) -> None:
        await self._sessions.end(_digest(session_id))

    async def session_is_live(self, session_id: str) -> bool:
        return await self._sessions.is_live(_digest(session_id))

    async def access(self, request: web.Request) -> Verdict:
        """Matched without a token; else by a matching bearer token or a live session cookie.
        A bearer token from a throttled peer is refused unread (``retry_after_s``), even
        beside a live cookie: the answer must not depend on the token."""
        peer = request.remote
        if self._token is None:
            return Verdict(peer_key(peer), matched=True)
        verdict = Verdict(peer_key(peer))
        scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            verdict = self.check_token(peer, credentials.strip(), "bearer")
            if verdict.matched or verdict.throttled:
                return verdict
        session_id = request.cookies.get(SESSION_COOKIE)
        if session_id is not None and await self.session_is_live(session_id):
            return Verdict(verdict.peer, matched=True)
        return verdict


# --- the guard ---------------------------------------------------------------------------------


def is_guarded(path: str) -> bool:
    return path == GUARDED_PREFIX or path.startswith(GUARDED_PREFIX + "/")


def addressed_to_loopback(request: web.Request) -> bool:
    """The peer is on loopback and the Host it asked for is a loopback name or address."""
    named = is_loopback_name(hostname_of(request.host))
    return named and is_loopback_host(request.remote or "")


class ConsoleGuard:
    """The middleware in front of ``/console/api/``; every other path passes untouched (the
    agent RPCs, the model lists, the proxy and the console's static pages)."""

    def __init__(self, auth: ConsoleAuth) -> None:
        self._auth = auth

    def register(self, app: web.Application) -> None:
        add_guard(app, self.middleware)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not is_guarded(request.path):
            return await handler(request)
        try:
            refusal = await self.refusal(request)
            if refusal is not None:
                return refusal
            return await handler(request)
        except SessionsUnavailable as exc:
            log_event(logger, logging.WARNING, "console sessions unavailable", error=str(exc))
            return json_error(503, "unavailable", "the database holding the logins did not answer")

    async def refusal(self, request: web.Request) -> web.Response | None:
        """The error answer for a request the rules refuse, or None to let it through."""
        if not self._auth.required and not addressed_to_loopback(request):
            return self._forbidden(
                request,
                "without CURSOR_CONSOLE_TOKEN the console answers only requests from this "
                "machine addressed to localhost, 127.0.0.1 or [::1]",
            )
        if request.method in MUTATIONS:
            origin = request.headers.get("Origin")
            if origin is not None and not is_same_origin(origin, request.host):
                return self._forbidden(request, "a request from another origin is refused")
            if request.content_type != JSON_CONTENT_TYPE:
                return json_error(
                    415,
                    "invalid_argument",
                    f"{request.method} on the console API needs Content-Type: application/json",
                )
        if request.path in OPEN_PATHS:
            return None
        verdict = await self._auth.access(request)
        if verdict.throttled:
            return too_many_wrong_tokens(verdict)
        if not verdict.matched:
            log_event(logger, logging.DEBUG, "console request unauthenticated", path=request.path)
            return unauthenticated("log in with the console token, or send it as a bearer token")
        return None

    def _forbidden(self, request: web.Request, message: str) -> web.Response:
        log_event(
            logger,
            logging.WARNING,
            "console request refused",
            method=request.method,
            path=request.path,
            origin=request.headers.get("Origin"),
            host=request.host,
            peer=request.remote,
        )
        return json_error(403, "permission_denied", message)


def unauthenticated(message: str) -> web.Response:
    response = json_error(401, "unauthenticated", message)
    response.headers["WWW-Authenticate"] = 'Bearer realm="cursor-server console"'
    return response
