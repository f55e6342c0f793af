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

# The agent mode's tools, in the reference's agent-manifest order (tools.md §4.3) restricted
# to the tools this server offers.
AGENT_TOOLS = [
    "Shell",
    "Grep",
    "Delete",
    "GenerateImage",
    "TodoWrite",
    "StrReplace",
    "Write",
    "Read",
    "ReadLints",
    "Glob",
    "AskQuestion",
]

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
    "Shell": (
        {
            "command": "string",
            "block_until_ms": "number",
            "description": "string",
            "working_directory": "string",
        },
        ["command"],
    ),
    "ReadLints": ({"paths": "array"}, []),
    "TodoWrite": ({"todos": "array", "merge": "boolean"}, ["todos", "merge"]),
    "AskQuestion": ({"title": "string", "questions": "array"}, ["questions"]),
}

# Cursor's Shell also takes these; we leave them out on purpose: notify_on_output needs
# background wake-ups and smart-mode approval a flow this server does not run yet.
SHELL_LEFT_OUT = {"notify_on_output", "request_smart_mode_approval", "smart_mode_block_reason"}


def shipped_tools() -> dict[str, dict[str, Any]]:
    data = json.loads((ASSETS / "tools.json").read_text(encoding="utf-8"))
    return {entry["function"]["name"]: entry["function"] for entry in data}


def test_shipped_assets_load_once_and_validate() -> None:
    assets = load_prompt_assets()
    assert assets is load_prompt_assets()
    agent = assets.mode("agent")
    assert [tool.name for tool in agent.tools] == AGENT_TOOLS
    assert agent.runtime_template.strip()
    assert [mode.name for mode in assets.modes] == ["agent"]


def test_every_mode_tool_is_defined_in_tools_json() -> None:
    defined = shipped_tools()
    manifests = sorted((ASSETS / "modes").glob("*.json"))
    assert [path.name for path in manifests] == ["agent.json"]
    for manifest in manifests:
        names = json.loads(manifest.read_text(encoding="utf-8"))["tools"]
        assert names, manifest
        assert [name for name in names if name not in defined] == []
        assert len(set(names)) == len(names)


def test_tools_json_is_a_list_of_openai_function_tools() -> None:
    data = json.loads((ASSETS / "tools.json").read_text(encoding="utf-8"))
    assert isinstance(data, list)
    for entry in data:
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
    assert not SHELL_LEFT_OUT & set(tools["Shell"]["parameters"]["properties"])


def test_loaded_tool_specs_are_the_json_schemas() -> None:
    agent = load_prompt_assets().mode("agent")
    for tool in agent.tools:
        source = shipped_tools()[tool.name]
        assert tool.description == source["description"]
        assert tool.parameters == source["parameters"]


def test_system_prompt_substitutes_the_model_name() -> None:
    agent = load_prompt_assets().mode("agent")
    assert "{{MODEL_NAME}}" in agent.system_prompt_template
    text = agent.system_prompt("acme-coder-7")
    assert "acme-coder-7" in text
    assert "{{" not in text and "}}" not in text
    # One pass: a model name that looks like a placeholder is not expanded again.
    assert "{{MODEL_NAME}}" in agent.system_prompt("{{MODEL_NAME}}")


def test_unknown_mode_is_refused_naming_it() -> None:
    with pytest.raises(UnknownModeError, match="'plan'") as caught:
        load_prompt_assets().mode("plan")
    assert caught.value.mode == "plan"
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


def edit_tool(name: str, change: Callable[[dict[str, Any]], None]) -> Callable[[Any], Any]:
    def apply(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for entry in tools:
            if entry["function"]["name"] == name:
                change(entry["function"])
        return tools

    return apply


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


BREAKAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "tools.json missing": (lambda root: (root / "tools.json").unlink(), "tools.json: missing"),
    "tools.json invalid": (
        lambda root: (root / "tools.json").write_text("[{", encoding="utf-8"),
        "tools.json: invalid JSON",
    ),
    "tools.json not a list": (
        lambda root: edit_json(root / "tools.json", lambda tools: {"tools": tools}),
        "tools.json: expected a JSON list",
    ),
    "duplicate tool": (
        lambda root: edit_json(root / "tools.json", lambda tools: [*tools, tools[0]]),
        "tools.json: duplicate tool 'Read'",
    ),
    "duplicate json key": (
        replace_text("tools.json", '"name": "Delete",', '"name": "Delete", "name": "Delete",'),
        "tools.json: duplicate key 'name'",
    ),
    "parameters not an object schema": (
        lambda root: edit_json(
            root / "tools.json",
            edit_tool("Grep", lambda fn: fn["parameters"].update(type="array")),
        ),
        "tool 'Grep': parameters: not a JSON-schema object",
    ),
    "parameters without properties": (
        lambda root: edit_json(
            root / "tools.json", edit_tool("Glob", lambda fn: fn["parameters"].pop("properties"))
        ),
        "tool 'Glob': parameters: properties must be an object",
    ),
    "required names an unknown property": (
        lambda root: edit_json(
            root / "tools.json",
            edit_tool("Write", lambda fn: fn["parameters"]["required"].append("content")),
        ),
        "tool 'Write': parameters: required names unknown properties ['content']",
    ),
    "property without a type": (
        lambda root: edit_json(
            root / "tools.json",
            edit_tool("Delete", lambda fn: fn["parameters"]["properties"]["path"].pop("type")),
        ),
        "tool 'Delete': parameters.path: a property schema needs a \"type\"",
    ),
    "nested item schema broken": (
        lambda root: edit_json(
            root / "tools.json",
            edit_tool(
                "TodoWrite",
                lambda fn: fn["parameters"]["properties"]["todos"]["items"].update(properties=[]),
            ),
        ),
        "tool 'TodoWrite': parameters.todos[]: properties must be an object",
    ),
    "missing description": (
        lambda root: edit_json(
            root / "tools.json", edit_tool("Read", lambda fn: fn.update(description=""))
        ),
        "tool 'Read': missing description",
    ),
    "misspelt key": (
        lambda root: edit_json(
            root / "tools.json",
            edit_tool("Read", lambda fn: fn.update(parameter=fn.pop("parameters"))),
        ),
        "tool 'Read': unexpected key(s) parameter",
    ),
    "bad tool name": (
        lambda root: edit_json(
            root / "tools.json", edit_tool("Read", lambda fn: fn.update(name="Read file"))
        ),
        "tool #0: name must be",
    ),
    "mode lists an unknown tool": (
        lambda root: edit_json(
            root / "modes/agent.json", lambda m: {"tools": [*m["tools"], "Frobnicate"]}
        ),
        "modes/agent.json: unknown tool 'Frobnicate'",
    ),
    "mode offers a tool this server does not run": (
        lambda root: (
            edit_json(root / "tools.json", lambda tools: [*tools, frobnicate_tool()]),
            edit_json(root / "modes/agent.json", lambda m: {"tools": [*m["tools"], "Frobnicate"]}),
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
        lambda root: (root / "modes/plan.json").write_text('{"tools": []}', encoding="utf-8"),
        "modes/plan.json: no such mode",
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


def test_startup_fails_with_exit_2_and_one_line_before_opening_the_store(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken() -> None:
        raise PromptAssetError("modes/agent.json: unknown tool 'Frobnicate'")

    # An unusable database URL: if the store were opened first (or the assets not loaded at
    # all), main() would stop on it with a CURSOR_DATABASE_URL line instead of serving.
    monkeypatch.setenv("CURSOR_DATABASE_URL", "mysql://db/x")
    monkeypatch.setattr(run, "load_prompt_assets", broken)
    assert run.main() == 2
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
