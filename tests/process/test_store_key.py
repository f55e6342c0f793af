"""Every opener of a file database finds its secret key the way the server does.

``connect_store`` without a key used to seal under a random per-process key, so a provider key
saved through a script or test store could not be read by the server after a restart (and the
other way round). Now it takes ``CURSOR_SECRET_KEY``, else the key file next to the database
(``cursor-server.key`` in the working directory for PostgreSQL), exactly as ``run.py`` does;
only an in-memory database keeps a random key. Each test seals through one path, restarts, and
reads through the other.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from store import catalog as cat
from store import connect_store
from store.base.secrets import (
    SECRET_KEY_VARIABLE,
    KeyFileError,
    encode_secret_key,
    new_secret_key,
    process_secret_key,
)
from store.database import IN_MEMORY_KEY_SOURCE, resolve_store_key
from tests.conftest import FAKE_PROVIDER_KEY, add_fake_model
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events
from tests.support.process import REPO, ServerProcess, server_env

SAVED_KEY = "sk-saved-by-the-server-4242"


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for server in started:
        server.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def file_db(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A database that outlives its process, found from ``tmp_path`` as the working
    directory (where PostgreSQL's key file goes), with no ``CURSOR_SECRET_KEY`` set."""
    monkeypatch.delenv(SECRET_KEY_VARIABLE)
    monkeypatch.chdir(tmp_path)
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite:///{tmp_path / 'server.db'}"


def key_file_of(url: str, tmp_path: Path) -> Path:
    return tmp_path / ("server.db.key" if url.startswith("sqlite") else "cursor-server.key")


def start(servers: list[ServerProcess], tmp_path: Path, url: str, **env: str) -> str:
    process = ServerProcess(
        server_env(tmp_path, CURSOR_DATABASE_URL=url, CURSOR_TEST_CWD=str(tmp_path), **env)
    )
    servers.append(process)
    return f"http://{process.wait_for_address()}"


def stop(server: ServerProcess) -> None:
    server.proc.terminate()
    assert server.proc.wait(15) == 0, server.log
    server.stop()


async def one_turn(base: str, public_id: str) -> dict[str, object]:
    cursor = FakeCursor(base)
    try:
        log = await CursorSession(cursor, "key-turn").run(
            user_turn_message("hello", public_id, conversation_id="key-conv")
        )
    finally:
        await cursor.aclose()
    assert isinstance(log.end, dict)
    return log.end


async def test_a_key_a_store_sealed_is_read_by_the_server_started_later(
    file_db: str, tmp_path: Path, servers: list[ServerProcess], fake: FakeProvider
) -> None:
    """Sealed by ``connect_store`` in this process (no key given), read by ``run.py``: both
    use the key file the store made next to the database."""
    seeded = connect_store(file_db)
    try:
        public_id = add_fake_model(seeded, fake)
    finally:
        seeded.close()
    key_file = key_file_of(file_db, tmp_path)
    assert key_file.stat().st_mode & 0o777 == 0o600
    base = start(servers, tmp_path, file_db)
    assert f'secret_key="file {key_file}"' in servers[-1].log
    assert "key_file_created" not in servers[-1].log  # it found the store's file
    fake.enqueue(Script.sse(chat_events(text=["read it"])))
    assert await one_turn(base, public_id) == {}
    assert fake.requests[0].header("authorization") == f"Bearer {FAKE_PROVIDER_KEY}"
    stop(servers[-1])


def test_a_key_the_server_sealed_is_read_by_a_store_opened_after_it_stopped(
    file_db: str, tmp_path: Path, servers: list[ServerProcess]
) -> None:
    """Saved through the console of ``run.py`` (which made the key file), read after the
    server stopped by ``connect_store`` in this process and in a fresh one."""
    base = start(servers, tmp_path, file_db)
    with httpx.Client(base_url=f"{base}/console/api") as api:
        created = api.post(
            "/providers",
            json={
                "name": "Saved",
                "type": "openai-chat",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": SAVED_KEY,
            },
        )
        assert created.status_code == 201, created.text
        provider_id = created.json()["id"]
    stop(servers[-1])
    store = connect_store(file_db)
    try:
        connection = cat.provider_connection(store.database, provider_id)
        assert connection is not None and connection.api_key == SAVED_KEY
    finally:
        store.close()
    script = (
        "import sys\n"
        "from store import catalog, connect_store\n"
        "store = connect_store(sys.argv[1])\n"
        "print(catalog.provider_connection(store.database, int(sys.argv[2])).api_key)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != SECRET_KEY_VARIABLE}
    fresh = subprocess.run(
        [sys.executable, "-c", script, file_db, str(provider_id)],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.strip() == SAVED_KEY


async def test_with_the_variable_set_both_openers_use_it_and_make_no_key_file(
    tmp_path: Path,
    servers: list[ServerProcess],
    fake: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = encode_secret_key(new_secret_key())
    monkeypatch.setenv(SECRET_KEY_VARIABLE, key)
    url = f"sqlite:///{tmp_path / 'server.db'}"
    seeded = connect_store(url)
    try:
        public_id = add_fake_model(seeded, fake)
    finally:
        seeded.close()
    assert not (tmp_path / "server.db.key").exists()
    base = start(servers, tmp_path, url, **{SECRET_KEY_VARIABLE: key})
    assert f"secret_key={SECRET_KEY_VARIABLE} " in servers[-1].log
    fake.enqueue(Script.sse(chat_events(text=["read it"])))
    assert await one_turn(base, public_id) == {}
    assert fake.requests[0].header("authorization") == f"Bearer {FAKE_PROVIDER_KEY}"
    assert not (tmp_path / "server.db.key").exists()
    stop(servers[-1])


def test_a_key_file_others_can_read_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_KEY_VARIABLE)
    key_file = tmp_path / "server.db.key"
    key_file.write_text(encode_secret_key(new_secret_key()) + "\n")
    key_file.chmod(0o644)
    with pytest.raises(KeyFileError, match=f"{key_file} is open to other users"):
        connect_store(f"sqlite:///{tmp_path / 'server.db'}")


def test_an_in_memory_database_keeps_the_process_key_and_makes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_KEY_VARIABLE)
    monkeypatch.chdir(tmp_path)
    found = resolve_store_key("sqlite://:memory:", None)
    assert (found.key, found.source) == (process_secret_key(), IN_MEMORY_KEY_SOURCE)
    assert "key=" not in repr(found)
    store = connect_store("sqlite://:memory:")
    store.close()
    assert list(tmp_path.iterdir()) == []
