"""A stream cut right after its first events, over real HTTP: the events the provider wrote
before the cut reach the turn, and so the call is not tried again.

The cut here comes in the same loop step as the last write, so the server reads the events and
the end of the connection together, the last events still waiting in the transport's chunk batch
when the read fails. Those events once were dropped with the batch, and the attempt, having
"nothing" to show, was retried: the soak's unexplained ``ok`` after a cut.
"""

from __future__ import annotations

import httpx
import pytest

from actors.conversation.events import TextDelta, ToolCallStarted
from store import Store
from store.llm_calls import CallStatus
from tests.actors.test_provider_retry import client, fake, records, with_retry  # noqa: F401
from tests.e2e.test_provider_actor import (
    Listener,
    make_route,
    start,
    stop_recorders,  # noqa: F401  (autouse fixture)
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events

# How many times each cut is played: the events and the end arriving together is the usual
# case with ``after_s=0``, and a few repetitions make the test fail surely if it regresses.
REPEATS = 5


@pytest.mark.parametrize("after_s", [0.0, 0.05])
async def test_text_written_before_a_cut_reaches_the_turn_and_is_not_retried(
    fake: FakeProvider,  # noqa: F811
    client: httpx.AsyncClient,  # noqa: F811
    server_store: Store,
    after_s: float,
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    events = chat_events(text=["Hello", " there"])  # the role chunk, then "Hello"
    for repeat in range(REPEATS):
        fake.enqueue(Script.cut(2, events, after_s=after_s))
        listener = Listener()
        start(route, listener, with_retry(server_store, client))
        seen, end = await listener.until_end()
        assert end.status is CallStatus.FAILED and end.failure is not None, repeat
        assert [e.text for e in seen if isinstance(e, TextDelta)] == ["Hello"], repeat
        assert len(fake.requests) == repeat + 1, f"repeat {repeat}: the cut call was tried again"
    assert [r.status for r in records(server_store)] == ["failed"] * REPEATS


async def test_a_tool_call_begun_before_a_cut_reaches_the_turn_and_is_not_retried(
    fake: FakeProvider,  # noqa: F811
    client: httpx.AsyncClient,  # noqa: F811
    server_store: Store,
) -> None:
    route = make_route(server_store.database, fake.base_url, "openai-chat")
    events = chat_events(tools=[FakeToolCall("call_1", "Read", ('{"path": "a.txt"}',))])
    for repeat in range(REPEATS):
        fake.enqueue(Script.cut(2, events, after_s=0.0))
        listener = Listener()
        start(route, listener, with_retry(server_store, client))
        seen, end = await listener.until_end()
        assert end.status is CallStatus.FAILED, repeat
        assert [e.call_id for e in seen if isinstance(e, ToolCallStarted)] == ["call_1"], repeat
        assert len(fake.requests) == repeat + 1, f"repeat {repeat}: the cut call was tried again"
