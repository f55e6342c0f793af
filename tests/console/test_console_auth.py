"""Console access over real HTTP: the token, login sessions, the CSRF rules, what stays open.

The process-level refusals (a non-loopback bind without a token) are in
``tests/process/test_process.py``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from actors.conversation.secret import Secret
from actors.server.compose import RunningServer, ServerConfig, start_server
from actors.server.settings import SettingError, load_settings
from console.auth import MAX_SESSIONS, SESSION_LIFETIME_S, ConsoleAuth
from tests.conftest import StartServer
from tests.support.fake_cursor import FakeCursor, run_request_message

TOKEN = "console-TOKEN-0123456789abcdef"
BEARER = {"authorization": f"Bearer {TOKEN}"}
JSON = {"content-type": "application/json"}
PROVIDER = {"name": "Main", "type": "openai-chat", "base_url": "https://example.com/v1"}
NO_MODEL_END = {
    "error": {
        "code": "invalid_argument",
        "message": "protocol error: Cursor Run does not select a model",
    }
}


class Recorded:
    """An httpx client on one server that keeps every response, to search them for the token."""

    def __init__(self, server: RunningServer) -> None:
        self.origin = f"http://{server.address}"
        self.client = httpx.AsyncClient(base_url=self.origin, timeout=10.0)
        self.responses: list[httpx.Response] = []

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = await self.client.request(method, path, **kwargs)
        self.responses.append(response)
        return response

    async def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return await self.call(method, f"/console/api{path}", **kwargs)

    def seen_text(self) -> str:
        parts: list[str] = []
        for response in self.responses:
            parts.extend(f"{name}: {value}" for name, value in response.headers.multi_items())
            parts.append(response.text)
        return "\n".join(parts)


@pytest.fixture
async def guarded(make_server: StartServer) -> AsyncIterator[Recorded]:
    """A server with the console token set."""
    recorded = Recorded(await make_server(console_token=TOKEN))
    yield recorded
    await recorded.client.aclose()


@pytest.fixture
async def open_console(make_server: StartServer) -> AsyncIterator[Recorded]:
    """A server on loopback without a token."""
    recorded = Recorded(await make_server())
    yield recorded
    await recorded.client.aclose()


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    # A 422 also names its broken fields.
    keys = {"code", "message", "fields"} if status == 422 else {"code", "message"}
    assert set(body) == keys and body["code"] == code, body


def session_cookie(response: httpx.Response) -> tuple[str, list[str]]:
    """The session cookie's value and its attributes, from the one Set-Cookie header."""
    (header,) = response.headers.get_list("set-cookie")
    pair, *attributes = [part.strip() for part in header.split(";")]
    name, _, value = pair.partition("=")
    assert name == "cursor_console_session"
    return value, attributes


# --- no token on loopback: as before -------------------------------------------------------


async def test_without_a_token_on_loopback_the_api_needs_no_login(open_console: Recorded) -> None:
    session = await open_console.api("GET", "/session")
    assert session.json() == {"auth_required": False, "authenticated": True}
    assert (await open_console.api("GET", "/providers")).status_code == 200
    created = await open_console.api("POST", "/providers", json=PROVIDER)
    assert created.status_code == 201, created.text
    pid = created.json()["id"]
    assert (await open_console.api("DELETE", f"/providers/{pid}", headers=JSON)).status_code == 204
    login = await open_console.api("POST", "/login", json={"token": "anything"})
    assert login.json() == {"auth_required": False, "authenticated": True}
    assert "set-cookie" not in login.headers


async def test_without_a_token_only_loopback_host_names_are_answered(
    open_console: Recorded,
) -> None:
    """A page on a DNS name that rebinds to 127.0.0.1 reaches us with its own Host name."""
    port = open_console.origin.rsplit(":", 1)[1]
    rebound = await open_console.api("GET", "/providers", headers={"host": f"evil.test:{port}"})
    assert_error(rebound, 403, "permission_denied")
    local = await open_console.api("GET", "/providers", headers={"host": f"localhost:{port}"})
    assert local.status_code == 200


# --- the token -------------------------------------------------------------------------------


GUARDED_ROUTES = [
    ("GET", "/providers"),
    ("GET", "/models"),
    ("GET", "/provider-types"),
    ("GET", "/calls"),
    ("GET", "/settings/observability"),
    ("GET", "/connection"),
    ("GET", "/no-such-route"),
    ("POST", "/providers"),
]


@pytest.mark.parametrize(("method", "path"), GUARDED_ROUTES)
async def test_a_token_guards_every_api_route(guarded: Recorded, method: str, path: str) -> None:
    body = PROVIDER if method == "POST" else None
    missing = await guarded.api(method, path, json=body)
    assert_error(missing, 401, "unauthenticated")
    assert missing.headers["www-authenticate"].startswith("Bearer")
    wrong = {"authorization": f"Bearer {TOKEN[:-1]}x"}
    assert_error(await guarded.api(method, path, json=body, headers=wrong), 401, "unauthenticated")
    basic = {"authorization": f"Basic {TOKEN}"}
    assert_error(await guarded.api(method, path, json=body, headers=basic), 401, "unauthenticated")
    allowed = await guarded.api(method, path, json=body, headers=BEARER)
    assert allowed.status_code in (200, 201, 404), allowed.text  # 404: the unknown route


async def test_a_refused_mutation_changes_nothing(guarded: Recorded) -> None:
    assert (await guarded.api("POST", "/providers", json=PROVIDER)).status_code == 401
    assert (await guarded.api("GET", "/providers", headers=BEARER)).json() == []


async def test_login_sets_a_strict_http_only_cookie_and_logout_ends_it(guarded: Recorded) -> None:
    login = await guarded.api("POST", "/login", json={"token": TOKEN})
    assert login.status_code == 200, login.text
    assert login.json() == {"auth_required": True, "authenticated": True}
    value, attributes = session_cookie(login)
    assert value and value != TOKEN and TOKEN not in value
    lowered = [a.lower() for a in attributes]
    assert "httponly" in lowered
    assert "samesite=strict" in lowered
    assert "path=/console" in lowered
    assert f"max-age={SESSION_LIFETIME_S}" in lowered
    guarded.client.cookies.clear()  # only the explicit Cookie header below counts
    cookie = {"cookie": f"cursor_console_session={value}"}

    assert (await guarded.api("GET", "/providers", headers=cookie)).status_code == 200
    session = await guarded.api("GET", "/session", headers=cookie)
    assert session.json() == {"auth_required": True, "authenticated": True}

    logout = await guarded.api("POST", "/logout", json={}, headers=cookie)
    assert logout.status_code == 204
    cleared, attributes = session_cookie(logout)
    assert cleared in ("", '""') and "max-age=0" in [a.lower() for a in attributes]
    # The session ended on the server: the old cookie no longer works.
    assert_error(await guarded.api("GET", "/providers", headers=cookie), 401, "unauthenticated")
    session = await guarded.api("GET", "/session", headers=cookie)
    assert session.json() == {"auth_required": True, "authenticated": False}


async def test_two_logins_are_two_sessions(guarded: Recorded) -> None:
    first, _ = session_cookie(await guarded.api("POST", "/login", json={"token": TOKEN}))
    second, _ = session_cookie(await guarded.api("POST", "/login", json={"token": TOKEN}))
    assert first != second
    guarded.client.cookies.clear()
    await guarded.api(
        "POST", "/logout", json={}, headers={"cookie": f"cursor_console_session={first}"}
    )
    still = {"cookie": f"cursor_console_session={second}"}
    assert (await guarded.api("GET", "/providers", headers=still)).status_code == 200


async def test_a_wrong_login_is_401_and_sets_no_cookie(guarded: Recorded) -> None:
    for token in (TOKEN[:-1], TOKEN + "x", "", TOKEN.upper()):
        wrong = await guarded.api("POST", "/login", json={"token": token})
        assert_error(wrong, 401, "unauthenticated")
        assert "set-cookie" not in wrong.headers
    assert_error(await guarded.api("POST", "/login", json={"tok": TOKEN}), 422, "invalid_argument")
    bad_json = await guarded.api("POST", "/login", content=b"{", headers=JSON)
    assert_error(bad_json, 400, "invalid_argument")
    forged = {"cookie": f"cursor_console_session={TOKEN}"}
    assert_error(await guarded.api("GET", "/providers", headers=forged), 401, "unauthenticated")


async def test_the_session_endpoint_needs_no_login(guarded: Recorded) -> None:
    anonymous = await guarded.api("GET", "/session")
    assert anonymous.json() == {"auth_required": True, "authenticated": False}
    bearer = await guarded.api("GET", "/session", headers=BEARER)
    assert bearer.json() == {"auth_required": True, "authenticated": True}


# --- CSRF: with and without the token -----------------------------------------------------------


@pytest.mark.parametrize("token", [None, TOKEN])
async def test_mutations_need_json_and_this_servers_origin(
    make_server: StartServer, token: str | None
) -> None:
    server = await make_server(console_token=token)
    own_origin = f"http://{server.address}"
    auth = BEARER if token else {}
    async with httpx.AsyncClient(base_url=own_origin, timeout=10.0) as client:

        async def post(headers: dict[str, str], **kwargs: Any) -> httpx.Response:
            return await client.post(
                "/console/api/providers", headers={**auth, **headers}, **kwargs
            )

        for origin in ("http://evil.test", "null", f"https://{server.address}.evil.test"):
            foreign = await post({"origin": origin}, json=PROVIDER)
            assert_error(foreign, 403, "permission_denied")
        login = await client.post(
            "/console/api/login", json={"token": TOKEN}, headers={"origin": "http://evil.test"}
        )
        assert_error(login, 403, "permission_denied")
        for content_type in ("text/plain", "application/x-www-form-urlencoded"):
            form = await post({"content-type": content_type}, content=b'{"name": "x"}')
            assert_error(form, 415, "invalid_argument")
        no_type = await client.delete("/console/api/models/f246010a", headers=auth)
        assert_error(no_type, 415, "invalid_argument")
        assert (await client.get("/console/api/providers", headers=auth)).json() == []

        same = await post({"origin": own_origin}, json=PROVIDER)
        assert same.status_code == 201, same.text
        without_origin = await post({}, json={**PROVIDER, "name": "Second"})
        assert without_origin.status_code == 201, without_origin.text
        # A read from another origin is not a mutation (and the browser keeps its answer).
        read = await client.get("/console/api/providers", headers={**auth, "origin": own_origin})
        assert len(read.json()) == 2


# --- what the token never guards -----------------------------------------------------------------


async def test_agent_rpcs_model_lists_proxy_and_pages_ignore_the_token(
    make_server: StartServer,
) -> None:
    server = await make_server(console_token=TOKEN)
    cursor = FakeCursor(f"http://{server.address}")
    try:
        stream = await cursor.open_run_sse("req-guarded")
        assert stream.response.status_code == 200
        assert (await cursor.append("req-guarded", 0, run_request_message())).status_code == 200
        assert (await stream.read_to_end()).end == NO_MODEL_END
        models = await cursor.client.post(
            "/aiserver.v1.AiService/AvailableModels",
            content=b"",
            headers={"content-type": "application/proto"},
        )
        assert models.status_code == 299, models.text  # the upstream's answer, passed through
        proxied = await cursor.client.post("/aiserver.v1.Other/Thing", content=b"x")
        assert proxied.text == "upstream saw POST /aiserver.v1.Other/Thing"
        for page in ("/console", "/console/", "/console/assets/app.js"):
            answer = await cursor.client.get(page)
            assert answer.status_code != 401, page
    finally:
        await cursor.aclose()


# --- the token leaks nowhere ---------------------------------------------------------------------


async def test_the_token_is_in_no_answer_and_no_log_line(
    guarded: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await guarded.api("GET", "/session")
    await guarded.api("POST", "/login", json={"token": TOKEN + "-wrong"})
    await guarded.api("POST", "/login", json={"token": TOKEN})
    await guarded.api("GET", "/providers")
    await guarded.api("GET", "/providers", headers={"authorization": f"Bearer {TOKEN}x"})
    await guarded.api("GET", "/providers", headers=BEARER)
    await guarded.api("POST", "/providers", json=PROVIDER, headers={**BEARER, "origin": "http://x"})
    await guarded.api("POST", "/providers", content=TOKEN.encode(), headers=BEARER)
    await guarded.api("POST", "/login", content=b'{"token": "' + TOKEN.encode(), headers=JSON)
    await guarded.api("POST", "/login", json={"token": TOKEN, "extra": TOKEN})
    await guarded.api("POST", "/logout", json={})
    await guarded.api("GET", "/connection", headers=BEARER)
    assert len(guarded.responses) == 12
    assert TOKEN not in guarded.seen_text()
    assert "console login" in caplog.text  # the login lines are there, the token is not
    assert TOKEN not in caplog.text


def test_the_settings_never_show_the_token() -> None:
    settings = load_settings({"CURSOR_LISTEN_ADDR": "0.0.0.0:3000", "CURSOR_CONSOLE_TOKEN": TOKEN})
    assert settings.console_token is not None and settings.console_token.reveal() == TOKEN
    assert TOKEN not in repr(settings) and TOKEN not in str(settings)
    config = ServerConfig(
        host="0.0.0.0", port=0, upstream_url="http://x", console_token=Secret(TOKEN)
    )
    assert TOKEN not in repr(config)


# --- the setting ---------------------------------------------------------------------------------


@pytest.mark.parametrize("address", ["127.0.0.1:3000", "127.9.8.7:0", "[::1]:3000"])
def test_a_loopback_bind_needs_no_token(address: str) -> None:
    assert load_settings({"CURSOR_LISTEN_ADDR": address}).console_token is None


@pytest.mark.parametrize("address", ["0.0.0.0:3000", "192.168.1.5:3000", "[::]:3000"])
def test_any_other_bind_needs_a_token(address: str) -> None:
    with pytest.raises(SettingError) as info:
        load_settings({"CURSOR_LISTEN_ADDR": address})
    assert info.value.variable == "CURSOR_CONSOLE_TOKEN"
    assert "required" in info.value.reason
    with_token = load_settings({"CURSOR_LISTEN_ADDR": address, "CURSOR_CONSOLE_TOKEN": TOKEN})
    assert with_token.console_token == Secret(TOKEN)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("fifteen-chars-x", "at least 16 characters"),
        ("", "at least 16 characters"),
        ("sixteen chars ok here", "visible ASCII"),
        ("sixteen-chars-ok-é", "visible ASCII"),
    ],
)
def test_an_unfit_token_is_refused_without_showing_it(value: str, reason: str) -> None:
    with pytest.raises(SettingError) as info:
        load_settings({"CURSOR_CONSOLE_TOKEN": value})
    assert info.value.variable == "CURSOR_CONSOLE_TOKEN"
    assert reason in info.value.reason
    assert not value or value not in str(info.value)


async def test_start_server_refuses_a_non_loopback_bind_without_a_token() -> None:
    config = ServerConfig(host="0.0.0.0", port=0, upstream_url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="CURSOR_CONSOLE_TOKEN"):
        await start_server(config)


# --- sessions on their own (an injected clock, no waiting) ---------------------------------------


async def test_a_session_expires_after_its_lifetime() -> None:
    now = [1000.0]
    auth = ConsoleAuth(Secret(TOKEN), clock=lambda: now[0])
    session = await auth.start_session()
    now[0] += SESSION_LIFETIME_S - 1
    assert await auth.session_is_live(session)
    now[0] += 1
    assert not await auth.session_is_live(session)


async def test_beyond_the_session_cap_the_oldest_ends() -> None:
    auth = ConsoleAuth(Secret(TOKEN))
    sessions = [await auth.start_session() for _ in range(MAX_SESSIONS + 1)]
    assert not await auth.session_is_live(sessions[0])
    assert all([await auth.session_is_live(s) for s in sessions[1:]])
    assert not await auth.session_is_live(TOKEN)
