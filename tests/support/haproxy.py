"""HAProxy in front of several servers, for the tests of instances behind a round-robin balancer.

A real ``haproxy -db`` (foreground, logging to its stderr) runs the configuration in
``haproxy.cfg.template``, the one docs/operations.md quotes, filled in with free ports on
127.0.0.1 and the given backends: an HTTP/1.1 frontend for the servers' main listeners and an
HTTP/2 cleartext one for their HTTP/2 listeners, round robin per request, health checks on
``GET /healthz``, and ``X-Cursor-Server-Token`` set from the token the servers need (the
balancer's ``CURSOR_CONSOLE_TOKEN``). The fixture ``start_balancer`` starts one in front of
given servers and returns once every server passed its health check; ``make_balancer`` makes
one whose address is known before the servers start (for their ``CURSOR_PUBLIC_URL``). Both
stop it at teardown and fail the test on an ``[ALERT]`` line of HAProxy's. What it forwarded,
and to which server, is read from HAProxy's own request log (``requests``) and its stats
socket (``stats``).

Without ``/usr/sbin/haproxy`` the tests that use it skip and say how to install it; ``.ci/run``
installs it and sets ``CURSOR_TEST_REQUIRE_HAPROXY=1``, which turns the skip into a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self
from urllib.parse import urlsplit

import pytest

HAPROXY = Path("/usr/sbin/haproxy")
REQUIRE_VARIABLE = "CURSOR_TEST_REQUIRE_HAPROXY"
TEMPLATE = Path(__file__).with_name("haproxy.cfg.template")
# The template's optional part: without HTTP/2 backends, everything from this line on goes.
H2_PART = "# HTTP/2 (h2c with prior knowledge)"
PLACEHOLDER = re.compile(r"<[A-Z0-9_]+>")
TOKEN_VARIABLE = "CURSOR_CONSOLE_TOKEN"
READY_S = 15.0
# One ``option httplog`` line: client address, accept date, frontend, backend/server, timers,
# status, bytes, two cookies, termination state, connection counts ending in the retries
# ("+" when the last one went to another server), queues, the request line.
LOG_LINE = re.compile(
    r"^(?P<client>\S+):(?P<port>\d+) \[[^\]]+\] (?P<frontend>\S+) "
    r"(?P<backend>[^\s/]+)/(?P<server>\S+) \S+ (?P<status>-?\d+) \S+ \S+ \S+ "
    r"(?P<termination>\S+) \S+/\S+/\S+/\S+/(?P<retries>\+?\d+) \S+ "
    r"\"(?P<method>\S+) (?P<path>\S+)(?: \S+)?\"$"
)


@dataclass(frozen=True)
class Backend:
    """One server behind the balancer: its name and its listeners' ``host:port``."""

    name: str
    http1: str  # its main listener (CURSOR_LISTEN_ADDR)
    h2: str | None = None  # its HTTP/2 listener (CURSOR_H2_LISTEN_ADDR), if it runs one


@dataclass(frozen=True)
class Logged:
    """One request as HAProxy logged it (when its response ended)."""

    client: str  # the client connection's address:port: one connection, one value
    frontend: str
    backend: str
    server: str
    status: int
    method: str
    path: str
    termination: str  # HAProxy's session state at its end: "----" for a plain exchange
    retries: str  # connection retries, "+N" when it went to another server in the end


def haproxy_config(
    backends: Sequence[Backend],
    *,
    http1_bind: str,
    h2_bind: str | None,
    stats_socket: str,
    token: bool = True,
) -> str:
    """The template filled in (its comments, which name the placeholders, kept as they are).
    The HTTP/2 part is left out unless ``h2_bind`` is given, and then every backend must run
    an HTTP/2 listener. ``token``: False for servers on loopback, which need none; the lines
    that set it go (HAProxy refuses to set a header from an empty variable)."""
    text = TEMPLATE.read_text()
    if h2_bind is None:
        text = text[: text.index(H2_PART)].rstrip("\n") + "\n"
    elif any(backend.h2 is None for backend in backends):
        raise ValueError("an HTTP/2 frontend needs every backend's HTTP/2 listener")
    indent = "\n    "
    values = {
        "<STATS_SOCKET>": stats_socket,
        "<HTTP1_BIND>": http1_bind,
        "<HTTP1_SERVERS>": indent.join(f"server {b.name} {b.http1}" for b in backends),
        "<H2_BIND>": h2_bind or "",
        "<H2_SERVERS>": indent.join(f"server {b.name} {b.h2}" for b in backends),
    }
    lines = []
    for line in text.splitlines():
        if not line.lstrip().startswith("#"):
            if not token and f"${{{TOKEN_VARIABLE}}}" in line:
                continue
            for placeholder, value in values.items():
                line = line.replace(placeholder, value)
            left = PLACEHOLDER.findall(line)
            assert not left, f"unfilled placeholders in {TEMPLATE.name}: {left}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Balancer:
    """One HAProxy process. Its frontends' ports are chosen when it is made, so the servers
    behind it can be told its address (``CURSOR_PUBLIC_URL``) before it starts; ``serve``
    starts it in front of them and returns once every server passed its health check."""

    def __init__(self, folder: Path, *, token: str | None = None, h2: bool = False) -> None:
        self.folder = folder
        self.token = token
        self.config_path = folder / "haproxy.cfg"
        self.stats_socket = folder / "stats.sock"
        self.http1_address = f"127.0.0.1:{free_port()}"
        self.h2_address = f"127.0.0.1:{free_port()}" if h2 else None
        self.backends: list[Backend] = []
        self.lines: list[str] = []
        self.proc: subprocess.Popen[str] | None = None
        self.exited_by_itself = False
        self._reader: threading.Thread | None = None

    @property
    def http1_url(self) -> str:
        return f"http://{self.http1_address}"

    @property
    def h2_url(self) -> str:
        assert self.h2_address is not None, "made without the HTTP/2 frontend"
        return f"http://{self.h2_address}"

    async def serve(self, backends: Sequence[Backend]) -> Self:
        await asyncio.to_thread(self.start, backends)
        return self

    def _command(self, *args: str) -> list[str]:
        return [str(HAPROXY), *args, "-f", str(self.config_path)]

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_")}
        if self.token is not None:
            env[TOKEN_VARIABLE] = self.token
        return env

    def start(self, backends: Sequence[Backend]) -> None:
        """Write the configuration, check it (a warning fails too), run it and wait until
        every server is up."""
        assert self.proc is None, "started once only"
        self.backends = list(backends)
        self.config_path.write_text(
            haproxy_config(
                self.backends,
                http1_bind=self.http1_address,
                h2_bind=self.h2_address,
                stats_socket=str(self.stats_socket),
                token=self.token is not None,
            )
        )
        checked = subprocess.run(
            self._command("-c"), env=self._env(), capture_output=True, text=True, timeout=30
        )
        output = checked.stdout + checked.stderr
        assert checked.returncode == 0 and "[WARNING]" not in output, output
        self.proc = subprocess.Popen(
            self._command("-db"),
            env=self._env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._reader.start()
        self._wait_until_up()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def log(self) -> str:
        return "\n".join(self.lines)

    def _wait_until_up(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._reader_done()
                # A port taken between choosing and binding it ends up here too.
                raise AssertionError(f"haproxy exited {self.proc.returncode}:\n{self.log}")
            with contextlib.suppress(OSError, ValueError):
                servers = [row for row in self.stats() if row["svname"] not in SUMMARY_ROWS]
                if servers and all(row["status"] == "UP" for row in servers):
                    return
            time.sleep(0.05)
        raise AssertionError(f"haproxy's servers not all up within {READY_S} s:\n{self.log}")

    def _reader_done(self) -> None:
        if self._reader is not None:
            self._reader.join(5)

    def stats(self) -> list[dict[str, str]]:
        """``show stat`` on the stats socket: one row per frontend, server and backend."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(5)
            client.connect(str(self.stats_socket))
            client.sendall(b"show stat\n")
            data = bytearray()
            while chunk := client.recv(65536):
                data += chunk
        header, *rows = [line for line in data.decode().splitlines() if line]
        names = header.removeprefix("# ").split(",")
        return [dict(zip(names, row.split(","), strict=False)) for row in rows]

    def server_stats(self, backend: str) -> dict[str, dict[str, str]]:
        """Each server's ``show stat`` row in ``backend`` (``cursor_http1``, ``cursor_h2``)."""
        return {
            row["svname"]: row
            for row in self.stats()
            if row["pxname"] == backend and row["svname"] not in SUMMARY_ROWS
        }

    def requests(self) -> list[Logged]:
        """Every request HAProxy logged so far, in the order their responses ended (health
        checks are not requests). An HTTP/2 request's absolute target is cut to its path."""
        found = []
        for line in list(self.lines):
            if match := LOG_LINE.match(line):
                target = match["path"]
                found.append(
                    Logged(
                        client=f"{match['client']}:{match['port']}",
                        frontend=match["frontend"],
                        backend=match["backend"],
                        server=match["server"],
                        status=int(match["status"]),
                        method=match["method"],
                        path=urlsplit(target).path if "://" in target else target,
                        termination=match["termination"],
                        retries=match["retries"],
                    )
                )
        return found

    async def logged(self, count: int, path: str, timeout: float = 5.0) -> list[Logged]:
        """The first ``count`` logged requests for ``path`` once there are that many (a
        request is logged when its response has ended, which may come after the client read
        it)."""
        async with asyncio.timeout(timeout):
            while len(found := [r for r in self.requests() if r.path == path]) < count:
                await asyncio.sleep(0.02)
        return found[:count]

    def alerts(self) -> list[str]:
        return [line for line in self.lines if "[ALERT]" in line]

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
            else:
                self.exited_by_itself = True
        self._reader_done()


SUMMARY_ROWS = ("FRONTEND", "BACKEND")


def haproxy_or_skip() -> None:
    """Skip, saying how to install it, when HAProxy is missing; fail instead under
    ``CURSOR_TEST_REQUIRE_HAPROXY=1`` (``.ci/run``)."""
    if HAPROXY.exists():
        return
    reason = f"{HAPROXY} not found: apt-get install -y haproxy"
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(reason)
    pytest.skip(reason)


MakeBalancer = Callable[..., Balancer]
StartBalancer = Callable[..., Awaitable[Balancer]]


@pytest.fixture
def make_balancer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeBalancer]:
    """``make_balancer(token=..., h2=...)``: a HAProxy not yet started whose frontends'
    addresses are known (``token``: the servers' console token, which it adds to every
    request; ``h2``: with the HTTP/2 frontend); ``await balancer.serve(backends)`` starts it.
    Every one made is stopped at teardown; one that exited by itself, or an ``[ALERT]`` line
    of one, fails the test (the alerts not if it is marked ``allows_error_lines``)."""
    haproxy_or_skip()
    made: list[Balancer] = []

    def make(*, token: str | None = None, h2: bool = False) -> Balancer:
        folder = tmp_path / f"haproxy-{len(made)}"
        folder.mkdir()
        balancer = Balancer(folder, token=token, h2=h2)
        made.append(balancer)
        return balancer

    yield make
    for balancer in made:
        balancer.stop()
    problems = [f"haproxy exited by itself:\n{b.log}" for b in made if b.exited_by_itself]
    if request.node.get_closest_marker("allows_error_lines") is None:
        problems += [line for balancer in made for line in balancer.alerts()]
    if problems:
        pytest.fail("haproxy reported:\n" + "\n".join(problems[:20]), pytrace=False)


@pytest.fixture
def start_balancer(make_balancer: MakeBalancer) -> StartBalancer:
    """``await start_balancer(backends, token=..., h2=...)``: ``make_balancer``'s, started."""

    async def start(
        backends: Sequence[Backend], *, token: str | None = None, h2: bool = False
    ) -> Balancer:
        return await make_balancer(token=token, h2=h2).serve(backends)

    return start
