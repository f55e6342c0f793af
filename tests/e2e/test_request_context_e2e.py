"""The request context given by blob id, and the blobs a request carries along, end to end.

``ConversationAction.request_context_parts`` names the rules, skills, subagents and MCP parts
of the RequestContext by blob id and byte length, over its ``dynamic_context``: the server
fetches each (local CAS, else KV GET), checks it and renders the merged context.
``AgentRunRequest.pre_fetched_blobs`` carries blobs inline: each is checked against its id,
stored, and used instead of a KV GET.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from store import Store, connect_store
from tests.conftest import StartServer, add_fake_model
from tests.e2e.test_shell_command_e2e import shell_command_message
from tests.support.fake_cursor import CursorSession, FakeCursor, TurnLog, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events
from tests.support.plans import action_message
from wire.proto import agent_v1_pb2 as agent


def kv_gets(log: TurnLog) -> list[bytes]:
    return [
        m.kv_server_message.get_blob_args.blob_id
        for m in log.messages
        if m.kv_server_message.HasField("get_blob_args")
    ]


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def b64(blob_id: bytes) -> str:
    return base64.b64encode(blob_id).decode()


def runtime_text(fake: FakeProvider) -> str:
    """The text of the first model request's (only) user message."""
    (user,) = [m for m in fake.requests[0].json["messages"] if m["role"] == "user"]
    content = user["content"]
    return content if isinstance(content, str) else content[0]["text"]


RULES = agent.RequestContextRulesPart(
    rules=[agent.CursorRule(full_path="/p/.cursor/rules/a.mdc", content="Rule from a blob.")]
).SerializeToString()
SUBAGENTS = agent.RequestContextSubagentsPart(
    custom_subagents=[agent.CustomSubagent(name="reviewer", description="Reviews diffs.")]
).SerializeToString()
MCPS = agent.RequestContextMcpsPart(
    mcp_meta_tool_options=agent.McpMetaToolOptions(
        enabled=True,
        mcp_descriptors=[
            agent.McpDescriptor(
                server_name="GitHub",
                server_identifier="user-github",
                tools=[agent.McpToolDescriptor(tool_name="search")],
            )
        ],
    )
).SerializeToString()


def with_parts(message: agent.AgentClientMessage, **parts: bytes) -> agent.AgentClientMessage:
    """The request with ``parts`` (name -> blob bytes) referenced by id and length, over a
    dynamic context holding the environment and a rule the rules part replaces."""
    refs = message.run_request.action.request_context_parts
    refs.dynamic_context.CopyFrom(
        agent.RequestContext(
            env=agent.RequestContextEnv(os_version="linux 6.8", shell="bash"),
            rules=[agent.CursorRule(content="Dynamic rule, replaced.")],
        )
    )
    for name, data in parts.items():
        setattr(refs, f"{name}_blob_id", sha(data))
        setattr(refs, f"{name}_byte_length", len(data))
    return message


async def test_context_parts_by_blob_id_are_fetched_and_rendered(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    message = with_parts(
        user_turn_message("hi", public_id), rules=RULES, subagents=SUBAGENTS, mcps=MCPS
    )
    blobs = {sha(data): data for data in (RULES, SUBAGENTS, MCPS)}
    fake.enqueue(Script.sse(chat_events(text=["ok"])))
    log = await CursorSession(cursor, "ctx-parts", blobs=blobs).run(message)
    assert log.end == {}
    assert kv_gets(log) == [sha(RULES), sha(SUBAGENTS), sha(MCPS)]
    text = runtime_text(fake)
    assert "Operating system: linux 6.8" in text  # the dynamic context
    assert "<user_rule>Rule from a blob.</user_rule>" in text
    assert "Dynamic rule, replaced." not in text
    assert '<subagent name="reviewer">Reviews diffs.</subagent>' in text
    assert '<mcp_meta_tool_server name="user-github" tools="search" />' in text
    order = [text.index(tag) for tag in ("<user_info>", "<rules>", "<subagents>", "<mcp_meta")]
    assert order == sorted(order)


async def test_a_plan_action_renders_its_context_parts_too(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    execute = agent.ExecutePlanAction(plan=agent.ConversationPlan(plan="Rename foo to bar."))
    message = action_message(public_id, None, execute_plan_action=execute)
    with_parts(message, subagents=SUBAGENTS)
    fake.enqueue(Script.sse(chat_events(text=["On it."])))
    session = CursorSession(cursor, "ctx-plan", blobs={sha(SUBAGENTS): SUBAGENTS})
    log = await session.run(message)
    assert log.end == {}
    assert kv_gets(log) == [sha(SUBAGENTS)]
    text = runtime_text(fake)
    assert "Operating system: linux 6.8" in text
    assert '<subagent name="reviewer">Reviews diffs.</subagent>' in text
    assert "Rename foo to bar." in text


async def test_a_context_part_of_another_length_ends_the_run_naming_it(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    message = with_parts(user_turn_message("hi", public_id), subagents=SUBAGENTS)
    message.run_request.action.request_context_parts.subagents_byte_length += 3
    session = CursorSession(cursor, "ctx-length", blobs={sha(SUBAGENTS): SUBAGENTS})
    log = await session.run(message)
    assert log.end is not None
    error = log.end["error"]
    assert error["code"] == "invalid_argument"
    assert f"the subagents part (blob {sha(SUBAGENTS).hex()})" in error["message"]
    assert f"is {len(SUBAGENTS)} bytes, not the {len(SUBAGENTS) + 3}" in error["message"]
    assert fake.requests == []


async def test_a_context_part_that_does_not_decode_ends_the_run_naming_it(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    junk = b"\xff\xff\xff\xff"
    message = with_parts(user_turn_message("hi", public_id), mcps=junk)
    log = await CursorSession(cursor, "ctx-junk", blobs={sha(junk): junk}).run(message)
    assert log.end is not None
    error = log.end["error"]
    assert error["code"] == "invalid_argument"
    assert f"the mcps part (blob {sha(junk).hex()}) does not decode" in error["message"]
    assert fake.requests == []


async def test_a_context_part_whose_bytes_do_not_match_its_id_ends_the_run(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    message = with_parts(user_turn_message("hi", public_id), rules=RULES)
    # The client's store answers the rules id with other bytes of the same length.
    wrong = RULES[:-1] + bytes([RULES[-1] ^ 1])
    log = await CursorSession(cursor, "ctx-hash", blobs={sha(RULES): wrong}).run(message)
    assert log.end is not None
    error = log.end["error"]
    assert error["code"] == "invalid_argument"
    assert f"hash mismatch: expected {b64(sha(RULES))}" in error["message"]
    assert fake.requests == []


async def test_a_length_without_a_blob_id_ends_the_run(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    message = user_turn_message("hi", public_id)
    message.run_request.action.request_context_parts.skills_byte_length = 10
    log = await CursorSession(cursor, "ctx-no-id").run(message)
    assert log.end is not None
    assert log.end["error"]["code"] == "invalid_argument"
    assert "the skills part has 10 bytes but no blob id" in log.end["error"]["message"]
    assert fake.requests == []


# ---- pre-fetched blobs ----


def pre_fetch(message: agent.AgentClientMessage, *blobs: bytes) -> agent.AgentClientMessage:
    for data in blobs:
        message.run_request.pre_fetched_blobs.add(id=sha(data), value=data)
    return message


async def test_a_pre_fetched_image_and_context_part_need_no_kv_get_and_are_stored(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store
) -> None:
    image = b"\x89PNG\r\n\x1a\n pre-fetched"
    message = with_parts(user_turn_message("what is it?", public_id), subagents=SUBAGENTS)
    selected = message.run_request.action.user_message_action.user_message.selected_context
    selected.selected_images.add(mime_type="image/png", blob_id=sha(image))
    pre_fetch(message, image, SUBAGENTS)
    fake.enqueue(Script.sse(chat_events(text=["a picture"])))
    # The client's store holds both too: a KV GET would be answered, so none must be sent.
    blobs = {sha(image): image, sha(SUBAGENTS): SUBAGENTS}
    log = await CursorSession(cursor, "pre-image", blobs=blobs).run(message)
    assert log.end == {}
    assert kv_gets(log) == []
    (user,) = [m for m in fake.requests[0].json["messages"] if m["role"] == "user"]
    text, picture = user["content"]
    assert '<subagent name="reviewer">Reviews diffs.</subagent>' in text["text"]
    assert picture["image_url"]["url"] == (
        f"data:image/png;base64,{base64.b64encode(image).decode()}"
    )
    assert server_store.blobs.get(sha(image)) == image
    assert server_store.blobs.get(sha(SUBAGENTS)) == SUBAGENTS


async def test_pre_fetched_roots_of_a_state_never_seen_need_no_kv_get(
    fake: FakeProvider, public_id: str, make_server: StartServer, tmp_path: Path
) -> None:
    """After losing the database, a state whose blobs all come along is imported without a
    single KV GET (its roots, and the last turn the checkpoint builds on)."""
    first_server = await make_server()
    client = FakeCursor(f"http://{first_server.address}")
    fake.enqueue(Script.sse(chat_events(text=["remembered answer"])))
    first = await CursorSession(client, "run-a").run(user_turn_message("remember", public_id))
    await client.aclose()
    await first_server.stop()
    assert first.end == {}
    state = first.checkpoints()[-1]

    empty = connect_store(f"sqlite:///{tmp_path}/empty.db")
    try:
        add_fake_model(empty, fake)
        second_server = await make_server(store=empty)
        client = FakeCursor(f"http://{second_server.address}")
        fake.enqueue(Script.sse(chat_events(text=["recovered"])))
        message = user_turn_message(
            "and now?", public_id, message_id="m2", conversation_state=state
        )
        pre_fetch(message, *first.blobs.values())
        second = await CursorSession(client, "run-b", blobs=dict(first.blobs)).run(message)
        await client.aclose()
        assert second.end == {}
        assert kv_gets(second) == []
        texts = [str(m.get("content")) for m in fake.requests[-1].json["messages"]]
        assert any("remember" in t for t in texts) and "remembered answer" in texts
        for root in state.root_prompt_messages_json:
            assert empty.blobs.get(root) is not None
    finally:
        empty.close()


async def test_a_pre_fetched_blob_that_does_not_match_its_id_ends_the_run_naming_it(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store
) -> None:
    message = user_turn_message("hi", public_id)
    good = b"a good blob"
    pre_fetch(message, good)
    wrong_id = sha(b"another blob")
    message.run_request.pre_fetched_blobs.add(id=wrong_id, value=b"not that blob")
    log = await CursorSession(cursor, "pre-bad").run(message)
    assert log.end is not None
    error = log.end["error"]
    assert error["code"] == "invalid_argument"
    assert f"pre_fetched_blobs: blob {b64(wrong_id)} does not match" in error["message"]
    assert fake.requests == []
    assert server_store.blobs.get(sha(good)) is None  # nothing of a refused request is kept


async def test_a_command_run_from_the_chat_checks_its_pre_fetched_blobs_too(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store
) -> None:
    message = shell_command_message("echo hi", "user-exec-1", public_id)
    wrong_id = sha(b"another blob")
    message.run_request.pre_fetched_blobs.add(id=wrong_id, value=b"not that blob")
    log = await CursorSession(cursor, "pre-bad-shell").run(message)
    assert log.end is not None
    assert log.end["error"]["code"] == "invalid_argument"
    assert f"blob {b64(wrong_id)} does not match" in log.end["error"]["message"]
    assert not any(m.HasField("exec_server_message") for m in log.messages)
