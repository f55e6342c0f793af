"""Modes end to end: fake Cursor client and fake provider (each of the four formats) over real
HTTP. ``UserMessage.mode`` picks the system prompt, the runtime reminders and the tools; a new
run in another mode replaces only the system prompt; a tool outside the mode is the model's
mistake, which it reads as an error result."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from prompt import load_prompt_assets
from store import Store
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from tests.conftest import FAKE_PROVIDER_KEY
from tests.prompt.test_prompt_assets import MODE_TOOLS as MANIFEST_TOOLS
from tests.prompt.test_prompt_assets import manifest_names
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    kv_ack,
    resume_message,
    user_turn_message,
)
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
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import ModeTools
from wire.tools.registry import unavailable_tool_result

# Each mode's exact ordered tools as these servers offer them: they have no web search
# backend and no image model, so the tools needing one are left out
# (``actors/turn/capabilities.py``).
NEEDS_THE_SERVER = {"WebSearch", "GenerateImage"}
MODE_TOOLS = {
    mode: [name for name in manifest_names(mode) if name not in NEEDS_THE_SERVER]
    for mode in MANIFEST_TOOLS
}

FORMATS = ["openai-chat", "openai-responses", "anthropic", "gemini"]
MODES = {
    "agent": agent.AGENT_MODE_AGENT,
    "ask": agent.AGENT_MODE_ASK,
    "plan": agent.AGENT_MODE_PLAN,
    "debug": agent.AGENT_MODE_DEBUG,
    "multitask": agent.AGENT_MODE_MULTITASK,
}


def add_model(store: Store, fake: FakeProvider, provider_type: str) -> str:
    """The fake provider as a provider of ``provider_type`` with one model; its public id."""
    provider = create_provider(
        store.database,
        ProviderInput(
            name=provider_type,
            type=provider_type,
            base_url=fake.base_url,
            api_key=FAKE_PROVIDER_KEY,
        ),
    )
    model = ModelInput(
        model_id="fake-model",
        display_name="Fake",
        context_window_tokens=128000,
        max_output_tokens=4096 if provider_type == "anthropic" else None,
    )
    return save_models(store.database, provider.id, [model])[0].public_id


def answer(provider_type: str, text: str) -> list[SseEvent]:
    """A text answer streamed in ``provider_type``'s format."""
    if provider_type == "openai-chat":
        return chat_events(text=[text])
    if provider_type == "openai-responses":
        return responses_events(text=[text])
    if provider_type == "gemini":
        return gemini_events(text=[text])
    return anthropic_events(text=[text])


def tool_names(provider_type: str, body: dict[str, Any]) -> list[str]:
    if provider_type == "openai-chat":
        return [tool["function"]["name"] for tool in body["tools"]]
    if provider_type == "gemini":
        (tools,) = body["tools"]
        return [declaration["name"] for declaration in tools["functionDeclarations"]]
    return [tool["name"] for tool in body["tools"]]


def system_prompt(provider_type: str, body: dict[str, Any]) -> str:
    if provider_type == "openai-chat":
        assert body["messages"][0]["role"] == "system"
        return str(body["messages"][0]["content"])
    if provider_type == "openai-responses":
        return str(body["instructions"])
    if provider_type == "gemini":
        (part,) = body["systemInstruction"]["parts"]
        return str(part["text"])
    # Anthropic's system prompt is one text block (it carries a cache breakpoint).
    return "".join(block["text"] for block in body["system"])


def history(provider_type: str, body: dict[str, Any]) -> list[str]:
    """Every message after the system prompt, each as the exact JSON the provider received
    (Anthropic's cache breakpoints left out: they move to the newest messages, and the API
    does not count them as content of the cached prefix)."""
    if provider_type == "openai-chat":
        messages = body["messages"][1:]
    elif provider_type == "openai-responses":
        messages = body["input"]
    elif provider_type == "gemini":
        messages = body["contents"]
    else:
        messages = [
            {
                **message,
                "content": [
                    {k: v for k, v in block.items() if k != "cache_control"}
                    for block in message["content"]
                ],
            }
            for message in body["messages"]
        ]
    return [json.dumps(message, ensure_ascii=False) for message in messages]


def turn_mode(log: TurnLog, state: agent.ConversationStateStructure) -> int:
    """The mode recorded in the UserMessage of the state's last turn."""
    wrapper = agent.ConversationTurnStructure.FromString(log.blobs[state.turns[-1]])
    user = log.blobs[wrapper.agent_conversation_turn.user_message]
    return agent.UserMessage.FromString(user).mode


@pytest.mark.parametrize("provider_type", FORMATS)
@pytest.mark.parametrize("mode", list(MODES))
async def test_each_mode_sends_its_prompt_reminder_and_exact_tools_to_each_format(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, mode: str, provider_type: str
) -> None:
    public_id = add_model(server_store, fake, provider_type)
    fake.enqueue(Script.sse(answer(provider_type, "ok")))
    log = await CursorSession(cursor, f"turn-{mode}").run(
        user_turn_message("what now?", public_id, mode=MODES[mode])
    )
    assert log.end == {}
    (request,) = fake.requests
    assert tool_names(provider_type, request.json) == MODE_TOOLS[mode]
    assets = load_prompt_assets().mode(mode)
    assert system_prompt(provider_type, request.json) == assets.system_prompt("fake-model")
    assert f"You are in {assets.label} mode" in request.body.decode()
    final = log.checkpoints()[-1]
    assert final.mode == MODES[mode]
    assert turn_mode(log, final) == MODES[mode]


@pytest.mark.parametrize("provider_type", FORMATS)
async def test_switching_modes_between_runs_replaces_only_the_system_prompt(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, provider_type: str
) -> None:
    """Agent, then Ask, then Plan on one conversation: each request holds every earlier message
    exactly as the previous request sent it, then the new answer and query; only the system
    prompt (and the tools) change, and each checkpoint records its own run's mode."""
    public_id = add_model(server_store, fake, provider_type)
    state: agent.ConversationStateStructure | None = None
    bodies: list[dict[str, Any]] = []
    for number, (mode, query) in enumerate(
        [("agent", "first"), ("ask", "second"), ("plan", "third")]
    ):
        fake.enqueue(Script.sse(answer(provider_type, f"answer {number}")))
        log = await CursorSession(cursor, f"turn-{mode}").run(
            user_turn_message(
                query,
                public_id,
                message_id=f"msg-{number}",
                mode=MODES[mode],
                conversation_state=state,
            )
        )
        assert log.end == {}, mode
        state = log.checkpoints()[-1]
        assert state.mode == MODES[mode] and turn_mode(log, state) == MODES[mode]
        body = fake.requests[-1].json
        bodies.append(body)
        assert system_prompt(provider_type, body) == (
            load_prompt_assets().mode(mode).system_prompt("fake-model")
        )
        assert tool_names(provider_type, body) == MODE_TOOLS[mode]
    for before, after in itertools.pairwise(bodies):
        earlier, later = history(provider_type, before), history(provider_type, after)
        assert later[: len(earlier)] == earlier
        assert len(later) == len(earlier) + 2  # the previous answer, then the new query
    assert len({system_prompt(provider_type, body) for body in bodies}) == 3


async def test_a_tool_outside_ask_mode_is_an_error_the_model_reads_and_the_turn_goes_on(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    """Write in Ask mode: no card, no exec; the next request holds the error result naming the
    mode and its tools, and the turn completes with the model's answer."""
    public_id = add_model(server_store, fake, "openai-chat")
    write = FakeToolCall("call_w", "Write", ('{"path": "/w/a.txt", ', '"contents": "hi\\n"}'))
    fake.enqueue(Script.sse(chat_events(tools=[write])))
    fake.enqueue(Script.sse(chat_events(text=["I can only read here; switch to Agent mode."])))
    log = await CursorSession(cursor, "turn-ask-write").run(
        user_turn_message("write a.txt", public_id, mode=agent.AGENT_MODE_ASK)
    )
    assert log.end == {}
    kinds = log.kinds()
    assert not [m for m in log.messages if m.HasField("exec_server_message")]
    for card in ("partial_tool_call", "tool_call_delta", "tool_call_started"):
        assert card not in kinds, card
    assert "turn_ended" in kinds
    assert len(fake.requests) == 2
    (result,) = [m for m in fake.requests[1].json["messages"] if m["role"] == "tool"]
    ask = ModeTools("Ask", tuple(MODE_TOOLS["ask"]))
    assert result == {
        "role": "tool",
        "tool_call_id": "call_w",
        "content": unavailable_tool_result("Write", ask),
    }
    assert result["content"].startswith("Error: Write is not available in Ask mode.")
    # The staged checkpoint tells the editor which tools the mode allows.
    staged = next(c for c in log.checkpoints() if c.pending_tool_calls)
    pending = json.loads(staged.pending_tool_calls[0])
    contracts = pending["providerOptions"]["cursor"]["pendingToolExecutionContracts"]
    assert contracts["call_w"]["allowedToolNames"] == MODE_TOOLS["ask"]


async def test_a_resume_continues_in_the_mode_of_the_turn_it_resumes(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    """An Ask-mode turn drops mid-round; the resume (which carries no UserMessage) runs the
    pending Read, then calls the model with Ask's prompt and tools, and its checkpoints say
    Ask."""
    (tmp_path / "a.txt").write_text("alpha\n")
    public_id = add_model(server_store, fake, "openai-chat")
    read = FakeToolCall("call_r", "Read", ('{"path": "/a.txt"}',))
    fake.enqueue(Script.sse(chat_events(tools=[read])))
    dropped = CursorSession(cursor, "run-ask", workspace=tmp_path)
    stream = await cursor.open_run_sse("run-ask")
    await dropped.send(user_turn_message("read a", public_id, mode=agent.AGENT_MODE_ASK))
    state: agent.ConversationStateStructure | None = None
    while state is None or not state.pending_tool_calls:
        envelope = await stream.next_envelope(5.0)
        assert envelope is not None and not envelope.is_end_stream
        message = agent.AgentServerMessage.FromString(envelope.payload)
        kv = message.kv_server_message
        if kv.HasField("set_blob_args"):
            dropped.log.blobs[kv.set_blob_args.blob_id] = kv.set_blob_args.blob_data
            await dropped.send(kv_ack(kv.id))
        if message.HasField("conversation_checkpoint_update"):
            state = message.conversation_checkpoint_update
    await stream.aclose()
    assert state.mode == agent.AGENT_MODE_ASK

    fake.enqueue(Script.sse(chat_events(text=["alpha, it says"])))
    resumed = CursorSession(cursor, "run-resume", workspace=tmp_path, blobs=dict(dropped.log.blobs))
    log = await resumed.run(
        resume_message(public_id, conversation_id="conv-1", conversation_state=state)
    )
    assert log.end == {}, log.end
    assert [
        m.exec_server_message.read_args.path
        for m in log.messages
        if m.HasField("exec_server_message")
    ] == ["/a.txt"]
    body = fake.requests[-1].json
    assert tool_names("openai-chat", body) == MODE_TOOLS["ask"]
    assert system_prompt("openai-chat", body) == load_prompt_assets().mode("ask").system_prompt(
        "fake-model"
    )
    assert {checkpoint.mode for checkpoint in log.checkpoints()} == {agent.AGENT_MODE_ASK}
