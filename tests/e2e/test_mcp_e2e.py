"""MCP tools end to end in each provider format: the fake Cursor client hosts fake MCP servers
(``FakeMcpServer``: tools with canned results, resources, one server in error) and answers
``mcp_state_exec_args``, ``mcp_args`` (approved first, then the result) and
``read_mcp_resource_exec_args``; the model reads every result in its next request."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from store import Store
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    FakeMcpServer,
    TurnLog,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from wire.proto import agent_v1_pb2 as agent

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


def call(call_id: str, name: str, **args: Any) -> FakeToolCall:
    text = json.dumps(args)
    return FakeToolCall(call_id, name, (text[:5], text[5:]))


def text_result(text: str) -> agent.McpResult:
    item = agent.McpToolResultContentItem(text=agent.McpTextContent(text=text))
    return agent.McpResult(success=agent.McpSuccess(content=[item]))


def servers() -> list[FakeMcpServer]:
    image = agent.McpToolResultContentItem(
        image=agent.McpImageContent(data=PNG, mime_type="image/png")
    )
    shot = agent.McpResult(success=agent.McpSuccess(content=[image]))
    docs = FakeMcpServer(
        "docs",
        tools={"search": "Search the docs", "screenshot": "A picture of the page"},
        results={
            "search": lambda args: text_result(f"3 pages about {args['q']}"),
            "screenshot": shot,
        },
        resources={
            "docs://intro": agent.ReadMcpResourceSuccess(uri="docs://intro", text="Welcome!")
        },
    )
    broken = FakeMcpServer("broken", tools={"x": "never"}, error="needs authentication")
    return [docs, broken]


def execs(log: TurnLog, variant: str) -> list[agent.ExecServerMessage]:
    return [
        m.exec_server_message
        for m in log.messages
        if m.HasField("exec_server_message") and m.exec_server_message.HasField(variant)
    ]


def completed(log: TurnLog) -> dict[str, agent.ToolCall]:
    return {
        m.interaction_update.tool_call_completed.call_id: (
            m.interaction_update.tool_call_completed.tool_call
        )
        for m in log.messages
        if m.interaction_update.HasField("tool_call_completed")
    }


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_listed_tools_are_called_with_their_arguments_and_text_and_images_reach_the_model(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.tool_round([call("c_list", "GetMcpTools")]))
    fake.enqueue(
        fmt.tool_round(
            [
                call("c_search", "CallMcpTool", server="docs", toolName="search",
                     arguments={"q": "install"}),
                call("c_shot", "CallMcpTool", server="docs", toolName="screenshot"),
            ]
        )
    )  # fmt: skip
    fake.enqueue(fmt.answer("Done."))
    session = CursorSession(cursor, "turn-mcp", mcp_servers=servers())
    log = await session.run(user_turn_message("find the install docs", model))
    assert log.end == {}
    (state,) = execs(log, "mcp_state_exec_args")
    assert list(state.mcp_state_exec_args.server_identifiers) == []
    assert state.accept_hook_additional_contexts is False
    listed = fmt.tool_results(fake.requests[1].json)["c_list"]
    tools = json.loads(listed[: listed.index("]\n") + 1])
    assert [(t["server"], t["toolName"]) for t in tools] == [
        ("docs", "search"),
        ("docs", "screenshot"),
    ]
    assert tools[0]["inputSchema"]["properties"]["q"] == {"type": "string"}
    assert "broken is not available" in listed and "needs authentication" in listed
    # The call carries the listed definition and the model's arguments as Values.
    calls = {m.exec_id: m.mcp_args for m in execs(log, "mcp_args")}
    assert calls["c_search"].name == "mcp-docs-search"
    assert calls["c_search"].provider_identifier == "provider-docs"
    assert calls["c_search"].tool_name == "search"
    assert calls["c_search"].server_identifier == "docs"
    assert calls["c_search"].args["q"].string_value == "install"
    results = fmt.tool_results(fake.requests[2].json)
    assert results["c_search"] == "3 pages about install"
    assert "attached" in results["c_shot"]
    assert base64.b64encode(PNG).decode() in json.dumps(fake.requests[2].json)
    cards = completed(log)
    assert cards["c_search"].mcp_tool_call.result.success.content[0].text.text.startswith("3 pages")
    assert cards["c_list"].get_mcp_tools_tool_call.result.success.content == listed


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_server_in_error_and_an_unknown_tool_are_error_results_and_the_turn_goes_on(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(
        fmt.tool_round(
            [
                call("c_broken", "GetMcpTools", server="broken"),
                call("c_unknown", "CallMcpTool", server="docs", toolName="search"),
            ]
        )
    )
    fake.enqueue(fmt.answer("I could not."))
    session = CursorSession(cursor, "turn-mcp-err", mcp_servers=servers())
    log = await session.run(user_turn_message("use the tools", model))
    assert log.end == {}
    results = fmt.tool_results(fake.requests[1].json)
    assert "broken is not available" in results["c_broken"]
    assert "needs authentication" in results["c_broken"]
    assert "GetMcpTools" in results["c_unknown"] and "search" in results["c_unknown"]
    assert execs(log, "mcp_args") == []  # nothing was sent for the unknown tool
    cards = completed(log)
    assert cards["c_broken"].get_mcp_tools_tool_call.result.error.error == results["c_broken"]
    assert cards["c_unknown"].mcp_tool_call.result.error.error == results["c_unknown"]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_a_resource_fetch_reaches_the_model(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    model = fmt.add_model(server_store, fake)
    fake.enqueue(
        fmt.tool_round(
            [
                call("c_intro", "FetchMcpResource", server="docs", uri="docs://intro"),
                call("c_gone", "FetchMcpResource", server="docs", uri="docs://gone"),
            ]
        )
    )
    fake.enqueue(fmt.answer("Read it."))
    session = CursorSession(cursor, "turn-mcp-res", mcp_servers=servers())
    log = await session.run(user_turn_message("read the intro", model))
    assert log.end == {}
    results = fmt.tool_results(fake.requests[1].json)
    assert results["c_intro"] == "Welcome!"
    assert results["c_gone"] == "MCP resource not found: docs://gone"
    (sent, _) = sorted(execs(log, "read_mcp_resource_exec_args"), key=lambda m: m.exec_id)
    assert sent.read_mcp_resource_exec_args.tool_call_id == "c_gone"
    card = completed(log)["c_intro"].read_mcp_resource_tool_call
    assert card.result.success.text == "Welcome!"


async def test_plan_mode_calls_a_tool_its_request_defines(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(
        fmt.tool_round(
            [call("c_p", "CallMcpTool", server="provider-docs", toolName="search",
                  arguments={"q": "plans"})]
        )
    )  # fmt: skip
    fake.enqueue(fmt.answer("Planned."))
    docs = servers()[0]
    request = user_turn_message("plan it", model, mode=agent.AGENT_MODE_PLAN)
    request.run_request.mcp_tools.mcp_tools.extend(docs.definitions())
    # The fake editor routes by server identifier: the request's definitions name none but
    # their provider, which is the server the model names here.
    docs.identifier = "provider-docs"
    log = await CursorSession(cursor, "turn-mcp-plan", mcp_servers=[docs]).run(request)
    assert log.end == {}
    (sent,) = execs(log, "mcp_args")
    assert sent.mcp_args.name == "mcp-docs-search"
    assert fmt.tool_results(fake.requests[1].json)["c_p"] == "3 pages about plans"
    assert "GetMcpTools" not in fmt.tool_names(fake.requests[0].json)
