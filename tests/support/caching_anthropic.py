"""A fake Anthropic Messages API that charges a cached prompt prefix the way the real one does.

A real aiohttp server on loopback (``POST {base_url}/messages``, genuine SSE). Each request
takes the next queued ``Reply`` and its usage is computed from the fake's prompt cache:

- the prompt is read as segments in the API's cache order: each tool, each system block, then
  each content block of each message (with its role); a segment's token count is its compact
  JSON length over four, rounded up, ``cache_control`` left out (a mark is not content);
- a block marked ``cache_control`` is a breakpoint (more than four: 400, as the API answers);
  the prefix up to it is known by a running SHA-256 over the model and the segments;
- the longest prefix among the request's breakpoints that the cache holds (unexpired) is read:
  ``cache_read_input_tokens``; the fake is stricter than the API, which also looks about 20
  blocks back from each breakpoint, so a placement that reads here reads there too;
- every breakpoint after it whose prefix reaches ``min_tokens`` (1024 for Sonnet and Opus) is
  written; ``cache_creation_input_tokens`` are the tokens from the read point to the last one
  written; ``input_tokens`` the rest;
- a cached prefix lives ``ttl_s`` (5 minutes) from its last write or read.

``usages`` holds each request's usage in arrival order, ``requests`` each body. Every body is
checked with the suite's Messages API facts (``tests/support/request_schemas.py``); a problem
lands in ``fake_provider.NONCONFORMING``, which fails the test that caused it.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support import fake_provider
from tests.support.client_left import client_left_quietly
from tests.support.fake_provider import FakeToolCall, anthropic_events, encode_events
from tests.support.request_schemas import request_problems

CACHE_TTL_S = 300.0
MIN_CACHEABLE_TOKENS = 1024
MAX_BREAKPOINTS = 4


@dataclass(frozen=True)
class Reply:
    """What the fake model answers: text, or tool calls (and text before them)."""

    text: str = ""
    tools: Sequence[FakeToolCall] = ()


@dataclass(frozen=True)
class CacheUsage:
    """One request's input tokens as the API splits them."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    output_tokens: int

    @property
    def total_input(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


def tokens(segment: Any) -> int:
    """The fake's token count of one segment (about four characters of JSON per token)."""
    text = json.dumps(segment, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return max(1, math.ceil(len(text) / 4))


def _unmarked(block: Any) -> Any:
    if isinstance(block, dict):
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def segments(body: dict[str, Any]) -> list[tuple[Any, bool]]:
    """The prompt in cache order: (segment without its mark, marked)."""
    out: list[tuple[Any, bool]] = []
    for tool in body.get("tools") or ():
        out.append((("tool", _unmarked(tool)), "cache_control" in tool))
    system = body.get("system")
    if isinstance(system, str):
        out.append((("system", system), False))
    elif isinstance(system, list):
        out.extend((("system", _unmarked(block)), "cache_control" in block) for block in system)
    for message in body.get("messages") or ():
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content:
            out.append(((message["role"], _unmarked(block)), "cache_control" in block))
    return out


@dataclass
class PromptCache:
    """Prefix digests → (tokens, expiry); the accounting of one request at a time."""

    ttl_s: float = CACHE_TTL_S
    min_tokens: int = MIN_CACHEABLE_TOKENS
    clock: Callable[[], float] = time.monotonic
    entries: dict[bytes, float] = field(default_factory=dict)

    def charge(self, body: dict[str, Any], output_tokens: int) -> CacheUsage:
        """Read the longest cached breakpoint prefix, write the later ones, split the input."""
        now = self.clock()
        digest = hashlib.sha256(str(body.get("model")).encode())
        total = 0
        points: list[tuple[bytes, int]] = []  # (prefix digest, prefix tokens) per breakpoint
        for segment, marked in segments(body):
            digest.update(json.dumps(segment, sort_keys=True).encode())
            total += tokens(segment[1])
            if marked:
                points.append((digest.copy().digest(), total))
        if len(points) > MAX_BREAKPOINTS:
            raise ValueError(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {len(points)}."
            )
        read_at = -1
        for position in range(len(points) - 1, -1, -1):
            key = points[position][0]
            if self.entries.get(key, -1.0) > now:
                read_at = position
                break
        read = points[read_at][1] if read_at >= 0 else 0
        written = read
        for key, prefix in points[read_at + 1 :]:
            if prefix >= self.min_tokens:
                self.entries[key] = now + self.ttl_s
                written = prefix
        if read_at >= 0:
            self.entries[points[read_at][0]] = now + self.ttl_s  # a read refreshes it
        return CacheUsage(
            input_tokens=total - written,
            cache_read_input_tokens=read,
            cache_creation_input_tokens=written - read,
            output_tokens=output_tokens,
        )


class CachingAnthropic:
    """The server; ``async with CachingAnthropic() as fake``, then ``fake.enqueue(Reply(...))``."""

    def __init__(
        self,
        *,
        ttl_s: float = CACHE_TTL_S,
        min_tokens: int = MIN_CACHEABLE_TOKENS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cache = PromptCache(ttl_s, min_tokens, clock)
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.usages: list[CacheUsage] = []
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    def enqueue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def __aenter__(self) -> CachingAnthropic:
        app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[client_left_quietly])
        app.router.add_post("/v1/messages", self._messages)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}/v1"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        problems = request_problems(request.path, body)
        fake_provider.NONCONFORMING.extend(f"{request.path}: {p}" for p in problems)
        if not self.replies:
            error = {"type": "error", "error": {"type": "api_error", "message": "no reply queued"}}
            return web.json_response(error, status=500)
        reply = self.replies.popleft()
        output = tokens(reply.text) + sum(tokens(t.arguments) for t in reply.tools)
        try:
            usage = self.cache.charge(body, output)
        except ValueError as exc:
            error = {"type": "invalid_request_error", "message": str(exc)}
            return web.json_response({"type": "error", "error": error}, status=400)
        self.usages.append(usage)
        start = {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "output_tokens": 1,
        }
        events = anthropic_events(
            text=[reply.text] if reply.text else [],
            tools=reply.tools,
            start_usage=start,
            delta_usage={"output_tokens": output},
            model=str(body.get("model")),
        )
        response = web.StreamResponse(status=200, headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(encode_events(events))
        await response.write_eof()
        return response
