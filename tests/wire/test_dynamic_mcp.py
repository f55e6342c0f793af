"""A dynamic MCP tool's call from the model's arguments to its ``mcp_args`` exec, without a
socket: the run's table is matched by exact name before the built-ins, bad arguments are an
error card, and only object schemas are offered."""

from __future__ import annotations

import json

import pytest

from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import ExecContext, InvalidCall, ModeTools, SendExec
from wire.tools.dispatch import CUT_ARGUMENTS, cut_tool_call, prepare_tool_call
from wire.tools.dynamic_mcp import offered, parameters_of, placeholder_card
from wire.tools.mcp_catalog import McpCatalog, McpTool
from wire.tools.mcp_names import dynamic_tools
from wire.tools.registry import REGISTRY, refused_call

TOOL = McpTool("docs", "search", "mcp-docs-search", "prov-docs", "Search", {"type": "object"})
CONTEXT = ExecContext(
    mode=ModeTools("Agent", ("Read", "CallMcpTool")), dynamic=dynamic_tools([TOOL], REGISTRY)
)


def test_an_offered_name_runs_as_one_mcp_args_exec_with_the_whole_arguments() -> None:
    assert refused_call("mcp_docs_search", CONTEXT) is None
    arguments = {"q": "x", "page": {"n": 2, "tags": ["a"]}}
    execution = prepare_tool_call("mcp_docs_search", "c1", json.dumps(arguments), CONTEXT)
    step = execution.begin()
    assert isinstance(step, SendExec)
    assert not step.message.HasField("accept_hook_additional_contexts")
    args = step.message.mcp_args
    assert (args.name, args.tool_name, args.provider_identifier, args.server_identifier) == (
        "mcp-docs-search",
        "search",
        "prov-docs",
        "docs",
    )
    assert args.args["page"].struct_value.fields["n"].number_value == 2
    assert execution.started().mcp_tool_call.args.name == "search"  # the card's name


def test_a_dynamic_call_the_output_limit_cut_is_an_error_card_of_its_own_tool() -> None:
    execution = cut_tool_call("mcp_docs_search", "c1", CONTEXT)
    assert isinstance(execution, InvalidCall)
    outcome = execution.begin()
    assert outcome.is_error and CUT_ARGUMENTS in outcome.content
    assert outcome.tool_call.HasField("mcp_tool_call")


def test_a_name_not_offered_is_refused_and_matching_is_exact() -> None:
    for name in ("mcp_docs_other", "MCP_DOCS_SEARCH"):
        refusal = refused_call(name, CONTEXT)
        assert refusal is not None and f"no tool named {name!r}" in refusal


def test_arguments_that_are_not_an_object_are_an_error_card() -> None:
    execution = prepare_tool_call("mcp_docs_search", "c1", "[1, 2]", CONTEXT)
    assert isinstance(execution, InvalidCall)
    outcome = execution.begin()
    assert outcome.is_error and "must be a JSON object" in outcome.content
    assert outcome.tool_call.mcp_tool_call.result.error.error == outcome.content


@pytest.mark.parametrize(
    ("schema", "parameters"),
    [
        (None, {"type": "object", "properties": {}}),
        ({}, {"type": "object", "properties": {}}),
        ({"properties": {"a": {}}}, {"type": "object", "properties": {"a": {}}}),
        ({"type": "object", "required": ["a"]}, {"type": "object", "required": ["a"]}),
        ({"type": "string"}, None),
        ("{not json", None),
        ([1], None),
    ],
)
def test_only_object_schemas_are_offered(schema: object, parameters: object) -> None:
    tool = McpTool("s", "t", "n", "p", input_schema=schema)
    assert parameters_of(tool) == parameters
    result = offered(McpCatalog((tool,)))
    assert (result.left_out == (tool,)) is (parameters is None)
    assert (result.tools.names() == ("mcp_s_t",)) is (parameters is not None)


def test_the_placeholder_card_names_the_tool() -> None:
    card = placeholder_card("mcp_docs_search", TOOL, "c1")
    assert card.tool_call_id == "c1"
    assert card.mcp_tool_call.args.tool_name == "search"
    assert isinstance(card, agent.ToolCall)
