"""``python run.py --workers N`` (``CURSOR_WORKERS``): a supervisor and N worker processes on
one port and one PostgreSQL database (``actors/server/workers.py``).

Real processes: the refusal on SQLite, the port shared and answering from more than one
worker, a SIGKILLed worker restarted while the port keeps answering (its lease given up at
once), every worker line naming its worker, SIGTERM draining every worker, workers stopping
when their supervisor is SIGKILLed, a taken port refused before any worker starts; and the
supervisor in-process over stand-in worker scripts for its restart limit and a worker that
fails at startup.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from actors.server import workers
from actors.server.workers import Supervisor
from store.base.typed_peewee import execute_sql
from store.database import open_database
from tests.support.process import REPO, ServerProcess, server_env

pytestmark = pytest.mark.process

WAIT_S = 60.0  # three workers starting at once on a busy machine
STOP_S = 20.0  # a worker drains within 10 s; the supervisor waits for all
# A line's header (``wire.log.LineFormatter``): date, time, level, logger, then a worker's tag.
WORKER_LINE = re.compile(r"^\S+ \S+ [A-Z]+ \S+ worker=(w\d+) ")
SUPERVISOR_LINE = re.compile(r"^\S+ \S+ [A-Z]+ cursor_server\.workers (?!worker=)")
STARTED = re.compile(r"worker started name=(w\d+) pid=(\d+)")


def run_py(tmp_path: Path, *args: str, **overrides: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "run.py"), *args],
        env=server_env(tmp_path, **overrides),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [(("--workers", "3"), {}, "--workers"), ((), {"CURSOR_WORKERS": "3"}, "CURSOR_WORKERS")],
)
def test_workers_on_sqlite_exit_2_naming_why(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], named: str
) -> None:
    result = run_py(tmp_path, *args, **env)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [
        f"{named}: 3 workers need PostgreSQL (CURSOR_DATABASE_URL is SQLite, one machine's "
        "file that one process writes)"
    ]


def test_the_flag_wins_over_the_variable(tmp_path: Path) -> None:
    """``--workers 1`` with ``CURSOR_WORKERS=3`` on SQLite: one server, no supervisor."""
    process = ServerProcess(server_env(tmp_path, CURSOR_WORKERS="3"), args=("--workers", "1"))
    try:
        process.wait_for_address(WAIT_S)
        assert "worker" not in process.log
    finally:
        process.stop()


def worker_names(lines: list[str]) -> list[str]:
    """The worker each worker line names."""
    return [m.group(1) for line in lines if (m := WORKER_LINE.match(line))]


def started(log: list[str]) -> dict[str, int]:
    """Each worker's latest pid, from the supervisor's lines."""
    return {m.group(1): int(m.group(2)) for line in log if (m := STARTED.search(line))}


def gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie nobody reaped yet counts)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def wait_gone(pid: int) -> None:
    wait_until(lambda: gone(pid), f"worker {pid} ended", timeout=STOP_S)


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def lease_pids(url: str) -> set[int]:
    """The pids of the live instance leases in the database."""
    database = open_database(url)
    try:
        rows = execute_sql(
            database,
            'SELECT "pid" FROM "server_instances" WHERE "lease_expires_at_ms" >= %s',
            (int(time.time() * 1000),),
        ).fetchall()
        return {int(row[0]) for row in rows}
    finally:
        database.close()


def answering_workers(base: str, log: list[str], requests: int = 30) -> set[str]:
    """The workers that served ``requests`` proxied requests, each on a new connection: each
    logs the upstream it could not reach (``127.0.0.1:9``) with its name."""
    seen = len(log)
    for index in range(requests):
        with httpx.Client(base_url=base, timeout=10.0) as client:
            client.get(f"/spread/{index}")
    wait_until(
        lambda: sum("Cursor upstream request failed" in line for line in log[seen:]) >= requests,
        "every proxied request logged",
        timeout=10.0,
    )
    return {
        m.group(1)
        for line in log[seen:]
        if "Cursor upstream request failed" in line and (m := WORKER_LINE.match(line))
    }


def healthy(base: str) -> bool:
    with httpx.Client(base_url=base, timeout=10.0) as client:
        return client.get("/healthz").status_code == 200


@pytest.fixture
def supervisors() -> Iterator[list[ServerProcess]]:
    """Supervisors a test starts; any still running at the end get SIGTERM, then SIGKILL."""
    started_here: list[ServerProcess] = []
    yield started_here
    for process in started_here:
        if process.proc.poll() is None:
            process.proc.send_signal(signal.SIGTERM)
            try:
                process.proc.wait(STOP_S)
            except subprocess.TimeoutExpired:
                process.stop()
        for pid in started(process.lines).values():
            wait_gone(pid)


def test_three_workers_share_the_port_survive_a_kill_and_drain_on_sigterm(
    tmp_path: Path, pg_url: str, supervisors: list[ServerProcess]
) -> None:
    # No CURSOR_SECRET_KEY: the key file is made once, by the supervisor, in the cwd.
    env = server_env(tmp_path, CURSOR_DATABASE_URL=pg_url, CURSOR_TEST_CWD=str(tmp_path))
    process = ServerProcess(env, args=("--workers", "3"))
    supervisors.append(process)
    address = process.wait_for_address(WAIT_S)
    base = f"http://{address}"
    log = process.lines
    # The supervisor's line comes once all three listen, each on the one concrete port.
    listening = [line for line in log if " worker listening " in line]
    assert sorted(worker_names(listening)) == ["w1", "w2", "w3"]
    assert all(f"address={address} " in line for line in listening)
    key_file = tmp_path / "cursor-server.key"
    assert all(f'secret_key="file {key_file}"' in line for line in listening)
    assert not any("key_file_created" in line for line in listening)
    assert [line for line in log if "key_file_created=true" in line] == [
        line for line in log if "cursor server listening" in line
    ]
    pids = started(log)
    assert sorted(pids) == ["w1", "w2", "w3"]
    assert lease_pids(pg_url) == set(pids.values())

    assert healthy(base)
    assert len(answering_workers(base, log)) >= 2

    # SIGKILL one worker: the supervisor reaps it, says so, and starts it again.
    killed = pids["w2"]
    os.kill(killed, signal.SIGKILL)
    wait_until(
        lambda: any(f"worker exited name=w2 pid={killed} code=-9" in line for line in log),
        "the supervisor saw w2 die",
    )
    assert all(healthy(base) for _ in range(10))  # the other two answer meanwhile
    wait_until(lambda: started(log)["w2"] != killed, "w2 started again")
    wait_until(
        lambda: sum(" worker listening " in line and "worker=w2 " in line for line in log) == 2,
        "the new w2 listens",
    )
    assert any("restarting worker name=w2 after_s=0.5" in line for line in log)
    assert gone(killed)
    # The dead worker's lease was given up by the new one's first sweep (same host, its pid
    # gone), not left to expire (30 s): the runs it held are closed at once.
    pids = started(log)
    assert lease_pids(pg_url) == set(pids.values())
    assert healthy(base)
    assert "w2" in answering_workers(base, log, requests=40)  # the new w2 takes its share

    # SIGTERM: every worker drains and exits 0, none is restarted, the supervisor exits 0.
    stopped_at = len(log)
    process.proc.send_signal(signal.SIGTERM)
    assert process.proc.wait(STOP_S) == 0
    after = log[stopped_at:]
    for name, pid in pids.items():
        assert any(f"worker exited name={name} pid={pid} code=0" in line for line in after)
        assert gone(pid)
    assert not any("worker started" in line or "restarting" in line for line in after)
    assert lease_pids(pg_url) == set()

    # One log stream, and every line of a worker names it.
    process.stop()  # joins the reader: every line is in
    for line in log:
        assert WORKER_LINE.match(line) or SUPERVISOR_LINE.match(line), line
    assert set(worker_names(log)) == {"w1", "w2", "w3"}


def test_the_variable_starts_workers_on_both_listeners_and_a_killed_supervisor_stops_them(
    tmp_path: Path, pg_url: str, supervisors: list[ServerProcess]
) -> None:
    env = server_env(
        tmp_path,
        CURSOR_DATABASE_URL=pg_url,
        CURSOR_WORKERS="2",
        CURSOR_H2_LISTEN_ADDR="127.0.0.1:0",
        CURSOR_TEST_CWD=str(tmp_path),  # where the key file is made
    )
    process = ServerProcess(env)
    supervisors.append(process)
    address = process.wait_for_address(WAIT_S)
    line = next(line for line in process.lines if "cursor server listening" in line)
    assert "workers=2" in line
    # The HTTP/2 listener's port 0 made concrete too, and shared by both workers.
    http2 = re.search(r"http2=(http://127\.0\.0\.1:\d+) ", line)
    assert http2 is not None, line
    listening = [line for line in process.lines if " worker listening " in line]
    assert sorted(worker_names(listening)) == ["w1", "w2"]
    assert all(f"http2={http2.group(1)} " in line for line in listening)
    pids = started(process.lines)
    assert sorted(pids) == ["w1", "w2"]
    assert healthy(f"http://{address}")
    process.proc.kill()  # the supervisor only: its workers read the end of their link
    for pid in pids.values():
        wait_gone(pid)
    assert sum("supervisor gone; stopping" in line for line in process.lines) == 2


def test_a_taken_port_is_refused_before_any_worker_starts(tmp_path: Path, pg_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_py(
            tmp_path,
            "--workers",
            "2",
            CURSOR_DATABASE_URL=pg_url,
            CURSOR_LISTEN_ADDR=f"127.0.0.1:{port}",
        )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().startswith(
        f"CURSOR_LISTEN_ADDR: cannot listen on 127.0.0.1:{port}"
    )
    assert "worker started" not in result.stderr


# Stand-in workers for the supervisor's own rules: they speak its link and nothing else.
STAND_IN = """
import os, socket, sys, time
link = socket.socket(fileno=int(os.environ["CURSOR_WORKER_FD"]))
name, mode = os.environ["CURSOR_WORKER_NAME"], os.environ["STAND_IN"]
with open(os.environ["STAND_IN_LOG"], "a+") as log:
    log.seek(0)
    first = name not in log.read().split()
    log.write(name + "\\n")
if mode == "fails-at-start" and name == "w2":
    sys.exit(2)
link.sendall(b"R")
if mode == "crashes":
    time.sleep(1.0 if first else 0.05)  # the first starts all listen: a crash, not a failed start
    sys.exit(3)
time.sleep(60)  # until the supervisor's SIGTERM
"""


def stand_in(tmp_path: Path, mode: str) -> tuple[str, dict[str, str], Path]:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    starts = tmp_path / "starts.txt"
    env = {**os.environ, "STAND_IN": mode, "STAND_IN_LOG": str(starts)}
    return str(script), env, starts


async def test_a_worker_that_keeps_dying_stops_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workers, "RESTART_BACKOFF_S", 0.01)
    script, env, starts = stand_in(tmp_path, "crashes")
    async with asyncio.timeout(30):
        code = await Supervisor(2, script, env, {"address": "-"}).run()
    assert code == workers.EXIT_GAVE_UP
    # Each worker is restarted MAX_RESTARTS times at most; the first to die once more stops
    # the server.
    names = starts.read_text().split()
    assert max(names.count("w1"), names.count("w2")) == workers.MAX_RESTARTS + 1


async def test_a_worker_failing_at_startup_stops_the_server_with_its_code(tmp_path: Path) -> None:
    script, env, starts = stand_in(tmp_path, "fails-at-start")
    async with asyncio.timeout(30):
        code = await Supervisor(2, script, env, {"address": "-"}).run()
    assert code == 2
    names = starts.read_text().split()  # w1 may be stopped before it writes its name
    assert names.count("w2") == 1 and names.count("w1") <= 1  # neither restarted
