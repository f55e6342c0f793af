"""How many times one turn crosses between threads and the loop, at N=1: jobs handed to the
actor pool, loop wake-ups by the actors, and context switches, read from the counters the pool
and the loop bridge keep. The bounds hold the counts where they are, so a change that adds
crossings to every turn fails here (what the scheduling costs is in docs/performance.md)."""

from __future__ import annotations

from pathlib import Path

from tests.support.crossings import Crossings, crossings
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from wire.proto import agent_v1_pb2 as agent

# One text turn, and what one tool round (a Read) adds to it; measured with some slack for
# the scheduling's timing (an actor already on a worker takes a message without a hand-off).
# Before actors made ready on a worker were kept there: 28-31 and 21-32 hand-offs.
TEXT_TURN_HANDOFFS = 24  # measured 14-19: ten from the loop, the rest at commit waits
TEXT_TURN_LOOP_WAKEUPS = 12  # measured 6-9
TOOL_ROUND_HANDOFFS = 20  # measured 8-16
TOOL_ROUND_LOOP_WAKEUPS = 12  # measured 3-8


async def one_turn(
    cursor: FakeCursor,
    request_id: str,
    message: agent.AgentClientMessage,
    workspace: Path | None = None,
) -> Crossings:
    before = crossings()
    log = await CursorSession(cursor, request_id, workspace=workspace).run(message)
    assert log.end == {}, log.end
    return crossings() - before


async def test_a_text_turn_and_a_tool_round_cross_no_more_than_their_bounds(
    cursor: FakeCursor, fake: FakeProvider, public_id: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    fake.enqueue(Script.sse(chat_events(text=["warm"])))
    await one_turn(cursor, "warm", user_turn_message("hi", public_id, conversation_id="w"))
    fake.enqueue(Script.sse(chat_events(text=["plain text"])))
    text = await one_turn(cursor, "text", user_turn_message("hi", public_id, conversation_id="t"))
    read = FakeToolCall("call_1", "Read", ('{"path": "/a.txt"}',))
    fake.enqueue(Script.sse(chat_events(tools=[read])), Script.sse(chat_events(text=["done"])))
    tools = await one_turn(
        cursor,
        "tools",
        user_turn_message("read", public_id, conversation_id="r"),
        workspace=tmp_path,
    )
    round_ = tools - text
    print(f"text turn: {text}\none tool round adds: {round_}")
    assert text.handoffs <= TEXT_TURN_HANDOFFS, text
    assert text.loop_wakeups <= TEXT_TURN_LOOP_WAKEUPS, text
    assert round_.handoffs <= TOOL_ROUND_HANDOFFS, round_
    assert round_.loop_wakeups <= TOOL_ROUND_LOOP_WAKEUPS, round_
