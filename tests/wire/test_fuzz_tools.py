"""Fuzzing what the tools read from the model and from the editor: every tool's argument
parsing (valid arguments with values replaced by other JSON), and every tool's reading of
the editor's answers (``feed`` an ExecClientMessage, ``respond`` an InteractionResponse, with
random variants and field values). The model's misfits end as ``InvalidCall``; an answer of
any shape is a step of the closed ``ExecStep`` union; nothing raises."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzz import DEEP_MARK, deepen, fuzz_settings, proto_message
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import (
    ExecContext,
    InvalidCall,
    ModeTools,
    SendExec,
    SendQuery,
    ServerWork,
    ServerWorkFailed,
    ShellOutput,
    ToolExecution,
    ToolOutcome,
    Waiting,
    WakeAfter,
    WrongResult,
)
from wire.tools.dispatch import prepare_tool_call
from wire.tools.mcp_catalog import McpCatalog, McpTool
from wire.tools.registry import REGISTRY

VALID_ARGS: dict[str, dict[str, Any]] = {
    "Read": {"path": "/w/a.py", "offset": 2, "limit": 10},
    "Write": {"path": "/w/a.py", "contents": "x = 1\n"},
    "StrReplace": {"path": "/w/a.py", "old_string": "a", "new_string": "b", "replace_all": True},
    "EditNotebook": {
        "target_notebook": "/w/n.ipynb",
        "cell_idx": 0,
        "is_new_cell": False,
        "cell_language": "python",
        "old_string": "a",
        "new_string": "b",
    },
    "Delete": {"path": "/w/a.py"},
    "Grep": {"pattern": "x", "path": "/w", "-A": 1, "-i": True, "head_limit": 5},
    "Glob": {"glob_pattern": "*.py", "target_directory": "/w"},
    "Shell": {"command": "ls", "working_directory": "/w", "block_until_ms": 1000},
    "ReadLints": {"paths": ["/w/a.py"]},
    "TodoWrite": {"todos": [{"id": "1", "content": "do", "status": "pending"}], "merge": False},
    "AskQuestion": {
        "title": "Q",
        "questions": [
            {
                "id": "q1",
                "prompt": "Which?",
                "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
            }
        ],
    },
    "AwaitShell": {"shell_id": "7", "pattern": "done", "block_until_ms": 1000},
    "WebSearch": {"search_term": "python", "explanation": "why"},
    "WebFetch": {"url": "https://example.com/"},
    "SwitchMode": {"target_mode_id": "plan", "explanation": "why"},
    "CreatePlan": {
        "name": "P",
        "overview": "o",
        "plan": "p",
        "todos": [{"id": "1", "content": "c"}],
    },
    "GenerateImage": {"description": "a cat", "aspect_ratio": "1:1", "filename": "cat.png"},
    "Task": {"description": "d", "prompt": "p", "subagent_type": "explore"},
    "UpdateCurrentStep": {"current_step": "reading"},
    "GetMcpTools": {"server": "s"},
    "CallMcpTool": {"server": "s", "toolName": "t", "arguments": {"q": 1}},
    "FetchMcpResource": {"server": "s", "uri": "file:///a"},
}

CONTEXT = ExecContext(
    conversation_id="c-1",
    terminals_folder="/w/.terminals",
    workspace_root="/w",
    mode=ModeTools("Agent", tuple(REGISTRY)),
    mcp=McpCatalog((McpTool("s", "t", "s-t", "prov-s"),)),
)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.sampled_from([-1, 0, 2**31, 2**63, 2**64, 10**30])
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["", "../../etc/passwd", "\x00", "pending", "completed", DEEP_MARK]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)

STEP_TYPES = (Waiting, ShellOutput, SendExec, SendQuery, WakeAfter, ServerWork, ToolOutcome)
EXEC_VARIANTS = [o.name for o in agent.ExecClientMessage.DESCRIPTOR.oneofs[0].fields]
RESPONSE_VARIANTS = [o.name for o in agent.InteractionResponse.DESCRIPTOR.oneofs[0].fields]


def test_every_registered_tool_has_valid_arguments_here() -> None:
    """The seeds start where a real call starts: each tool accepts them."""
    assert set(VALID_ARGS) == set(REGISTRY)
    for name, args in VALID_ARGS.items():
        execution = prepare_tool_call(name, "call-1", json.dumps(args), CONTEXT)
        assert not isinstance(execution, InvalidCall), (name, execution.begin())


@st.composite
def mutated_arguments(draw: st.DrawFn) -> tuple[str, str]:
    name = draw(st.sampled_from(sorted(VALID_ARGS)))
    args = json.loads(json.dumps(VALID_ARGS[name]))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(("replace", "delete", "add")))
        key = draw(st.sampled_from(sorted(args))) if args else "x"
        if op == "replace" or not args:
            args[key] = draw(JSON_VALUES)
        elif op == "delete":
            del args[key]
        else:
            args[draw(st.text(max_size=6))] = draw(JSON_VALUES)
    text = deepen(json.dumps(args, allow_nan=True))
    if draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return name, text


@fuzz_settings()
@given(mutated_arguments())
def test_mutated_arguments_end_as_an_error_result_never_an_exception(
    call: tuple[str, str],
) -> None:
    name, text = call
    execution = prepare_tool_call(name, "call-1", text, CONTEXT)
    execution.started()
    step = execution.begin()
    assert isinstance(step, STEP_TYPES)
    if isinstance(step, ToolOutcome):
        assert isinstance(step.content, str)


def _expected(step: object, last: list[str]) -> list[str]:
    """The answer variants that fit the request (``read_args`` -> ``read_result``)."""
    if isinstance(step, SendExec):
        request = step.message.WhichOneof("message") or ""
        last[:] = [v for v in EXEC_VARIANTS if v.startswith(request.removesuffix("_args"))]
    elif isinstance(step, SendQuery):
        query = step.query.WhichOneof("query") or ""
        last[:] = [query.removesuffix("query") + "response"]
    return last


def _answer(data: st.DataObject, execution: ToolExecution, step: object, last: list[str]) -> object:
    """One answer to ``step``, mostly of the kind asked for, with random field values."""
    if isinstance(step, SendExec | Waiting | ShellOutput | SendQuery):
        fitting = _expected(step, last)
        is_query = isinstance(step, SendQuery) or any(v.endswith("_response") for v in fitting)
        variants = RESPONSE_VARIANTS if is_query else EXEC_VARIANTS
        if fitting and data.draw(st.integers(0, 4)) > 0:
            variants = fitting
        variant = data.draw(st.sampled_from(variants))
        if variant in RESPONSE_VARIANTS:
            response = data.draw(proto_message(agent.InteractionResponse.DESCRIPTOR, oneof=variant))
            assert isinstance(response, agent.InteractionResponse)  # of that descriptor
            return execution.respond(response)
        message = data.draw(proto_message(agent.ExecClientMessage.DESCRIPTOR, oneof=variant))
        assert isinstance(message, agent.ExecClientMessage)  # of that descriptor
        return execution.feed(message)
    if isinstance(step, WakeAfter):
        return execution.wake()
    assert isinstance(step, ServerWork)
    return execution.answered(ServerWorkFailed("search backend down"))


@fuzz_settings()
@given(st.sampled_from(sorted(VALID_ARGS)), st.data())
def test_any_editor_answer_is_a_step_never_an_exception(name: str, data: st.DataObject) -> None:
    execution = prepare_tool_call(name, "call-1", json.dumps(VALID_ARGS[name]), CONTEXT)
    step: object = execution.begin()
    last: list[str] = []
    for _ in range(6):
        if isinstance(step, ToolOutcome | WrongResult):
            break
        step = _answer(data, execution, step, last)
        assert isinstance(step, (*STEP_TYPES, WrongResult)), step
    if isinstance(step, ToolOutcome):
        assert isinstance(step.content, str)
        step.tool_call.SerializeToString()
