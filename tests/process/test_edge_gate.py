"""The gate at both listeners of ``python run.py`` (``wire.http.gate``, ``wire.http.h2_edge``),
attacked as an outsider would: raw request lines for the targets that once slipped past the
guards to Cursor's backend, ``:path`` values that once made the HTTP/2 relay fetch from
anywhere, and the Host, Origin and content types a web page would send. A recording upstream
stands in for Cursor's backend; each test asserts it received nothing (and, as a control, that
it does receive what is let through)."""

from __future__ import annotations

import re
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

from hypothesis import example, given
from hypothesis import strategies as st

from tests.support.fuzz import fuzz_settings
from tests.support.h2_client import RUN, H2Client
from tests.support.process import ServerProcess, server_env

TOKEN = "gate-token-0123456789abcdef"
HTTP2_LINE = re.compile(r"http2=(\S+)")
MODELS = "/aiserver.v1.AiService/AvailableModels"
RUN_SSE = "/agent.v1.AgentService/RunSSE"


class Recorder(socketserver.ThreadingTCPServer):
    """Cursor's backend (or any host the server could be made to fetch from): records every
    request line it is sent and answers 200."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _RecordingHandler)
        self.seen: list[str] = []
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _RecordingHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline(65536).decode("latin-1").rstrip("\r\n")
        assert isinstance(self.server, Recorder)
        self.server.seen.append(line)
        length, chunked = 0, False
        while (header := self.rfile.readline(65536)) not in (b"\r\n", b"\n", b""):
            name, _, value = header.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
            chunked |= name.strip().lower() == "transfer-encoding"
        if not chunked:
            self.rfile.read(length)
        while chunked and (size := int(self.rfile.readline(65536).split(b";")[0], 16)):
            self.rfile.read(size + 2)
        if chunked:
            self.rfile.readline(65536)
        self.wfile.write(
            b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nupstream"
        )


def exchange(port: int, request: bytes) -> tuple[int, bytes]:
    """One raw HTTP/1.1 exchange: the status and the whole answer (the server closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status = answer.split(b" ", 2)[1] if answer.startswith(b"HTTP/1.") else b"0"
    return int(status), answer


def request_of(
    method: str,
    target: str,
    *,
    host: str = "127.0.0.1",
    body: bytes = b"x",
    headers: dict[str, str] | None = None,
) -> bytes:
    fields = {"Host": host, "Content-Type": "application/proto", **(headers or {})}
    head = f"{method} {target} HTTP/1.1\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in fields.items())
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode("utf-8", "surrogateescape") + body


class Served:
    def __init__(self, process: ServerProcess, upstream: Recorder, probe: Recorder) -> None:
        self.process = process
        self.upstream = upstream
        self.probe = probe  # another host on loopback that nothing may make us fetch from
        self.port = int(process.wait_for_address().rsplit(":", 1)[1])
        match = next(m for line in process.lines if (m := HTTP2_LINE.search(line)))
        self.h2_port = int(match.group(1).rsplit(":", 1)[1])

    def clear(self) -> Served:
        self.upstream.seen.clear()
        self.probe.seen.clear()
        return self

    def nothing_left(self) -> None:
        assert self.upstream.seen == [] and self.probe.seen == []


def serve(tmp_path: Path, **env: str) -> Iterator[Served]:
    upstream, probe = Recorder(), Recorder()
    process = ServerProcess(server_env(tmp_path, CURSOR_UPSTREAM_URL=upstream.url, **env))
    try:
        yield Served(process, upstream, probe)
    finally:
        process.stop()
        upstream.close()
        probe.close()


@pytest.fixture(scope="module")
def wide_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Both listeners beyond loopback, with the token; loopback is not an allowed network."""
    yield from serve(
        tmp_path_factory.mktemp("wide"),
        CURSOR_LISTEN_ADDR="0.0.0.0:0",
        CURSOR_H2_LISTEN_ADDR="0.0.0.0:0",
        CURSOR_CONSOLE_TOKEN=TOKEN,
        CURSOR_AGENT_ALLOW="10.0.0.0/8",
    )


@pytest.fixture(scope="module")
def allowed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Beyond loopback with loopback allowed: a client with the token gets past access."""
    yield from serve(
        tmp_path_factory.mktemp("allowed"),
        CURSOR_LISTEN_ADDR="0.0.0.0:0",
        CURSOR_H2_LISTEN_ADDR="0.0.0.0:0",
        CURSOR_CONSOLE_TOKEN=TOKEN,
        CURSOR_AGENT_ALLOW="127.0.0.0/8",
    )


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Both listeners on loopback, no token."""
    yield from serve(
        tmp_path_factory.mktemp("local"),
        CURSOR_LISTEN_ADDR="127.0.0.1:0",
        CURSOR_H2_LISTEN_ADDR="127.0.0.1:0",
    )


@pytest.fixture
def wide(wide_server: Served) -> Served:
    return wide_server.clear()


@pytest.fixture
def wide_allowed(allowed_server: Served) -> Served:
    return allowed_server.clear()


@pytest.fixture
def local(local_server: Served) -> Served:
    return local_server.clear()


SLIPPED = [
    "/console%2F..%2F..%2Faiserver.v1.AiService/AvailableModels",
    "/console/api/providers%0a",
    "/x/../console/api/providers",
    "/agent.v1.AgentService/RunSSE/../x",
    "/%2e%2e/aiserver.v1.AiService/AvailableModels",
    "/console%5c..%5cx",
]


@pytest.mark.parametrize("target", SLIPPED)
@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
def test_targets_that_slipped_past_the_guards_are_refused_and_logged(
    wide: Served, target: str, method: str
) -> None:
    status, answer = exchange(wide.port, request_of(method, target))
    assert status == 400, answer
    assert b'"code":"invalid_argument"' in answer
    wide.nothing_left()
    assert "edge request refused" in wide.process.log


def test_a_flood_of_refused_requests_is_one_log_line(wide: Served) -> None:
    """A disallowed peer sending refused requests as fast as it can fills no log."""
    before = len(wide.process.lines)
    for _ in range(200):
        status, _ = exchange(wide.port, request_of("POST", MODELS))
        assert status == 403
    time.sleep(0.2)
    lines = [line for line in wide.process.lines[before:] if "request refused" in line]
    assert len(lines) == 1, lines[:5]
    wide.nothing_left()


def test_a_disallowed_peer_reaches_nothing_upstream_and_an_allowed_one_does(
    wide: Served, wide_allowed: Served
) -> None:
    for target in ("/aiserver.v1.DashboardService/GetTeams", MODELS, "/anything"):
        status, _ = exchange(
            wide.port, request_of("POST", target, headers={"X-Cursor-Server-Token": TOKEN})
        )
        assert status == 403
    wide.nothing_left()
    token = {"X-Cursor-Server-Token": TOKEN}
    status, answer = exchange(wide_allowed.port, request_of("POST", "/anything", headers=token))
    assert (status, answer.endswith(b"upstream")) == (200, True)
    assert wide_allowed.upstream.seen == ["POST /anything HTTP/1.1"]


async def h2_status(
    port: int, path: str, headers: dict[str, str], authority: str | None = None
) -> tuple[str, bytes]:
    client = await H2Client.connect(f"127.0.0.1:{port}")
    try:
        fields = {"content-type": "application/proto", **headers}
        stream = client.open(path, fields, authority=authority or "127.0.0.1")
        await stream.send(b"x", end=True)
        return (await stream.headers())[":status"], await stream.body()
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    "path",
    [
        "@127.0.0.1:{probe}/h2-ssrf-proof",
        "@127.0.0.1:{probe}/console/api/providers",
        "/console%2F..%2Fx",
        "/x/../console/api/providers",
    ],
)
async def test_the_h2_relay_fetches_only_our_own_paths(wide_allowed: Served, path: str) -> None:
    """With the token, from an allowed network: the access check passes, and still no
    ``:path`` makes the relay reach another host (the probe) or anything upstream."""
    target = path.format(probe=wide_allowed.probe.server_address[1])
    status, body = await h2_status(wide_allowed.h2_port, target, {"x-cursor-server-token": TOKEN})
    assert status == "400", body
    wide_allowed.nothing_left()
    # A plain path with the token is relayed, and carries nothing of ours upstream.
    status, body = await h2_status(wide_allowed.h2_port, "/plain", {"x-cursor-server-token": TOKEN})
    assert (status, body) == ("200", b"upstream")
    assert wide_allowed.upstream.seen == ["POST /plain HTTP/1.1"]


@pytest.mark.parametrize("target", [RUN_SSE, MODELS, "/aiserver.v1.DashboardService/GetTeams"])
def test_on_loopback_a_rebound_host_name_reaches_nothing(local: Served, target: str) -> None:
    status, answer = exchange(local.port, request_of("POST", target, host="evil.example"))
    assert status == 403, answer
    status, _ = exchange(local.port, request_of("POST", target, host="evil.example:80"))
    assert status == 403
    local.nothing_left()


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://127.0.0.1:1"])
@pytest.mark.parametrize("target", [RUN_SSE, MODELS, "/aiserver.v1.DashboardService/GetTeams"])
def test_a_foreign_origin_reaches_nothing(local: Served, target: str, origin: str) -> None:
    status, answer = exchange(local.port, request_of("POST", target, headers={"Origin": origin}))
    assert status == 403, answer
    local.nothing_left()


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
@pytest.mark.parametrize("target", [RUN_SSE, "/aiserver.v1.BidiService/BidiAppend", MODELS])
def test_agent_rpcs_need_a_connect_content_type(
    local: Served, target: str, content_type: str
) -> None:
    headers = {"Content-Type": content_type}
    status, answer = exchange(local.port, request_of("POST", target, headers=headers))
    assert status == 415, answer
    local.nothing_left()


def test_what_the_editor_sends_still_goes_through(local: Served) -> None:
    for host in (f"127.0.0.1:{local.port}", f"localhost:{local.port}"):
        headers = {"Origin": "vscode-file://vscode-app"}
        status, answer = exchange(local.port, request_of("POST", "/x", host=host, headers=headers))
        assert (status, answer.endswith(b"upstream")) == (200, True)
    assert local.upstream.seen == ["POST /x HTTP/1.1"] * 2


async def test_the_h2_listener_on_loopback_applies_the_same_browser_rules(local: Served) -> None:
    for path in (RUN, MODELS, "/aiserver.v1.DashboardService/GetTeams"):
        status, _ = await h2_status(local.h2_port, path, {}, authority="evil.example")
        assert status == "403", path
        status, _ = await h2_status(local.h2_port, path, {"origin": "https://evil.example"})
        assert status == "403", path
    status, _ = await h2_status(local.h2_port, RUN, {"content-type": "text/plain"})
    assert status == "415"
    local.nothing_left()
    status, body = await h2_status(local.h2_port, "/x", {}, authority=f"localhost:{local.h2_port}")
    assert (status, body) == ("200", b"upstream")


TARGET_PIECES = st.sampled_from(
    [
        *("/", ".", "..", "%2e", "%2f", "%2F", "%5c", "\\", "%0a", "%00", "%25", "%63onsole"),
        *("%20", "console", "console/api", "api", "providers", "x", "?", "#", "%", "@", ":"),
        *("//", "agent.v1.AgentService", "RunSSE", "aiserver.v1.BidiService", "BidiAppend"),
        "healthz",
    ]
)
METHODS = st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"])


@fuzz_settings(150)
@given(method=METHODS, target=st.lists(TARGET_PIECES, min_size=1, max_size=10).map("".join))
@example(method="GET", target="/%63onsole")
@example(method="POST", target="/console")
def test_fuzz_no_request_from_a_disallowed_peer_ever_reaches_the_upstream(
    wide_server: Served, method: str, target: str
) -> None:
    """Whatever the request line, a peer outside the allow-list gets an answer of ours (never
    a 5xx) and the upstream receives nothing."""
    wide = wide_server.clear()
    status, answer = exchange(wide.port, request_of(method, target))
    # Ours: a refusal, the health check, or the console's own redirect of ``/console`` (in
    # any spelling the router decodes to it) to its page, which needs no allowed peer.
    redirected = status == 308 and b"\r\nLocation: /console/\r\n" in answer
    assert 400 <= status < 500 or (status == 200 and "healthz" in target) or redirected, (
        status,
        target,
    )
    wide.nothing_left()


@fuzz_settings(150)
@given(method=METHODS, target=st.lists(TARGET_PIECES, min_size=1, max_size=10).map("".join))
def test_fuzz_no_request_to_a_rebound_host_ever_reaches_the_upstream(
    local_server: Served, method: str, target: str
) -> None:
    local = local_server.clear()
    status, _ = exchange(local.port, request_of(method, target, host="evil.example"))
    assert status < 500, (status, target)
    local.nothing_left()
