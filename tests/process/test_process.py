"""``python run.py`` as a real process: startup errors, the listening line, and shutdown."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from tests.support.fake_cursor import FakeCursor
from tests.support.process import REPO, ServerProcess, server_env

SHUTDOWN_LIMIT_S = 10.0


def run_bad(tmp_path: Path, **overrides: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "run.py")],
        env=server_env(tmp_path, **overrides),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CURSOR_LISTEN_ADDR", "not-an-address"),
        ("CURSOR_LISTEN_ADDR", "127.0.0.1:70000"),
        ("CURSOR_LISTEN_ADDR", "::1:3000"),
        ("CURSOR_UPSTREAM_URL", "ftp://example.com"),
        ("CURSOR_PROVIDER_TIMEOUT_SECONDS", "soon"),
        ("CURSOR_PROVIDER_TIMEOUT_SECONDS", "-1"),
        ("CURSOR_LOG_LEVEL", "chatty"),
        ("CURSOR_DATABASE_URL", "mysql://db/x"),
        ("CURSOR_PUBLIC_URL", "balancer:3001"),
        ("CURSOR_PUBLIC_URL", "http://balancer:3001/agent"),
        ("CURSOR_METRICS_ALLOW", "lan"),
    ],
)
def test_bad_setting_exits_2_naming_the_variable(tmp_path: Path, variable: str, value: str) -> None:
    result = run_bad(tmp_path, **{variable: value})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{variable}: ")


def test_busy_port_exits_2(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_bad(tmp_path, CURSOR_LISTEN_ADDR=f"127.0.0.1:{port}")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("CURSOR_LISTEN_ADDR: cannot listen on")


@pytest.fixture
async def endless_upstream() -> AsyncIterator[tuple[str, asyncio.Event]]:
    """An upstream whose response body never ends; the event fires when its client leaves."""
    client_left = asyncio.Event()

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        try:
            while True:
                await response.write(b"tick\n")
                await asyncio.sleep(0.1)
        except ConnectionError:
            client_left.set()  # the server went away, as the test means it to
            return response
        except asyncio.CancelledError:
            client_left.set()
            raise

    app = web.Application()
    app.router.add_get("/stream", endless)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}", client_left
    await runner.cleanup()


async def test_sigterm_cancels_open_run_sse_and_exits_in_time(
    tmp_path: Path, endless_upstream: tuple[str, asyncio.Event]
) -> None:
    upstream_url, _ = endless_upstream
    process = ServerProcess(server_env(tmp_path, CURSOR_UPSTREAM_URL=upstream_url))
    try:
        address = await asyncio.to_thread(process.wait_for_address)
        cursor = FakeCursor(f"http://{address}")
        stream = await cursor.open_run_sse("open-at-shutdown")
        # A proxied stream that never ends must not hold the shutdown up.
        proxied_client = httpx.AsyncClient(timeout=10)
        proxied = await proxied_client.send(
            proxied_client.build_request("GET", f"http://{address}/stream"), stream=True
        )
        assert proxied.status_code == 200
        chunks = proxied.aiter_raw()
        assert await asyncio.wait_for(anext(chunks), 5) == b"tick\n"

        started = time.monotonic()
        process.proc.send_signal(signal.SIGTERM)
        result = await stream.read_to_end(timeout=SHUTDOWN_LIMIT_S)
        assert result.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
        code = await asyncio.to_thread(process.proc.wait, SHUTDOWN_LIMIT_S + 2)
        elapsed = time.monotonic() - started
        assert code == 0, process.log
        assert elapsed < SHUTDOWN_LIMIT_S, f"shutdown took {elapsed:.1f}s"
        await proxied.aclose()
        await proxied_client.aclose()
        await cursor.aclose()
        assert "shutdown signal received" in process.log
    finally:
        process.stop()


async def test_startup_line_names_the_address_and_sigint_exits_0(tmp_path: Path) -> None:
    process = ServerProcess(server_env(tmp_path))
    try:
        address = await asyncio.to_thread(process.wait_for_address)
        host, port = address.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
        process.proc.send_signal(signal.SIGINT)
        assert await asyncio.to_thread(process.proc.wait, SHUTDOWN_LIMIT_S) == 0
        assert (tmp_path / "server.db").exists(), "the store is opened at startup"
    finally:
        process.stop()


TOKEN = "process-TOKEN-0123456789abcdef"


@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0", "192.0.2.7:3000"])
def test_a_non_loopback_bind_without_a_token_exits_2(tmp_path: Path, address: str) -> None:
    result = run_bad(tmp_path, CURSOR_LISTEN_ADDR=address)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("CURSOR_CONSOLE_TOKEN: required when CURSOR_LISTEN_ADDR"), lines


def test_a_short_token_exits_2_without_showing_it(tmp_path: Path) -> None:
    result = run_bad(tmp_path, CURSOR_CONSOLE_TOKEN="short-secret")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == ["CURSOR_CONSOLE_TOKEN: must be at least 16 characters long"]


async def test_with_a_token_the_process_asks_for_it_and_never_logs_it(tmp_path: Path) -> None:
    env = server_env(tmp_path, CURSOR_CONSOLE_TOKEN=TOKEN, CURSOR_LOG_LEVEL="debug")
    process = ServerProcess(env)
    try:
        address = await asyncio.to_thread(process.wait_for_address)
        async with httpx.AsyncClient(base_url=f"http://{address}", timeout=10.0) as client:
            assert (await client.get("/console/api/providers")).status_code == 401
            wrong = await client.post("/console/api/login", json={"token": TOKEN + "x"})
            assert wrong.status_code == 401
            login = await client.post("/console/api/login", json={"token": TOKEN})
            assert login.status_code == 200
            assert (await client.get("/console/api/providers")).status_code == 200  # the cookie
        process.proc.send_signal(signal.SIGINT)
        assert await asyncio.to_thread(process.proc.wait, SHUTDOWN_LIMIT_S) == 0
        process.stop()
        assert "console_login=token" in process.log
        assert "console login" in process.log
        assert TOKEN not in process.log
    finally:
        process.stop()
