"""A run of one of Cursor's own models, relayed to Cursor's backend as it is.

The edge decides per run (``wire.model_routing``, over the store's routing settings); once a
request id is relayed, its RunSSE request goes upstream with its original bytes and headers,
every BidiAppend is sent upstream byte for byte in the order the edge released it, and the
upstream RunSSE's body is fed into the run's outbound stream unchanged. Nothing is decoded and
nothing is stored: the upstream owns the run. What we cannot pass on is the upstream's RunSSE
status and headers (the held response was answered before the model was known), so an upstream
that cannot be reached or refuses the RunSSE ends the stream with an EndStream ``unavailable``
naming the upstream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

import httpx
import msgspec

from wire.connect import end_stream_frame
from wire.errors import Code, ConnectError
from wire.hop_by_hop import Header, request_headers
from wire.http.outbound import OutboundStream
from wire.log import log_event
from wire.model_routing import requested_model_id
from wire.proto import agent_v1_pb2 as agent

logger = logging.getLogger("cursor_server.relay")

RUN_SSE_PATH = "/agent.v1.AgentService/RunSSE"
BIDI_APPEND_PATH = "/aiserver.v1.BidiService/BidiAppend"

# The held RunSSE response already went out uncompressed, so the upstream must answer in
# kind: the encodings the client offered are not offered upstream for the RunSSE.
_NOT_OFFERED = (b"accept-encoding", b"connect-accept-encoding")
# How much of a refusing upstream's RunSSE body its EndStream quotes.
MAX_ERROR_BODY_BYTES = 64 * 1024
_SEND_ERRORS = (httpx.HTTPError, httpx.InvalidURL, OSError)


class RawRequest(msgspec.Struct, frozen=True):
    """A request as the client sent it: body bytes and headers as they came off the wire."""

    body: bytes
    headers: tuple[Header, ...]


class UpstreamAnswer(msgspec.Struct, frozen=True):
    """The upstream's answer to one relayed BidiAppend (its body as sent, not decoded)."""

    status: int
    reason: str
    headers: tuple[Header, ...]
    body: bytes


Answer = asyncio.Future[UpstreamAnswer]


class Upstream(msgspec.Struct, frozen=True):
    """Where relayed runs go: Cursor's backend, through the reverse proxy's client."""

    base_url: str
    client: httpx.AsyncClient


# Whether a run asking for this model id is served here: ``wire.model_routing.route_model``
# over the store's routing settings (store reads: called off the loop).
ServesRun = Callable[[str], bool]


async def runs_upstream(request: agent.AgentRunRequest, serves_run: ServesRun | None) -> bool:
    """Whether this RunRequest goes to Cursor's backend: its id names none of our models and
    the routing settings map it to none (``serves_run`` decides, off the loop; without it
    nothing is relayed)."""
    if serves_run is None:
        return False
    return not await asyncio.to_thread(serves_run, requested_model_id(request))


def _detail(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _unavailable(message: str) -> ConnectError:
    return ConnectError(Code.UNAVAILABLE, message)


def _upstream_request(
    upstream: Upstream, path: str, raw: RawRequest, drop: Iterable[bytes] = ()
) -> httpx.Request:
    # Built directly so the client adds no default headers of its own.
    dropped = {name.lower() for name in drop}
    headers = [(n, v) for n, v in request_headers(raw.headers) if n.lower() not in dropped]
    return httpx.Request("POST", upstream.base_url + path, headers=headers, content=raw.body)


class UpstreamRun:
    """The relay of one request id; lives on the asyncio loop, owned by the run registry."""

    def __init__(
        self,
        upstream: Upstream,
        request_id: str,
        outbound: OutboundStream,
        ended: Callable[[], None],
        *,
        client_rpc: str = "",
    ) -> None:
        """``ended`` is called once, when the outbound stream has been closed.
        ``client_rpc``: the RPC the client used when it is not the pair relayed upstream (a
        ``Run``), so an error names what the client sent."""
        self._client_rpc = client_rpc
        self._upstream = upstream
        self.request_id = request_id
        self._outbound = outbound
        self._ended = ended
        self._stream_task: asyncio.Task[None] | None = None
        self._appends: asyncio.Queue[tuple[RawRequest, Answer | None]] = asyncio.Queue()
        self._sender = asyncio.get_running_loop().create_task(self._send_appends())
        self._closed = False

    def _part(self, rpc: str) -> str:
        """``rpc`` of the pair as the client knows it: itself, or a part of its ``Run``."""
        return f"the {rpc} of a relayed {self._client_rpc}" if self._client_rpc else rpc

    def open(self, run_sse: RawRequest) -> None:
        """Open the upstream RunSSE with the client's own request; once."""
        if self._stream_task is None and not self._closed:
            self._stream_task = asyncio.get_running_loop().create_task(self._stream(run_sse))

    def forward(self, append: RawRequest, *, answered: bool = True) -> Answer | None:
        """Queue one BidiAppend for the upstream, in order (appends go one after another).

        With ``answered`` the future holds the upstream's answer or a ConnectError
        ``unavailable``; an append the edge already answered (one held before the run was
        relayed) gets none, and its failure is only logged."""
        future: Answer | None = None
        if answered:
            future = asyncio.get_running_loop().create_future()
        if self._closed:
            if future is not None:
                future.set_exception(self._over())
        else:
            self._appends.put_nowait((append, future))
        return future

    def _over(self) -> ConnectError:
        return _unavailable(f"relayed run {self.request_id} is over")

    def close(self, error: ConnectError | None = None) -> None:
        """Stop relaying (client gone, shutdown): both upstream streams are closed; the
        outbound stream ends with ``error``'s EndStream, or with no frame of ours."""
        self._end(error)

    def _end(self, error: ConnectError | None) -> None:
        if self._closed:
            return
        self._closed = True
        current = asyncio.current_task()
        for task in (self._stream_task, self._sender):
            if task is not None and task is not current:
                task.cancel()
        while not self._appends.empty():
            _, future = self._appends.get_nowait()
            if future is not None:
                future.set_exception(self._over())
        self._outbound.close(None if error is None else end_stream_frame(error))
        self._ended()

    async def _stream(self, run_sse: RawRequest) -> None:
        base = self._upstream.base_url
        request = _upstream_request(self._upstream, RUN_SSE_PATH, run_sse, _NOT_OFFERED)
        try:
            response = await self._upstream.client.send(request, stream=True)
        except _SEND_ERRORS as exc:
            what = self._part("RunSSE")
            self._end(_unavailable(f"Cursor upstream {base} did not answer {what}: {_detail(exc)}"))
            return
        try:
            await self._relay_body(response)
        finally:
            # httpcore shields its own cleanup, so this completes inside a cancelled task too.
            await response.aclose()

    async def _relay_body(self, response: httpx.Response) -> None:
        base = self._upstream.base_url
        log_event(
            logger,
            logging.INFO,
            "relayed RunSSE opened upstream",
            request_id=self.request_id,
            status=response.status_code,
        )
        try:
            if response.status_code != 200:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) >= MAX_ERROR_BODY_BYTES:
                        break
                text = bytes(body[:MAX_ERROR_BODY_BYTES]).decode("utf-8", "replace")
                self._end(
                    _unavailable(
                        f"Cursor upstream {base} answered {self._part('RunSSE')} with HTTP "
                        f"{response.status_code}: {text}"
                    )
                )
                return
            async for chunk in response.aiter_bytes():
                self._outbound.send(chunk)
        except httpx.HTTPError as exc:
            what = self._part("RunSSE")
            self._end(_unavailable(f"Cursor upstream {base}: {what} broke: {_detail(exc)}"))
            return
        log_event(logger, logging.INFO, "relayed RunSSE ended", request_id=self.request_id)
        self._end(None)

    async def _send_appends(self) -> None:
        while True:
            append, future = await self._appends.get()
            try:
                answer = await self._send_append(append)
            except ConnectError as error:
                log_event(
                    logger,
                    logging.WARNING,
                    "relayed BidiAppend failed",
                    request_id=self.request_id,
                    message=error.message,
                )
                if future is not None and not future.done():
                    future.set_exception(error)
                elif future is None:
                    self._end(error)  # nobody can be told: the upstream run would wait for it
                continue
            if future is not None and not future.done():
                future.set_result(answer)
            elif future is None and answer.status >= 400:
                # An append the edge answered already (or a ``Run`` message) that the upstream
                # refused: no answer can carry it, and the upstream run would wait for it.
                text = answer.body[:MAX_ERROR_BODY_BYTES].decode("utf-8", "replace")
                self._end(
                    _unavailable(
                        f"Cursor upstream {self._upstream.base_url} refused "
                        f"{self._part('BidiAppend')} with HTTP {answer.status}: {text}"
                    )
                )

    async def _send_append(self, append: RawRequest) -> UpstreamAnswer:
        base = self._upstream.base_url
        request = _upstream_request(self._upstream, BIDI_APPEND_PATH, append)
        try:
            response = await self._upstream.client.send(request, stream=True)
            try:
                body = b"".join([chunk async for chunk in response.aiter_raw()])
            finally:
                await response.aclose()
        except _SEND_ERRORS as exc:
            raise _unavailable(
                f"Cursor upstream {base} did not answer {self._part('BidiAppend')}: {_detail(exc)}"
            ) from exc
        return UpstreamAnswer(
            status=response.status_code,
            reason=response.reason_phrase,
            headers=tuple(response.headers.raw),
            body=body,
        )
