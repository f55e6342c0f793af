"""A scriptable fake LLM provider: a real aiohttp server on loopback that speaks genuine SSE.

Tests drive the provider adapters (and everything above them) over real HTTP against it::

    async with FakeProvider() as fake:
        fake.enqueue(Script.sse(chat_events(text=["Hel", "lo"])))
        ...  # POST to f"{fake.base_url}/chat/completions"
        assert fake.requests[0].json["stream"] is True

Routes, all under ``fake.base_url`` (``http://127.0.0.1:PORT/v1``):

- ``POST /v1/chat/completions``, ``POST /v1/responses``, ``POST /v1/messages``: each request takes
  the next enqueued ``Script`` (FIFO, shared by the three routes). With the queue empty the
  fake answers 500 ``{"error":{"message":"fake provider: no script queued …"}}`` so the test
  fails loudly.
- ``key_answers`` (key -> ``Script``): a request sending that API key, however its format
  sends it (``authorization: Bearer``, ``x-api-key``, ``x-goog-api-key`` or ``?key=``;
  ``RecordedRequest.api_key``), gets that script's answer every time, without taking one from
  the queue: a key pool where one key is rate limited and another refused.
- With ``refuse_keys``, a body holding one of those top-level keys is answered 400 as a server
  validating against strict request types (vLLM) answers an unknown field, without taking a
  script.
- With ``refuse_missing_reasoning_content`` set, a Chat Completions request holding an assistant
  message with ``tool_calls`` but no ``reasoning_content`` is answered as DeepSeek's thinking
  mode answers it (400 ``invalid_request_error``, ``DEEPSEEK_MISSING_REASONING``) without
  taking a script.
- ``POST /v1/images/generations`` (OpenAI's images API): the next of ``image_scripts`` (its own
  FIFO, played like a ``Script``: ``Script.error``, ``Script.hang_before_headers``, or
  ``Script.image_json``), or with none queued ``{"created":…,"data":[{"b64_json": FAKE_PNG}]}``.
  ``GET /v1/files/{name}`` serves ``FAKE_PNG`` for an answer that gives a ``url``.
- ``POST /v1/models/{model}:streamGenerateContent`` (Gemini): takes the next ``Script`` like the
  three above; its body is checked against Gemini's request shape. With ``models_style
  "gemini"``, ``GET /v1/models`` pages by ``pageSize``/``pageToken`` and answers
  ``{"models":[{"name":"models/…","supportedGenerationMethods":[…]}],"nextPageToken":…}``, with
  ``GEMINI_EMBEDDING_MODEL`` (which cannot generate content) listed too. ``listing_extra``
  (model id -> fields) adds or replaces fields of that model's entry in either listing, as
  servers that say what a model is for do (``type``, ``capabilities``, …) or publish prices
  (OpenRouter's ``pricing``).
- ``GET /v1/models``: the model list in ``models_style`` shape. ``"openai"``:
  ``{"object":"list","data":[{"id":…}]}``. ``"anthropic"``: one page per request, following the
  ``limit`` (default 20), ``after_id`` and ``before_id`` query parameters, answered as
  ``{"data":[…],"has_more":…,"first_id":…,"last_id":…}``. ``models_error = (status, body)``
  makes the listing fail instead.

Scripted failures: ``Script.error(status, body, retry_after=...)`` (a refusal with its
``Retry-After``), ``script.delayed(s)`` (headers only after ``s`` seconds), ``Script.stall``
(events, then silence), ``Script.cut`` (events, then the connection dropped mid-body),
``Script.raw`` (any bytes: a malformed event), ``Script.hang_before_headers``.

Every POSTed body is checked against its format's published request schema
(``tests/support/request_schemas.py``): what breaks it is kept on the recorded request
(``problems``) and in ``NONCONFORMING``, which the suite's autouse fixture turns into a failure
of the test that made the server send it. So every test that reaches a provider is also a
conformance test of the bodies we send.

Every request (models listings included) is recorded in ``fake.requests`` in arrival order;
``fake.disconnected(i)`` is an ``asyncio.Event`` set when the client of request ``i`` closed
its connection before the fake was done with it (observed while streaming, stalling or hanging).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import itertools
import json
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from tests.support.client_left import client_left_quietly
from tests.support.request_schemas import request_problems

# Every schema problem of a body any fake received in this process, in arrival order.
NONCONFORMING: list[str] = []

# DeepSeek's words (thinking mode) for an assistant message with tool calls sent back without its
# reasoning_content; ``{index}`` is the message's position in ``messages``.
DEEPSEEK_MISSING_REASONING = (
    "Missing `reasoning_content` field in the assistant message at message index {index}. For "
    "more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
)

# What the fake's image model draws: a PNG signature and a recognisable tail.
FAKE_PNG = b"\x89PNG\r\n\x1a\n" + b"fake image drawn by the fake provider"

# A model the Gemini listing always adds, which only embeds (discovery marks it: not a chat model).
GEMINI_EMBEDDING_MODEL = "text-embedding-004"

# How often a waiting handler looks at its connection to notice that the client went away.
_DISCONNECT_POLL_S = 0.005

# ---------------------------------------------------------------------------------------------
# Building SSE bodies


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event as the fake writes it; ``data`` may hold newlines (several lines)."""

    data: str
    event: str | None = None
    id: str | None = None

    @classmethod
    def json(cls, payload: Any, *, event: str | None = None) -> SseEvent:
        """An event whose data is compact JSON, like every real provider sends."""
        return cls(data=json.dumps(payload, separators=(",", ":"), ensure_ascii=False), event=event)

    def encode(self, newline: str = "\n") -> bytes:
        lines: list[str] = []
        if self.event is not None:
            lines.append(f"event: {self.event}")
        if self.id is not None:
            lines.append(f"id: {self.id}")
        lines.extend(f"data: {line}" for line in self.data.split("\n"))
        return (newline.join(lines) + newline + newline).encode()


def encode_events(events: Iterable[SseEvent], newline: str = "\n") -> bytes:
    """The whole SSE body for ``events`` (used to pick byte offsets for ``chunk_boundaries``)."""
    return b"".join(event.encode(newline) for event in events)


def split_at(body: bytes, boundaries: Iterable[int]) -> list[bytes]:
    """``body`` cut at the given byte offsets (out-of-range and repeated offsets are ignored)."""
    cuts = sorted({b for b in boundaries if 0 < b < len(body)})
    edges = [0, *cuts, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges) if b > a]


@dataclass(frozen=True)
class Script:
    """What the fake does with one request. Build it with the class methods."""

    kind: Literal["body", "hang", "drop"]
    status: int = 200
    content_type: str = "text/event-stream"
    chunks: tuple[bytes, ...] = ()
    delay_between: float = 0.0
    then_stall: bool = False
    # Cut the connection (no end of the chunked body) after the chunks, ``cut_after_s`` after
    # the last write (0: in the same loop step, so the chunks and the end arrive together).
    then_cut: bool = False
    cut_after_s: float = 0.05
    # Wait this long (or until the client leaves) before sending the headers.
    delay_before_headers: float = 0.0
    # Sent as ``Retry-After`` with an error answer.
    retry_after: str | None = None

    def delayed(self, seconds: float) -> Script:
        """This script, its headers sent only ``seconds`` after the request arrived."""
        return dataclasses.replace(self, delay_before_headers=seconds)

    @classmethod
    def sse(
        cls,
        events: Sequence[SseEvent],
        *,
        chunk_boundaries: Iterable[int] | None = None,
        chunk_size: int | None = None,
        delay_between: float = 0.0,
        newline: str = "\n",
    ) -> Script:
        """A 200 SSE stream of ``events``, then the connection ends normally.

        By default each event is one write. ``chunk_boundaries`` cuts the whole body at those byte
        offsets instead (anywhere: inside a line, a UTF-8 character, a CRLF); ``chunk_size`` cuts
        it every N bytes. ``delay_between`` sleeps between writes so chunks reach the client apart.
        """
        body_events = list(events)
        if chunk_boundaries is not None or chunk_size is not None:
            body = encode_events(body_events, newline)
            cuts = list(chunk_boundaries or ())
            if chunk_size is not None:
                cuts.extend(range(chunk_size, len(body), chunk_size))
            chunks = split_at(body, cuts)
        else:
            chunks = [event.encode(newline) for event in body_events]
        return cls(kind="body", chunks=tuple(chunks), delay_between=delay_between)

    @classmethod
    def raw(
        cls,
        chunks: Sequence[bytes],
        *,
        status: int = 200,
        content_type: str = "text/event-stream",
        delay_between: float = 0.0,
    ) -> Script:
        """Exactly these body bytes, one write per chunk (for malformed or truncated streams)."""
        return cls(
            kind="body",
            status=status,
            content_type=content_type,
            chunks=tuple(chunks),
            delay_between=delay_between,
        )

    @classmethod
    def error(cls, status: int, json_body: Any, *, retry_after: str | None = None) -> Script:
        """A non-2xx answer before any stream: ``json_body`` as JSON (``str``/``bytes`` as is),
        with a ``Retry-After`` header when given."""
        if isinstance(json_body, bytes):
            body, content_type = json_body, "text/plain"
        elif isinstance(json_body, str):
            body, content_type = json_body.encode(), "text/plain"
        else:
            body, content_type = json.dumps(json_body).encode(), "application/json"
        return cls(
            kind="body",
            status=status,
            content_type=content_type,
            chunks=(body,),
            retry_after=retry_after,
        )

    @classmethod
    def stall(cls, after_events: int | None = None, events: Sequence[SseEvent] = ()) -> Script:
        """Send 200 headers and the first ``after_events`` of ``events`` (all when None), then
        nothing more and never close, until the client leaves or the fake shuts down."""
        count = len(events) if after_events is None else after_events
        if count > len(events):
            raise ValueError(f"stall(after_events={count}) needs at least {count} events")
        chunks = tuple(event.encode() for event in events[:count])
        return cls(kind="body", chunks=chunks, then_stall=True)

    @classmethod
    def cut(cls, after_events: int, events: Sequence[SseEvent], *, after_s: float = 0.05) -> Script:
        """Send 200 headers and the first ``after_events`` of ``events``, then drop the
        connection mid-body (a provider or proxy that died) ``after_s`` after the last write
        (0: the events and the end of the connection reach the client in one read)."""
        chunks = tuple(event.encode() for event in events[:after_events])
        return cls(kind="body", chunks=chunks, then_cut=True, cut_after_s=after_s)

    @classmethod
    def image_json(cls, body: Any) -> Script:
        """A 200 JSON answer of the images API (``body`` as JSON)."""
        return cls(
            kind="body", content_type="application/json", chunks=(json.dumps(body).encode(),)
        )

    @classmethod
    def hang_before_headers(cls) -> Script:
        """Read the whole request, then never answer (not even headers)."""
        return cls(kind="hang")

    @classmethod
    def drop_before_headers(cls) -> Script:
        """Read the whole request, then cut the connection without an answer (a provider or
        proxy that died): the client's connection error before any header."""
        return cls(kind="drop")


# Provider faults a benchmark injects at random (``tests/bench/soak.py``): two transient
# answers before any event, which the server retries, and a stream cut after its first events,
# which it must not retry.
PROVIDER_FAULTS = ("500", "429", "cut")


def fault_script(kind: str, events: Sequence[SseEvent]) -> Script:
    """The script of one injected fault: ``500``, ``429`` (``Retry-After: 0``) or ``cut``
    (two of ``events``, then the connection dropped)."""
    if kind == "500":
        return Script.error(500, {"error": {"message": "injected server error"}})
    if kind == "429":
        return Script.error(429, {"error": {"message": "injected rate limit"}}, retry_after="0")
    if kind == "cut":
        return Script.cut(2, events)
    raise ValueError(f"unknown provider fault {kind!r}; known: {PROVIDER_FAULTS}")


# ---------------------------------------------------------------------------------------------
# The server


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it. ``headers`` has lower-case names."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    json: Any = None
    # What breaks the endpoint's published request schema (tests/support/request_schemas.py).
    problems: tuple[str, ...] = ()

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def api_key(self) -> str | None:
        """The API key the request sent, in whichever place its format puts it."""
        bearer = self.header("authorization")
        if bearer is not None and bearer.startswith("Bearer "):
            return bearer.removeprefix("Bearer ")
        return self.header("x-api-key") or self.header("x-goog-api-key") or self.query.get("key")


@dataclass
class _Connection:
    """Per-request bookkeeping: whether the client left before the fake was done."""

    disconnected: asyncio.Event = field(default_factory=asyncio.Event)


class FakeProvider:
    """The fake provider server; use ``async with FakeProvider() as fake`` (or start/close)."""

    def __init__(
        self,
        *,
        models: Sequence[str] = ("fake-model",),
        models_style: Literal["openai", "anthropic", "gemini"] = "openai",
        check_bodies: bool = True,
        refuse_missing_reasoning_content: bool = False,
        refuse_keys: Iterable[str] = (),
    ) -> None:
        self.models: list[str] = list(models)
        self.models_style = models_style
        self.models_error: tuple[int, Any] | None = None
        # Model id -> fields added to (or replacing) its entry in an OpenAI or Gemini listing.
        self.listing_extra: dict[str, dict[str, Any]] = {}
        # Check every POSTed body against its format's request schema (the benchmarks, which
        # time this process, turn it off).
        self.check_bodies = check_bodies
        # Answer like DeepSeek when a replayed tool-call message lacks its reasoning_content.
        self.refuse_missing_reasoning_content = refuse_missing_reasoning_content
        # Top-level body keys answered as a server validating against strict types answers an
        # unknown field (400), without taking a script.
        self.refuse_keys = frozenset(refuse_keys)
        # API key -> the answer every request sending it gets (no script taken).
        self.key_answers: dict[str, Script] = {}
        self.requests: list[RecordedRequest] = []
        # perf_counter() when each request arrived (benchmarks compare it with client times)
        self.request_times: list[float] = []
        self._scripts: deque[Script] = deque()
        self.image_scripts: deque[Script] = deque()  # for /images/generations only
        self._connections: list[_Connection] = []
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(middlewares=[client_left_quietly])
        app.router.add_post("/v1/chat/completions", self._scripted)
        app.router.add_post("/v1/responses", self._scripted)
        app.router.add_post("/v1/messages", self._scripted)
        app.router.add_post("/v1/models/{model_method}", self._scripted)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/images/generations", self._images)
        app.router.add_get("/v1/files/{name}", self._file)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}/v1"

    async def close(self) -> None:
        """Release stalled and hanging handlers, then stop the server."""
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeProvider:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- test API ------------------------------------------------------------------------------

    def enqueue(self, *scripts: Script) -> None:
        """Queue the answers for the next POSTs, first in first out."""
        self._scripts.extend(scripts)

    @property
    def pending_scripts(self) -> int:
        return len(self._scripts)

    def disconnected(self, index: int) -> asyncio.Event:
        """Set once the client of request ``index`` closed its connection early."""
        return self._connections[index].disconnected

    async def wait_for_request(self, count: int = 1, timeout: float = 5.0) -> RecordedRequest:
        """Wait until at least ``count`` requests arrived; returns request ``count - 1``."""
        async with asyncio.timeout(timeout):
            while len(self.requests) < count:
                await asyncio.sleep(_DISCONNECT_POLL_S)
        return self.requests[count - 1]

    # -- handlers ------------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> int:
        self.request_times.append(time.perf_counter())
        body = await request.read()
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        problems: tuple[str, ...] = ()
        if self.check_bodies and request.method == "POST":
            problems = tuple(request_problems(request.path, parsed))
            NONCONFORMING.extend(f"{request.path}: {problem}" for problem in problems)
        self.requests.append(
            RecordedRequest(
                method=request.method,
                path=request.path,
                query=dict(request.query),
                headers={k.lower(): v for k, v in request.headers.items()},
                body=body,
                json=parsed,
                problems=problems,
            )
        )
        self._connections.append(_Connection())
        return len(self.requests) - 1

    async def _scripted(self, request: web.Request) -> web.StreamResponse:
        index = await self._record(request)
        refusal = self._deepseek_refusal(request.path, self.requests[index].json)
        if refusal is None:
            refusal = self._strict_refusal(self.requests[index].json)
        if refusal is not None:
            return refusal
        keyed = self.key_answers.get(self.requests[index].api_key or "")
        if keyed is not None:
            return await self._play(request, index, keyed)
        if not self._scripts:
            message = f"fake provider: no script queued for {request.method} {request.path}"
            return web.json_response({"error": {"message": message}}, status=500)
        script = self._scripts.popleft()
        if script.kind == "hang":
            await self._wait_until_gone(request, index)
            _drop(request)
            return web.Response(status=204)
        if script.kind == "drop":
            _drop(request)
            return web.Response(status=204)
        return await self._play(request, index, script)

    async def _images(self, request: web.Request) -> web.StreamResponse:
        index = await self._record(request)
        if not self.image_scripts:
            image = base64.b64encode(FAKE_PNG).decode()
            return web.json_response({"created": 0, "data": [{"b64_json": image}]})
        script = self.image_scripts.popleft()
        if script.kind == "hang":
            await self._wait_until_gone(request, index)
            _drop(request)
            return web.Response(status=204)
        return await self._play(request, index, script)

    async def _file(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.Response(body=FAKE_PNG, content_type="image/png")

    def _deepseek_refusal(self, path: str, body: Any) -> web.Response | None:
        """DeepSeek's 400 for a tool-call message without ``reasoning_content``, if in that mode."""
        if not self.refuse_missing_reasoning_content or not path.endswith("/chat/completions"):
            return None
        messages = body.get("messages", []) if isinstance(body, dict) else []
        for position, message in enumerate(messages):
            if (
                isinstance(message, dict)
                and message.get("role") == "assistant"
                and message.get("tool_calls")
                and "reasoning_content" not in message
            ):
                error = {
                    "message": DEEPSEEK_MISSING_REASONING.format(index=position),
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
                return web.json_response({"error": error}, status=400)
        return None

    def _strict_refusal(self, body: Any) -> web.Response | None:
        """vLLM's 400 for a field its request type does not declare, if one is refused."""
        unknown = sorted(self.refuse_keys & set(body)) if isinstance(body, dict) else []
        if not unknown:
            return None
        message = f"[{{'type': 'extra_forbidden', 'loc': ('body', '{unknown[0]}')}}]"
        error = {"message": message, "type": "BadRequestError", "param": None, "code": 400}
        return web.json_response({"error": error}, status=400)

    async def _play(self, request: web.Request, index: int, script: Script) -> web.StreamResponse:
        if script.delay_before_headers and await self._wait(
            request, index, script.delay_before_headers
        ):
            _drop(request)
            return web.Response(status=204)
        if script.status != 200 or script.content_type != "text/event-stream":
            body = b"".join(script.chunks)
            headers = {"content-type": script.content_type}
            if script.retry_after is not None:
                headers["retry-after"] = script.retry_after
            return web.Response(status=script.status, body=body, headers=headers)
        response = web.StreamResponse(
            status=200, headers={"content-type": "text/event-stream", "cache-control": "no-cache"}
        )
        await response.prepare(request)
        for position, chunk in enumerate(script.chunks):
            if position and script.delay_between and await self._pause(request, index, script):
                return response
            if self._gone(request, index):
                return response
            try:
                await response.write(chunk)
            except (ConnectionError, RuntimeError):
                self._connections[index].disconnected.set()
                return response
        if script.then_stall:
            await self._wait_until_gone(request, index)
            _drop(request)
            return response
        if script.then_cut:
            if script.cut_after_s:
                await asyncio.sleep(script.cut_after_s)
            _drop(request)
            return response
        await response.write_eof()
        return response

    async def _pause(self, request: web.Request, index: int, script: Script) -> bool:
        """Sleep ``delay_between``; True if the client left (or the fake closed) meanwhile."""
        return await self._wait(request, index, script.delay_between)

    async def _wait(self, request: web.Request, index: int, seconds: float) -> bool:
        """Sleep ``seconds``; True if the client left (or the fake closed) meanwhile."""
        loop = asyncio.get_running_loop()
        until = loop.time() + seconds
        while loop.time() < until:
            if self._gone(request, index) or self._closing.is_set():
                return True
            await asyncio.sleep(min(_DISCONNECT_POLL_S, max(until - loop.time(), 0)))
        return self._gone(request, index)

    async def _wait_until_gone(self, request: web.Request, index: int) -> None:
        while not self._closing.is_set() and not self._gone(request, index):
            await asyncio.sleep(_DISCONNECT_POLL_S)

    def _gone(self, request: web.Request, index: int) -> bool:
        transport = request.transport
        if transport is None or transport.is_closing():
            self._connections[index].disconnected.set()
            return True
        return False

    async def _models(self, request: web.Request) -> web.Response:
        await self._record(request)
        if self.models_error is not None:
            status, body = self.models_error
            return web.json_response(body, status=status)
        if self.models_style == "openai":
            data = [
                {
                    "id": m,
                    "object": "model",
                    "created": 0,
                    "owned_by": "fake",
                    **self.listing_extra.get(m, {}),
                }
                for m in self.models
            ]
            return web.json_response({"object": "list", "data": data})
        if self.models_style == "gemini":
            return web.json_response(self._gemini_page(request.query))
        return web.json_response(self._anthropic_page(request.query))

    def _gemini_page(self, query: Any) -> dict[str, Any]:
        size = int(query.get("pageSize", "50"))
        start = int(query.get("pageToken", "0"))
        names = [*self.models, GEMINI_EMBEDDING_MODEL]
        page = names[start : start + size]
        models = [
            {
                "name": f"models/{name}",
                "displayName": name,
                "supportedGenerationMethods": (
                    ["embedContent"]
                    if name == GEMINI_EMBEDDING_MODEL
                    else ["generateContent", "countTokens"]
                ),
                **self.listing_extra.get(name, {}),
            }
            for name in page
        ]
        answer: dict[str, Any] = {"models": models}
        if start + size < len(names):
            answer["nextPageToken"] = str(start + size)
        return answer

    def _anthropic_page(self, query: Any) -> dict[str, Any]:
        limit = int(query.get("limit", "20"))
        ids = self.models
        if "after_id" in query:
            ids = ids[ids.index(query["after_id"]) + 1 :]
        elif "before_id" in query:
            ids = ids[: ids.index(query["before_id"])][-limit:]
        page, has_more = ids[:limit], len(ids) > limit
        data = [
            {
                "type": "model",
                "id": m,
                "display_name": m.replace("-", " ").title(),
                "created_at": "2025-01-01T00:00:00Z",
            }
            for m in page
        ]
        return {
            "data": data,
            "has_more": has_more,
            "first_id": page[0] if page else None,
            "last_id": page[-1] if page else None,
        }


def _drop(request: web.Request) -> None:
    """Cut the connection without a response (the fake is closing or the client left)."""
    if request.transport is not None:
        with contextlib.suppress(Exception):
            request.transport.abort()


# ---------------------------------------------------------------------------------------------
# Realistic event lists for each format


@dataclass(frozen=True)
class FakeToolCall:
    """A tool call to stream; ``fragments`` are its argument text pieces, sent in order."""

    call_id: str
    name: str
    fragments: tuple[str, ...] = ()
    index: int | None = None

    @property
    def arguments(self) -> str:
        return "".join(self.fragments)


@dataclass(frozen=True)
class FakeThinking:
    """An Anthropic thinking block (or the one reasoning summary in the OpenAI formats)."""

    chunks: tuple[str, ...]
    signature: str = "sig-1"


@dataclass(frozen=True)
class FakeRedactedThinking:
    """An Anthropic ``redacted_thinking`` block with its opaque ``data``."""

    data: str


def _interleaved(tools: Sequence[FakeToolCall]) -> list[tuple[int, str]]:
    """Argument fragments of parallel calls, round-robin: (position in ``tools``, fragment)."""
    out: list[tuple[int, str]] = []
    longest = max((len(t.fragments) for t in tools), default=0)
    for step in range(longest):
        for position, tool in enumerate(tools):
            if step < len(tool.fragments):
                out.append((position, tool.fragments[step]))
    return out


# -- OpenAI Chat Completions --


def chat_usage(
    prompt: int, completion: int, *, cached: int | None = None, reasoning: int | None = None
) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


def chat_chunk(
    delta: dict[str, Any], finish_reason: str | None = None, model: str = "fake-model"
) -> SseEvent:
    return SseEvent.json(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            "usage": None,
        }
    )


def chat_error_chunk(message: str, code: str = "server_error") -> SseEvent:
    """The ``{"error": {...}}`` object some Chat servers send mid-stream."""
    return SseEvent.json({"error": {"message": message, "type": code, "code": code}})


def chat_events(
    *,
    text: Sequence[str] = (),
    thinking: Sequence[str] = (),
    tools: Sequence[FakeToolCall] = (),
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    done: bool = True,
    model: str = "fake-model",
) -> list[SseEvent]:
    """A Chat Completions stream: role chunk, ``reasoning_content`` deltas, content deltas,
    interleaved parallel tool-call deltas, the finish chunk, the usage chunk, ``[DONE]``.
    ``finish`` defaults to ``tool_calls`` with tools and ``stop`` without; ``finish=""`` sends no
    finish chunk; ``done=False`` leaves out ``[DONE]``."""
    events = [chat_chunk({"role": "assistant", "content": ""}, model=model)]
    events += [chat_chunk({"reasoning_content": piece}, model=model) for piece in thinking]
    events += [chat_chunk({"content": piece}, model=model) for piece in text]
    indexes = [t.index if t.index is not None else i for i, t in enumerate(tools)]
    for position, tool in enumerate(tools):
        start = {
            "index": indexes[position],
            "id": tool.call_id,
            "type": "function",
            "function": {"name": tool.name, "arguments": ""},
        }
        events.append(chat_chunk({"tool_calls": [start]}, model=model))
    for position, piece in _interleaved(tools):
        entry = {"index": indexes[position], "function": {"arguments": piece}}
        events.append(chat_chunk({"tool_calls": [entry]}, model=model))
    if finish is None:
        finish = "tool_calls" if tools else "stop"
    if finish:
        events.append(chat_chunk({}, finish, model=model))
    if usage is not None:
        events.append(
            SseEvent.json(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    if done:
        events.append(SseEvent("[DONE]"))
    return events


# -- OpenAI Responses --


def responses_usage(
    input: int, output: int, *, cached: int | None = None, reasoning: int | None = None
) -> dict[str, Any]:
    return {
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": cached} if cached is not None else None,
        "output_tokens": output,
        "output_tokens_details": (
            {"reasoning_tokens": reasoning} if reasoning is not None else None
        ),
        "total_tokens": input + output,
    }


class _Seq:
    """Numbers Responses events the way the API does (``sequence_number``)."""

    def __init__(self) -> None:
        self.events: list[SseEvent] = []

    def add(self, kind: str, **fields: Any) -> None:
        payload = {"type": kind, "sequence_number": len(self.events), **fields}
        self.events.append(SseEvent.json(payload, event=kind))


def responses_error_event(message: str, code: str = "server_error") -> SseEvent:
    """The Responses ``error`` event."""
    payload = {"type": "error", "code": code, "message": message, "param": None}
    return SseEvent.json(payload, event="error")


def responses_failed_event(message: str, code: str = "server_error") -> SseEvent:
    """The Responses ``response.failed`` terminal event."""
    response: dict[str, Any] = {
        "id": "resp_fake",
        "object": "response",
        "status": "failed",
        "error": {"code": code, "message": message},
        "output": [],
        "usage": None,
    }
    payload = {"type": "response.failed", "response": response}
    return SseEvent.json(payload, event="response.failed")


def responses_events(
    *,
    text: Sequence[str] = (),
    thinking: Sequence[str] = (),
    encrypted_reasoning: str | None = None,
    tools: Sequence[FakeToolCall] = (),
    usage: dict[str, Any] | None = None,
    terminal: Literal["completed", "incomplete", "none"] = "completed",
    incomplete_reason: str = "max_output_tokens",
    model: str = "fake-model",
) -> list[SseEvent]:
    """A Responses stream: a reasoning item (summary deltas, ``encrypted_content`` on its done
    item) when ``thinking`` or ``encrypted_reasoning`` is given, a message item with the text,
    function_call items with interleaved argument deltas, then the terminal event."""
    seq = _Seq()
    base = {"id": "resp_fake", "object": "response", "model": model, "output": []}
    seq.add("response.created", response={**base, "status": "in_progress"})
    seq.add("response.in_progress", response={**base, "status": "in_progress"})
    output: list[dict[str, Any]] = []
    if thinking or encrypted_reasoning is not None:
        at = len(output)
        seq.add(
            "response.output_item.added",
            output_index=at,
            item={"id": "rs_fake", "type": "reasoning", "summary": []},
        )
        summary: list[dict[str, Any]] = []
        if thinking:
            part = {"type": "summary_text", "text": ""}
            ids = {"item_id": "rs_fake", "output_index": at, "summary_index": 0}
            seq.add("response.reasoning_summary_part.added", **ids, part=part)
            for piece in thinking:
                seq.add("response.reasoning_summary_text.delta", **ids, delta=piece)
            full = "".join(thinking)
            seq.add("response.reasoning_summary_text.done", **ids, text=full)
            seq.add("response.reasoning_summary_part.done", **ids, part={**part, "text": full})
            summary.append({"type": "summary_text", "text": full})
        item: dict[str, Any] = {"id": "rs_fake", "type": "reasoning", "summary": summary}
        if encrypted_reasoning is not None:
            item["encrypted_content"] = encrypted_reasoning
        seq.add("response.output_item.done", output_index=at, item=item)
        output.append(item)
    if text:
        at = len(output)
        message = {"id": "msg_fake", "type": "message", "role": "assistant", "status": ""}
        seq.add(
            "response.output_item.added",
            output_index=at,
            item={**message, "status": "in_progress", "content": []},
        )
        ids = {"item_id": "msg_fake", "output_index": at, "content_index": 0}
        empty = {"type": "output_text", "text": "", "annotations": []}
        seq.add("response.content_part.added", **ids, part=empty)
        for piece in text:
            seq.add("response.output_text.delta", **ids, delta=piece, logprobs=[])
        full = "".join(text)
        seq.add("response.output_text.done", **ids, text=full, logprobs=[])
        seq.add("response.content_part.done", **ids, part={**empty, "text": full})
        done_item = {**message, "status": "completed", "content": [{**empty, "text": full}]}
        seq.add("response.output_item.done", output_index=at, item=done_item)
        output.append(done_item)
    first_tool = len(output)
    indexes = [t.index if t.index is not None else first_tool + i for i, t in enumerate(tools)]
    items: list[dict[str, Any]] = []
    for position, tool in enumerate(tools):
        fc = {
            "id": f"fc_{tool.call_id}",
            "type": "function_call",
            "status": "in_progress",
            "call_id": tool.call_id,
            "name": tool.name,
            "arguments": "",
        }
        items.append(fc)
        seq.add("response.output_item.added", output_index=indexes[position], item=fc)
    for position, piece in _interleaved(tools):
        seq.add(
            "response.function_call_arguments.delta",
            item_id=items[position]["id"],
            output_index=indexes[position],
            delta=piece,
        )
    for position, tool in enumerate(tools):
        at = indexes[position]
        seq.add(
            "response.function_call_arguments.done",
            item_id=items[position]["id"],
            output_index=at,
            arguments=tool.arguments,
        )
        done_fc = {**items[position], "status": "completed", "arguments": tool.arguments}
        seq.add("response.output_item.done", output_index=at, item=done_fc)
        output.append(done_fc)
    if terminal == "completed":
        final = {**base, "status": "completed", "output": output, "usage": usage}
        seq.add("response.completed", response=final)
    elif terminal == "incomplete":
        final = {
            **base,
            "status": "incomplete",
            "incomplete_details": {"reason": incomplete_reason},
            "output": output,
            "usage": usage,
        }
        seq.add("response.incomplete", response=final)
    return seq.events


# -- Anthropic Messages --


def anthropic_usage(
    *,
    input: int | None = None,
    output: int | None = None,
    cache_read: int | None = None,
    cache_write: int | None = None,
) -> dict[str, Any]:
    """Only the given fields, as Anthropic's usage objects (which vary by event) carry them."""
    usage: dict[str, Any] = {}
    if input is not None:
        usage["input_tokens"] = input
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if output is not None:
        usage["output_tokens"] = output
    return usage


def anthropic_error_event(message: str, error_type: str = "overloaded_error") -> SseEvent:
    """The Anthropic mid-stream ``event: error``."""
    payload = {"type": "error", "error": {"type": error_type, "message": message}}
    return SseEvent.json(payload, event="error")


def _a(kind: str, **fields: Any) -> SseEvent:
    return SseEvent.json({"type": kind, **fields}, event=kind)


def anthropic_events(
    *,
    text: Sequence[str] = (),
    thinking: Sequence[FakeThinking | FakeRedactedThinking] = (),
    tools: Sequence[FakeToolCall] = (),
    stop_reason: str | None = None,
    start_usage: dict[str, Any] | None = None,
    delta_usage: dict[str, Any] | None = None,
    stop: bool = True,
    model: str = "fake-model",
) -> list[SseEvent]:
    """A Messages stream: ``message_start``, ``ping``, thinking / redacted_thinking blocks (in
    the given order), a text block, tool_use blocks (input ``{}`` on start, then
    ``input_json_delta`` fragments; none for a tool without fragments), ``message_delta`` with
    ``stop_reason`` (default ``tool_use`` with tools, else ``end_turn``) and ``message_stop``."""
    message: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage if start_usage is not None else {},
    }
    events = [_a("message_start", message=message), _a("ping")]
    index = 0
    for block in thinking:
        if isinstance(block, FakeRedactedThinking):
            start: dict[str, object] = {"type": "redacted_thinking", "data": block.data}
            events.append(_a("content_block_start", index=index, content_block=start))
        else:
            start = {"type": "thinking", "thinking": "", "signature": ""}
            events.append(_a("content_block_start", index=index, content_block=start))
            for piece in block.chunks:
                delta = {"type": "thinking_delta", "thinking": piece}
                events.append(_a("content_block_delta", index=index, delta=delta))
            delta = {"type": "signature_delta", "signature": block.signature}
            events.append(_a("content_block_delta", index=index, delta=delta))
        events.append(_a("content_block_stop", index=index))
        index += 1
    if text:
        start = {"type": "text", "text": ""}
        events.append(_a("content_block_start", index=index, content_block=start))
        for piece in text:
            delta = {"type": "text_delta", "text": piece}
            events.append(_a("content_block_delta", index=index, delta=delta))
        events.append(_a("content_block_stop", index=index))
        index += 1
    for tool in tools:
        at = tool.index if tool.index is not None else index
        start = {"type": "tool_use", "id": tool.call_id, "name": tool.name, "input": {}}
        events.append(_a("content_block_start", index=at, content_block=start))
        if tool.fragments:
            delta = {"type": "input_json_delta", "partial_json": ""}
            events.append(_a("content_block_delta", index=at, delta=delta))
        for piece in tool.fragments:
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(_a("content_block_delta", index=at, delta=delta))
        events.append(_a("content_block_stop", index=at))
        index = at + 1
    if stop_reason is None:
        stop_reason = "tool_use" if tools else "end_turn"
    events.append(
        _a(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage=delta_usage if delta_usage is not None else {},
        )
    )
    if stop:
        events.append(_a("message_stop"))
    return events


# -- OpenRouter (Chat Completions with its reasoning fields) --


def openrouter_events(
    *,
    reasoning: Sequence[str] = (),
    details: Sequence[Sequence[dict[str, Any]]] = (),
    text: Sequence[str] = (),
    tools: Sequence[FakeToolCall] = (),
) -> list[SseEvent]:
    """An OpenRouter Chat stream: one chunk per reasoning piece carrying ``delta.reasoning`` and
    that step's ``delta.reasoning_details`` fragments (``details[i]``, empty when shorter), then
    ``chat_events``' text, tool calls, finish and ``[DONE]``."""
    steps = max(len(reasoning), len(details))
    events = [chat_chunk({"role": "assistant", "content": ""})]
    for step in range(steps):
        delta: dict[str, Any] = {"content": None}
        if step < len(reasoning):
            delta["reasoning"] = reasoning[step]
        if step < len(details):
            delta["reasoning_details"] = list(details[step])
        events.append(chat_chunk(delta))
    return events + chat_events(text=text, tools=tools)[1:]


# -- Gemini (streamGenerateContent?alt=sse) --


def gemini_usage(
    prompt: int,
    candidates: int,
    *,
    cached: int | None = None,
    thoughts: int | None = None,
) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + (thoughts or 0),
    }
    if cached is not None:
        usage["cachedContentTokenCount"] = cached
    if thoughts is not None:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def gemini_chunk(
    parts: Sequence[dict[str, Any]] = (),
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
) -> SseEvent:
    """One ``GenerateContentResponse``."""
    candidate: dict[str, Any] = {"index": 0}
    if parts:
        candidate["content"] = {"role": "model", "parts": list(parts)}
    if finish is not None:
        candidate["finishReason"] = finish
    payload: dict[str, Any] = {"candidates": [candidate], "modelVersion": "fake-model"}
    if usage is not None:
        payload["usageMetadata"] = usage
    return SseEvent.json(payload)


def gemini_parts(
    *,
    text: Sequence[str] = (),
    thinking: Sequence[str] = (),
    tools: Sequence[FakeToolCall] = (),
    signatures: str | None = "sig",
    call_ids: bool = True,
) -> list[dict[str, Any]]:
    """The parts a thinking Gemini model streams, one per chunk: thought parts (the last one
    signed), text parts, then one ``functionCall`` part per tool (the first one signed; a
    call's ``args`` are its fragments parsed). Without tools the last text part is signed.
    ``signatures=None`` signs nothing; ``call_ids=False`` gives calls no id (older APIs)."""
    parts: list[dict[str, Any]] = [{"text": piece, "thought": True} for piece in thinking]
    if parts and signatures:
        parts[-1]["thoughtSignature"] = f"{signatures}-thought"
    texts = [{"text": piece} for piece in text]
    if texts and signatures and not tools:
        texts[-1]["thoughtSignature"] = f"{signatures}-text"
    parts += texts
    for position, tool in enumerate(tools):
        call: dict[str, Any] = {"name": tool.name, "args": json.loads(tool.arguments or "{}")}
        if call_ids:
            call["id"] = tool.call_id
        part: dict[str, Any] = {"functionCall": call}
        if position == 0 and signatures:
            part["thoughtSignature"] = f"{signatures}-call-{tool.call_id}"
        parts.append(part)
    return parts


def gemini_events(
    *,
    text: Sequence[str] = (),
    thinking: Sequence[str] = (),
    tools: Sequence[FakeToolCall] = (),
    signatures: str | None = "sig",
    call_ids: bool = True,
    finish: str | None = "STOP",
    usage: dict[str, Any] | None = None,
) -> list[SseEvent]:
    """A Gemini stream: each of ``gemini_parts`` in a chunk of its own, then a chunk with the
    finish reason and the usage (``finish=None`` leaves the reason out)."""
    parts = gemini_parts(
        text=text, thinking=thinking, tools=tools, signatures=signatures, call_ids=call_ids
    )
    events = [gemini_chunk([part]) for part in parts]
    events.append(gemini_chunk(finish=finish, usage=usage or gemini_usage(10, 5)))
    return events
