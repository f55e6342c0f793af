"""Prompt assets: the shipped files load and validate, every broken copy is refused naming its
problem, the tool schemas carry Cursor's parameter names, and the files are really packaged."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import prompt
import run
from prompt import (
    RUNTIME_PLACEHOLDERS,
    PromptAssetError,
    UnknownModeError,
    load_prompt_assets,
    load_prompt_assets_from,
)
from tests.support.process import REPO

ASSETS = Path(prompt.__file__).parent / "cursor"

# Each mode's tools in the reference's manifest order (tools.md §4.3) restricted to the tools
# this server runs. Ask has no reference list: it is the read-only tools, in Debug's order, and
# SwitchMode, so the model can propose Agent mode when the user asks for changes; of the MCP
# tools it has FetchMcpResource (a read) and not CallMcpTool (a tool may change anything).
AGENT_TOOLS = [
    "Shell",
    "Grep",
    "Delete",
    "WebSearch",
    "WebFetch",
    "GenerateImage",
    "EditNotebook",
    "TodoWrite",
    "StrReplace",
    "Write",
    "Read",
    "ReadLints",
    "Glob",
    "AskQuestion",
    "Task",
    "AwaitShell",
    "GetMcpTools",
    "FetchMcpResource",
    "SwitchMode",
    "CallMcpTool",
]
MODE_TOOLS: dict[str, list[Any]] = {
    "agent": AGENT_TOOLS,
    "ask": [
        "AskQuestion",
        "FetchMcpResource",
        "Glob",
        "Grep",
        "Read",
        "ReadLints",
        "WebFetch",
        "WebSearch",
        "SwitchMode",
    ],
    "plan": [
        "Shell",
        "Glob",
        "Grep",
        "Read",
        "TodoWrite",
        "ReadLints",
        "WebSearch",
        "WebFetch",
        "AskQuestion",
        "CreatePlan",
        "Task",
        "FetchMcpResource",
        "CallMcpTool",
    ],
    "debug": [
        "AskQuestion",
        "CallMcpTool",
        "Delete",
        "FetchMcpResource",
        "Glob",
        "Grep",
        "Read",
        "ReadLints",
        "Shell",
        "StrReplace",
        "Task",
        "TodoWrite",
        "WebFetch",
        "WebSearch",
        "Write",
    ],
    "multitask": [
        "AskQuestion",
        "CallMcpTool",
        "Delete",
        "FetchMcpResource",
        "Glob",
        "Grep",
        "Read",
        "ReadLints",
        "Shell",
        "StrReplace",
        "SwitchMode",
        "Task",
        "TodoWrite",
        "WebFetch",
        "WebSearch",
        "Write",
        "GenerateImage",
    ],
    "subagent": [
        "Shell",
        "Grep",
        "Delete",
        "WebSearch",
        "WebFetch",
        "GenerateImage",
        "ReadLints",
        "EditNotebook",
        "TodoWrite",
        "StrReplace",
        "Write",
        "Read",
        "Glob",
        {"name": "Task", "variant": "subagent"},
        "AwaitShell",
        "GetMcpTools",
        "FetchMcpResource",
        "SwitchMode",
        "UpdateCurrentStep",
        "CallMcpTool",
    ],
}
# Tools that change files or run commands; Ask mode must never offer one.
WRITING_TOOLS = {"Write", "StrReplace", "Delete", "Shell", "EditNotebook", "GenerateImage"}

# tools.md §1.1: parameter name -> JSON type, and the required list, per tool. The names are
# mapped onto Cursor's exec protobuf fields, so they must be exactly these.
CURSOR_PARAMETERS: dict[str, tuple[dict[str, str], list[str]]] = {
    "Read": ({"path": "string", "offset": "integer", "limit": "integer"}, ["path"]),
    "Write": ({"path": "string", "contents": "string"}, ["path", "contents"]),
    "StrReplace": (
        {
            "path": "string",
            "old_string": "string",
            "new_string": "string",
            "replace_all": "boolean",
        },
        ["path", "old_string", "new_string"],
    ),
    "Delete": ({"path": "string"}, ["path"]),
    "Grep": (
        {
            "pattern": "string",
            "-A": "number",
            "-B": "number",
            "-C": "number",
            "-i": "boolean",
            "glob": "string",
            "head_limit": "number",
            "multiline": "boolean",
            "offset": "number",
            "output_mode": "string",
            "path": "string",
            "type": "string",
        },
        ["pattern"],
    ),
    "Glob": ({"glob_pattern": "string", "target_directory": "string"}, ["glob_pattern"]),
    "EditNotebook": (
        {
            "target_notebook": "string",
            "cell_idx": "number",
            "is_new_cell": "boolean",
            "cell_language": "string",
            "old_string": "string",
            "new_string": "string",
        },
        ["target_notebook", "cell_idx", "is_new_cell", "cell_language", "old_string", "new_string"],
    ),
    "Shell": (
        {
            "command": "string",
            "block_until_ms": "number",
            "description": "string",
            "notify_on_output": "object",
            "request_smart_mode_approval": "boolean",
            "smart_mode_block_reason": "string",
            "working_directory": "string",
        },
        ["command"],
    ),
    "ReadLints": ({"paths": "array"}, []),
    "TodoWrite": ({"todos": "array", "merge": "boolean"}, ["todos", "merge"]),
    "AskQuestion": (
        {"title": "string", "questions": "array", "run_async": "boolean"},
        ["questions"],
    ),
    "SwitchMode": ({"target_mode_id": "string", "explanation": "string"}, ["target_mode_id"]),
    # None required: a later plan of a conversation leaves out its name (CreatePlan checks
    # that the plan text is there).
    "CreatePlan": (
        {"name": "string", "overview": "string", "plan": "string", "todos": "array"},
        [],
    ),
    # Cursor's also has waiting_for_subagent, which does nothing (§2.4): left out.
    "AwaitShell": (
        {"shell_id": "string", "pattern": "string", "block_until_ms": "number"},
        [],
    ),
    "WebSearch": ({"search_term": "string", "explanation": "string"}, ["search_term"]),
    # Cursor's also takes the smart-mode approval pair, a flow this server does not run.
    "WebFetch": ({"url": "string"}, ["url"]),
    # Cursor's subagent_type is an enum of nine names; ours is a string (custom subagents too).
    "Task": (
        {
            "description": "string",
            "prompt": "string",
            "subagent_type": "string",
            "model": "string",
            "resume": "string",
            "interrupt": "boolean",
            "run_in_background": "boolean",
            "file_attachments": "array",
            "environment": "string",
            "cloud_base_branch": "string",
        },
        ["description", "prompt"],
    ),
    # Cursor's two later fields are $refs to current_step, which some providers refuse.
    "UpdateCurrentStep": (
        {"current_step": "string", "final_summary": "string", "completed_subtitle": "string"},
        [],
    ),
    "GetMcpTools": ({"server": "string", "toolName": "string", "pattern": "string"}, []),
    # The smart-mode pair and CallMcpTool's description are left out, as for WebFetch.
    "CallMcpTool": (
        {"server": "string", "toolName": "string", "arguments": "object"},
        ["server", "toolName"],
    ),
    "FetchMcpResource": (
        {"server": "string", "uri": "string", "downloadPath": "string"},
        ["server", "uri"],
    ),
}


def manifest_names(mode: str) -> list[str]:
    """The tool names a mode offers: a variant entry is offered under its base name."""
    return [entry if isinstance(entry, str) else entry["name"] for entry in MODE_TOOLS[mode]]


def shipped_tools() -> dict[str, dict[str, Any]]:
    data = json.loads((ASSETS / "tools.json").read_text(encoding="utf-8"))
    return {entry["function"]["name"]: entry["function"] for entry in data["tools"]}


def test_shipped_assets_load_once_and_validate() -> None:
    assets = load_prompt_assets()
    assert assets is load_prompt_assets()
    assert [mode.name for mode in assets.modes] == [
        "agent",
        "ask",
        "plan",
        "debug",
        "multitask",
        "subagent",
    ]
    for mode in assets.modes:
        assert list(mode.tool_names) == manifest_names(mode.name), mode.name
        assert mode.runtime_template.startswith(
            "{{REQUEST_CONTEXT}}{{OPEN_FILES}}{{SELECTED_CONTEXT}}{{ACTION_CONTEXT}}"
        )
        assert mode.runtime_template.endswith("\n\n{{TIMESTAMP}}{{USER_QUERY}}\n")
        assert "<system_reminder>" in mode.runtime_template


def test_each_manifest_file_lists_exactly_its_modes_tools_in_order() -> None:
    for mode, tools in MODE_TOOLS.items():
        manifest = json.loads((ASSETS / "modes" / f"{mode}.json").read_text(encoding="utf-8"))
        assert manifest == {"tools": tools}, mode


def test_ask_mode_offers_only_read_only_tools() -> None:
    ask = load_prompt_assets().mode("ask")
    assert not WRITING_TOOLS & set(ask.tool_names)
    assert ask.label == "Ask"


def test_each_mode_has_its_own_system_prompt_naming_the_mode() -> None:
    assets = load_prompt_assets()
    prompts = {mode.name: mode.system_prompt("m-1") for mode in assets.modes}
    assert len(set(prompts.values())) == len(prompts)
    for name, text in prompts.items():
        assert "m-1" in text and "{{" not in text, name
        if name != "agent":
            assert f"{name.capitalize()} mode" in text, name


def test_every_mode_tool_is_defined_in_tools_json() -> None:
    defined = shipped_tools()
    # The compaction manifest offers no tool (tests/actors/test_compaction.py checks it).
    manifests = sorted(p for p in (ASSETS / "modes").glob("*.json") if p.stem != "compaction")
    assert sorted(path.stem for path in manifests) == sorted(MODE_TOOLS)
    for manifest in manifests:
        entries = json.loads(manifest.read_text(encoding="utf-8"))["tools"]
        names = [entry if isinstance(entry, str) else entry["name"] for entry in entries]
        assert names, manifest
        assert [name for name in names if name not in defined] == []
        assert len(set(names)) == len(names)


def test_tools_json_holds_a_list_of_openai_function_tools() -> None:
    data = json.loads((ASSETS / "tools.json").read_text(encoding="utf-8"))
    assert set(data) <= {"tools", "variants"} and isinstance(data["tools"], list)
    for entry in [*data["tools"], *data.get("variants", {}).values()]:
        assert entry["type"] == "function"
        assert set(entry["function"]) == {"name", "description", "parameters"}
        assert len(entry["function"]["description"]) > 80, entry["function"]["name"]


@pytest.mark.parametrize("name", sorted(CURSOR_PARAMETERS))
def test_tool_parameters_match_cursors_table(name: str) -> None:
    properties, required = CURSOR_PARAMETERS[name]
    schema = shipped_tools()[name]["parameters"]
    assert schema["type"] == "object"
    assert {key: value["type"] for key, value in schema["properties"].items()} == properties
    assert schema["required"] == required
    for key, value in schema["properties"].items():
        assert value.get("description"), f"{name}.{key} has no description"


def test_tool_parameter_details_match_cursors_table() -> None:
    tools = shipped_tools()
    grep = tools["Grep"]["parameters"]["properties"]
    assert grep["output_mode"]["enum"] == ["content", "files_with_matches", "count"]
    assert grep["head_limit"]["minimum"] == 0
    assert grep["offset"]["minimum"] == 0
    assert tools["ReadLints"]["parameters"]["properties"]["paths"]["items"] == {"type": "string"}
    block = tools["AwaitShell"]["parameters"]["properties"]["block_until_ms"]
    assert (block["minimum"], block["maximum"]) == (0, 7_140_000)
    todos = tools["TodoWrite"]["parameters"]["properties"]["todos"]
    assert todos["minItems"] == 2
    item = todos["items"]
    assert {key: value["type"] for key, value in item["properties"].items()} == {
        "id": "string",
        "content": "string",
        "status": "string",
    }
    assert item["required"] == ["id", "content", "status"]
    assert item["properties"]["status"]["enum"] == [
        "pending",
        "in_progress",
        "completed",
        "cancelled",
    ]
    notify = tools["Shell"]["parameters"]["properties"]["notify_on_output"]
    assert {key: value["type"] for key, value in notify["properties"].items()} == {
        "pattern": "string",
        "reason": "string",
        "debounce_ms": "number",
    }
    assert notify["required"] == ["pattern", "reason"]


def test_loaded_tool_specs_are_the_json_schemas() -> None:
    data = json.loads((ASSETS / "tools.json").read_text(encoding="utf-8"))
    subagent_task = data["variants"]["Task.subagent"]["function"]
    for mode in load_prompt_assets().modes:
        for tool in mode.tools:
            variant = mode.name == "subagent" and tool.name == "Task"
            source = subagent_task if variant else shipped_tools()[tool.name]
            assert tool.description == source["description"]
            assert tool.parameters == source["parameters"]


def test_the_subagent_task_variant_is_task_without_the_cloud_fields() -> None:
    data = json.loads((ASSETS / "tools.json").read_text(encoding="utf-8"))
    base = shipped_tools()["Task"]["parameters"]
    variant = data["variants"]["Task.subagent"]["function"]["parameters"]
    assert set(base["properties"]) - set(variant["properties"]) == {
        "environment",
        "cloud_base_branch",
    }
    assert variant["required"] == base["required"] == ["description", "prompt"]


def test_system_prompt_substitutes_the_model_name() -> None:
    agent = load_prompt_assets().mode("agent")
    assert "{{MODEL_NAME}}" in agent.system_prompt_template
    text = agent.system_prompt("acme-coder-7")
    assert "acme-coder-7" in text
    assert "{{" not in text and "}}" not in text
    # One pass: a model name that looks like a placeholder is not expanded again.
    assert "{{MODEL_NAME}}" in agent.system_prompt("{{MODEL_NAME}}")


def test_unknown_mode_is_refused_naming_it() -> None:
    with pytest.raises(UnknownModeError, match="'triage'") as caught:
        load_prompt_assets().mode("triage")
    assert caught.value.mode == "triage"
    assert isinstance(caught.value, ValueError)


# --- a broken copy is refused, naming the problem -------------------------------------------


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / "cursor"
    shutil.copytree(ASSETS, target)
    return target


def edit_json(path: Path, change: Callable[[Any], Any]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(change(data)), encoding="utf-8")


def edit_tools(change: Callable[[list[Any]], list[Any]]) -> Callable[[Path], None]:
    """Change the list of base tools of ``tools.json``."""

    def apply(root: Path) -> None:
        edit_json(root / "tools.json", lambda data: {**data, "tools": change(data["tools"])})

    return apply


def edit_tool(name: str, change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for entry in tools:
            if entry["function"]["name"] == name:
                change(entry["function"])
        return tools

    return edit_tools(apply)


def tool_entry(name: str) -> dict[str, Any]:
    data = json.loads((ASSETS / "tools.json").read_text(encoding="utf-8"))
    (entry,) = [entry for entry in data["tools"] if entry["function"]["name"] == name]
    return dict(entry)


def add_variant(key: str, entry: Any) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        edit_json(
            root / "tools.json",
            lambda data: {**data, "variants": {**data.get("variants", {}), key: entry}},
        )

    return apply


def read_variant(description: str = "Read, as a variant.") -> dict[str, Any]:
    entry = tool_entry("Read")
    return {**entry, "function": {**entry["function"], "description": description}}


def replace_text(relative: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        path = root / relative
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new), encoding="utf-8")

    return apply


def frobnicate_tool() -> dict[str, object]:
    """A well-formed tool that no registry row runs."""
    parameters = {"type": "object", "properties": {}}
    function = {"name": "Frobnicate", "description": "Frobnicates.", "parameters": parameters}
    return {"type": "function", "function": function}


def in_turn(*damages: Callable[[Path], object]) -> Callable[[Path], None]:
    """Each of ``damages`` to the copy, in order."""

    def apply(root: Path) -> None:
        for damage in damages:
            damage(root)

    return apply


# Each damage's return value, if any, is not used.
BREAKAGES: dict[str, tuple[Callable[[Path], object], str]] = {
    "tools.json missing": (lambda root: (root / "tools.json").unlink(), "tools.json: missing"),
    "tools.json invalid": (
        lambda root: (root / "tools.json").write_text("[{", encoding="utf-8"),
        "tools.json: invalid JSON",
    ),
    "tools.json a bare list": (
        lambda root: edit_json(root / "tools.json", lambda data: data["tools"]),
        'tools.json: expected {"tools": [function tool, …]}',
    ),
    "tools.json with an unknown key": (
        lambda root: edit_json(root / "tools.json", lambda data: {**data, "variant": {}}),
        "tools.json: unexpected key(s) variant",
    ),
    "duplicate tool": (
        edit_tools(lambda tools: [*tools, tools[0]]),
        "tools.json: duplicate tool 'Read'",
    ),
    "duplicate json key": (
        replace_text("tools.json", '"name": "Delete",', '"name": "Delete", "name": "Delete",'),
        "tools.json: duplicate key 'name'",
    ),
    "parameters not an object schema": (
        edit_tool("Grep", lambda fn: fn["parameters"].update(type="array")),
        "tool 'Grep': parameters: not a JSON-schema object",
    ),
    "parameters without properties": (
        edit_tool("Glob", lambda fn: fn["parameters"].pop("properties")),
        "tool 'Glob': parameters: properties must be an object",
    ),
    "required names an unknown property": (
        edit_tool("Write", lambda fn: fn["parameters"]["required"].append("content")),
        "tool 'Write': parameters: required names unknown properties ['content']",
    ),
    "property without a type": (
        edit_tool("Delete", lambda fn: fn["parameters"]["properties"]["path"].pop("type")),
        "tool 'Delete': parameters.path: a property schema needs a \"type\"",
    ),
    "nested item schema broken": (
        edit_tool(
            "TodoWrite",
            lambda fn: fn["parameters"]["properties"]["todos"]["items"].update(properties=[]),
        ),
        "tool 'TodoWrite': parameters.todos[]: properties must be an object",
    ),
    "missing description": (
        edit_tool("Read", lambda fn: fn.update(description="")),
        "tool 'Read': missing description",
    ),
    "misspelt key": (
        edit_tool("Read", lambda fn: fn.update(parameter=fn.pop("parameters"))),
        "tool 'Read': unexpected key(s) parameter",
    ),
    "bad tool name": (
        edit_tool("Read", lambda fn: fn.update(name="Read file")),
        "tool #0: name must be",
    ),
    "variants not an object": (
        lambda root: edit_json(root / "tools.json", lambda data: {**data, "variants": []}),
        'tools.json: "variants" must be an object',
    ),
    "variant key without a variant": (
        add_variant("Read", read_variant()),
        "tools.json: variant 'Read': the key must be \"ToolName.variant\"",
    ),
    "variant of an unknown tool": (
        add_variant("Teleport.fast", read_variant()),
        "tools.json: variant 'Teleport.fast': no base tool 'Teleport' in tools.json",
    ),
    "variant of a tool the server does not run": (
        in_turn(
            edit_tools(lambda tools: [*tools, frobnicate_tool()]),
            add_variant("Frobnicate.subagent", frobnicate_tool()),
        ),
        "variant 'Frobnicate.subagent': base tool 'Frobnicate' is not one this server runs",
    ),
    "variant under another name": (
        add_variant("Grep.subagent", read_variant()),
        "tools.json: variant 'Grep.subagent': its function name must be 'Grep', not 'Read'",
    ),
    "variant validated like a tool": (
        add_variant(
            "Read.subagent",
            {
                **tool_entry("Read"),
                "function": {**tool_entry("Read")["function"], "description": ""},
            },
        ),
        "tools.json: variant 'Read.subagent': missing description",
    ),
    "mode lists an unknown variant": (
        lambda root: edit_json(
            root / "modes/ask.json",
            lambda m: {"tools": [*m["tools"], {"name": "Read", "variant": "subagent"}]},
        ),
        "modes/ask.json: unknown variant 'Read.subagent' (not in tools.json)",
    ),
    "mode entry malformed": (
        lambda root: edit_json(
            root / "modes/ask.json", lambda m: {"tools": [*m["tools"], {"name": "Read"}]}
        ),
        "modes/ask.json: an entry is a tool name or",
    ),
    "mode lists a variant next to its base tool": (
        in_turn(
            add_variant("Read.subagent", read_variant()),
            lambda root: edit_json(
                root / "modes/agent.json",
                lambda m: {"tools": [*m["tools"], {"name": "Read", "variant": "subagent"}]},
            ),
        ),
        "modes/agent.json: duplicate tool 'Read'",
    ),
    "mode lists an unknown tool": (
        lambda root: edit_json(
            root / "modes/agent.json", lambda m: {"tools": [*m["tools"], "Frobnicate"]}
        ),
        "modes/agent.json: unknown tool 'Frobnicate'",
    ),
    "mode offers a tool this server does not run": (
        in_turn(
            edit_tools(lambda tools: [*tools, frobnicate_tool()]),
            lambda root: edit_json(
                root / "modes/agent.json", lambda m: {"tools": [*m["tools"], "Frobnicate"]}
            ),
        ),
        "modes/agent.json: tool 'Frobnicate' is not one this server runs",
    ),
    "mode lists a tool twice": (
        lambda root: edit_json(
            root / "modes/agent.json", lambda m: {"tools": [*m["tools"], "Read"]}
        ),
        "modes/agent.json: duplicate tool 'Read'",
    ),
    "mode manifest malformed": (
        lambda root: edit_json(root / "modes/agent.json", lambda m: m["tools"]),
        'modes/agent.json: expected {"tools"',
    ),
    "mode manifest missing": (
        lambda root: (root / "modes/agent.json").unlink(),
        "modes/agent.json: missing",
    ),
    "manifest for an unknown mode": (
        lambda root: (root / "modes/triage.json").write_text('{"tools": []}', encoding="utf-8"),
        "modes/triage.json: no such mode",
    ),
    "a new mode's manifest missing": (
        lambda root: (root / "modes/debug.json").unlink(),
        "modes/debug.json: missing",
    ),
    "a new mode's runtime template missing": (
        lambda root: (root / "multitask/runtime.md").unlink(),
        "multitask/runtime.md: missing",
    ),
    "a debug placeholder in prompt.md": (
        replace_text("debug/prompt.md", "{{MODEL_NAME}}", "{{MODEL_NAME}} {{DEBUG_LOG_PATH}}"),
        "debug/prompt.md: unknown placeholder {{DEBUG_LOG_PATH}}",
    ),
    "a misspelt debug placeholder": (
        replace_text("debug/runtime.md", "{{DEBUG_LOG_PATH}}", "{{DEBUG_LOGPATH}}"),
        "debug/runtime.md: unknown placeholder {{DEBUG_LOGPATH}}",
    ),
    "timestamp used twice in a mode": (
        replace_text("ask/runtime.md", "{{TIMESTAMP}}", "{{TIMESTAMP}}{{TIMESTAMP}}"),
        "ask/runtime.md: placeholder {{TIMESTAMP}} appears 2 times",
    ),
    "a context section used twice": (
        replace_text("plan/runtime.md", "{{OPEN_FILES}}", "{{OPEN_FILES}}{{OPEN_FILES}}"),
        "plan/runtime.md: placeholder {{OPEN_FILES}} appears 2 times",
    ),
    "prompt.md missing": (
        lambda root: (root / "agent/prompt.md").unlink(),
        "agent/prompt.md: missing",
    ),
    "runtime.md missing": (
        lambda root: (root / "agent/runtime.md").unlink(),
        "agent/runtime.md: missing",
    ),
    "prompt.md not utf-8": (
        lambda root: (root / "agent/prompt.md").write_bytes(b"caf\xe9 {{MODEL_NAME}}"),
        "agent/prompt.md: not UTF-8",
    ),
    "unknown placeholder in prompt.md": (
        replace_text("agent/prompt.md", "{{MODEL_NAME}}", "{{FAKE_MODEL_NAME}}"),
        "agent/prompt.md: unknown placeholder {{FAKE_MODEL_NAME}}",
    ),
    "unknown placeholder in runtime.md": (
        replace_text("agent/runtime.md", "{{TIMESTAMP}}", "{{TIMESTAMP}}{{WEATHER}}"),
        "agent/runtime.md: unknown placeholder {{WEATHER}}",
    ),
    "placeholder spelt with spaces": (
        replace_text("agent/runtime.md", "{{USER_QUERY}}", "{{ USER_QUERY }}"),
        "agent/runtime.md: unknown placeholder {{ USER_QUERY }}",
    ),
    "placeholder used twice": (
        replace_text("agent/runtime.md", "{{USER_QUERY}}", "{{USER_QUERY}}{{USER_QUERY}}"),
        "agent/runtime.md: placeholder {{USER_QUERY}} appears 2 times",
    ),
    "stray braces": (
        replace_text("agent/runtime.md", "{{TIMESTAMP}}", "{{TIMESTAMP}} {{oops"),
        "agent/runtime.md: unbalanced",
    ),
}


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_broken_copy_is_refused_naming_the_problem(copy: Path, breakage: str) -> None:
    load_prompt_assets_from(copy)  # the intact copy is fine: the failure below is the breakage
    damage, message = BREAKAGES[breakage]
    damage(copy)
    with pytest.raises(PromptAssetError) as caught:
        load_prompt_assets_from(copy)
    assert message in str(caught.value)


@pytest.mark.parametrize("placeholder", RUNTIME_PLACEHOLDERS)
def test_runtime_template_missing_a_known_placeholder_is_refused(
    copy: Path, placeholder: str
) -> None:
    replace_text("agent/runtime.md", f"{{{{{placeholder}}}}}", "")(copy)
    with pytest.raises(
        PromptAssetError,
        match=re.escape(f"agent/runtime.md: missing placeholder {{{{{placeholder}}}}}"),
    ):
        load_prompt_assets_from(copy)


@pytest.mark.parametrize("mode", ["ask", "plan", "debug", "multitask"])
def test_every_modes_template_needs_every_section(copy: Path, mode: str) -> None:
    for placeholder in RUNTIME_PLACEHOLDERS:
        damaged = copy.parent / f"{mode}-{placeholder}"
        shutil.copytree(copy, damaged)
        replace_text(f"{mode}/runtime.md", f"{{{{{placeholder}}}}}", "")(damaged)
        with pytest.raises(PromptAssetError, match=re.escape(f"{mode}/runtime.md: missing")):
            load_prompt_assets_from(damaged)


def test_a_variant_entry_offers_the_variant_under_its_base_name_in_manifest_order(
    copy: Path,
) -> None:
    add_variant("Read.subagent", read_variant("Read, worded for a subagent."))(copy)
    edit_json(
        copy / "modes/plan.json",
        lambda m: {
            "tools": [
                "Shell",
                {"name": "Read", "variant": "subagent"},
                *[name for name in m["tools"] if name not in ("Shell", "Read")],
            ]
        },
    )
    assets = load_prompt_assets_from(copy)
    plan = assets.mode("plan")
    rest = [name for name in MODE_TOOLS["plan"] if name not in ("Shell", "Read")]
    assert list(plan.tool_names) == ["Shell", "Read", *rest]
    assert plan.tools[1].description == "Read, worded for a subagent."
    assert plan.tools[1].parameters == tool_entry("Read")["function"]["parameters"]
    # The base tool stays as it was, for the modes that list it by name.
    base = next(tool for tool in assets.mode("ask").tools if tool.name == "Read")
    assert base.description == tool_entry("Read")["function"]["description"]
    # The catalogue holds base tools only.
    assert [tool.name for tool in assets.tools].count("Read") == 1


def test_variants_may_be_absent_or_empty(copy: Path) -> None:
    edit_json(copy / "tools.json", lambda data: {**data, "variants": {}})
    edit_json(copy / "modes/subagent.json", lambda data: {"tools": ["Read"]})
    assert (
        load_prompt_assets_from(copy).mode("agent").tools
        == load_prompt_assets().mode("agent").tools
    )


def test_debug_placeholders_may_repeat_or_be_absent_in_any_template(copy: Path) -> None:
    replace_text(
        "ask/runtime.md",
        "{{TIMESTAMP}}",
        "{{DEBUG_SESSION_ID}} {{DEBUG_SESSION_ID}} {{DEBUG_SERVER_ENDPOINT}}\n{{TIMESTAMP}}",
    )(copy)
    template = (copy / "debug/runtime.md").read_text(encoding="utf-8")
    assert template.count("{{DEBUG_LOG_PATH}}") > 1
    bare = "{{REQUEST_CONTEXT}}{{OPEN_FILES}}{{SELECTED_CONTEXT}}{{ACTION_CONTEXT}}"
    (copy / "debug/runtime.md").write_text(bare + "{{TIMESTAMP}}{{USER_QUERY}}", "utf-8")
    assets = load_prompt_assets_from(copy)
    assert assets.mode("ask").runtime_template.count("{{DEBUG_SESSION_ID}}") == 2
    assert "DEBUG" not in assets.mode("debug").runtime_template


def test_startup_fails_with_exit_2_and_one_line_before_opening_the_store(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken() -> None:
        raise PromptAssetError("modes/agent.json: unknown tool 'Frobnicate'")

    # An unusable database URL: if the store were opened first (or the assets not loaded at
    # all), main() would stop on it with a CURSOR_DATABASE_URL line instead of serving.
    monkeypatch.setenv("CURSOR_DATABASE_URL", "mysql://db/x")
    monkeypatch.setattr(run, "load_prompt_assets", broken)
    assert run.main([]) == 2  # no arguments, whatever pytest was given
    err = capsys.readouterr().err
    assert err.splitlines() == ["prompt assets: modes/agent.json: unknown tool 'Frobnicate'"]


# --- the files are in the built distribution --------------------------------------------------


def _builds_offline() -> bool:
    """The running interpreter's setuptools can build this project's wheel without the index."""
    try:
        import setuptools
    except ImportError:
        return False
    version = tuple(int(part) for part in setuptools.__version__.split(".")[:2])
    return version >= (70, 1)  # pyproject needs >= 68; bdist_wheel is built in from 70.1


@pytest.mark.process
def test_wheel_ships_the_assets_and_they_load_from_it(tmp_path: Path) -> None:
    """Build the wheel the way ``pip install`` does and load the assets from its contents
    alone, so a glob in setup.cfg that misses nested files fails here, not in production."""
    source = tmp_path / "src"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
        ),
    )
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path)]
    if _builds_offline():
        command.append("--no-build-isolation")
    built = subprocess.run(
        [*command, str(source)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp_path.glob("cursor_server-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name for name in archive.namelist() if name.startswith("prompt/cursor/")}
        console = {name for name in archive.namelist() if name.startswith("console/static/")}
        # Package data beside the code: the drift walk's baseline of Cursor's schema, and
        # the models' price list.
        assert "wire/proto/cursor_fields.json" in archive.namelist()
        assert "store/catalog/price_list.json" in archive.namelist()
        archive.extractall(tmp_path / "installed")
    # The console's browser app ships too, nested folders included.
    static = REPO / "console" / "static"
    assert console == {
        f"console/static/{path.relative_to(static).as_posix()}"
        for path in static.rglob("*")
        if path.is_file()
    }
    assert "console/static/vendor/preact.module.js" in console
    expected = {
        f"prompt/{path.relative_to(ASSETS.parent).as_posix()}"
        for path in ASSETS.rglob("*")
        if path.is_file()
    }
    assert {"prompt/cursor/tools.json", "prompt/cursor/agent/runtime.md"} <= expected
    assert shipped == expected

    check = (
        "import prompt; from prompt import load_prompt_assets; "
        "print(prompt.__file__); print(len(load_prompt_assets().mode('agent').tools))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", check],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path / "installed",
    )
    assert loaded.returncode == 0, loaded.stderr
    module_file, tool_count = loaded.stdout.split()
    assert Path(module_file).is_relative_to(tmp_path / "installed")
    assert int(tool_count) == len(AGENT_TOOLS)
    prices = subprocess.run(
        [sys.executable, "-c", "from store.catalog import price_list; print(price_list().as_of)"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path / "installed",
    )
    assert prices.returncode == 0, prices.stderr
    assert (
        prices.stdout.strip()
        == json.loads((REPO / "store/catalog/price_list.json").read_text())["as_of"]
    )
