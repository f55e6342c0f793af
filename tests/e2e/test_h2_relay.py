"""A ``Run`` stream of one of Cursor's own models, relayed upstream as RunSSE + BidiAppend.

Our own h2 client on a real socket, the server with its HTTP/2 listener and a store (a user
model on the fake provider), and a fake Cursor backend that records what reaches it."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Callable

import h2.errors
import pytest

from store import Store
from store.base.typed_peewee import execute_sql
from store.catalog import RoutingEntry, update_routing
from tests.support.fake_cursor import (
    CursorSession,
    bidi_append_body,
    cancel_message,
    final_text,
    heartbeat_message,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, Script, chat_events
from tests.support.fake_upstream import SCRIPTED, FakeUpstream, fake_upstream
from tests.support.h2_client import RUN, ClientStream, H2Cursor
from tests.support.h2_servers import StartH2, connect, make_h2
from wire.connect import FLAG_COMPRESSED, EnvelopeReader, encode_envelope
from wire.http.run_pair import run_pair
from wire.proto import agent_v1_pb2 as agent

__all__ = ["fake_upstream", "make_h2"]  # fixtures used by name

CURSOR_MODEL = "claude-4.5-sonnet"
RUN_HEADERS = {
    "content-type": "application/connect+proto",
    "connect-protocol-version": "1",
    "connect-content-encoding": "gzip",
    "authorization": "Bearer the-users-cursor-token",
    "x-client-thing": "kept",
}


@pytest.fixture
def upstream_config(fake_upstream: FakeUpstream) -> str:
    """``make_h2``'s servers send upstream to the fake Cursor backend."""
    return fake_upstream.url


def cursor_run(run_id: str) -> agent.AgentClientMessage:
    """A CLI-style RunRequest of Cursor's model: no request context."""
    return agent.AgentClientMessage(
        run_request=agent.AgentRunRequest(
            conversation_id="conv-cursor",
            run_id=run_id,
            requested_model=agent.RequestedModel(model_id=f"{CURSOR_MODEL}/high"),
        )
    )


def names(headers: list[tuple[str, str]]) -> set[str]:
    return {name.lower() for name, _ in headers}


def value(headers: list[tuple[str, str]], name: str) -> list[str]:
    return [v for k, v in headers if k.lower() == name]


async def read_bytes(stream: ClientStream, size: int) -> bytes:
    body = bytearray()
    while len(body) < size:
        chunk = await stream.read()
        assert chunk is not None, bytes(body)
        body += chunk
    return bytes(body)


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


async def test_a_cursor_model_run_is_relayed_as_the_pair_and_closed_with_its_stream(
    make_h2: StartH2, fake_upstream: FakeUpstream, server_store: Store
) -> None:
    fake_upstream.hold_open = True
    server = await make_h2()
    client = await connect(server)
    run = cursor_run("h2-relay-1")
    try:
        stream = client.open(RUN, RUN_HEADERS)
        await stream.send(encode_envelope(0, run.SerializeToString()))
        compressed = gzip.compress(cancel_message().SerializeToString())
        await stream.send(encode_envelope(FLAG_COMPRESSED, compressed))
        # The upstream's bytes come back as sent: no exec of ours (no request_context_args,
        # though the RunRequest carries no context), no frame added.
        assert await read_bytes(stream, len(SCRIPTED)) == SCRIPTED
        await until(lambda: len(fake_upstream.appends) == 2)
        stream.reset()  # the client leaves: both upstream streams close
        await asyncio.wait_for(fake_upstream.run_sse_left.wait(), 5)
    finally:
        await client.aclose()
    ((run_sse_body, run_sse_headers),) = fake_upstream.run_sse
    request_id = agent.BidiRequestId(request_id="h2-relay-1").SerializeToString()
    assert run_sse_body == encode_envelope(0, request_id)
    (first_body, first_headers), (second_body, second_headers) = fake_upstream.appends
    assert first_body == bidi_append_body("h2-relay-1", 0, run)
    assert second_body == bidi_append_body("h2-relay-1", 1, cancel_message())  # decompressed
    for headers in (run_sse_headers, first_headers, second_headers):
        assert value(headers, "authorization") == ["Bearer the-users-cursor-token"]
        assert value(headers, "x-client-thing") == ["kept"]
        assert not names(headers) & {"connect-content-encoding", ":path", ":authority"}
        assert value(headers, "host") == [fake_upstream.url.removeprefix("http://")]
    assert value(run_sse_headers, "content-type") == ["application/connect+proto"]
    assert value(first_headers, "content-type") == ["application/proto"]
    # Nothing of the relayed run was stored here.
    count = execute_sql(server_store.database, "SELECT COUNT(*) FROM runs").fetchone()[0]
    assert count == 0


async def test_a_relayed_run_ends_when_the_upstream_stream_ends(
    make_h2: StartH2, fake_upstream: FakeUpstream
) -> None:
    server = await make_h2()
    client = await connect(server)
    try:
        stream = client.open(RUN, RUN_HEADERS)
        await stream.send(encode_envelope(0, cursor_run("h2-relay-2").SerializeToString()))
        body = await stream.body()
    finally:
        await client.aclose()
    assert body == SCRIPTED  # the upstream's own EndStream ends it, and the stream is ended
    # Ended, not cut: at most the NO_ERROR reset that tells a client to stop sending.
    assert stream.reset_code in (None, h2.errors.ErrorCodes.NO_ERROR)


async def test_messages_before_the_run_request_are_relayed_with_it(
    make_h2: StartH2, fake_upstream: FakeUpstream, server_store: Store
) -> None:
    """A heartbeat ahead of the RunRequest: the whole stream is relayed, in order, and no
    run starts here."""
    server = await make_h2()
    client = await connect(server)
    run = cursor_run("h2-relay-3")
    try:
        stream = client.open(RUN, RUN_HEADERS)
        await stream.send(encode_envelope(0, heartbeat_message().SerializeToString()))
        await stream.send(encode_envelope(0, run.SerializeToString()))
        body = await stream.body()
    finally:
        await client.aclose()
    assert body == SCRIPTED
    assert [b for b, _ in fake_upstream.appends] == [
        bidi_append_body("h2-relay-3", 0, heartbeat_message()),
        bidi_append_body("h2-relay-3", 1, run),
    ]
    count = execute_sql(server_store.database, "SELECT COUNT(*) FROM runs").fetchone()[0]
    assert count == 0


async def test_a_client_half_close_ends_a_relayed_run_canceled(
    make_h2: StartH2, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.hold_open = True
    server = await make_h2()
    client = await connect(server)
    try:
        stream = client.open(RUN, RUN_HEADERS)
        await stream.send(encode_envelope(0, cursor_run("h2-relay-4").SerializeToString()))
        assert await read_bytes(stream, len(SCRIPTED)) == SCRIPTED
        await until(lambda: len(fake_upstream.appends) == 1)
        stream.end()  # the client gives up
        rest = await stream.body()
        await asyncio.wait_for(fake_upstream.run_sse_left.wait(), 5)
    finally:
        await client.aclose()
    (envelope,) = [e for e in EnvelopeReader().feed(rest) if e.is_end_stream]
    assert b"canceled" in envelope.payload


async def test_a_relayed_run_the_upstream_does_not_answer_names_the_run(
    make_h2: StartH2, fake_upstream: FakeUpstream
) -> None:
    """The client sent a ``Run``: the EndStream says the relayed Run's part failed, not an
    RPC this client never used."""
    server = await make_h2()
    await fake_upstream.stop()  # nothing listens at its address any more
    client = await connect(server)
    try:
        stream = client.open(RUN, RUN_HEADERS)
        await stream.send(encode_envelope(0, cursor_run("h2-relay-dead").SerializeToString()))
        body = await stream.body()
    finally:
        await client.aclose()
    (envelope,) = [e for e in EnvelopeReader().feed(body) if e.is_end_stream]
    error = json.loads(envelope.payload)["error"]
    assert error["code"] == "unavailable"
    assert error["message"].startswith(
        f"Cursor upstream {fake_upstream.url} did not answer the RunSSE of a relayed Run: "
    ) or error["message"].startswith(
        f"Cursor upstream {fake_upstream.url} did not answer the BidiAppend of a relayed Run: "
    ), error["message"]


async def test_a_user_model_beside_it_is_served_here(
    make_h2: StartH2, fake_upstream: FakeUpstream, fake: FakeProvider, public_id: str
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["served here"])))
    server = await make_h2()
    cursor = H2Cursor(await connect(server))
    try:
        session = CursorSession(cursor, "h2-local-1")
        log = await session.run(
            user_turn_message("hi", public_id, request_context=agent.RequestContext())
        )
    finally:
        await cursor.aclose()
    assert log.end == {}
    assert final_text(log) == "served here"
    assert fake_upstream.run_sse == [] and fake_upstream.appends == []
    assert len(fake.requests) == 1


async def test_a_clis_auto_and_a_mapped_cursor_id_are_served_here_over_run(
    make_h2: StartH2,
    fake_upstream: FakeUpstream,
    fake: FakeProvider,
    public_id: str,
    server_store: Store,
) -> None:
    """The ``Run`` edge decides with the routing settings as the pair's does: ``auto`` runs on
    the first enabled model, and a Cursor id the table maps runs on the mapped one."""
    update_routing(server_store.database, routes=[RoutingEntry(CURSOR_MODEL, public_id)])
    server = await make_h2()
    cursor = H2Cursor(await connect(server))
    try:
        for i, model_id in enumerate(("auto/high", f"{CURSOR_MODEL}/high")):
            fake.enqueue(Script.sse(chat_events(text=[f"served here {i}"])))
            message = user_turn_message(
                "hi", model_id, conversation_id=f"c{i}", request_context=agent.RequestContext()
            )
            log = await CursorSession(cursor, f"h2-routed-{i}").run(message)
            assert log.end == {} and final_text(log) == f"served here {i}"
    finally:
        await cursor.aclose()
    assert fake_upstream.run_sse == [] and fake_upstream.appends == []
    # The suffix still applies to the model each id runs on.
    assert [r.json["reasoning_effort"] for r in fake.requests] == ["high", "high"]


def test_the_pair_drops_pseudo_headers_and_the_run_bodys_own_fields() -> None:
    pair = run_pair(
        "r-1",
        [
            (":method", "POST"),
            (":path", RUN),
            ("content-type", "application/connect+proto"),
            ("Connect-Content-Encoding", "gzip"),
            ("connect-accept-encoding", "gzip"),
            ("accept-encoding", "gzip"),
            ("content-length", "12"),
            ("x-cursor-client-version", "2.0.0"),
        ],
    )
    assert pair.headers == ((b"x-cursor-client-version", b"2.0.0"),)
    append = pair.append(3, b"\x0a\x00")
    assert append.body == bidi_append_body("r-1", 3, None, data="0a00")
    assert append.headers[-1] == (b"content-type", b"application/proto")
    assert pair.run_sse().headers[-1] == (b"content-type", b"application/connect+proto")
