"""The Connect edge over real HTTP: RunSSE, BidiAppend, ordering, replay, expiry, 404s."""

from __future__ import annotations

import asyncio
import gzip
from typing import Any

import httpx
import pytest

from actors.server.compose import RunningServer
from tests.conftest import TEST_LIMITS, StartServer
from tests.support.fake_cursor import (
    FakeCursor,
    bidi_append_body,
    cancel_message,
    heartbeat_message,
    run_request_message,
)
from tests.support.scripted_session import scripted_factory
from wire.connect import encode_envelope
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

# run_request_message() selects no model, so the session refuses the run before anything else.
NO_MODEL_END = {
    "error": {
        "code": "invalid_argument",
        "message": "protocol error: Cursor Run does not select a model",
    }
}
CANCELED_END = {"error": {"code": "canceled", "message": "run was cancelled"}}


def assert_json_error(response: httpx.Response, status: int, code: str, message: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["code"] == code
    assert body["message"].startswith(message), body["message"]


# ---- RunSSE response shape and arrival order ----


async def test_run_sse_headers_and_no_model_end_stream(cursor: FakeCursor) -> None:
    stream = await cursor.open_run_sse("req-a")
    assert stream.response.status_code == 200
    assert stream.response.headers["content-type"] == "text/event-stream"
    assert stream.response.headers["connect-protocol-version"] == "1"
    assert (await cursor.append("req-a", 0, run_request_message())).status_code == 200
    result = await stream.read_to_end()
    assert result.messages == []
    assert result.end == NO_MODEL_END
    # Exactly one envelope: flags 0x02 and the JSON, nothing else on the wire.
    assert result.raw[0] == 0x02
    assert int.from_bytes(result.raw[1:5], "big") == len(result.raw) - 5


async def test_append_before_run_sse_is_replayed(cursor: FakeCursor) -> None:
    assert (await cursor.append("req-b", 0, run_request_message())).status_code == 200
    stream = await cursor.open_run_sse("req-b", enveloped=False)
    result = await stream.read_to_end()
    assert result.end == NO_MODEL_END


async def test_gzip_bodies_on_both_routes(cursor: FakeCursor) -> None:
    stream = await cursor.open_run_sse("req-gz", gzipped=True)
    response = await cursor.append("req-gz", 0, run_request_message(), gzipped=True, enveloped=True)
    assert response.status_code == 200
    assert (await stream.read_to_end()).end == NO_MODEL_END


async def test_run_sse_refuses_empty_request_id(cursor: FakeCursor) -> None:
    body = encode_envelope(0, agent.BidiRequestId(request_id="").SerializeToString())
    response = await cursor.post_run_sse_raw(body, {"content-type": "application/connect+proto"})
    assert_json_error(
        response, 400, "invalid_argument", "protocol error: RunSSE request_id is required"
    )


async def test_run_sse_refuses_garbage(cursor: FakeCursor) -> None:
    response = await cursor.post_run_sse_raw(b"\xff\xff\xff", {})
    assert_json_error(response, 400, "invalid_argument", "protobuf decode error:")


# ---- BidiAppend validation, in order, over real HTTP ----


def append_request(**fields: Any) -> aiserver.BidiAppendRequest:
    return aiserver.BidiAppendRequest(**fields)


VALID_HEX = run_request_message().SerializeToString().hex()


@pytest.mark.parametrize(
    ("body", "headers", "message"),
    [
        (b"\x0a\xff", {}, "protobuf decode error:"),
        (
            bidi_append_body("r", 0, run_request_message()),
            {"x-parent-request-id": "p"},
            "protocol error: Cursor subagent request must include both parent headers",
        ),
        (
            bidi_append_body("r", 0, run_request_message()),
            {"x-parent-request-id": "", "x-parent-agent-tool-call-id": "t"},
            "protocol error: Cursor parent run and tool call ids are required",
        ),
        (
            append_request(data=VALID_HEX).SerializeToString(),
            {},
            "protocol error: BidiAppend request_id is required",
        ),
        (
            append_request(
                data=VALID_HEX, request_id=aiserver.BidiRequestId(request_id="")
            ).SerializeToString(),
            {},
            "protocol error: BidiAppend request_id is required",
        ),
        (
            bidi_append_body("r", 0, run_request_message()) + b"\x22\x01x",
            {},
            "protocol error: BidiAppend data_binary is not part of the captured protocol",
        ),
        (
            append_request(request_id=aiserver.BidiRequestId(request_id="r")).SerializeToString(),
            {},
            "protocol error: BidiAppend contains no AgentClientMessage",
        ),
        (bidi_append_body("r", 0, None, data="0a0"), {}, "protocol error: invalid BidiAppend hex:"),
        (bidi_append_body("r", 0, None, data="zz"), {}, "protocol error: invalid BidiAppend hex:"),
        (bidi_append_body("r", 0, None, data="0aff"), {}, "protobuf decode error:"),
    ],
    ids=[
        "undecodable",
        "one-parent-header",
        "empty-parent-header",
        "no-request-id",
        "empty-request-id",
        "data-binary",
        "no-data",
        "odd-hex",
        "non-hex",
        "not-a-client-message",
    ],
)
async def test_bidi_append_validation_errors(
    cursor: FakeCursor, server: RunningServer, body: bytes, headers: dict[str, str], message: str
) -> None:
    response = await cursor.append_raw(body, headers)
    assert_json_error(response, 400, "invalid_argument", message)
    assert server.registry.live_count == 0, "a refused append must not create a run"


async def test_bidi_append_gzip_is_decompressed_before_decode(cursor: FakeCursor) -> None:
    body = append_request(request_id=aiserver.BidiRequestId(request_id="r")).SerializeToString()
    response = await cursor.append_raw(gzip.compress(body), {"content-encoding": "gzip"})
    assert_json_error(response, 400, "invalid_argument", "protocol error: BidiAppend contains no")


async def test_body_limit_is_413(cursor: FakeCursor) -> None:
    big = b"\x00" * (TEST_LIMITS.max_body_bytes + 1)
    response = await cursor.append_raw(big)
    assert_json_error(response, 413, "resource_exhausted", "request body exceeds the limit")
    bomb = gzip.compress(b"\x0a" * (TEST_LIMITS.max_body_bytes * 4))
    response = await cursor.append_raw(bomb, {"content-encoding": "gzip"})
    assert_json_error(response, 413, "resource_exhausted", "decompressed body exceeds")


async def test_unsupported_content_encoding_is_415(cursor: FakeCursor) -> None:
    response = await cursor.append_raw(b"x", {"content-encoding": "br"})
    assert_json_error(response, 415, "invalid_argument", "unsupported Content-Encoding: br")


async def test_conflicting_parent_headers(cursor: FakeCursor) -> None:
    first = {"x-parent-request-id": "parent", "x-parent-agent-tool-call-id": "call-1"}
    other = {"x-parent-request-id": "parent", "x-parent-agent-tool-call-id": "call-2"}
    assert (await cursor.append("sub", 1, heartbeat_message(), headers=first)).status_code == 200
    assert (await cursor.append("sub", 2, heartbeat_message(), headers=first)).status_code == 200
    response = await cursor.append("sub", 3, heartbeat_message(), headers=other)
    assert_json_error(
        response, 400, "invalid_argument", "protocol error: conflicting parent ids for request sub"
    )


# ---- ordering inbox over HTTP ----


async def test_out_of_order_appends_are_released_in_order(cursor: FakeCursor) -> None:
    stream = await cursor.open_run_sse("req-order")
    # seqno 1 (cancel) arrives first and must wait for seqno 0 (the run request).
    assert (await cursor.append("req-order", 1, cancel_message())).status_code == 200
    await asyncio.sleep(0.05)
    assert (await cursor.append("req-order", 0, run_request_message())).status_code == 200
    assert (await stream.read_to_end()).end == NO_MODEL_END


async def test_duplicate_seqno_first_copy_wins(cursor: FakeCursor) -> None:
    stream = await cursor.open_run_sse("req-dup")
    assert (await cursor.append("req-dup", 0, cancel_message())).status_code == 200
    # A second seqno 0 with a run request is dropped, whether or not the run already ended.
    second = await cursor.append("req-dup", 0, run_request_message())
    assert second.status_code in (200, 404)
    assert (await stream.read_to_end()).end == CANCELED_END


async def test_client_cancel_action_cancels_the_run(cursor: FakeCursor) -> None:
    stream = await cursor.open_run_sse("req-cancel")
    assert (await cursor.append("req-cancel", 0, cancel_message())).status_code == 200
    assert (await stream.read_to_end()).end == CANCELED_END


# ---- replay, retention, late appends, expiry ----


async def test_replay_to_a_second_subscriber_then_live_frames(make_server: StartServer) -> None:
    server = await make_server(start_session=scripted_factory(first_frames=3))
    cursor = FakeCursor(f"http://{server.address}")
    try:
        first = await cursor.open_run_sse("live")
        assert (await cursor.append("live", 0, run_request_message())).status_code == 200
        ids = [(await first.next_envelope()) for _ in range(3)]
        assert all(e is not None and not e.is_end_stream for e in ids)
        second = await cursor.open_run_sse("live")
        replayed: list[agent.AgentServerMessage] = []
        for _ in range(3):
            envelope = await second.next_envelope()
            assert envelope is not None
            replayed.append(agent.AgentServerMessage.FromString(envelope.payload))
        assert [m.exec_server_message.id for m in replayed] == [1, 2, 3]
        # Two more frames, live, to both subscribers; then the run ends.
        emit_two = agent.AgentClientMessage(exec_client_message=agent.ExecClientMessage(id=2))
        assert (await cursor.append("live", 1, emit_two)).status_code == 200
        assert (await cursor.append("live", 2, heartbeat_message())).status_code == 200
        for stream in (first, second):
            result = await stream.read_to_end()
            assert [
                m.exec_server_message.id
                for m in result.messages
                if m.HasField("exec_server_message")
            ] == [4, 5]
            assert result.end == {}
        # Within the retention period a reconnect gets the whole history and the end.
        third = await cursor.open_run_sse("live")
        replay = await third.read_to_end()
        assert [m.exec_server_message.id for m in replay.messages] == [1, 2, 3, 4, 5]
        assert replay.end == {}
    finally:
        await cursor.aclose()


async def test_heartbeat_while_run_is_quiet(make_server: StartServer) -> None:
    server = await make_server(start_session=scripted_factory(first_frames=0))
    cursor = FakeCursor(f"http://{server.address}")
    try:
        stream = await cursor.open_run_sse("quiet")
        assert (await cursor.append("quiet", 0, run_request_message())).status_code == 200
        envelope = await stream.next_envelope(timeout=TEST_LIMITS.heartbeat_interval_s * 10)
        assert envelope is not None and not envelope.is_end_stream
        message = agent.AgentServerMessage.FromString(envelope.payload)
        assert message.interaction_update.HasField("heartbeat")
        # Heartbeats are live-only: a reconnecting subscriber's replay holds none.
        await cursor.append("quiet", 1, heartbeat_message())
        await stream.read_to_end()
        replay = await (await cursor.open_run_sse("quiet")).read_to_end()
        assert replay.messages == [] and replay.end == {}
    finally:
        await cursor.aclose()


async def test_no_heartbeat_before_run_request(cursor: FakeCursor) -> None:
    stream = await cursor.open_run_sse("idle")
    with pytest.raises(TimeoutError):
        await stream.next_envelope(timeout=TEST_LIMITS.heartbeat_interval_s * 3)
    await stream.aclose()


async def test_late_append_is_404_and_creates_nothing(
    cursor: FakeCursor, server: RunningServer
) -> None:
    stream = await cursor.open_run_sse("late")
    await cursor.append("late", 0, cancel_message())
    assert (await stream.read_to_end()).end == CANCELED_END
    # Finished but retained: 404, and the retained frames are still replayable.
    late = await cursor.append("late", 1, heartbeat_message())
    assert_json_error(late, 404, "not_found", "run not found: late")
    # After removal: still 404, no new session, and RunSSE does not revive it either.
    await asyncio.sleep(TEST_LIMITS.finished_retention_s + 0.3)
    assert server.registry.live_count == 0
    late = await cursor.append("late", 2, heartbeat_message())
    assert_json_error(late, 404, "not_found", "run not found: late")
    assert server.registry.live_count == 0
    reopened = await cursor.open_run_sse("late")
    assert reopened.response.status_code == 404
    await reopened.aclose()
    assert server.registry.live_count == 0


async def test_request_without_run_request_expires(
    cursor: FakeCursor, server: RunningServer
) -> None:
    stream = await cursor.open_run_sse("never")
    result = await stream.read_to_end(timeout=TEST_LIMITS.run_request_timeout_s * 5)
    assert result.end is not None
    assert result.end["error"]["code"] == "deadline_exceeded"
    await asyncio.sleep(TEST_LIMITS.finished_retention_s + 0.3)
    assert server.registry.live_count == 0


async def test_run_sse_disconnect_does_not_cancel(make_server: StartServer) -> None:
    server = await make_server(start_session=scripted_factory(first_frames=1))
    cursor = FakeCursor(f"http://{server.address}")
    try:
        stream = await cursor.open_run_sse("drop")
        await cursor.append("drop", 0, run_request_message())
        assert await stream.next_envelope() is not None
        await stream.aclose()
        await asyncio.sleep(0.1)
        again = await cursor.open_run_sse("drop")
        first = await again.next_envelope()
        assert first is not None and not first.is_end_stream
        await cursor.append("drop", 1, heartbeat_message())
        assert (await again.read_to_end()).end == {}
    finally:
        await cursor.aclose()


async def test_unknown_route_and_wrong_method_go_upstream(cursor: FakeCursor) -> None:
    for method, path in (("GET", "/agent.v1.AgentService/RunSSE"), ("POST", "/no/such/route?x=1")):
        response = await cursor.client.request(method, path)
        assert response.status_code == 299
        assert response.text == f"upstream saw {method} {path}"
