"""The edge's budgets on ``python run.py``, attacked as an outsider would: out-of-order appends
sent to fill memory, connections and RunSSE streams held open from one address, request
headers sent a byte at a time, and request lines aiohttp cannot parse. Each budget answers with
a clear error and holds; a client within it is served as before."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest

from tests.support.fake_cursor import bidi_append_body, frame_body, user_turn_message
from tests.support.h2_client import H2Client
from tests.support.process import ServerProcess, server_env
from wire.proto import agent_v1_pb2 as agent

MIB = 1024 * 1024
BIDI_APPEND = "/aiserver.v1.BidiService/BidiAppend"
RUN_SSE = "/agent.v1.AgentService/RunSSE"
SESSION = "/console/api/session"
HTTP2_LINE = re.compile(r"http2=(\S+)")

PER_PEER_CONNECTIONS = 40
ALL_CONNECTIONS = 60
RUN_STREAMS_PER_PEER = 4
POOL_MIB = 24


class Served:
    def __init__(self, process: ServerProcess) -> None:
        self.process = process
        self.port = int(process.wait_for_address().rsplit(":", 1)[1])
        match = next(m for line in process.lines if (m := HTTP2_LINE.search(line)))
        h2 = match.group(1)
        self.h2_port = 0 if h2 == "off" else int(h2.rsplit(":", 1)[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_bytes(self) -> int:
        status = Path(f"/proc/{self.process.proc.pid}/status").read_text()
        kib = re.search(r"VmRSS:\s+(\d+) kB", status)
        assert kib is not None
        return int(kib.group(1)) * 1024

    def lines(self, event: str) -> list[str]:
        return [line for line in self.process.lines if event in line]


def serve(tmp_path: Path, **env: str) -> Iterator[Served]:
    process = ServerProcess(server_env(tmp_path, **env))
    try:
        yield Served(process)
    finally:
        process.stop()


@pytest.fixture(scope="module")
def memory_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tmp_path_factory.mktemp("memory"), CURSOR_APPEND_BUFFER_MIB=str(POOL_MIB))


@pytest.fixture(scope="module")
def counted_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(
        tmp_path_factory.mktemp("counted"),
        CURSOR_H2_LISTEN_ADDR="127.0.0.1:0",
        CURSOR_MAX_CONNECTIONS_PER_PEER=str(PER_PEER_CONNECTIONS),
        CURSOR_MAX_CONNECTIONS=str(ALL_CONNECTIONS),
        CURSOR_MAX_RUN_STREAMS_PER_PEER=str(RUN_STREAMS_PER_PEER),
    )


@pytest.fixture(scope="module")
def timed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(
        tmp_path_factory.mktemp("timed"),
        CURSOR_H2_LISTEN_ADDR="127.0.0.1:0",
        CURSOR_HEADER_TIMEOUT_SECONDS="1",
    )


def append_body(request_id: str, seqno: int, text_bytes: int) -> tuple[bytes, dict[str, str]]:
    message = user_turn_message("x" * text_bytes, "some-model")
    return frame_body(bidi_append_body(request_id, seqno, message), enveloped=False, gzipped=False)


def error_of(response: httpx.Response) -> tuple[str, str]:
    body = msgspec.json.decode(response.content)
    return body["code"], body["message"]


# --- memory --------------------------------------------------------------------------------------


def test_out_of_order_appends_are_held_within_a_budget_per_request_and_in_all(
    memory_server: Served,
) -> None:
    before = memory_server.rss_bytes()
    with httpx.Client(base_url=memory_server.url, timeout=60) as client:
        # One request id, appends of 28 MiB (hex) each, none of them in order.
        for seqno in range(1, 16):
            body, headers = append_body("flood-one", seqno, 14 * MIB)
            response = client.post(BIDI_APPEND, content=body, headers=headers)
            assert response.status_code == 413, response.text
            code, message = error_of(response)
            assert code == "resource_exhausted"
            assert "over the limit of 16777216" in message
        # Many request ids, one out-of-order append each: they share the pool.
        accepted: list[httpx.Response] = []
        refused: list[httpx.Response] = []
        for n in range(12):
            body, headers = append_body(f"flood-{n}", 1, 2 * MIB)
            response = client.post(BIDI_APPEND, content=body, headers=headers)
            (accepted if response.status_code == 200 else refused).append(response)
        assert len(accepted) >= 2 and refused, [r.status_code for r in refused]
        for response in refused:
            assert response.status_code == 413
            code, message = error_of(response)
            assert code == "resource_exhausted" and "of all requests" in message
    grown = memory_server.rss_bytes() - before
    # Sent: 420 MiB to one id and 48 MiB over twelve; the old unbounded buffer kept it all.
    assert grown < 150 * MIB, f"RSS grew by {grown / MIB:.0f} MiB"
    # The refused appends cost nothing later: an id that got nothing held is served.
    with httpx.Client(base_url=memory_server.url, timeout=10) as client:
        body, headers = append_body("after-flood", 1, 1024)
        assert client.post(BIDI_APPEND, content=body, headers=headers).status_code == 200


# --- connections and streams ---------------------------------------------------------------------


def connect_from(source: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def read_all(sock: socket.socket) -> bytes:
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


def session_request() -> bytes:
    return f"GET {SESSION} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


def answered(sock: socket.socket) -> bytes:
    """One request on a held connection, and the head of its answer."""
    sock.sendall(session_request())
    return sock.recv(65536)


def refused_at_once(sock: socket.socket) -> bytes:
    answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
    body = msgspec.json.decode(answer.partition(b"\r\n\r\n")[2])
    assert body["code"] == "resource_exhausted"
    message: str = body["message"]
    return message.encode()


def test_connections_are_capped_per_peer_and_in_all(counted_server: Served) -> None:
    port = counted_server.port
    held = [connect_from("127.0.0.1", port) for _ in range(PER_PEER_CONNECTIONS)]
    try:
        extra = connect_from("127.0.0.1", port)
        assert b"127.0.0.1 holds 40 open connections" in refused_at_once(extra)
        extra.close()
        # Another address still gets in, until all peers together hold the total.
        held += [connect_from("127.0.0.2", port) for _ in range(ALL_CONNECTIONS - len(held))]
        other = connect_from("127.0.0.3", port)
        assert b"over all clients" in refused_at_once(other)
        other.close()
        # The held connections are served, and one closed makes room for its peer.
        assert answered(held[0]).startswith(b"HTTP/1.1 200 ")
        held.pop().close()
        time.sleep(0.2)
        again = connect_from("127.0.0.2", port)
        held.append(again)
        assert answered(again).startswith(b"HTTP/1.1 200 ")
        # The HTTP/2 listener counts against the same totals: refused at once, nothing sent.
        h2 = connect_from("127.0.0.1", counted_server.h2_port)
        assert read_all(h2) == b""
        h2.close()
    finally:
        for sock in held:
            sock.close()
    refusals = counted_server.lines("connection refused: limit")
    assert 1 <= len(refusals) <= 3, refusals  # one line per burst and peer, not per refusal


def open_run_sse(client: httpx.Client, request_id: str) -> httpx.Response:
    payload = agent.BidiRequestId(request_id=request_id).SerializeToString()
    body, headers = frame_body(payload, enveloped=True, gzipped=False)
    request = client.build_request("POST", RUN_SSE, content=body, headers=headers)
    return client.send(request, stream=True)


def test_open_run_sse_streams_are_capped_per_peer(counted_server: Served) -> None:
    mine = httpx.Client(base_url=counted_server.url, timeout=10)
    theirs = httpx.Client(
        base_url=counted_server.url,
        timeout=10,
        transport=httpx.HTTPTransport(local_address="127.0.0.2"),
    )
    streams = []
    try:
        streams = [open_run_sse(mine, f"held-{n}") for n in range(RUN_STREAMS_PER_PEER)]
        assert all(stream.status_code == 200 for stream in streams)
        refused = open_run_sse(mine, "one-too-many")
        assert refused.status_code == 413
        refused.read()
        code, message = error_of(refused)
        assert code == "resource_exhausted"
        assert message == "127.0.0.1 holds 4 open RunSSE streams, its limit"
        other = open_run_sse(theirs, "another-peer")
        assert other.status_code == 200
        other.close()
        streams.pop().close()
        # The server notices within its client poll (1 s) that the client left, even though
        # nothing was written to it, and the stream no longer counts.
        deadline = time.monotonic() + 5
        while (again := open_run_sse(mine, "room-again")).status_code != 200:
            again.close()
            assert time.monotonic() < deadline, "a closed stream still counts"
            time.sleep(0.2)
        streams.append(again)
    finally:
        for stream in streams:
            stream.close()
        mine.close()
        theirs.close()


async def test_relayed_run_sse_streams_count_under_the_http2_clients_own_address(
    counted_server: Served,
) -> None:
    """Through the HTTP/2 relay a RunSSE counts against its client's address, not the
    relay's, and a peer header a client sends is not believed on either listener."""
    # From an address of its own, so the other tests' streams do not count here.
    client = await H2Client.connect(f"127.0.0.1:{counted_server.h2_port}", source="127.0.0.4")
    try:
        held = []
        for n in range(RUN_STREAMS_PER_PEER + 1):
            payload = agent.BidiRequestId(request_id=f"h2-held-{n}").SerializeToString()
            body, headers = frame_body(payload, enveloped=True, gzipped=False)
            # A forged peer header: if the relay passed it on, each stream would be a new peer.
            stream = client.open(RUN_SSE, {**headers, "x-cursor-server-peer": f"10.0.0.{n}"})
            await stream.send(body, end=True)
            held.append(stream)
        statuses = [(await stream.headers())[":status"] for stream in held]
        assert statuses == ["200"] * RUN_STREAMS_PER_PEER + ["413"]
        refused = msgspec.json.decode(await held[-1].body())
        assert refused["message"] == "127.0.0.4 holds 4 open RunSSE streams, its limit"
        # The same address over HTTP/1.1 is the same peer, whatever header it sends.
        source = httpx.HTTPTransport(local_address="127.0.0.4")
        with httpx.Client(base_url=counted_server.url, timeout=10, transport=source) as plain:
            forged = {"x-cursor-server-peer": "10.9.9.9"}
            plain.headers.update(forged)
            answer = open_run_sse(plain, "h1-forged")
            assert answer.status_code == 413
            answer.close()
    finally:
        await client.aclose()


async def test_relayed_run_sse_streams_stop_counting_once_their_client_leaves(
    counted_server: Served,
) -> None:
    client = await H2Client.connect(f"127.0.0.1:{counted_server.h2_port}", source="127.0.0.6")
    try:
        for n in range(RUN_STREAMS_PER_PEER):
            payload = agent.BidiRequestId(request_id=f"h2-left-{n}").SerializeToString()
            body, headers = frame_body(payload, enveloped=True, gzipped=False)
            stream = client.open(RUN_SSE, headers)
            await stream.send(body, end=True)
            assert (await stream.headers())[":status"] == "200"
    finally:
        await client.aclose()  # gone, while its runs still wait for a RunRequest
    source = httpx.HTTPTransport(local_address="127.0.0.6")
    with httpx.Client(base_url=counted_server.url, timeout=10, transport=source) as plain:
        deadline = time.monotonic() + 5
        while (again := open_run_sse(plain, "h1-after-h2")).status_code != 200:
            again.close()
            assert time.monotonic() < deadline, "the relayed streams still count"
            await asyncio.sleep(0.2)
        again.close()


# --- time to send headers, and what cannot be parsed ---------------------------------------------


def test_a_connection_that_sends_no_whole_request_head_in_time_is_closed(
    timed_server: Served,
) -> None:
    silent = connect_from("127.0.0.1", timed_server.port)
    # Slowloris: a byte every 0.2 s, never a whole head.
    drips = [connect_from("127.0.0.1", timed_server.port) for _ in range(30)]
    started = time.monotonic()
    for byte in b"GET /console/api/sess":
        for sock in drips:
            with contextlib.suppress(OSError):
                sock.send(bytes([byte]))
        time.sleep(0.2)
        if time.monotonic() - started > 3:
            break
    for sock in (silent, *drips):
        answer = read_all(sock)
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:100]
        assert b'"code":"deadline_exceeded"' in answer
        sock.close()
    assert time.monotonic() - started < 8


def test_a_kept_alive_connection_may_idle_but_its_next_head_is_timed(
    timed_server: Served,
) -> None:
    sock = connect_from("127.0.0.1", timed_server.port)
    try:
        assert answered(sock).startswith(b"HTTP/1.1 200 ")
        time.sleep(1.6)  # idle past the header timeout: not a request in progress
        assert answered(sock).startswith(b"HTTP/1.1 200 ")
        sock.sendall(b"GET /console/api/session HTTP/1.1\r\nHost: 12")
        started = time.monotonic()
        assert read_all(sock).startswith(b"HTTP/1.1 408 ")
        assert 0.5 < time.monotonic() - started < 5
    finally:
        sock.close()


def test_an_http2_connection_without_a_request_in_time_is_closed(timed_server: Served) -> None:
    sock = connect_from("127.0.0.1", timed_server.h2_port)
    try:
        started = time.monotonic()
        read_all(sock)  # the server's SETTINGS, then GOAWAY, then the close
        assert 0.5 < time.monotonic() - started < 5
    finally:
        sock.close()


MALFORMED = [
    b"GARBAGE\r\n\r\n",
    b"GET / HTTP/1.1\x00\r\nHost: x\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(40),
    b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nno colon here\r\n\r\n",
    b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
]


@pytest.mark.parametrize("request_bytes", MALFORMED, ids=range(len(MALFORMED)))
def test_a_malformed_request_is_a_json_400_without_a_traceback(
    timed_server: Served, request_bytes: bytes
) -> None:
    before = len(timed_server.process.lines)
    sock = connect_from("127.0.0.1", timed_server.port)
    try:
        sock.sendall(request_bytes)
        answer = read_all(sock)
    finally:
        sock.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ", 2)[1].startswith(b"4"), answer[:200]
    assert b"application/json" in head
    assert msgspec.json.decode(body)["code"] == "invalid_argument"
    time.sleep(0.1)
    new = timed_server.process.lines[before:]
    assert not [line for line in new if "Traceback" in line or "ERROR" in line], new


@pytest.mark.parametrize(
    ("path", "content_type"),
    [(SESSION.replace("session", "login"), "application/json"), (BIDI_APPEND, "application/proto")],
)
def test_a_client_that_leaves_mid_body_is_no_error(
    timed_server: Served, path: str, content_type: str
) -> None:
    before = len(timed_server.process.lines)
    for _ in range(20):
        sock = connect_from("127.0.0.1", timed_server.port)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
            "Content-Length: 100\r\n\r\n0123456789"
        )
        sock.sendall(head.encode())
        time.sleep(0.02)
        sock.close()
    time.sleep(0.5)
    new = timed_server.process.lines[before:]
    assert not [line for line in new if "Traceback" in line or " ERROR " in line], new[:20]
    assert len([line for line in new if "client left mid-request" in line]) <= 2
