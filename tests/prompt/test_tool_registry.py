"""The registry is the single source of the tools we run: the prompt offers exactly its tools,
and every row names a real ToolCall oneof field and a real argument to stream. The package
stays sans-IO: protobuf, msgspec, regex, the standard library and ``wire``, nothing else."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import wire.tools
from prompt import load_prompt_assets
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import ToolChannel
from wire.tools.registry import REGISTRY, STREAMED_CONTENT_FIELDS, resolve_tool

# Registered tools Agent mode does not offer (tools.md §4.3): only Plan mode plans.
NOT_IN_AGENT_MODE = {"CreatePlan", "UpdateCurrentStep"}


def test_the_prompt_offers_exactly_the_registered_tools() -> None:
    assets = load_prompt_assets()
    assert {tool.name for tool in assets.tools} == set(REGISTRY)
    agent_tools = {tool.name for tool in assets.mode("agent").tools}
    assert agent_tools == set(REGISTRY) - NOT_IN_AGENT_MODE
    assert set().union(*(mode.tool_names for mode in assets.modes)) == set(REGISTRY)


def test_every_row_is_keyed_by_its_name_and_resolves_to_itself() -> None:
    for name, definition in REGISTRY.items():
        assert definition.name == name
        assert resolve_tool(name) == name


def test_every_tool_call_field_is_a_tool_call_oneof_field() -> None:
    oneof = agent.ToolCall.DESCRIPTOR.oneofs_by_name["tool"]
    fields = {field.name for field in oneof.fields}
    for definition in REGISTRY.values():
        assert definition.tool_call_field in fields, definition.name


# Each of Cursor's tools and the one channel it starts on (notes/tools.md §0, §1.1); a tool
# keeps that channel and no other (WebFetch's approval leads to an Exec request of its own).
CURSOR_CHANNELS = {
    **dict.fromkeys(
        (
            "Shell", "Read", "Delete", "Grep", "Glob", "ReadLints", "Task", "CallMcpTool",
            "FetchMcpResource", "GetMcpTools", "Write", "StrReplace", "EditNotebook",
            "AwaitShell",
        ),
        ToolChannel.EXEC,
    ),
    **dict.fromkeys(
        ("AskQuestion", "WebSearch", "WebFetch", "SwitchMode", "CreatePlan", "GenerateImage"),
        ToolChannel.INTERACTION,
    ),
    **dict.fromkeys(("TodoWrite", "UpdateCurrentStep"), ToolChannel.LOCAL),
}  # fmt: skip


def test_each_tool_runs_on_cursors_channel_for_it() -> None:
    for definition in REGISTRY.values():
        assert definition.channel is CURSOR_CHANNELS[definition.name], definition.name


def test_every_streamed_field_is_a_string_parameter_of_the_tool() -> None:
    schemas = {tool.name: tool.parameters for tool in load_prompt_assets().tools}
    assert STREAMED_CONTENT_FIELDS == {
        "Write": "contents",
        "StrReplace": "new_string",
        "EditNotebook": "new_string",
    }
    for name, field in STREAMED_CONTENT_FIELDS.items():
        assert schemas[name]["properties"][field]["type"] == "string"
        path_field = REGISTRY[name].streamed_path_field
        assert schemas[name]["properties"][path_field]["type"] == "string", name
    assert REGISTRY["EditNotebook"].streamed_path_field == "target_notebook"


def _allowed(module: str) -> bool:
    root = module.split(".")[0]
    if root == "google":
        return module == "google.protobuf" or module.startswith("google.protobuf.")
    # ``regex``: pure computation, for AwaitShell's model-written patterns (a match timeout).
    return root in {"msgspec", "regex", "wire"} or root in sys.stdlib_module_names


def test_the_tools_package_imports_only_protobuf_msgspec_the_stdlib_and_wire() -> None:
    for path in sorted(Path(wire.tools.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                assert _allowed(module), f"{path.name} imports {module}"


def test_every_rows_invalid_card_is_its_tool_card_holding_only_the_error() -> None:
    for name, definition in REGISTRY.items():
        card = definition.invalid_card("bad arguments: x")
        (field,) = [f.name for f, _ in card.ListFields()]
        assert field == definition.tool_call_field, name
        node = getattr(card, field)
        for part in definition.error_path.split("."):
            assert node.HasField(part), (name, part)
            node = getattr(node, part)
        assert {f.name: v for f, v in node.ListFields()} == dict.fromkeys(
            definition.error_fields, "bad arguments: x"
        ), name


def test_every_mode_offers_only_registered_tools() -> None:
    modes = load_prompt_assets().modes
    assert len(modes) == 6
    for mode in modes:
        assert set(mode.tool_names) <= set(REGISTRY), mode.name
