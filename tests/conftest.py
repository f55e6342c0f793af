"""Shared fixtures: an in-process server on a real loopback socket, and a fake Cursor client."""

from __future__ import annotations

import inspect
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from actors.conversation.secret import Secret
from actors.server.compose import RunningServer, ServerConfig, start_server
from store import Store, connect_store
from store.base.typed_peewee import execute_sql
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from store.database import open_database
from tests.support import fake_provider
from tests.support.error_lines import ErrorLines, process_error_lines
from tests.support.fake_cursor import FakeCursor
from tests.support.fake_provider import FakeProvider
from tests.support.postgres import postgres_url_or_skip
from tests.support.process import SHARED_KEY_ENV, STARTED
from tests.support.request_schemas import CHECKS_OPENAI
from wire.http.limits import EdgeLimits
from wire.providers.retry import NO_RETRY, RetryPolicy

# Short time spans so expiry, retention and heartbeats are observable in a test.
TEST_LIMITS = EdgeLimits(
    max_body_bytes=64 * 1024,
    run_request_timeout_s=1.0,
    finished_retention_s=0.3,
    tombstone_ttl_s=60.0,
    heartbeat_interval_s=0.2,
)


@pytest.fixture(autouse=True)
def no_unexpected_error_lines(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test during which the loop or the HTTP server logged an ERROR line, in this
    process or a server process (``tests/support/error_lines.py``), unless it is marked
    ``allows_error_lines``."""
    seen = {process: len(process.lines) for process in STARTED}
    async_test = inspect.iscoroutinefunction(getattr(request.node, "obj", None))
    with ErrorLines(collect=async_test) as caught:
        yield
    found = list(caught.lines)
    for process in list(STARTED):
        found += process_error_lines(process.lines[seen.get(process, 0) :])
    if found and request.node.get_closest_marker("allows_error_lines") is None:
        pytest.fail("unexpected ERROR lines:\n" + "\n".join(found[:20]), pytrace=False)


@pytest.fixture(autouse=True)
def provider_bodies_conform() -> Iterator[None]:
    """Fail a test whose run made the server send a body that breaks its format's published
    request schema (the fake provider checks each one it receives)."""
    before = len(fake_provider.NONCONFORMING)
    yield
    problems = fake_provider.NONCONFORMING[before:]
    if problems:
        pytest.fail(
            "provider request bodies do not conform:\n" + "\n".join(problems[:20]),
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def shared_secret_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test process runs with ``CURSOR_SECRET_KEY`` set to the key ``SHARED_KEY_ENV``
    gives a server process, so every store a test opens finds that key as the server would
    (and no test leaves a key file behind; PostgreSQL's would go in the working directory).
    Tests of the key file unset it."""
    for name, value in SHARED_KEY_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
async def upstream() -> AsyncIterator[str]:
    """A stand-in for Cursor's backend that records what reaches it."""
    seen: list[str] = []

    async def record(request: web.Request) -> web.Response:
        seen.append(f"{request.method} {request.raw_path}")
        return web.Response(status=299, text=f"upstream saw {request.method} {request.raw_path}")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}"
    await runner.cleanup()


StartServer = Callable[..., Awaitable[RunningServer]]


@pytest.fixture
def server_store(tmp_path: Path) -> Iterator[Store]:
    """The migrated SQLite store (a file under tmp_path) the test's servers use."""
    store = connect_store(f"sqlite:///{tmp_path}/test.db")
    yield store
    store.close()


@pytest.fixture
async def make_server(upstream: str, server_store: Store) -> AsyncIterator[StartServer]:
    """Start servers with the test limits (or others), and a console token if given; all are
    stopped at teardown."""
    started: list[RunningServer] = []

    async def make(
        limits: EdgeLimits = TEST_LIMITS,
        console_token: str | None = None,
        provider_retry: RetryPolicy = NO_RETRY,
        **kwargs: Any,
    ) -> RunningServer:
        # One attempt per provider call unless a test asks for retries: a scripted failure
        # is then the call's end (tests/actors/test_provider_retry.py and
        # tests/e2e/test_provider_retry_e2e.py test the retries).
        config = ServerConfig(
            host="127.0.0.1",
            port=0,
            upstream_url=upstream,
            limits=limits,
            console_token=None if console_token is None else Secret(console_token),
            provider_retry=provider_retry,
        )
        kwargs.setdefault("store", server_store)
        server = await start_server(config, **kwargs)  # start_session, store (None: none), clock
        started.append(server)
        return server

    yield make
    for server in started:
        await server.stop()


@pytest.fixture
async def server(make_server: StartServer) -> RunningServer:
    return await make_server()


@pytest.fixture
async def cursor(server: RunningServer) -> AsyncIterator[FakeCursor]:
    client = FakeCursor(f"http://{server.address}")
    yield client
    await client.aclose()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL URL whose connections use a fresh, empty schema (dropped afterwards);
    skips, saying how to get one, when ``CURSOR_TEST_POSTGRES_URL`` is not set."""
    base = postgres_url_or_skip()
    schema = f"test_{uuid.uuid4().hex[:12]}"
    admin = open_database(base)
    execute_sql(admin, f'CREATE SCHEMA "{schema}"')
    separator = "&" if "?" in base else "?"
    try:
        yield f"{base}{separator}options=-csearch_path%3D{schema}"
    finally:
        execute_sql(admin, f'DROP SCHEMA "{schema}" CASCADE')
        admin.close()


def run_in_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a new thread (its own database connection) that then ends; return its
    result or raise its error."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = fn()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Run a store test against a SQLite file and (when configured) PostgreSQL."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("pg_url")
        return url
    return f"sqlite://{tmp_path / 'store.db'}"


@pytest.fixture
def opened(db_url: str) -> Iterator[Store]:
    """A migrated store on ``db_url`` (both backends), closed afterwards."""
    store = connect_store(db_url)
    yield store
    store.close()


FAKE_PROVIDER_KEY = "sk-fake-provider-0123"


def add_fake_model(store: Store, fake: FakeProvider) -> str:
    """Configure the fake provider (OpenAI Chat) with one model; returns its public id."""
    provider = create_provider(
        store.database,
        ProviderInput(
            name="fake", type="openai-chat", base_url=fake.base_url, api_key=FAKE_PROVIDER_KEY
        ),
    )
    models = [ModelInput(model_id="fake-model", display_name="Fake", context_window_tokens=128000)]
    return save_models(store.database, provider.id, models)[0].public_id


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    """A fake provider on loopback serving the scripts the test enqueues."""
    async with FakeProvider() as provider:
        yield provider


@pytest.fixture
def public_id(fake: FakeProvider, server_store: Store) -> str:
    """The public id of the fake provider's model in the test server's store."""
    return add_fake_model(server_store, fake)


def pytest_report_header() -> list[str]:
    """Say so when a check every provider body gets cannot run here."""
    if CHECKS_OPENAI:
        return []
    return ["jsonschema not installed: OpenAI request bodies are not checked against their schemas"]


TESTS = Path(__file__).resolve().parent
# The folders whose every test carries a marker: what runs there needs a server or a process.
FOLDER_MARKERS = {"e2e": "e2e", "process": "process"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by what it needs, so ``-m`` selects without a marker on every test: its
    folder (``FOLDER_MARKERS``), the Playwright ``browser`` fixture (``browser``), the
    ``pg_url`` fixture (``postgres``; a test asking for it by ``getfixturevalue`` is marked on
    its PostgreSQL parameter instead) and HAProxy's ``make_balancer`` (``haproxy``). A test
    elsewhere that starts a process is marked in its own module."""
    for item in items:
        if item.path.is_relative_to(TESTS):
            folder = item.path.relative_to(TESTS).parts[0]
            if folder in FOLDER_MARKERS:
                item.add_marker(FOLDER_MARKERS[folder])
        fixtures = getattr(item, "fixturenames", ())
        if "browser" in fixtures:
            item.add_marker("browser")
        if "pg_url" in fixtures:
            item.add_marker("postgres")
        if "make_balancer" in fixtures:
            item.add_marker("haproxy")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Each phase's report on its item (``item.rep_call``), for fixtures that act on failure
    (the browser tests' screenshot)."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
