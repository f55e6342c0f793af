"""The soak's provider: the load benchmark's, answering a conversation's latest turn, with
seeded faults.

Under the soak a request holds the whole conversation, so the turn (its tag, and whether it
asks for tools) is read from the last user message, not from anywhere in the body. Each
request is the ``n``-th of its turn; ``soak_faults.provider_fault`` says whether it is
answered with a fault (``fake_provider.fault_script``) instead. ``report`` gives every turn's
requests as (arrival ``time.perf_counter``, fault) for the soak's accounting, and every cut's
body bytes by turn.

A cut is unambiguous: the provider writes its events, waits until they have left its
transport (``get_write_buffer_size() == 0``: they are in the kernel, ahead of the end of the
connection), records how many body bytes that is, and closes at once. The server reads them
before the EOF, however late it reads, so the turn has seen them and the cut must end it
``unavailable``; the accounting checks the server's call record holds exactly those bytes.
Closing at once also means the server often reads the events and the EOF in one step, the case
that once lost the events still batched in its transport (``actors/providers/transport.py``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from typing import Any

from aiohttp import web

from tests.bench.load_provider import READS, TAG, TOOLS_MARK, LoadProvider
from tests.bench.soak_faults import provider_fault
from tests.support.fake_provider import FakeToolCall, SseEvent, chat_events, fault_script

# How long a cut waits for its events to leave the transport (the server stopped reading).
FLUSH_WAIT_S = 5.0

TEXT_EVENTS: list[SseEvent] = chat_events(text=["Hello", " there", "!"])


def tools_events(tag: str) -> list[SseEvent]:
    """The two Reads of a tools turn, with call ids of its own (``call_<tag>_<i>``)."""
    calls = [FakeToolCall(f"call_{tag}_{i}", "Read", (args,)) for i, args in enumerate(READS)]
    return chat_events(tools=calls)


class SoakProvider(LoadProvider):
    """``LoadProvider`` with the soak's fault plan (``seed``, ``rate``, ``drop_rate``)."""

    def __init__(self, first_token_delay: float, seed: int, rate: float, drop_rate: float) -> None:
        super().__init__(first_token_delay)
        self.seed, self.rate, self.drop_rate = seed, rate, drop_rate
        self.requests: dict[str, list[tuple[float, str]]] = defaultdict(list)
        self.cuts: dict[str, list[int]] = defaultdict(list)

    def report(self) -> Any:
        """``(requests, cuts)``: each turn's requests, and the body bytes of each of its cuts."""
        return dict(self.requests), dict(self.cuts)

    async def completions(self, request: web.Request) -> web.StreamResponse:
        arrived = time.perf_counter()
        raw = await request.text()
        messages: list[dict[str, Any]] = json.loads(raw)["messages"]
        last_user = json.dumps(next(m for m in reversed(messages) if m.get("role") == "user"))
        tags = TAG.findall(last_user)
        tag = tags[-1] if tags else ""
        fault = provider_fault(self.seed, self.rate, self.drop_rate, tag, len(self.requests[tag]))
        self.requests[tag].append((arrived, fault))
        tools = TOOLS_MARK in last_user and messages[-1].get("role") != "tool"
        events = tools_events(tag) if tools else TEXT_EVENTS
        chunks = [event.encode() for event in events]
        if fault != "ok":
            script = fault_script(fault, events)
            if script.status != 200:
                headers = {"content-type": script.content_type}
                if script.retry_after is not None:
                    headers["retry-after"] = script.retry_after
                return web.Response(
                    status=script.status, body=b"".join(script.chunks), headers=headers
                )
            chunks = list(script.chunks)
        response = web.StreamResponse(
            status=200, headers={"content-type": "text/event-stream", "cache-control": "no-cache"}
        )
        await response.prepare(request)
        await asyncio.sleep(self.delay)
        try:
            for chunk in chunks:
                await response.write(chunk)
            if fault == "cut":
                await self._cut(request, tag, sum(len(chunk) for chunk in chunks))
                return response
            await response.write_eof()
        except ConnectionError:  # the server may close once it has read the finish chunk
            pass
        return response

    async def _cut(self, request: web.Request, tag: str, written: int) -> None:
        """Close the connection once the ``written`` body bytes have left the transport."""
        transport = request.transport
        if transport is None:  # the server left first: nothing to cut
            return
        deadline = time.monotonic() + FLUSH_WAIT_S
        while transport.get_write_buffer_size() and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        if transport.get_write_buffer_size():
            raise RuntimeError(f"turn {tag}: the cut's events were not sent in {FLUSH_WAIT_S} s")
        self.cuts[tag].append(written)
        transport.abort()
