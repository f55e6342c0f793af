"""Wrong tokens throttled per peer, over real sockets: the console login, console bearer
tokens and the agent token beyond loopback (both listeners) share the server's one throttle;
a throttled peer gets 429 with ``Retry-After`` whatever its token, until time (a fake clock
the server is started with) has refilled its bucket. One warning per burst in the log."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from actors.conversation.secret import Secret
from actors.server.compose import RunningServer, ServerConfig, start_server
from store import Store
from tests.conftest import TEST_LIMITS, StartServer
from tests.support.h2_client import H2Client
from wire.http.agent_access import LOOPBACK_NETWORKS, TOKEN_HEADER
from wire.peer_throttle import CAPACITY, REFILL_S

TOKEN = "throttle-TOKEN-0123456789abcdef"
WRONG = TOKEN[:-1] + "x"
BEARER = {"authorization": f"Bearer {TOKEN}"}
WRONG_BEARER = {"authorization": f"Bearer {WRONG}"}
AGENT_PATH = "/aiserver.v1.DashboardService/GetTeams"
THROTTLED = {
    "code": "resource_exhausted",
    "message": f"too many wrong tokens from 127.0.0.1; try again in {int(REFILL_S)} s",
}


class Clock:
    """The server's monotonic clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def console(make_server: StartServer, clock: Clock) -> AsyncIterator[httpx.AsyncClient]:
    """A loopback server with the console token, on the fake clock."""
    server = await make_server(console_token=TOKEN, clock=clock)
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as client:
        yield client


async def login(client: httpx.AsyncClient, token: str) -> httpx.Response:
    client.cookies.clear()
    return await client.post("/console/api/login", json={"token": token})


def assert_throttled(response: httpx.Response, retry_after: int = int(REFILL_S)) -> None:
    assert response.status_code == 429, response.text
    assert response.headers["retry-after"] == str(retry_after)
    assert response.json() == {
        **THROTTLED,
        "message": f"too many wrong tokens from 127.0.0.1; try again in {retry_after} s",
    }
    assert "set-cookie" not in response.headers
    assert TOKEN not in response.text


# --- the console login -------------------------------------------------------------------------


async def test_past_capacity_wrong_logins_are_429_even_with_the_right_token(
    console: httpx.AsyncClient, clock: Clock
) -> None:
    for _ in range(CAPACITY):
        assert (await login(console, WRONG)).status_code == 401
    assert_throttled(await login(console, WRONG))
    assert_throttled(await login(console, TOKEN))  # the right one is not even compared
    clock.now += REFILL_S - 1
    assert_throttled(await login(console, TOKEN), retry_after=1)
    clock.now += 1
    allowed = await login(console, TOKEN)
    assert allowed.status_code == 200, allowed.text
    assert "cursor_console_session=" in allowed.headers["set-cookie"]


async def test_requests_without_a_token_are_not_counted(console: httpx.AsyncClient) -> None:
    """The page asking ``session``, an API call without credentials, a stale cookie (after a
    restart every open tab sends one): none is a guess at the token."""
    stale = {"cookie": "cursor_console_session=from-before-the-restart"}
    for _ in range(3 * CAPACITY):
        assert (await console.get("/console/api/session")).status_code == 200
        assert (await console.get("/console/api/providers")).status_code == 401
        assert (await console.get("/console/api/providers", headers=stale)).status_code == 401
    assert (await login(console, TOKEN)).status_code == 200


# --- console bearer tokens -----------------------------------------------------------------------


async def test_wrong_bearer_tokens_are_throttled_the_same_way(
    console: httpx.AsyncClient, clock: Clock
) -> None:
    for _ in range(CAPACITY):
        wrong = await console.get("/console/api/providers", headers=WRONG_BEARER)
        assert wrong.status_code == 401
    assert_throttled(await console.get("/console/api/providers", headers=BEARER))
    assert_throttled(await console.get("/console/api/session", headers=BEARER))
    assert_throttled(await login(console, TOKEN))  # one throttle for the login and the API
    # Without a token the page still learns it must log in.
    anonymous = await console.get("/console/api/session")
    assert anonymous.json() == {"auth_required": True, "authenticated": False}
    clock.now += REFILL_S
    assert (await console.get("/console/api/providers", headers=BEARER)).status_code == 200


async def test_a_live_cookie_beside_a_throttled_bearer_token_is_still_429(
    console: httpx.AsyncClient,
) -> None:
    cookie = (await login(console, TOKEN)).cookies["cursor_console_session"]
    console.cookies.clear()
    live = {"cookie": f"cursor_console_session={cookie}"}
    for _ in range(CAPACITY):
        await console.get("/console/api/providers", headers=WRONG_BEARER)
    assert (await console.get("/console/api/providers", headers=live)).status_code == 200
    assert_throttled(await console.get("/console/api/providers", headers={**live, **BEARER}))


# --- logging: one warning per burst -------------------------------------------------------------


async def test_a_burst_of_wrong_logins_logs_one_warning_and_its_end(
    console: httpx.AsyncClient, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    for _ in range(200):
        await login(console, WRONG)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    throttled = [line for line in warnings if line.startswith("wrong tokens throttled")]
    assert throttled == [
        f"wrong tokens throttled peer=127.0.0.1 via=login failures={CAPACITY} "
        f"retry_after_s={int(REFILL_S)}"
    ]
    # Each wrong login before the throttle engaged has its line; none inside the burst.
    assert warnings.count("console login refused peer=127.0.0.1") == CAPACITY - 1
    assert len(warnings) == CAPACITY
    assert "throttle ended" not in caplog.text
    clock.now += CAPACITY * REFILL_S
    assert (await login(console, TOKEN)).status_code == 200
    ended = [r for r in caplog.records if "wrong tokens throttle ended" in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in ended] == [
        (
            logging.INFO,
            f"wrong tokens throttle ended peer=127.0.0.1 failures={CAPACITY} "
            f"refused={200 - CAPACITY}",
        )
    ]
    assert TOKEN not in caplog.text and WRONG not in caplog.text


# --- the agent token beyond loopback, on both listeners ----------------------------------------


Wide = Callable[[], Awaitable[RunningServer]]


@pytest.fixture
async def wide(upstream: str, server_store: Store, clock: Clock) -> AsyncIterator[Wide]:
    """Both listeners on 0.0.0.0 with loopback allowed, on the fake clock."""
    started: list[RunningServer] = []

    async def make() -> RunningServer:
        config = ServerConfig(
            host="0.0.0.0",
            port=0,
            upstream_url=upstream,
            limits=TEST_LIMITS,
            console_token=Secret(TOKEN),
            agent_allow=LOOPBACK_NETWORKS,
            h2_listen=("0.0.0.0", 0),
        )
        server = await start_server(config, store=server_store, clock=clock)
        started.append(server)
        return server

    yield make
    for server in started:
        await server.stop()


async def agent(server: RunningServer, token: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as client:
        return await client.post(AGENT_PATH, headers={TOKEN_HEADER: token}, content=b"x")


async def h2_agent(server: RunningServer, token: str) -> tuple[dict[str, str], bytes]:
    assert server.h2 is not None
    client = await H2Client.connect(f"127.0.0.1:{server.h2.address.rsplit(':', 1)[1]}")
    try:
        headers = {"content-type": "application/proto", TOKEN_HEADER.lower(): token}
        stream = client.open(AGENT_PATH, headers)
        await stream.send(b"x", end=True)
        return dict(await stream.headers()), await stream.body()
    finally:
        await client.aclose()


async def test_wrong_agent_tokens_beyond_loopback_are_throttled(
    wide: Wide, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    server = await wide()
    for _ in range(CAPACITY):
        assert (await agent(server, WRONG)).status_code == 403
    for _ in range(50):
        refused = await agent(server, TOKEN)
        assert refused.status_code == 429 and refused.json() == THROTTLED
        assert refused.headers["retry-after"] == str(int(REFILL_S))
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert [w for w in warnings if w.startswith("wrong tokens throttled")] == [
        f"wrong tokens throttled peer=127.0.0.1 via=agent failures={CAPACITY} "
        f"retry_after_s={int(REFILL_S)}"
    ]
    assert sum("agent request refused" in w for w in warnings) == 1  # one per burst
    clock.now += REFILL_S
    through = await agent(server, TOKEN)
    assert (through.status_code, through.text) == (299, f"upstream saw POST {AGENT_PATH}")


async def test_the_h2_listener_shares_the_throttle(wide: Wide, clock: Clock) -> None:
    server = await wide()
    for _ in range(CAPACITY // 2):
        headers, _ = await h2_agent(server, WRONG)
        assert headers[":status"] == "403"
    for _ in range(CAPACITY - CAPACITY // 2):  # the same peer on the other listener
        assert (await agent(server, WRONG)).status_code == 403
    headers, body = await h2_agent(server, TOKEN)
    assert (headers[":status"], headers["retry-after"]) == ("429", str(int(REFILL_S)))
    assert body == (
        b'{"code":"resource_exhausted","message":"too many wrong tokens from 127.0.0.1; '
        b'try again in 3 s"}'
    )
    # The console login on the main listener is behind the same throttle.
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as client:
        login = await client.post("/console/api/login", json={"token": TOKEN})
    assert_throttled(login)
    clock.now += REFILL_S
    headers, body = await h2_agent(server, TOKEN)
    assert (headers[":status"], body) == ("299", f"upstream saw POST {AGENT_PATH}".encode())
