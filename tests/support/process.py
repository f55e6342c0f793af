"""Run ``python run.py`` as a real subprocess and find the address it listens on."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

from store import Store, connect_store
from store.base.secrets import encode_secret_key

REPO = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"cursor server listening address=(\S+)")
# Every process a test started, so the ERROR-line check can read their logs.
STARTED: weakref.WeakSet[ServerProcess] = weakref.WeakSet()


class ServerProcess:
    """A started ``run.py`` (or ``python -m module``) whose stderr is collected on a thread."""

    def __init__(
        self, env: dict[str, str], module: str | None = None, args: tuple[str, ...] = ()
    ) -> None:
        argv = ["-m", module] if module is not None else [str(REPO / "run.py")]
        self.proc = subprocess.Popen(
            [sys.executable, *argv, *args],
            cwd=env.get("CURSOR_TEST_CWD", str(REPO)),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        STARTED.add(self)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    @property
    def log(self) -> str:
        return "\n".join(self.lines)

    def wait_for_address(self, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if match := LISTENING.search(line):
                    return match.group(1)
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}:\n{self.log}")
            time.sleep(0.02)
        raise AssertionError(f"server did not report its address:\n{self.log}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self._reader.join(5)


def server_env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    """The environment of a test server: loopback, port 0, a database in ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_")}
    env.update(
        CURSOR_LISTEN_ADDR="127.0.0.1:0",
        CURSOR_DATABASE_URL=f"sqlite:///{tmp_path / 'server.db'}",
        CURSOR_UPSTREAM_URL="http://127.0.0.1:9",
        PYTHONUNBUFFERED="1",
    )
    env.update(overrides)
    return env


# One key for a server process and the test (or benchmark) that seeds its database beforehand:
# without it each process seals secrets under its own random key and the other cannot read them.
SHARED_SECRET_KEY = bytes(range(32))
SHARED_KEY_ENV = {"CURSOR_SECRET_KEY": encode_secret_key(SHARED_SECRET_KEY)}


def connect_shared_store(url: str) -> Store:
    """The store at ``url`` under the key ``SHARED_KEY_ENV`` gives a server process."""
    return connect_store(url, secret_key=SHARED_SECRET_KEY)


def holder_pid(url: str, request_id: str) -> int:
    """The process id of the instance whose route holds ``request_id`` in the database at
    ``url`` (``run_routes`` joined to the instances' leases)."""
    from store.base.typed_peewee import execute_sql

    store = connect_shared_store(url)
    try:
        row = execute_sql(
            store.database,
            'SELECT i."pid" FROM "run_routes" r JOIN "server_instances" i '
            'ON i."instance_id" = r."instance_id" WHERE r."request_id" = %s',
            (request_id,),
        ).fetchone()
    finally:
        store.close()
    assert row is not None, f"no route for {request_id}"
    return int(row[0])
