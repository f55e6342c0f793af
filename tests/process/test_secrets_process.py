"""Secrets at rest as the user meets them, with ``python run.py`` as a real process: the key
file made at first start, no key in plaintext anywhere on disk or in the log, an older
database's plaintext sealed at start, and a database without its key: the console says "key
unreadable, set it again", a run on that provider ends naming it, nothing crashes, and
setting the key again fixes it (on SQLite with key files, on PostgreSQL with
``CURSOR_SECRET_KEY``)."""

from __future__ import annotations

import base64
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest

from store import connect_store
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events
from tests.support.process import ServerProcess, server_env

KEY = "sk-process-at-rest-0123456789"
HEADER = "Bearer process-header-secret-77"
SEARCH_KEY = "tvly-process-secret-55"
UNREADABLE = "key unreadable, set it again"


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for server in started:
        server.stop()


def start(servers: list[ServerProcess], env: dict[str, str]) -> tuple[ServerProcess, str]:
    server = ServerProcess(env)
    servers.append(server)
    return server, f"http://{server.wait_for_address()}"


def stop(server: ServerProcess) -> None:
    server.proc.terminate()
    assert server.proc.wait(15) == 0, server.log
    server.stop()


def add_provider(base: str, fake: FakeProvider) -> tuple[int, str]:
    with httpx.Client(base_url=f"{base}/console/api") as api:
        created = api.post(
            "/providers",
            json={
                "name": "Fake Co",
                "type": "openai-chat",
                "base_url": fake.base_url,
                "api_key": KEY,
                "headers": {"x-team": "blue", "X-Auth-Token": HEADER},
                "public_headers": ["x-team"],
            },
        )
        assert created.status_code == 201, created.text
        provider_id = created.json()["id"]
        saved = api.post(
            f"/providers/{provider_id}/models",
            json={"models": [{"model_id": "fake-model", "display_name": "Fake"}]},
        )
        assert saved.status_code == 201, saved.text
        return provider_id, saved.json()[0]["public_id"]


async def one_turn(base: str, public_id: str, request_id: str) -> dict[str, object]:
    cursor = FakeCursor(base)
    try:
        log = await CursorSession(cursor, request_id).run(
            user_turn_message("hello", public_id, conversation_id=request_id)
        )
    finally:
        await cursor.aclose()
    assert isinstance(log.end, dict)
    return log.end


def disk_bytes(tmp_path: Path) -> bytes:
    """The database file and its WAL and journal, not the key file."""
    files = [p for p in tmp_path.iterdir() if p.name.startswith("server.db")]
    return b"".join(p.read_bytes() for p in files if p.suffix != ".key")


def provider_columns(db_file: Path) -> tuple[str, dict[str, str]]:
    with sqlite3.connect(db_file) as conn:
        api_key, headers = conn.execute("SELECT api_key, headers_json FROM providers").fetchone()
    return api_key, msgspec.json.decode(headers)


async def test_a_fresh_start_makes_a_private_key_file_and_no_key_is_stored_in_plaintext(
    tmp_path: Path, servers: list[ServerProcess], fake: FakeProvider
) -> None:
    server, base = start(servers, server_env(tmp_path))
    key_file = tmp_path / "server.db.key"
    assert f'secret_key="file {key_file}" key_file_created=true' in server.log
    assert key_file.stat().st_mode & 0o777 == 0o600
    _, public_id = add_provider(base, fake)
    with httpx.Client(base_url=f"{base}/console/api") as api:
        api.put("/settings/observability", json={"verbose": True})
        search = {"backend": "tavily", "api_key": SEARCH_KEY}
        assert api.put("/settings/web-search", json=search).status_code == 200
        answers = [api.get(path).text for path in ("/providers", "/settings/web-search")]
    fake.enqueue(Script.sse(chat_events(text=["hello back"])))
    assert await one_turn(base, public_id, "fresh-1") == {}
    assert fake.requests[0].header("authorization") == f"Bearer {KEY}"
    with httpx.Client(base_url=f"{base}/console/api") as api:
        (call,) = api.get("/calls").json()["calls"]
        answers.append(api.get(f"/calls/{call['id']}").text)
    stop(server)
    api_key, headers = provider_columns(tmp_path / "server.db")
    assert api_key.startswith("cs-sealed:v1:") and headers["x-team"] == "blue"
    assert headers["X-Auth-Token"].startswith("cs-sealed:v1:")
    key_text = key_file.read_text().strip()
    on_disk = disk_bytes(tmp_path)
    for secret in (KEY, HEADER, SEARCH_KEY, key_text):
        assert secret.encode() not in on_disk, secret
        assert secret not in server.log, secret
        assert not any(secret in answer for answer in answers), secret


async def test_plaintext_rows_of_an_older_version_are_sealed_at_start(
    tmp_path: Path, servers: list[ServerProcess], fake: FakeProvider
) -> None:
    old = connect_store(f"sqlite:///{tmp_path / 'server.db'}")  # the schema, no secrets yet
    old.close()
    with sqlite3.connect(tmp_path / "server.db") as conn:
        conn.execute(
            "INSERT INTO providers (name, type, base_url, api_key, headers_json, "
            "replay_reasoning, created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, ?, 1, 0, 0)",
            (
                "Old Co",
                "openai-chat",
                fake.base_url,
                KEY,
                msgspec.json.encode({"x-api-key": HEADER}).decode(),
            ),
        )
    server, base = start(servers, server_env(tmp_path))
    api_key, headers = provider_columns(tmp_path / "server.db")
    assert api_key.startswith("cs-sealed:v1:") and headers["x-api-key"].startswith("cs-sealed:")
    with httpx.Client(base_url=f"{base}/console/api") as api:
        (shown,) = api.get("/providers").json()
        assert shown["has_api_key"] is True and "unreadable" not in shown
        saved = api.post(
            f"/providers/{shown['id']}/models",
            json={"models": [{"model_id": "fake-model", "display_name": "Fake"}]},
        )
    fake.enqueue(Script.sse(chat_events(text=["migrated"])))
    assert await one_turn(base, saved.json()[0]["public_id"], "old-1") == {}
    assert fake.requests[0].header("authorization") == f"Bearer {KEY}"
    assert fake.requests[0].header("x-api-key") == HEADER
    assert KEY not in server.log and HEADER not in server.log


def fernet_like_key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_without_its_key_the_console_says_set_it_again_and_the_run_names_the_provider(
    backend: str,
    tmp_path: Path,
    servers: list[ServerProcess],
    fake: FakeProvider,
    request: pytest.FixtureRequest,
) -> None:
    if backend == "sqlite":
        first_env = later_env = server_env(tmp_path)
    else:  # the key from CURSOR_SECRET_KEY; the second start is given another one
        url = request.getfixturevalue("pg_url")
        first_env = server_env(
            tmp_path, CURSOR_DATABASE_URL=url, CURSOR_SECRET_KEY=fernet_like_key()
        )
        later_env = {**first_env, "CURSOR_SECRET_KEY": fernet_like_key()}
    server, base = start(servers, first_env)
    provider_id, public_id = add_provider(base, fake)
    stop(server)
    if backend == "sqlite":
        (tmp_path / "server.db.key").unlink()  # the database copied without its key file
    server, base = start(servers, later_env)
    with httpx.Client(base_url=f"{base}/console/api") as api:
        (shown,) = api.get("/providers").json()
    assert shown["has_api_key"] is True
    assert shown["unreadable"] == {"api_key": UNREADABLE, "headers.X-Auth-Token": UNREADABLE}
    end = await one_turn(base, public_id, "lost-1")
    error = end["error"]
    assert isinstance(error, dict) and error["code"] == "unavailable"
    assert "provider 'Fake Co': key unreadable, set it again in the console" in error["message"]
    assert fake.requests == []  # nothing was sent with a key that could not be read
    assert server.proc.poll() is None and "Traceback" not in server.log
    with httpx.Client(base_url=f"{base}/console/api") as api:
        fixed = api.put(
            f"/providers/{provider_id}",
            json={
                "name": "Fake Co",
                "type": "openai-chat",
                "base_url": fake.base_url,
                "api_key": "sk-set-again-1",
                "headers": {"x-team": "blue", "X-Auth-Token": "again"},
                "public_headers": ["x-team"],
            },
        )
        assert fixed.status_code == 200 and "unreadable" not in fixed.json()
    fake.enqueue(Script.sse(chat_events(text=["back"])))
    assert await one_turn(base, public_id, "lost-2") == {}
    assert fake.requests[0].header("authorization") == "Bearer sk-set-again-1"
    assert KEY not in server.log


def test_a_bad_secret_key_stops_startup_naming_the_variable(tmp_path: Path) -> None:
    for value, reason in (("c2hvcnQ=", "decodes to 5 bytes"), ("!!!", "not base64")):
        server = ServerProcess(server_env(tmp_path, CURSOR_SECRET_KEY=value))
        try:
            assert server.proc.wait(15) == 2
        finally:
            server.stop()
        assert server.log.startswith("CURSOR_SECRET_KEY: must be 32 bytes in base64")
        assert reason in server.log and value not in server.log.replace("CURSOR_SECRET", "")


def test_a_key_file_open_to_others_stops_startup_naming_it(tmp_path: Path) -> None:
    key_file = tmp_path / "server.db.key"
    key_file.write_text(fernet_like_key() + "\n")
    key_file.chmod(0o644)
    server = ServerProcess(server_env(tmp_path))
    try:
        assert server.proc.wait(15) == 2
    finally:
        server.stop()
    assert server.log == (
        f"CURSOR_SECRET_KEY: unset, and the secret key file {key_file} is open to other users "
        "(mode 0644); make it private with chmod 600"
    )
    assert not (tmp_path / "server.db").exists()  # nothing was opened with it
