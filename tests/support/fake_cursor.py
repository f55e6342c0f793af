"""A fake Cursor client: speaks RunSSE and BidiAppend over real HTTP, like the editor.

It frames requests the way the client does (raw protobuf, or one Connect envelope, optionally
gzip) and reads the RunSSE body incrementally as Connect envelopes.
"""

from __future__ import annotations

import asyncio
import binascii
import gzip
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from wire.connect import Envelope, EnvelopeReader, encode_envelope
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

RUN_SSE = "/agent.v1.AgentService/RunSSE"
BIDI_APPEND = "/aiserver.v1.BidiService/BidiAppend"


def frame_body(payload: bytes, *, enveloped: bool, gzipped: bool) -> tuple[bytes, dict[str, str]]:
    """A request body in one of the client's shapes, with the headers that go with it."""
    body = encode_envelope(0, payload) if enveloped else payload
    headers = {
        "content-type": "application/connect+proto" if enveloped else "application/proto",
        "connect-protocol-version": "1",
    }
    if gzipped:
        body = gzip.compress(body)
        headers["content-encoding"] = "gzip"
    return body, headers


def bidi_append_body(
    request_id: str,
    seqno: int,
    message: agent.AgentClientMessage | None,
    *,
    data: str | None = None,
) -> bytes:
    """Serialized ``BidiAppendRequest``; ``data`` overrides the hex of ``message``."""
    hex_data = data if data is not None else binascii.hexlify(message.SerializeToString()).decode()
    request = aiserver.BidiAppendRequest(
        data=hex_data,
        request_id=aiserver.BidiRequestId(request_id=request_id),
        append_seqno=seqno,
    )
    return request.SerializeToString()


def run_request_message(conversation_id: str = "conv-1") -> agent.AgentClientMessage:
    return agent.AgentClientMessage(
        run_request=agent.AgentRunRequest(conversation_id=conversation_id)
    )


def cancel_message(reason: str = "user pressed stop") -> agent.AgentClientMessage:
    return agent.AgentClientMessage(
        conversation_action=agent.ConversationAction(
            cancel_action=agent.CancelAction(reason=reason)
        )
    )


def heartbeat_message() -> agent.AgentClientMessage:
    return agent.AgentClientMessage(client_heartbeat=agent.ClientHeartbeat())


@dataclass
class StreamResult:
    """What a RunSSE stream delivered: decoded data frames and the EndStream JSON."""

    messages: list[agent.AgentServerMessage] = field(default_factory=list)
    end: dict[str, object] | None = None
    raw: bytes = b""


class RunStream:
    """One open RunSSE response, read frame by frame."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._reader = EnvelopeReader()
        self._pending: list[Envelope] = []
        self._chunks: AsyncIterator[bytes] = response.aiter_raw()
        self.raw = bytearray()

    async def next_envelope(self, timeout: float = 5.0) -> Envelope | None:
        """The next envelope, or None when the body ended."""
        while not self._pending:
            try:
                chunk = await asyncio.wait_for(anext(self._chunks), timeout)
            except StopAsyncIteration:
                self._reader.close()
                return None
            self.raw += chunk
            self._pending.extend(self._reader.feed(chunk))
        return self._pending.pop(0)

    async def read_to_end(self, timeout: float = 5.0) -> StreamResult:
        """Every frame until the EndStream, then check that the body ends there."""
        result = StreamResult()
        while (envelope := await self.next_envelope(timeout)) is not None:
            if envelope.is_end_stream:
                result.end = json.loads(envelope.payload)
                trailing = await self.next_envelope(timeout)
                assert trailing is None, "a frame followed the EndStream"
                break
            result.messages.append(agent.AgentServerMessage.FromString(envelope.payload))
        result.raw = bytes(self.raw)
        return result

    async def aclose(self) -> None:
        await self.response.aclose()


class FakeCursor:
    """The client half of Cursor's agent protocol against one server."""

    def __init__(self, base_url: str) -> None:
        self.client = httpx.AsyncClient(base_url=base_url, timeout=10.0)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def open_run_sse(
        self, request_id: str, *, enveloped: bool = True, gzipped: bool = False
    ) -> RunStream:
        payload = agent.BidiRequestId(request_id=request_id).SerializeToString()
        body, headers = frame_body(payload, enveloped=enveloped, gzipped=gzipped)
        request = self.client.build_request("POST", RUN_SSE, content=body, headers=headers)
        response = await self.client.send(request, stream=True)
        return RunStream(response)

    async def post_run_sse_raw(self, body: bytes, headers: Mapping[str, str]) -> httpx.Response:
        return await self.client.post(RUN_SSE, content=body, headers=dict(headers))

    async def append(
        self,
        request_id: str,
        seqno: int,
        message: agent.AgentClientMessage,
        *,
        enveloped: bool = False,
        gzipped: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        body, base_headers = frame_body(
            bidi_append_body(request_id, seqno, message), enveloped=enveloped, gzipped=gzipped
        )
        return await self.client.post(
            BIDI_APPEND, content=body, headers={**base_headers, **(headers or {})}
        )

    async def append_raw(
        self, body: bytes, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        return await self.client.post(
            BIDI_APPEND,
            content=body,
            headers={"content-type": "application/proto", **(headers or {})},
        )


def user_turn_message(
    text: str, model_id: str, *, conversation_id: str = "conv-1", message_id: str = "msg-1"
) -> agent.AgentClientMessage:
    """A RunRequest as the editor sends it for a typed message in Agent mode."""
    user = agent.UserMessage(text=text, message_id=message_id, mode=agent.AGENT_MODE_AGENT)
    request = agent.AgentRunRequest(
        conversation_id=conversation_id,
        action=agent.ConversationAction(
            user_message_action=agent.UserMessageAction(user_message=user)
        ),
        requested_model=agent.RequestedModel(model_id=model_id),
    )
    return agent.AgentClientMessage(run_request=request)


def kv_ack(kv_id: int, error: str | None = None) -> agent.AgentClientMessage:
    result = (
        agent.SetBlobResult(error=agent.Error(message=error)) if error else agent.SetBlobResult()
    )
    return agent.AgentClientMessage(
        kv_client_message=agent.KvClientMessage(id=kv_id, set_blob_result=result)
    )


@dataclass
class TurnLog:
    """Everything one run showed the client, in order, plus the client's blob store."""

    messages: list[agent.AgentServerMessage] = field(default_factory=list)
    end: dict[str, object] | None = None
    blobs: dict[bytes, bytes] = field(default_factory=dict)

    def kinds(self) -> list[str]:
        """One label per frame: the AgentServerMessage variant, or the update kind."""
        out = []
        for m in self.messages:
            variant = m.WhichOneof("message")
            if variant == "interaction_update":
                out.append(m.interaction_update.WhichOneof("message") or "?")
            elif variant == "kv_server_message":
                out.append("kv_" + (m.kv_server_message.WhichOneof("message") or "?"))
            else:
                out.append(variant or "?")
        return out

    def checkpoints(self) -> list[agent.ConversationStateStructure]:
        return [
            m.conversation_checkpoint_update
            for m in self.messages
            if m.HasField("conversation_checkpoint_update")
        ]


class CursorSession:
    """The client side of one request id: sends in seqno order and acknowledges KV SETs
    after checking every blob's SHA-256, like the editor's blob store."""

    def __init__(
        self,
        cursor: FakeCursor,
        request_id: str,
        *,
        workspace: Path | None = None,
        batch_size: int = 1,
    ) -> None:
        """``workspace``: where Read execs are answered from (none: execs stay unanswered).
        ``batch_size``: execs are collected until this many wait, then answered in reverse."""
        self.cursor = cursor
        self.request_id = request_id
        self.seqno = 0
        self.log = TurnLog()
        self.workspace = workspace
        self.batch_size = batch_size
        self._waiting_execs: list[agent.ExecServerMessage] = []

    async def send(self, message: agent.AgentClientMessage) -> httpx.Response:
        response = await self.cursor.append(self.request_id, self.seqno, message)
        self.seqno += 1
        assert response.status_code == 200, (message.WhichOneof("message"), response.text)
        return response

    async def run(
        self,
        first: agent.AgentClientMessage,
        *,
        hold_ack: Callable[[int], bool] = lambda kv_id: False,
        timeout: float = 10.0,
        total_timeout: float = 30.0,
    ) -> TurnLog:
        """Open RunSSE, send ``first``, and answer until the EndStream. A KV SET whose id
        ``hold_ack`` selects is stored but not acknowledged."""
        stream = await self.cursor.open_run_sse(self.request_id)
        try:
            async with asyncio.timeout(total_timeout):
                await self._converse(stream, first, hold_ack, timeout)
        finally:
            await stream.aclose()
        return self.log

    async def _converse(
        self,
        stream: RunStream,
        first: agent.AgentClientMessage,
        hold_ack: Callable[[int], bool],
        timeout: float,
    ) -> None:
        await self.send(first)
        while (envelope := await stream.next_envelope(timeout)) is not None:
            if envelope.is_end_stream:
                self.log.end = json.loads(envelope.payload)
                break
            message = agent.AgentServerMessage.FromString(envelope.payload)
            self.log.messages.append(message)
            if message.kv_server_message.HasField("set_blob_args"):
                kv = message.kv_server_message
                data = kv.set_blob_args.blob_data
                assert hashlib.sha256(data).digest() == kv.set_blob_args.blob_id
                self.log.blobs[kv.set_blob_args.blob_id] = data
                if not hold_ack(kv.id):
                    await self.send(kv_ack(kv.id))
            if message.HasField("exec_server_message") and self.workspace is not None:
                self._waiting_execs.append(message.exec_server_message)
                if len(self._waiting_execs) >= self.batch_size:
                    batch, self._waiting_execs = self._waiting_execs, []
                    for exec_message in reversed(batch):
                        await self._answer(exec_message)

    async def _answer(self, exec_message: agent.ExecServerMessage) -> None:
        """Run a Read against the workspace and answer it, then close its stream."""
        assert self.workspace is not None
        variant = exec_message.WhichOneof("message")
        assert variant == "read_args", f"this fake runs Read only, got {variant}"
        path = self.workspace / exec_message.read_args.path.lstrip("/")
        text = path.read_text()
        result = agent.ReadResult(
            success=agent.ReadSuccess(
                path=exec_message.read_args.path,
                content=text,
                total_lines=text.count("\n") + 1,
                file_size=len(text.encode()),
            )
        )
        reply = agent.ExecClientMessage(
            id=exec_message.id, exec_id=exec_message.exec_id, read_result=result
        )
        await self.send(agent.AgentClientMessage(exec_client_message=reply))
        close = agent.ExecClientControlMessage(
            stream_close=agent.ExecClientStreamClose(id=exec_message.id)
        )
        # The trailing stream_close may find the run already finished (404), as with Cursor.
        response = await self.cursor.append(
            self.request_id, self.seqno, agent.AgentClientMessage(exec_client_control_message=close)
        )
        self.seqno += 1
        assert response.status_code in (200, 404), response.text
