"""Length recovery end to end, in each provider format: an answer the output limit cut is
continued in a new call (the editor sees one text, the stored history says what happened), at
most ``MAX_CONTINUATIONS`` times; a tool call whose arguments were cut is an error result asking
for a smaller call, never run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from actors.turn.length import MAX_CONTINUATIONS
from prompt.continuation import continuation_text
from store import Store
from tests.support.fake_cursor import CursorSession, FakeCursor, TurnLog, updates, user_turn_message
from tests.support.fake_provider import (
    FakeProvider,
    FakeToolCall,
    Script,
    SseEvent,
    anthropic_events,
    chat_events,
    gemini_events,
    responses_events,
)
from tests.support.formats import (
    FORMAT_IDS,
    FORMATS,
    RAW_ARGUMENT_FORMATS,
    RAW_ARGUMENT_IDS,
    ProviderFormat,
)
from wire.proto import agent_v1_pb2 as agent


def cut_answer(fmt: ProviderFormat, *text: str) -> Script:
    """A text answer the output limit stopped, as each format reports it."""
    match fmt.type:
        case "openai-chat":
            return Script.sse(chat_events(text=text, finish="length"))
        case "openai-responses":
            return Script.sse(responses_events(text=text, terminal="incomplete"))
        case "gemini":
            return Script.sse(gemini_events(text=text, finish="MAX_TOKENS"))
        case _:
            return Script.sse(anthropic_events(text=text, stop_reason="max_tokens"))


def cut_tool_round(fmt: ProviderFormat, tools: Sequence[FakeToolCall]) -> Script:
    """Tool calls the output limit stopped while the last one's arguments streamed."""
    match fmt.type:
        case "openai-chat":
            return Script.sse(chat_events(tools=tools, finish="length"))
        case "openai-responses":
            # The API never sends the cut call's done events: the stream ends incomplete.
            cut = f"fc_{tools[-1].call_id}"
            events = [
                event
                for event in responses_events(tools=tools, terminal="incomplete")
                if not _done_event_of(event, cut)
            ]
            return Script.sse(events)
        case _:
            return Script.sse(anthropic_events(tools=tools, stop_reason="max_tokens"))


def _done_event_of(event: SseEvent, item_id: str) -> bool:
    data = json.loads(event.data)
    if data.get("type") == "response.function_call_arguments.done":
        return bool(data["item_id"] == item_id)
    if data.get("type") == "response.output_item.done":
        return bool(data["item"].get("id") == item_id)
    return False


def texts(log: TurnLog) -> str:
    return "".join(update.text for update in updates(log, "text_delta"))


def assistant_steps(log: TurnLog) -> list[str]:
    """The text steps of the final checkpoint's last turn, as the editor keeps them."""
    state = log.checkpoints()[-1]
    turn = agent.ConversationTurnStructure.FromString(log.blobs[state.turns[-1]])
    steps = [
        agent.ConversationStep.FromString(log.blobs[step_id])
        for step_id in turn.agent_conversation_turn.steps
    ]
    return [step.assistant_message.text for step in steps if step.HasField("assistant_message")]


def history(fmt: ProviderFormat, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of each message a request holds after the system prompt."""
    if fmt.type == "openai-chat":
        return [(m["role"], m["content"] or "") for m in body["messages"][1:]]
    if fmt.type == "openai-responses":
        out = []
        for item in body["input"]:
            content = item["content"]
            text = content if isinstance(content, str) else content[0]["text"]
            out.append((item["role"], text))
        return out
    if fmt.type == "gemini":
        roles = {"user": "user", "model": "assistant"}
        return [
            (roles[c["role"]], "".join(part.get("text", "") for part in c["parts"]))
            for c in body["contents"]
        ]
    return [
        (m["role"], "".join(block.get("text", "") for block in m["content"]))
        for m in body["messages"]
    ]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_cut_answer_is_continued_and_the_editor_sees_one_text(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(cut_answer(fmt, "The answer ", "starts here"))
    fake.enqueue(fmt.answer(" and ends here."))
    fake.enqueue(fmt.answer("Next."))
    session = CursorSession(cursor, "turn-cut")
    log = await session.run(user_turn_message("explain", model))
    assert log.end == {}
    assert texts(log) == "The answer starts here and ends here."
    assert assistant_steps(log) == ["The answer starts here and ends here."]
    # The continuation call holds the cut answer, then our request to go on.
    assert len(fake.requests) == 2
    asked = history(fmt, fake.requests[1].json)
    assert asked[-2:] == [("assistant", "The answer starts here"), ("user", continuation_text())]
    # The stored history says what happened: the next turn's request repeats it.
    later = await CursorSession(cursor, "turn-after").run(
        user_turn_message(
            "and then?", model, message_id="msg-2", conversation_state=log.checkpoints()[-1]
        )
    )
    assert later.end == {}
    again = history(fmt, fake.requests[2].json)
    assert again[: len(asked)] == asked
    assert again[len(asked)] == ("assistant", " and ends here.")


async def test_an_answer_is_continued_at_most_the_limit_then_ends_as_it_is(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    parts = [f"part {n}. " for n in range(MAX_CONTINUATIONS + 1)]
    fake.enqueue(*(cut_answer(fmt, part) for part in parts))
    log = await CursorSession(cursor, "turn-cut-often").run(user_turn_message("go", model))
    assert log.end == {}
    assert len(fake.requests) == MAX_CONTINUATIONS + 1
    assert texts(log) == "".join(parts)
    assert assistant_steps(log) == ["".join(parts)]
    last = history(fmt, fake.requests[-1].json)
    assert [text for role, text in last if role == "user"][-MAX_CONTINUATIONS:] == [
        continuation_text()
    ] * MAX_CONTINUATIONS


def call(call_id: str, name: str, arguments: str) -> FakeToolCall:
    return FakeToolCall(call_id, name, (arguments[:10], arguments[10:]))


@pytest.mark.parametrize("fmt", RAW_ARGUMENT_FORMATS, ids=RAW_ARGUMENT_IDS)
async def test_a_tool_call_cut_by_the_limit_is_an_error_asking_for_a_smaller_call(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    model = fmt.add_model(server_store, fake)
    read = call("c_read", "Read", json.dumps({"path": "/a.txt"}))
    write = call("c_write", "Write", '{"path": "/big.txt", "contents": "line one\\nline tw')
    fake.enqueue(cut_tool_round(fmt, [read, write]))
    fake.enqueue(fmt.answer("I will write it in parts."))
    log = await CursorSession(cursor, "turn-cut-call", workspace=workspace).run(
        user_turn_message("write a big file", model)
    )
    assert log.end == {}
    results = fmt.tool_results(fake.requests[1].json)
    assert "alpha" in results["c_read"]
    assert results["c_write"].startswith(
        "invalid arguments for Write: your output reached its token limit"
    )
    assert "smaller edit" in results["c_write"]
    assert not (workspace / "big.txt").exists()
    # The editor saw the cut call's card close as that error, never an exec for it.
    completed = {u.call_id: u for u in updates(log, "tool_call_completed")}
    assert set(completed) == {"c_read", "c_write"}
