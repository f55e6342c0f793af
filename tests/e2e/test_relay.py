"""Runs of Cursor's own models relayed to Cursor's backend, beside runs of the user's models.

A fake upstream on loopback records what reaches it and answers RunSSE with a scripted byte
stream; the server in front of it has a store (a user model on the fake provider), so the
same server serves one run locally and relays the other.
"""

from __future__ import annotations

import asyncio
import gzip

import pytest

from store import Store
from store.base.typed_peewee import execute_sql
from tests.conftest import StartServer
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    bidi_append_body,
    cancel_message,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, Script, chat_events, chat_usage
from tests.support.fake_upstream import SCRIPTED, FakeUpstream, fake_upstream, text_frame
from wire.proto import agent_v1_pb2 as agent

__all__ = ["fake_upstream"]  # a fixture used by name

CURSOR_MODEL = "claude-4.5-sonnet"


@pytest.fixture
def upstream(fake_upstream: FakeUpstream) -> str:
    """The servers of this module send upstream to the fake Cursor backend."""
    return fake_upstream.url


def cursor_run(model_id: str = CURSOR_MODEL) -> agent.AgentClientMessage:
    return agent.AgentClientMessage(
        run_request=agent.AgentRunRequest(
            conversation_id="conv-cursor",
            requested_model=agent.RequestedModel(model_id=model_id),
        )
    )


def local_rows(store: Store) -> dict[str, int]:
    return {
        table: execute_sql(store.database, f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
        for table in ("conversations", "runs", "llm_calls")
    }


def header(headers: list[tuple[str, str]], name: str) -> list[str]:
    return [value for key, value in headers if key.lower() == name.lower()]


async def test_a_cursor_model_run_is_relayed_byte_for_byte(
    make_server: StartServer, fake_upstream: FakeUpstream, server_store: Store
) -> None:
    server = await make_server()
    cursor = FakeCursor(f"http://{server.address}", headers={"X-Client-Thing": "kept"})
    try:
        stream = await cursor.open_run_sse("relay-1", gzipped=True)
        first = await cursor.append("relay-1", 0, cursor_run(), headers={"Keep-Alive": "timeout=5"})
        second = await cursor.append("relay-1", 1, cancel_message(), gzipped=True)
        result = await stream.read_to_end()
    finally:
        await cursor.aclose()
    # The upstream's bytes came back as they were sent: the same frames, EndStream included.
    assert result.raw == SCRIPTED
    assert [m.interaction_update.text_delta.text for m in result.messages] == [
        "from ",
        "Cursor's model",
    ]
    assert result.end == {}
    # Each append was answered with the upstream's own answer.
    for answer in (first, second):
        assert (answer.status_code, answer.content) == (200, b"upstream-ack")
        assert answer.headers["x-upstream"] == "yes"
    # The RunSSE and both appends reached the upstream as sent, in seqno order.
    ((run_sse_body, run_sse_headers),) = fake_upstream.run_sse
    run_sse_payload = agent.BidiRequestId(request_id="relay-1").SerializeToString()
    assert gzip.decompress(run_sse_body)[5:] == run_sse_payload
    assert header(run_sse_headers, "content-encoding") == ["gzip"]
    (first_body, first_headers), (second_body, second_headers) = fake_upstream.appends
    assert first_body == bidi_append_body("relay-1", 0, cursor_run())
    assert gzip.decompress(second_body) == bidi_append_body("relay-1", 1, cancel_message())
    assert header(second_headers, "content-encoding") == ["gzip"]
    for headers in (run_sse_headers, first_headers):
        assert header(headers, "x-client-thing") == ["kept"]
        assert header(headers, "host") == [fake_upstream.url.removeprefix("http://")]
    assert header(first_headers, "keep-alive") == []
    # Nothing of the relayed run was stored here.
    assert local_rows(server_store) == {"conversations": 0, "runs": 0, "llm_calls": 0}


async def test_a_user_model_is_served_locally_beside_a_relayed_run(
    make_server: StartServer,
    fake_upstream: FakeUpstream,
    fake: FakeProvider,
    public_id: str,
    server_store: Store,
) -> None:
    server = await make_server()
    cursor = FakeCursor(f"http://{server.address}")
    try:
        relayed = await cursor.open_run_sse("relay-2")
        await cursor.append("relay-2", 0, cursor_run())
        assert (await relayed.read_to_end()).raw == SCRIPTED
        fake.enqueue(Script.sse(chat_events(text=["local ", "answer"], usage=chat_usage(5, 2))))
        log = await CursorSession(cursor, "local-2").run(user_turn_message("hi", public_id))
    finally:
        await cursor.aclose()
    assert log.end == {}
    texts = [
        m.interaction_update.text_delta.text
        for m in log.messages
        if m.interaction_update.HasField("text_delta")
    ]
    assert "".join(texts) == "local answer"
    # Only the relayed run went upstream; only the local one was stored.
    assert len(fake_upstream.run_sse) == 1
    assert {bidi_append_body("relay-2", 0, cursor_run())} == {b for b, _ in fake_upstream.appends}
    assert local_rows(server_store) == {"conversations": 1, "runs": 1, "llm_calls": 1}


async def test_an_unknown_hex_id_is_relayed_and_a_known_one_is_not(
    make_server: StartServer, fake_upstream: FakeUpstream, fake: FakeProvider, public_id: str
) -> None:
    """An 8-hex id is ours only if the store has it; its suffixes do not change that."""
    server = await make_server()
    cursor = FakeCursor(f"http://{server.address}")
    unknown = "0123abcd" if public_id != "0123abcd" else "abcd0123"
    try:
        relayed = await cursor.open_run_sse("relay-3")
        await cursor.append("relay-3", 0, cursor_run(f"{unknown}/high"))
        assert (await relayed.read_to_end()).raw == SCRIPTED
        fake.enqueue(Script.sse(chat_events(text=["ok"], usage=chat_usage(1, 1))))
        log = await CursorSession(cursor, "local-3").run(
            user_turn_message("hi", f"{public_id}//200k")
        )
    finally:
        await cursor.aclose()
    assert log.end == {}
    assert len(fake_upstream.run_sse) == 1


async def test_appends_sent_before_the_run_sse_are_relayed_once_it_opens(
    make_server: StartServer, fake_upstream: FakeUpstream, server_store: Store
) -> None:
    """Appends may come first, one out of order: they go upstream in seqno order, and the
    upstream RunSSE opens when the client's does."""
    server = await make_server()
    cursor = FakeCursor(f"http://{server.address}")
    try:
        early = await cursor.append("relay-4", 1, cancel_message())
        assert (early.status_code, early.content) == (200, b"")  # held here, answered by us
        first = await cursor.append("relay-4", 0, cursor_run())
        assert first.content == b"upstream-ack"
        assert fake_upstream.run_sse == []
        result = await (await cursor.open_run_sse("relay-4")).read_to_end()
    finally:
        await cursor.aclose()
    assert result.raw == SCRIPTED
    assert [body for body, _ in fake_upstream.appends] == [
        bidi_append_body("relay-4", 0, cursor_run()),
        bidi_append_body("relay-4", 1, cancel_message()),
    ]
    assert local_rows(server_store) == {"conversations": 0, "runs": 0, "llm_calls": 0}


async def test_a_client_that_leaves_closes_the_upstream_stream(
    make_server: StartServer, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.pieces = [text_frame("still going")]
    fake_upstream.hold_open = True
    server = await make_server()
    cursor = FakeCursor(f"http://{server.address}")
    try:
        stream = await cursor.open_run_sse("relay-5")
        await cursor.append("relay-5", 0, cursor_run())
        assert (await stream.next_envelope()) is not None
        await stream.aclose()
        await asyncio.wait_for(fake_upstream.run_sse_left.wait(), 5)
    finally:
        await cursor.aclose()


async def test_an_unreachable_upstream_ends_the_run_unavailable_naming_it(
    make_server: StartServer, fake_upstream: FakeUpstream, server_store: Store
) -> None:
    server = await make_server()
    await fake_upstream.stop()  # nothing listens at its address any more
    cursor = FakeCursor(f"http://{server.address}")
    try:
        stream = await cursor.open_run_sse("relay-6")
        answer = await cursor.append("relay-6", 0, cursor_run())
        result = await stream.read_to_end()
    finally:
        await cursor.aclose()
    assert answer.status_code == 502
    assert answer.json()["code"] == "unavailable"
    assert (
        f"Cursor upstream {fake_upstream.url} did not answer BidiAppend"
        in (answer.json()["message"])
    )
    assert result.end is not None
    error = result.end["error"]
    assert error["code"] == "unavailable"
    assert error["message"].startswith(
        f"Cursor upstream {fake_upstream.url} did not answer RunSSE: "
    )
    assert local_rows(server_store) == {"conversations": 0, "runs": 0, "llm_calls": 0}


async def test_shutdown_ends_a_relayed_run_canceled(
    make_server: StartServer, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.pieces = [text_frame("half")]
    fake_upstream.hold_open = True
    server = await make_server()
    cursor = FakeCursor(f"http://{server.address}")
    try:
        stream = await cursor.open_run_sse("relay-7")
        await cursor.append("relay-7", 0, cursor_run())
        assert (await stream.next_envelope()) is not None
        stopping = asyncio.create_task(server.stop())
        result = await stream.read_to_end()
        await stopping
    finally:
        await cursor.aclose()
    assert result.raw.startswith(text_frame("half"))
    assert result.end is not None and result.end["error"]["code"] == "canceled"
