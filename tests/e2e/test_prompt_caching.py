"""Prompt caching: where Anthropic requests put their breakpoints (a pure function, and the
bodies over HTTP), the per-conversation ``prompt_cache_key`` of both OpenAI formats and its
provider setting, and a conversation's second turn read from a caching fake Anthropic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from actors.conversation.request import (
    AssistantMessage,
    LlmRequest,
    ProjectedMessage,
    ProviderTextPart,
    ProviderToolCall,
    ProviderType,
    ToolResultMessage,
    UserMessage,
    conversation_cache_key,
)
from store import Store
from store.catalog import (
    Invalid,
    ModelInput,
    ProviderConnection,
    ProviderInput,
    create_provider,
    save_models,
    update_provider,
)
from tests.support.caching_anthropic import CachingAnthropic, Reply
from tests.support.fake_cursor import CursorSession, FakeCursor, updates, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMATS, ProviderFormat
from tests.support.request_schemas import anthropic_errors
from tests.wire.test_provider_adapters import READ_FILE, sent
from wire.providers.cache_points import MAX_BREAKPOINTS, CachePoints, cache_points

MARK = {"type": "ephemeral"}


# ---- where the breakpoints go ----


def test_a_first_request_marks_the_system_prompt_and_its_message() -> None:
    assert cache_points(True, True, ["user"]) == CachePoints(system=True, messages=(0,))


def test_a_tool_loop_marks_the_newest_point_and_where_the_previous_request_ended() -> None:
    roles = ["user", "assistant", "user", "assistant", "user"]
    assert cache_points(True, True, roles) == CachePoints(system=True, messages=(2, 4))


def test_without_a_system_prompt_the_last_tool_holds_the_shared_part() -> None:
    assert cache_points(True, False, ["user", "assistant", "user"]) == CachePoints(
        last_tool=True, messages=(0, 2)
    )
    assert cache_points(False, False, ["user"]) == CachePoints(messages=(0,))


def test_never_more_than_four_marks_and_never_on_an_assistant_message() -> None:
    for length in range(1, 12):
        roles = ["user" if n % 2 == 0 else "assistant" for n in range(length)]
        for tools in (False, True):
            for system in (False, True):
                points = cache_points(tools, system, roles)
                assert points.count <= MAX_BREAKPOINTS
                assert all(roles[i] == "user" for i in points.messages)


def tool_loop() -> tuple[ProjectedMessage, ...]:
    call = ProviderToolCall(0, "c1", "read_file", '{"path": "/a"}')
    return (
        UserMessage((ProviderTextPart("read /a"),)),
        AssistantMessage(text="Reading.", calls=(call,)),
        ToolResultMessage("c1", "read_file", "alpha"),
    )


def marked(body: dict[str, Any]) -> list[str]:
    """Where the body's marks are, as ``system``, ``tools[i]`` or ``messages[i][j]``."""
    where = [f"tools[{i}]" for i, t in enumerate(body.get("tools", ())) if "cache_control" in t]
    system = body.get("system")
    where += ["system" for block in system or () if "cache_control" in block]
    for i, message in enumerate(body["messages"]):
        for j, block in enumerate(message["content"]):
            if "cache_control" in block:
                assert block["cache_control"] == MARK
                where.append(f"messages[{i}][{j}]")
    return where


async def test_anthropic_bodies_carry_the_marks_on_the_last_block_of_their_messages(
    fake: FakeProvider,
) -> None:
    request = LlmRequest("You are terse.", (READ_FILE,), tool_loop())
    body = (await sent(fake, ProviderType.ANTHROPIC, request)).json
    assert marked(body) == ["system", "messages[0][0]", "messages[2][0]"]
    assert body["messages"][2]["content"][0]["type"] == "tool_result"
    bare = LlmRequest("", (READ_FILE,), tool_loop()[:1])
    assert marked((await sent(fake, ProviderType.ANTHROPIC, bare)).json) == [
        "tools[0]",
        "messages[0][0]",
    ]


# ---- prompt_cache_key ----


@pytest.mark.parametrize("provider_type", [ProviderType.OPENAI_CHAT, ProviderType.OPENAI_RESPONSES])
async def test_openai_formats_send_the_conversations_key_only_where_the_route_allows(
    fake: FakeProvider, provider_type: ProviderType
) -> None:
    key = conversation_cache_key("conv-1")
    request = LlmRequest("You are terse.", (), tool_loop()[:1], key)
    on = (await sent(fake, provider_type, request, prompt_cache_key=True)).json
    assert on["prompt_cache_key"] == key
    off = (await sent(fake, provider_type, request)).json
    assert "prompt_cache_key" not in off
    anthropic = (await sent(fake, ProviderType.ANTHROPIC, request, prompt_cache_key=True)).json
    assert "prompt_cache_key" not in anthropic


def test_the_key_names_the_conversation_without_showing_its_id() -> None:
    key = conversation_cache_key("conv-1")
    assert key == conversation_cache_key("conv-1") != conversation_cache_key("conv-2")
    assert "conv-1" not in key and len(key) == 32


@pytest.mark.parametrize(
    ("base_url", "setting", "sends"),
    [
        ("https://api.openai.com/v1", "auto", True),
        ("http://127.0.0.1:8000/v1", "auto", False),
        ("http://127.0.0.1:8000/v1", "on", True),
        ("https://api.openai.com/v1", "off", False),
    ],
)
def test_auto_sends_the_key_to_openais_own_api_only(
    base_url: str, setting: str, sends: bool
) -> None:
    connection = ProviderConnection(1, "p", "openai-chat", base_url, "", {}, True, setting)
    assert connection.sends_prompt_cache_key is sends


def test_the_setting_is_auto_by_default_kept_on_update_and_checked(server_store: Store) -> None:
    db = server_store.database
    made = create_provider(db, ProviderInput("p", "openai-chat", "http://127.0.0.1:9/v1"))
    assert made.prompt_cache_key == "auto"
    on = update_provider(
        db, made.id, ProviderInput("p", "openai-chat", made.base_url, prompt_cache_key="on")
    )
    assert on.prompt_cache_key == "on"
    kept = update_provider(db, made.id, ProviderInput("p", "openai-chat", made.base_url))
    assert kept.prompt_cache_key == "on"
    with pytest.raises(Invalid) as refused:
        update_provider(
            db, made.id, ProviderInput("p", "openai-chat", made.base_url, prompt_cache_key="yes")
        )
    assert refused.value.field == "prompt_cache_key"


def add_model(store: Store, base_url: str, provider_type: str, cache_key: str | None) -> str:
    """A provider of ``provider_type`` at ``base_url`` (its ``prompt_cache_key`` setting as
    given, None: the default) with one model; its public id."""
    provider = create_provider(
        store.database,
        ProviderInput(
            "p", provider_type, base_url, api_key="sk-cache-test", prompt_cache_key=cache_key
        ),
    )
    model = ModelInput(model_id="fake-model", display_name="Fake", max_output_tokens=8192)
    return save_models(store.database, provider.id, [model])[0].public_id


@pytest.mark.parametrize("fmt", FORMATS[:2], ids=["openai-chat", "openai-responses"])
async def test_a_compatible_server_gets_the_key_only_once_switched_on(
    fmt: ProviderFormat, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    """A server refusing unknown fields keeps working by default (no key sent); switched on,
    every call of a conversation carries the same key, another conversation another one."""
    async with FakeProvider(refuse_keys={"prompt_cache_key"}) as strict:
        model = add_model(server_store, strict.base_url, fmt.type, None)
        strict.enqueue(fmt.answer("fine"))
        log = await CursorSession(cursor, "turn-strict").run(user_turn_message("hi", model))
        assert log.end == {} and "prompt_cache_key" not in strict.requests[-1].json
    async with FakeProvider() as fake:
        model = add_model(server_store, fake.base_url, fmt.type, "on")
        fake.enqueue(fmt.tool_round([FakeToolCall("c1", "Glob", ('{"glob_pattern": "*"}',))]))
        fake.enqueue(fmt.answer("one"), fmt.answer("two"))
        await CursorSession(cursor, "turn-a", workspace=tmp_path).run(user_turn_message("a", model))
        await CursorSession(cursor, "turn-b").run(
            user_turn_message("b", model, conversation_id="conv-2")
        )
        keys = [request.json["prompt_cache_key"] for request in fake.requests]
        assert keys == [conversation_cache_key("conv-1")] * 2 + [conversation_cache_key("conv-2")]


# ---- a caching Anthropic ----


async def test_turn_two_reads_its_prefix_from_the_cache(
    server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    """Turn 1 (a tool round, then an answer) writes the prefixes it marks; turn 2 reads, from
    the cache, exactly the prefix turn 1's last call wrote, and the turn's usage keeps the
    cached and written tokens apart."""
    async with CachingAnthropic() as fake:
        model = add_model(server_store, fake.base_url, "anthropic", None)
        glob = FakeToolCall("c1", "Glob", ('{"glob_pattern": "*.md"}',))
        fake.enqueue(Reply(text="Looking.", tools=[glob]), Reply(text="Found none."))
        session = CursorSession(cursor, "turn-1", workspace=tmp_path)
        first = await session.run(user_turn_message("find notes", model))
        assert first.end == {}
        fake.enqueue(Reply(text="Still none."))
        second = await CursorSession(cursor, "turn-2").run(
            user_turn_message(
                "and now?", model, message_id="msg-2", conversation_state=first.checkpoints()[-1]
            )
        )
        assert second.end == {}
        one, two, three = fake.usages
        assert one.cache_read_input_tokens == 0 and one.cache_creation_input_tokens > 0
        # The tool round's second call reads what the first wrote.
        assert two.cache_read_input_tokens == one.cache_creation_input_tokens
        written = two.cache_read_input_tokens + two.cache_creation_input_tokens
        assert two.cache_creation_input_tokens > 0  # the round's results, written for turn 2
        assert three.cache_read_input_tokens == written > two.cache_read_input_tokens
        assert three.cache_read_input_tokens / three.total_input >= 0.9
        (ended,) = updates(second, "turn_ended")
        assert ended.cache_read_tokens == three.cache_read_input_tokens
        assert ended.cache_write_tokens == three.cache_creation_input_tokens
        assert ended.input_tokens == three.input_tokens


async def test_the_console_api_takes_the_setting_and_refuses_another_value(
    make_server: Any,
) -> None:
    server = await make_server()
    headers = {"content-type": "application/json"}
    base = {"name": "p", "type": "openai-chat", "base_url": "https://api.openai.com/v1"}
    async with httpx.AsyncClient(base_url=f"http://{server.address}/console/api") as client:
        made = (await client.post("/providers", json=base, headers=headers)).json()
        assert made["prompt_cache_key"] == "auto"
        path = f"/providers/{made['id']}"
        off = await client.put(path, json={**base, "prompt_cache_key": "off"}, headers=headers)
        assert off.json()["prompt_cache_key"] == "off"
        bad = await client.put(path, json={**base, "prompt_cache_key": "maybe"}, headers=headers)
        assert bad.status_code == 422
        assert bad.json()["message"].startswith("prompt_cache_key: must be one of auto, on, off")


def test_the_messages_api_check_refuses_a_fifth_mark_and_a_marked_thinking_block() -> None:
    def text(n: int) -> dict[str, Any]:
        return {"type": "text", "text": f"t{n}", "cache_control": MARK}

    thinking = {"type": "thinking", "thinking": "x", "signature": "s", "cache_control": MARK}
    body = {
        "model": "m",
        "max_tokens": 5,
        "system": [text(0)],
        "messages": [
            {"role": "user", "content": [text(1), text(2)]},
            {"role": "assistant", "content": [thinking, {"type": "text", "text": "a"}]},
            {"role": "user", "content": [text(3)]},
        ],
    }
    problems = anthropic_errors(body)
    assert "cache_control: at most 4 breakpoints, found 5" in problems
    assert "messages[1].content[0]: a thinking block cannot carry cache_control" in problems
