"""The soak's provider: the load benchmark's, answering a conversation's latest turn, with
seeded faults.

Under the soak a request holds the whole conversation, so the turn (its tag, and whether it
asks for tools) is read from the last user message, not from anywhere in the body. Each
request is the ``n``-th of its turn; ``soak_faults.provider_fault`` says whether it is
answered with a fault (``fake_provider.fault_script``) instead. ``report`` gives every turn's
requests as (arrival ``time.perf_counter``, fault) for the soak's accounting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import defaultdict
from typing import Any

from aiohttp import web

from tests.bench.load_provider import READS, TAG, TOOLS_MARK, LoadProvider
from tests.bench.soak_faults import provider_fault
from tests.support.fake_provider import FakeToolCall, SseEvent, chat_events, fault_script

TEXT_EVENTS: list[SseEvent] = chat_events(text=["Hello", " there", "!"])


def tools_events(tag: str) -> list[SseEvent]:
    """The two Reads of a tools turn, with call ids of its own (``call_<tag>_<i>``)."""
    calls = [FakeToolCall(f"call_{tag}_{i}", "Read", [args]) for i, args in enumerate(READS)]
    return chat_events(tools=calls)


class SoakProvider(LoadProvider):
    """``LoadProvider`` with the soak's fault plan (``seed``, ``rate``, ``drop_rate``)."""

    def __init__(self, first_token_delay: float, seed: int, rate: float, drop_rate: float) -> None:
        super().__init__(first_token_delay)
        self.seed, self.rate, self.drop_rate = seed, rate, drop_rate
        self.requests: dict[str, list[tuple[float, str]]] = defaultdict(list)

    def report(self) -> Any:
        return dict(self.requests)

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
                await asyncio.sleep(0.05)  # what was written reaches the server before the cut
                if request.transport is not None:
                    with contextlib.suppress(Exception):
                        request.transport.abort()
                return response
            await response.write_eof()
        except ConnectionError:  # the server may close once it has read the finish chunk
            pass
        return response
