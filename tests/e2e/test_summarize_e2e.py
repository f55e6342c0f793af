"""The user's "summarize" command (``summarize_action``) end to end: the real server, the fake
Cursor client and the fake provider in each format. The summary call is the compaction
assets' (no tools, ending on our request); the summary is stored as a new message and published
in one settled checkpoint; no model call follows; the next user turn is sent on summary +
tail. A provider failure or a cancel leaves the conversation as it was; a conversation with
nothing to summarise ends cleanly without calling the provider."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from actors.conversation.model import SUMMARY_LEAD
from prompt.compaction import compaction_assets
from store import Store
from store.conversations import ConversationStore
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    cancel_message,
    updates,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, Script
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from tests.support.summaries import read, stored_summary, summary_fields, workspace
from wire.proto import agent_v1_pb2 as agent

FILES = {"a.txt": "alpha\n"}
SUMMARY = "The user had a.txt read; it holds alpha."
STORED_SUMMARY = stored_summary(SUMMARY)
CANCELED = {"error": {"code": "canceled", "message": "run was cancelled"}}


def summarize_message(
    model_id: str,
    *,
    conversation_id: str = "conv-1",
    conversation_state: agent.ConversationStateStructure | None = None,
) -> agent.AgentClientMessage:
    """A RunRequest as the editor sends it when the user asks to summarise the chat."""
    request = agent.AgentRunRequest(
        conversation_id=conversation_id,
        conversation_state=conversation_state,
        action=agent.ConversationAction(summarize_action=agent.SummarizeAction()),
        requested_model=agent.RequestedModel(model_id=model_id),
    )
    return agent.AgentClientMessage(run_request=request)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _chat(body: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    entries: list[tuple[str, str]] = []
    for message in body["messages"][1:]:
        if message["role"] == "tool":
            entries.append(("result", message["tool_call_id"]))
            continue
        if message.get("content"):
            entries.append((message["role"], _text(message["content"])))
        entries.extend(("call", call["id"]) for call in message.get("tool_calls") or [])
    return _text(body["messages"][0]["content"]), entries


def _responses(body: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    entries: list[tuple[str, str]] = []
    for item in body["input"]:
        kind = item.get("type", "message")
        if kind == "function_call":
            entries.append(("call", item["call_id"]))
        elif kind == "function_call_output":
            entries.append(("result", item["call_id"]))
        elif kind == "message":
            entries.append((item["role"], _text(item["content"])))
    return body.get("instructions", ""), entries


def _anthropic(body: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    entries: list[tuple[str, str]] = []
    for message in body["messages"]:
        blocks = message["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        for block in blocks:
            if block["type"] == "text":
                entries.append((message["role"], block["text"]))
            elif block["type"] == "tool_use":
                entries.append(("call", block["id"]))
            elif block["type"] == "tool_result":
                entries.append(("result", block["tool_use_id"]))
    return _text(body["system"]), entries


def _gemini(body: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    entries: list[tuple[str, str]] = []
    for content in body["contents"]:
        role = "assistant" if content["role"] == "model" else "user"
        for part in content["parts"]:
            if "functionCall" in part:
                entries.append(("call", part["functionCall"]["id"]))
            elif "functionResponse" in part:
                entries.append(("result", part["functionResponse"]["id"]))
            elif "text" in part and not part.get("thought"):
                entries.append((role, part["text"]))
    system = "".join(p["text"] for p in body.get("systemInstruction", {}).get("parts", []))
    return system, entries


def transcript(fmt: ProviderFormat, body: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """A request in one shape for every format: its system prompt, and its history as
    (user|assistant, text), (call, id) and (result, id) entries in order."""
    match fmt.type:
        case "openai-chat":
            return _chat(body)
        case "openai-responses":
            return _responses(body)
        case "gemini":
            return _gemini(body)
        case _:
            return _anthropic(body)


def stored_origins(store: Store, conversation_id: str = "conv-1") -> list[str]:
    conversations = ConversationStore(store.database)
    head = conversations.head(conversation_id)
    return [] if head is None else [m.origin for m in conversations.messages_at(head)]


async def first_turn(
    fmt: ProviderFormat, fake: FakeProvider, model: str, cursor: FakeCursor, ws: Path
) -> TurnLog:
    """A user turn with one Read round, then an answer."""
    fake.enqueue(fmt.tool_round([read("c1", "/a.txt")]), fmt.answer("It holds alpha."))
    log = await CursorSession(cursor, "turn-1", workspace=ws).run(
        user_turn_message("what is in a.txt?", model)
    )
    assert log.end == {} and len(fake.requests) == 2
    return log


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_summarize_condenses_the_conversation_and_the_next_turn_starts_from_it(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    tmp_path: Path,
) -> None:
    model = fmt.add_model(server_store, fake)
    first = await first_turn(fmt, fake, model, cursor, workspace(tmp_path, FILES))
    fake.enqueue(fmt.answer(SUMMARY))
    log = await CursorSession(cursor, "summarize-1", blobs=first.blobs).run(
        summarize_message(model, conversation_state=first.checkpoints()[-1])
    )
    assert log.end == {}
    assert len(fake.requests) == 3  # the summary call and nothing after it

    # The summary call: the compaction prompt, no tools, the history before the newest answer
    # (the user's turn and its round, the round written out as text: a request without tools
    # holds no tool blocks), then our request: it ends on a user message.
    assets = compaction_assets()
    asked = fake.requests[2].json
    system, entries = transcript(fmt, asked)
    assert system == assets.prompt
    assert fmt.tool_names(asked) == []
    assert [kind for kind, _ in entries] == ["user", "assistant", "user", "user"]
    assert "what is in a.txt?" in entries[0][1]
    (_, called), *rest = entries[1:]
    lead = "[called Read (call c1) with "
    assert called.startswith(lead) and called.endswith("]")
    assert json.loads(called[len(lead) : -1]) == {"path": "/a.txt"}
    assert rest == [("user", "[result of Read (call c1)]\nalpha\n"), ("user", assets.request)]

    # The editor sees the summary, then the end of the turn, then the one checkpoint.
    kinds = log.kinds()
    shown = [k for k in kinds if not k.startswith("kv_")]
    assert shown == [
        "summary_started",
        "summary",
        "summary_completed",
        "turn_ended",
        "conversation_checkpoint_update",
    ]
    assert [u.summary for u in updates(log, "summary")] == [SUMMARY]
    assert not updates(log, "summary_completed")[0].HasField("failed")

    # The checkpoint keeps the summary; its roots keep the whole history, the summary last.
    summary, archives, count = summary_fields(log)
    assert (summary, count) == (SUMMARY, 1)
    [archive] = archives
    roots = list(log.checkpoints()[-1].root_prompt_messages_json)
    before = list(first.checkpoints()[-1].root_prompt_messages_json)
    assert roots[:-1] == before  # nothing replaced, the summary appended
    assert json.loads(log.blobs[roots[-1]])["role"] == "user"
    # roots: system, user turn, round (assistant, result), answer, summary.
    assert list(archive.summarized_messages) == roots[1:-2]
    assert (archive.summary, archive.window_tail, archive.summary_message) == (
        SUMMARY,
        1,
        roots[-1],
    )

    # Append-only: the summary is a new message after the answer.
    assert stored_origins(server_store) == ["runtime", "assistant", "tool", "assistant", "runtime"]

    # The next turn is sent on summary + tail (the newest answer), with the mode's prompt and
    # tools as before.
    fake.enqueue(fmt.answer("Yes."))
    later = await CursorSession(cursor, "turn-2", blobs=log.blobs).run(
        user_turn_message(
            "and now?", model, message_id="msg-2", conversation_state=log.checkpoints()[-1]
        )
    )
    assert later.end == {}
    again = fake.requests[3].json
    system, entries = transcript(fmt, again)
    assert system == transcript(fmt, fake.requests[0].json)[0]
    assert fmt.tool_names(again) == fmt.tool_names(fake.requests[0].json)
    assert entries[:2] == [("user", STORED_SUMMARY), ("assistant", "It holds alpha.")]
    assert entries[2][0] == "user" and "and now?" in entries[2][1] and len(entries) == 3
    assert "what is in a.txt?" not in json.dumps(again)
    assert "summary_started" not in later.kinds()
    summary, archives, count = summary_fields(later)
    assert (summary, len(archives), count) == (SUMMARY, 1, 1)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_provider_failure_during_the_summary_leaves_the_conversation_as_it_was(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    tmp_path: Path,
) -> None:
    model = fmt.add_model(server_store, fake)
    first = await first_turn(fmt, fake, model, cursor, workspace(tmp_path, FILES))
    before = stored_origins(server_store)
    fake.enqueue(Script.error(400, {"error": {"message": "no summaries today"}}))
    log = await CursorSession(cursor, "summarize-fails", blobs=first.blobs).run(
        summarize_message(model, conversation_state=first.checkpoints()[-1])
    )
    assert log.end is not None
    error = log.end["error"]
    assert isinstance(error, dict) and error["code"] == "unavailable"
    assert "no summaries today" in error["message"]
    assert len(fake.requests) == 3
    kinds = log.kinds()
    assert kinds == ["summary_started", "summary_completed"]
    assert updates(log, "summary_completed")[0].failed is True
    assert stored_origins(server_store) == before

    # The next turn is sent on the whole history, as if nothing had been asked.
    fake.enqueue(fmt.answer("Yes."))
    later = await CursorSession(cursor, "turn-2", blobs=first.blobs).run(
        user_turn_message(
            "and now?", model, message_id="msg-2", conversation_state=first.checkpoints()[-1]
        )
    )
    assert later.end == {}
    _, entries = transcript(fmt, fake.requests[3].json)
    assert "what is in a.txt?" in entries[0][1]
    assert SUMMARY_LEAD not in json.dumps(fake.requests[3].json)


async def test_a_cancel_during_the_summary_stores_nothing(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    first = await first_turn(fmt, fake, model, cursor, workspace(tmp_path, FILES))
    before = stored_origins(server_store)
    fake.enqueue(Script.hang_before_headers())
    session = CursorSession(cursor, "summarize-cancel", blobs=first.blobs)
    task = asyncio.create_task(
        session.run(summarize_message(model, conversation_state=first.checkpoints()[-1]))
    )
    for _ in range(200):
        if len(fake.requests) == 3 and "summary_started" in session.log.kinds():
            break
        await asyncio.sleep(0.05)
    assert len(fake.requests) == 3
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end == CANCELED
    assert log.kinds() == ["summary_started", "summary_completed"]
    assert updates(log, "summary_completed")[0].failed is True
    assert stored_origins(server_store) == before
    run = ConversationStore(server_store.database).run("summarize-cancel")
    assert run is not None and run.status == "cancelled"


async def test_nothing_to_summarize_ends_cleanly_without_a_provider_call(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    # A conversation with no message yet.
    empty = await CursorSession(cursor, "summarize-empty").run(
        summarize_message(model, conversation_id="conv-empty")
    )
    assert empty.end == {}
    assert empty.kinds() == ["summary_started", "summary_completed", "turn_ended"]
    assert not updates(empty, "summary_completed")[0].HasField("failed")
    assert fake.requests == []
    assert stored_origins(server_store, "conv-empty") == []

    # Summarised already, nothing added since: the same clean end, nothing stored.
    first = await first_turn(fmt, fake, model, cursor, workspace(tmp_path, FILES))
    fake.enqueue(fmt.answer(SUMMARY))
    summarized = await CursorSession(cursor, "summarize-1", blobs=first.blobs).run(
        summarize_message(model, conversation_state=first.checkpoints()[-1])
    )
    assert summarized.end == {} and len(fake.requests) == 3
    origins = stored_origins(server_store)
    again = await CursorSession(cursor, "summarize-2", blobs=summarized.blobs).run(
        summarize_message(model, conversation_state=summarized.checkpoints()[-1])
    )
    assert again.end == {}
    assert again.kinds() == ["summary_started", "summary_completed", "turn_ended"]
    assert len(fake.requests) == 3
    assert stored_origins(server_store) == origins
