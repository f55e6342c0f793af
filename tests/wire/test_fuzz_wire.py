"""Fuzzing the Connect edge's decoders: envelopes, request bodies, BidiAppend, RunSSE and the
AgentClientMessage inside. Whatever the bytes, only ``ConnectError`` escapes, no input makes
a decoder hang, and a declared length beyond the limit is refused before it is allocated."""

from __future__ import annotations

import binascii
import gzip
import tracemalloc

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzz import chunked, fuzz_settings, mutated
from wire.bidi import parse_bidi_append, parse_run_sse
from wire.connect import (
    EnvelopeReader,
    decode_unary_body,
    encode_envelope,
    gunzip_limited,
)
from wire.errors import Code, ConnectError
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

LIMIT = 64 * 1024


def _client_messages() -> list[agent.AgentClientMessage]:
    """One valid message per variant the edge handles (the seeds the mutations start from)."""
    run = agent.AgentRunRequest(conversation_id="c-1", run_id="r-1")
    run.action.user_message_action.user_message.text = "hello"
    exec_read = agent.ExecClientMessage(id=3, exec_id="call-1")
    exec_read.read_result.success.content = "line one\nline two"
    exec_shell = agent.ExecClientMessage(id=4, exec_id="call-2")
    exec_shell.shell_stream.stdout.data = "out"
    kv_get = agent.KvClientMessage(id=7, get_blob_result=agent.GetBlobResult(blob_data=b"\x01" * 9))
    kv_set = agent.KvClientMessage(id=8, set_blob_result=agent.SetBlobResult())
    interaction = agent.InteractionResponse(id=2)
    interaction.switch_mode_request_response.SetInParent()
    action = agent.ConversationAction()
    action.cancel_action.reason = "user"
    return [
        agent.AgentClientMessage(run_request=run),
        agent.AgentClientMessage(exec_client_message=exec_read),
        agent.AgentClientMessage(exec_client_message=exec_shell),
        agent.AgentClientMessage(kv_client_message=kv_get),
        agent.AgentClientMessage(kv_client_message=kv_set),
        agent.AgentClientMessage(interaction_response=interaction),
        agent.AgentClientMessage(conversation_action=action),
    ]


CLIENT_MESSAGES = [m.SerializeToString() for m in _client_messages()]


def _append_body(message: bytes, seqno: int = 0) -> bytes:
    request = aiserver.BidiAppendRequest(
        data=binascii.hexlify(message).decode(), append_seqno=seqno
    )
    request.request_id.request_id = "req-1"
    return request.SerializeToString()


APPEND_BODIES = [_append_body(m, i) for i, m in enumerate(CLIENT_MESSAGES)]
RUN_SSE_BODY = agent.BidiRequestId(request_id="req-1").SerializeToString()


def _wrapped(payload: bytes, kind: int) -> tuple[bytes, str | None, str | None]:
    """The body as the client may send it: raw, enveloped, gzipped, or a compressed envelope."""
    if kind == 0:
        return payload, None, None
    if kind == 1:
        return encode_envelope(0, payload), None, None
    if kind == 2:
        return gzip.compress(payload), "gzip", None
    return encode_envelope(1, gzip.compress(payload)), None, "gzip"


@fuzz_settings()
@given(
    st.sampled_from([*CLIENT_MESSAGES, RUN_SSE_BODY]).flatmap(
        lambda p: st.tuples(st.integers(0, 3).map(lambda k: _wrapped(p, k)))
    ),
    st.data(),
)
def test_request_bodies_fail_only_with_connect_errors(
    wrapped: tuple[tuple[bytes, str | None, str | None]], data: st.DataObject
) -> None:
    (body, encoding, envelope_encoding) = wrapped[0]
    body = data.draw(mutated(body))
    try:
        payload = decode_unary_body(
            body,
            content_encoding=encoding,
            connect_content_encoding=envelope_encoding,
            max_bytes=LIMIT,
        )
    except ConnectError:
        return
    assert len(payload) <= max(LIMIT, len(body))


@fuzz_settings()
@given(st.sampled_from(APPEND_BODIES).flatmap(mutated), st.booleans())
def test_bidi_append_fails_only_with_connect_errors(body: bytes, parent: bool) -> None:
    headers = {"x-parent-request-id": "p", "x-parent-agent-tool-call-id": "t"} if parent else {}
    try:
        append = parse_bidi_append(body, headers)
    except ConnectError as error:
        assert error.code is Code.INVALID_ARGUMENT
        return
    assert append.request_id
    append.message.WhichOneof("message")  # a decoded message is a usable message


@fuzz_settings()
@given(st.sampled_from(CLIENT_MESSAGES).flatmap(mutated))
def test_mutated_client_messages_inside_a_valid_append(message: bytes) -> None:
    """The hex and the outer message are valid: only the AgentClientMessage is broken."""
    try:
        append = parse_bidi_append(_append_body(message), {})
    except ConnectError as error:
        empty = "protocol error: BidiAppend contains no AgentClientMessage"
        assert error.message.startswith("protobuf decode error: AgentClientMessage") or (
            not message and error.message == empty
        )
        return
    append.message.WhichOneof("message")


@fuzz_settings()
@given(st.one_of(mutated(RUN_SSE_BODY), st.binary(max_size=64)))
def test_run_sse_fails_only_with_connect_errors(body: bytes) -> None:
    try:
        assert parse_run_sse(body)
    except ConnectError as error:
        assert error.code is Code.INVALID_ARGUMENT


def _frames() -> bytes:
    return b"".join(encode_envelope(flags, p) for flags, p in [(0, m) for m in CLIENT_MESSAGES])


@fuzz_settings()
@given(mutated(_frames(), max_ops=6).flatmap(chunked))
def test_envelope_reader_in_any_chunking_fails_only_with_connect_errors(
    chunks: list[bytes],
) -> None:
    reader = EnvelopeReader(max_payload=LIMIT)
    try:
        for chunk in chunks:
            for envelope in reader.feed(chunk):
                assert len(envelope.payload) <= LIMIT
        reader.close()
    except ConnectError as error:
        assert error.code in (Code.INVALID_ARGUMENT, Code.RESOURCE_EXHAUSTED)


def test_a_declared_length_beyond_the_limit_is_refused_before_its_bytes_arrive() -> None:
    """Only the header arrives: the reader refuses at once instead of waiting to buffer."""
    reader = EnvelopeReader(max_payload=LIMIT)
    with pytest.raises(ConnectError) as caught:
        reader.feed(b"\x00\x7f\xff\xff\xff")
    assert caught.value.code is Code.RESOURCE_EXHAUSTED


def test_a_gzip_bomb_is_refused_without_inflating_it() -> None:
    """64 MiB of zeros compress to ~64 KiB; decoding allocates about the limit, not 64 MiB."""
    bomb = gzip.compress(b"\0" * (64 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(ConnectError) as caught:
            gunzip_limited(bomb, LIMIT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.code is Code.RESOURCE_EXHAUSTED
    assert peak < 8 * LIMIT + len(bomb) * 2
