"""Automatic compaction end to end: a conversation past the threshold of its model's context
window, or one the provider refuses for its length, is summarised by a summary call (the
compaction prompt, no tools, ending on our request), the summary is stored as a new message,
and the call is made again on summary + tail; a tool round and another turn follow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prompt.compaction import compaction_assets
from store import Store
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from store.conversations import ConversationStore
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import (
    FakeProvider,
    Script,
    chat_events,
    chat_usage,
)
from tests.support.formats import FAKE_FORMAT_KEY, FORMAT_IDS, FORMATS, ProviderFormat
from tests.support.summaries import read, stored_summary, summary_fields, workspace

FILES = {"a.txt": "alpha\n", "b.txt": "beta\n"}
SUMMARY = "The user asked to read a.txt; it holds alpha."
STORED_SUMMARY = stored_summary(SUMMARY)


def add_model(store: Store, fake: FakeProvider, fmt: ProviderFormat, window: int | None) -> str:
    provider = create_provider(
        store.database,
        ProviderInput(
            name=f"fake-{fmt.type}", type=fmt.type, base_url=fake.base_url, api_key=FAKE_FORMAT_KEY
        ),
    )
    model = ModelInput(
        model_id="fake-model",
        display_name="Fake",
        context_window_tokens=window,
        max_output_tokens=1000,
    )
    return save_models(store.database, provider.id, [model])[0].public_id


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def chat_shape(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, what) of each message after the system prompt: the text, a call's id, or the
    id a tool result answers."""
    shape = []
    for message in body["messages"][1:]:
        if message.get("tool_calls"):
            shape.append(("assistant", ",".join(c["id"] for c in message["tool_calls"])))
        elif message["role"] == "tool":
            shape.append(("tool", message["tool_call_id"]))
        else:
            shape.append((message["role"], text_of(message["content"])))
    return shape


async def test_past_the_threshold_the_turn_compacts_then_goes_on(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    fmt = FORMATS[0]
    model = add_model(server_store, fake, fmt, window=100_000)
    # The first call reports 85 000 input tokens: past 80 % of the window.
    fake.enqueue(
        Script.sse(chat_events(tools=[read("c1", "/a.txt")], usage=chat_usage(85_000, 20)))
    )
    fake.enqueue(Script.sse(chat_events(text=[SUMMARY], usage=chat_usage(85_500, 30))))
    fake.enqueue(Script.sse(chat_events(tools=[read("c2", "/b.txt")], usage=chat_usage(900, 20))))
    fake.enqueue(Script.sse(chat_events(text=["Both read."], usage=chat_usage(1000, 5))))
    fake.enqueue(Script.sse(chat_events(text=["Yes."], usage=chat_usage(1100, 5))))
    session = CursorSession(cursor, "turn-big", workspace=workspace(tmp_path, FILES))
    log = await session.run(user_turn_message("read a.txt and b.txt", model))
    assert log.end == {}
    assert len(fake.requests) == 4

    # The summary call: the compaction prompt, no tools, the history it condenses (the user's
    # turn; the round is the tail), then our request: it ends on a user message.
    assets = compaction_assets()
    asked = fake.requests[1].json
    assert asked["messages"][0] == {"role": "system", "content": assets.prompt}
    assert "tools" not in asked
    shape = chat_shape(asked)
    assert [role for role, _ in shape] == ["user", "user"]
    assert "read a.txt and b.txt" in shape[0][1]
    assert shape[1] == ("user", assets.request)

    # The call made again: summary + tail (the whole first round), the Agent prompt and tools.
    again = fake.requests[2].json
    assert again["messages"][0] == fake.requests[0].json["messages"][0]
    assert again["tools"] == fake.requests[0].json["tools"]
    assert chat_shape(again) == [("user", STORED_SUMMARY), ("assistant", "c1"), ("tool", "c1")]
    # The tool round after it, then the answer on the same view.
    assert chat_shape(fake.requests[3].json) == [
        ("user", STORED_SUMMARY),
        ("assistant", "c1"),
        ("tool", "c1"),
        ("assistant", "c2"),
        ("tool", "c2"),
    ]
    assert "beta" in fmt.tool_results(fake.requests[3].json)["c2"]

    # The editor saw the compaction, and the checkpoint keeps it.
    kinds = log.kinds()
    assert (
        kinds.index("summary_started") < kinds.index("summary") < kinds.index("summary_completed")
    )
    summary, archives, count = summary_fields(log)
    assert (summary, count) == (SUMMARY, 1)
    [archive] = archives
    state = log.checkpoints()[-1]
    roots = list(state.root_prompt_messages_json)
    # roots: system, user turn, round (assistant, result), summary, round 2, answer.
    assert json.loads(log.blobs[roots[4]])["role"] == "user"
    assert list(archive.summarized_messages) == roots[1:2]
    assert (archive.summary, archive.window_tail, archive.summary_message) == (SUMMARY, 2, roots[4])

    # Append-only: the summary is a message after the round, nothing was deleted.
    store = ConversationStore(server_store.database)
    messages = store.messages_at(store.ensure_conversation("conv-1"))
    assert [m.origin for m in messages] == [
        "runtime", "assistant", "tool", "runtime", "assistant", "tool", "assistant"
    ]  # fmt: skip

    # The next turn starts from the summary too (a new run: estimated, not compacted again).
    later = await CursorSession(cursor, "turn-next").run(
        user_turn_message("and now?", model, message_id="msg-2", conversation_state=state)
    )
    assert later.end == {}
    assert len(fake.requests) == 5
    shape = chat_shape(fake.requests[4].json)
    assert shape[:6] == [
        ("user", STORED_SUMMARY),
        ("assistant", "c1"),
        ("tool", "c1"),
        ("assistant", "c2"),
        ("tool", "c2"),
        ("assistant", "Both read."),
    ]
    assert shape[6][0] == "user" and "and now?" in shape[6][1] and len(shape) == 7
    assert "summary_started" not in later.kinds()
    summary, archives, count = summary_fields(later)
    assert (summary, len(archives), count) == (SUMMARY, 1, 1)


def too_long(fmt: ProviderFormat) -> Script:
    """Each format's refusal of a request longer than the context window."""
    if fmt.type == "anthropic":
        body = {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 210000 tokens > 200000 maximum",
            },
        }
    else:
        body = {
            "error": {
                "message": "This model's maximum context length is 128000 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        }
    return Script.error(400, body)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_refusal_for_length_compacts_and_asks_again(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    tmp_path: Path,
) -> None:
    model = add_model(server_store, fake, fmt, window=128_000)
    fake.enqueue(fmt.tool_round([read("c1", "/a.txt")]))
    fake.enqueue(too_long(fmt))
    fake.enqueue(fmt.answer(SUMMARY))
    fake.enqueue(fmt.tool_round([read("c2", "/b.txt")]))
    fake.enqueue(fmt.answer("Both read."))
    fake.enqueue(fmt.answer("Yes."))
    session = CursorSession(cursor, "turn-refused", workspace=workspace(tmp_path, FILES))
    log = await session.run(user_turn_message("read a.txt and b.txt", model))
    assert log.end == {}
    assert len(fake.requests) == 5
    refused, asked, again = (fake.requests[i].json for i in (1, 2, 3))
    assert fmt.tool_names(asked) == []
    assert fmt.tool_names(again) == fmt.tool_names(refused)
    # The call made again holds the summary first, then the round kept verbatim.
    assert SUMMARY in json.dumps(again)
    assert "read a.txt and b.txt" in json.dumps(refused)
    assert "read a.txt and b.txt" not in json.dumps(again)
    assert "alpha" in fmt.tool_results(again)["c1"]
    assert set(fmt.tool_results(fake.requests[4].json)) == {"c1", "c2"}
    summary, archives, count = summary_fields(log)
    assert (summary, len(archives), count) == (SUMMARY, 1, 1)

    later = await CursorSession(cursor, "turn-refused-next").run(
        user_turn_message(
            "and now?", model, message_id="msg-2", conversation_state=log.checkpoints()[-1]
        )
    )
    assert later.end == {}
    last = json.dumps(fake.requests[5].json)
    assert SUMMARY in last and "and now?" in last and "read a.txt and b.txt" not in last


async def test_refused_again_right_after_a_compaction_the_run_fails(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = add_model(server_store, fake, fmt, window=128_000)
    fake.enqueue(fmt.answer("First."))
    first = await CursorSession(cursor, "turn-one").run(user_turn_message("hi", model))
    fake.enqueue(too_long(fmt), fmt.answer(SUMMARY), too_long(fmt))
    log = await CursorSession(cursor, "turn-two").run(
        user_turn_message(
            "more", model, message_id="msg-2", conversation_state=first.checkpoints()[-1]
        )
    )
    assert len(fake.requests) == 4
    assert log.end is not None
    error = log.end["error"]
    assert error["code"] == "resource_exhausted"
    assert error["message"].startswith(
        "the conversation does not fit the model's context window even after compaction"
    )
    assert "maximum context length" in error["message"]


async def test_a_model_without_a_context_window_is_not_compacted_before_a_call(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    fmt = FORMATS[0]
    model = add_model(server_store, fake, fmt, window=None)
    fake.enqueue(
        Script.sse(chat_events(tools=[read("c1", "/a.txt")], usage=chat_usage(10_000_000, 20)))
    )
    fake.enqueue(fmt.answer("Done."))
    session = CursorSession(cursor, "turn-nowindow", workspace=workspace(tmp_path, FILES))
    log = await session.run(user_turn_message("read a.txt", model))
    assert log.end == {}
    assert len(fake.requests) == 2
    assert "summary_started" not in log.kinds()
