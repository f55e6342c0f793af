"""The files a server keeps are its owner's only: ``python run.py`` as a real process makes its
SQLite database, the database's ``-wal`` and ``-shm`` files and the key file with mode 0600
under an ordinary umask, and takes group and other access from a database an older version
left readable."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.process import ServerProcess, server_env


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The umask most systems start with (022: new files 0644), which the server inherits."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def modes(tmp_path: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir() if p.is_file()}


def write_something(base: str) -> None:
    with httpx.Client(base_url=f"{base}/console/api") as api:
        created = api.post(
            "/providers",
            json={"name": "Local", "type": "openai-chat", "base_url": "http://127.0.0.1:9/v1"},
        )
        assert created.status_code == 201, created.text


def run_server(tmp_path: Path) -> dict[str, int]:
    """Start a server, write through it and return the file modes while it runs."""
    server = ServerProcess(server_env(tmp_path))
    try:
        write_something(f"http://{server.wait_for_address()}")
        return modes(tmp_path)
    finally:
        server.stop()


@pytest.mark.usefixtures("usual_umask")
def test_a_new_database_its_wal_and_shm_and_the_key_file_are_0600(tmp_path: Path) -> None:
    found = run_server(tmp_path)
    for name in ("server.db", "server.db-wal", "server.db-shm", "server.db.key"):
        assert found.get(name) == 0o600, found


@pytest.mark.usefixtures("usual_umask")
def test_a_readable_database_an_older_version_left_is_made_private(tmp_path: Path) -> None:
    db_file = tmp_path / "server.db"
    with sqlite3.connect(db_file) as conn:
        conn.execute("PRAGMA journal_mode=wal")
        conn.execute("CREATE TABLE older (x)")
    os.chmod(db_file, 0o644)
    found = run_server(tmp_path)
    for name in ("server.db", "server.db-wal", "server.db-shm"):
        assert found.get(name) == 0o600, found
