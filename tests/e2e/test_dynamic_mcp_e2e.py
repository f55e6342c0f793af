"""Dynamic MCP tools end to end in each provider format: the request's MCP tools
(``AgentRunRequest.mcp_tools`` and ``RequestContext.tools``) are offered to the model as tools
of their own after the mode's, sorted by name, under names every provider takes; a call goes to
the fake Cursor client's MCP server as ``mcp_args`` with the model's whole arguments, and the
model reads the result in its next request."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import pytest
from google.protobuf import json_format

from store import Store
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    FakeMcpServer,
    TurnLog,
    kv_ack,
    resume_message,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from wire.proto import agent_v1_pb2 as agent
from wire.tools.mcp_names import offered_names
from wire.tools.registry import REGISTRY

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "number"}}}
LONG_TOOL = "read_" + "x" * 95  # 100 characters


def call(call_id: str, name: str, **args: Any) -> FakeToolCall:
    text = json.dumps(args)
    return FakeToolCall(call_id, name, (text[:5], text[5:]))


def definition(server: str, tool: str, description: str = "") -> agent.McpToolDefinition:
    return agent.McpToolDefinition(
        name=f"mcp-{server}-{tool}",
        provider_identifier=server,
        tool_name=tool,
        description=description or f"{tool} of {server}",
        input_schema_json=json.dumps(SCHEMA),
    )


def text_result(text: str) -> agent.McpResult:
    item = agent.McpToolResultContentItem(text=agent.McpTextContent(text=text))
    return agent.McpResult(success=agent.McpSuccess(content=[item]))


def docs_server() -> FakeMcpServer:
    image = agent.McpToolResultContentItem(
        image=agent.McpImageContent(data=PNG, mime_type="image/png")
    )
    return FakeMcpServer(
        "docs",
        tools={"search": "", "screenshot": ""},
        results={
            "search": lambda args: text_result(f"{args['limit']:g} pages about {args['q']}"),
            "screenshot": agent.McpResult(success=agent.McpSuccess(content=[image])),
        },
    )


def request_with(
    model: str,
    mcp_tools: list[agent.McpToolDefinition],
    context_tools: Sequence[agent.McpToolDefinition] = (),
    **kwargs: Any,
) -> agent.AgentClientMessage:
    context = agent.RequestContext(tools=list(context_tools))
    request = user_turn_message("use the docs", model, request_context=context, **kwargs)
    request.run_request.mcp_tools.mcp_tools.extend(mcp_tools)
    return request


def mcp_execs(log: TurnLog) -> dict[str, agent.ExecServerMessage]:
    return {
        m.exec_server_message.exec_id: m.exec_server_message
        for m in log.messages
        if m.exec_server_message.HasField("mcp_args")
    }


def cards(log: TurnLog, kind: str) -> dict[str, agent.ToolCall]:
    out: dict[str, agent.ToolCall] = {}
    for m in log.messages:
        if m.interaction_update.HasField(kind):
            update = getattr(m.interaction_update, kind)
            out.setdefault(update.call_id, update.tool_call)
    return out


def contracts(log: TurnLog) -> dict[str, Any]:
    staged = next(c for c in log.checkpoints() if c.pending_tool_calls)
    pending = json.loads(staged.pending_tool_calls[0])
    result: dict[str, Any] = pending["providerOptions"]["cursor"]["pendingToolExecutionContracts"]
    return result


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_dynamic_tool_is_called_with_its_arguments_and_text_and_images_reach_the_model(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    search, shot = "mcp_docs_search", "mcp_docs_screenshot"
    arguments = {"q": "install", "limit": 3, "filters": {"lang": ["en", "de"]}}
    fake.enqueue(fmt.tool_round([call("c_s", search, **arguments), call("c_i", shot)]))
    fake.enqueue(fmt.answer("Done."))
    request = request_with(
        model, [definition("docs", "search")], [definition("docs", "screenshot")]
    )
    log = await CursorSession(cursor, "turn-dyn", mcp_servers=[docs_server()]).run(request)
    assert log.end == {}
    # Offered after the mode's tools, sorted by name, the same in every request of the turn.
    first = fmt.tool_names(fake.requests[0].json)
    assert first[-2:] == [shot, search]
    assert first[:-2][-1] == "CallMcpTool"  # Agent's manifest ends with it
    assert fmt.tool_names(fake.requests[1].json) == first
    # One mcp_args exec per call: the definition's names and the whole argument object.
    sent = mcp_execs(log)
    args = sent["c_s"].mcp_args
    assert (args.name, args.tool_name, args.provider_identifier, args.server_identifier) == (
        "mcp-docs-search",
        "search",
        "docs",
        "docs",
    )
    assert json.loads(_args_json(args)) == arguments
    assert not sent["c_s"].HasField("accept_hook_additional_contexts")
    results = fmt.tool_results(fake.requests[1].json)
    assert results["c_s"] == "3 pages about install"
    assert "attached" in results["c_i"]
    assert base64.b64encode(PNG).decode() in json.dumps(fake.requests[1].json)
    # The editor's cards are MCP cards, from the streaming placeholder to the result.
    partial = cards(log, "partial_tool_call")["c_s"]
    assert partial.mcp_tool_call.args.tool_name == "search"
    assert cards(log, "tool_call_started")["c_s"].mcp_tool_call.args.args["q"].string_value == (
        "install"
    )
    done = cards(log, "tool_call_completed")["c_s"].mcp_tool_call
    assert done.result.success.content[0].text.text == "3 pages about install"
    # The staged checkpoint says the calls are dynamic, under Cursor's name of the tool.
    contract = contracts(log)["c_s"]
    assert contract["isDynamic"] is True
    assert contract["toolIdentifier"] == "mcp-docs-search"
    assert contract["outerToolName"] == search
    assert contract["allowedToolNames"] == first


def _args_json(args: agent.McpArgs) -> str:
    return json.dumps({key: json_format.MessageToDict(value) for key, value in args.args.items()})


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_names_with_dots_slashes_spaces_and_100_characters_are_offered_and_mapped_back(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    server = "my docs.v2"
    tools = ("find/page", "get page", LONG_TOOL)
    keys = [(server, tool) for tool in tools]
    names = offered_names(keys, REGISTRY)
    fake.enqueue(
        fmt.tool_round(
            [call(f"c_{i}", names[key], q=key[1]) for i, key in enumerate(keys)]
        )
    )  # fmt: skip
    fake.enqueue(fmt.answer("Done."))
    docs = FakeMcpServer(
        server,
        tools=dict.fromkeys(tools, ""),
        results={tool: (lambda args: text_result(f"ran {args['q']}")) for tool in tools},
    )
    request = request_with(model, [definition(server, tool) for tool in tools])
    log = await CursorSession(cursor, "turn-dyn-names", mcp_servers=[docs]).run(request)
    assert log.end == {}
    offered_now = fmt.tool_names(fake.requests[0].json)[-3:]
    assert offered_now == sorted(names.values())
    assert all(len(name) <= 64 for name in offered_now)
    sent = mcp_execs(log)
    for i, tool in enumerate(tools):
        assert sent[f"c_{i}"].mcp_args.tool_name == tool
        assert sent[f"c_{i}"].mcp_args.server_identifier == server
        assert sent[f"c_{i}"].mcp_args.name == f"mcp-{server}-{tool}"
    results = fmt.tool_results(fake.requests[1].json)
    assert [results[f"c_{i}"] for i in range(3)] == [f"ran {tool}" for tool in tools]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_clash_between_servers_and_with_a_built_in_name_is_resolved(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    """``docs.v1`` and ``docs/v1`` both clean to ``mcp_docs_v1_search``; a tool named Read is
    offered beside the built-in Read, which stays the editor's Read."""
    model = fmt.add_model(server_store, fake)
    keys = [("docs.v1", "search"), ("docs/v1", "search"), ("x", "Read")]
    names = offered_names(keys, REGISTRY)
    assert len(set(names.values())) == 3
    assert names[("x", "Read")] == "mcp_x_Read"
    fake.enqueue(
        fmt.tool_round([call(f"c_{i}", names[key], q=str(i)) for i, key in enumerate(keys)])
    )
    fake.enqueue(fmt.answer("Done."))
    servers = [
        FakeMcpServer(server, tools={tool: ""}, results={tool: text_result(f"from {server}")})
        for server, tool in keys
    ]
    request = request_with(model, [definition(server, tool) for server, tool in keys])
    log = await CursorSession(cursor, "turn-dyn-clash", mcp_servers=servers).run(request)
    assert log.end == {}
    offered_now = fmt.tool_names(fake.requests[0].json)
    assert offered_now.count("Read") == 1 and offered_now[-3:] == sorted(names.values())
    results = fmt.tool_results(fake.requests[1].json)
    assert [results[f"c_{i}"] for i in range(3)] == [f"from {server}" for server, _ in keys]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_server_in_error_and_a_tool_not_offered_are_error_results_and_the_turn_goes_on(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(
        fmt.tool_round(
            [call("c_broken", "mcp_broken_x", q="a"), call("c_gone", "mcp_gone_tool", q="b")]
        )
    )
    fake.enqueue(fmt.answer("I could not."))
    broken = FakeMcpServer("broken", tools={"x": ""}, error="needs authentication")
    request = request_with(model, [definition("broken", "x")])
    log = await CursorSession(cursor, "turn-dyn-err", mcp_servers=[broken]).run(request)
    assert log.end == {}
    results = fmt.tool_results(fake.requests[1].json)
    assert results["c_broken"] == "needs authentication"
    assert "no tool named 'mcp_gone_tool'" in results["c_gone"]
    assert list(mcp_execs(log)) == ["c_broken"]  # nothing was sent for the tool not offered
    done = cards(log, "tool_call_completed")
    assert done["c_broken"].mcp_tool_call.result.error.error == "needs authentication"
    assert "c_gone" not in done  # no card for a tool the run does not have


async def test_ask_mode_offers_no_dynamic_tools_and_plan_mode_does(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.answer("Asked."))
    fake.enqueue(fmt.answer("Planned."))
    for i, mode in enumerate((agent.AGENT_MODE_ASK, agent.AGENT_MODE_PLAN)):
        request = request_with(model, [definition("docs", "search")], mode=mode)
        log = await CursorSession(cursor, f"turn-dyn-mode-{i}").run(request)
        assert log.end == {}
    assert "mcp_docs_search" not in fmt.tool_names(fake.requests[0].json)
    assert fmt.tool_names(fake.requests[1].json)[-1] == "mcp_docs_search"


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_definition_whose_schema_is_not_an_object_is_not_offered(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.answer("Fine."))
    bad = definition("docs", "broken")
    bad.input_schema_json = '{"type": "string"}'
    bare = agent.McpToolDefinition(
        name="mcp-docs-bare", provider_identifier="docs", tool_name="bare"
    )
    log = await CursorSession(cursor, "turn-dyn-schema").run(
        request_with(model, [bad, bare, definition("docs", "search")])
    )
    assert log.end == {}
    assert fmt.tool_names(fake.requests[0].json)[-2:] == ["mcp_docs_bare", "mcp_docs_search"]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_the_next_turn_offers_the_same_tools_and_a_tool_no_longer_sent_is_an_error(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    """Turn 2 sends the same set in another order and from the other field: its tools are the
    same list. Turn 3 no longer sends ``search``: the model's call of it is an error result."""
    model = fmt.add_model(server_store, fake)
    search, shot = definition("docs", "search"), definition("docs", "screenshot")
    fake.enqueue(fmt.answer("One."))
    fake.enqueue(fmt.answer("Two."))
    fake.enqueue(fmt.tool_round([call("c_old", "mcp_docs_search", q="again", limit=1)]))
    fake.enqueue(fmt.answer("Three."))
    first = await CursorSession(cursor, "turn-dyn-1", mcp_servers=[docs_server()]).run(
        request_with(model, [search, shot])
    )
    state = first.checkpoints()[-1]
    second = await CursorSession(
        cursor, "turn-dyn-2", mcp_servers=[docs_server()], blobs=dict(first.blobs)
    ).run(
        request_with(
            model, [shot], [search], message_id="msg-2", conversation_state=state
        )
    )  # fmt: skip
    assert second.end == {}
    assert fmt.tool_names(fake.requests[1].json) == fmt.tool_names(fake.requests[0].json)
    third = await CursorSession(
        cursor, "turn-dyn-3", mcp_servers=[docs_server()], blobs=dict(second.blobs)
    ).run(
        request_with(
            model, [shot], message_id="msg-3", conversation_state=second.checkpoints()[-1]
        )
    )  # fmt: skip
    assert third.end == {}
    assert "mcp_docs_search" not in fmt.tool_names(fake.requests[2].json)
    result = fmt.tool_results(fake.requests[3].json)["c_old"]
    assert "no tool named 'mcp_docs_search'" in result
    assert mcp_execs(third) == {}


async def test_a_resume_runs_the_pending_dynamic_call_with_the_resumed_requests_tools(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([call("c_s", "mcp_docs_search", q="resume", limit=2)]))
    dropped = CursorSession(cursor, "run-dyn-drop")  # no MCP servers: the exec is never answered
    stream = await cursor.open_run_sse("run-dyn-drop")
    await dropped.send(request_with(model, [definition("docs", "search")]))
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
    fake.enqueue(fmt.answer("Resumed."))
    resume = resume_message(model, conversation_id="conv-1", conversation_state=state)
    resume.run_request.mcp_tools.mcp_tools.append(definition("docs", "search"))
    log = await CursorSession(
        cursor, "run-dyn-resume", mcp_servers=[docs_server()], blobs=dict(dropped.log.blobs)
    ).run(resume)
    assert log.end == {}, log.end
    assert mcp_execs(log)["c_s"].mcp_args.tool_name == "search"
    assert fmt.tool_results(fake.requests[-1].json)["c_s"] == "2 pages about resume"
