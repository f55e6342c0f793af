"""EditNotebook end to end: the real server, the fake Cursor client reading and writing a real
``.ipynb`` file in a temporary workspace, and the fake provider streaming the call in each of
the three formats.

What is checked is what each side gets: the file's JSON on disk afterwards, the cards the
editor shows (streamed content, the started and completed edit cards), the two execs (hidden
Read, then Write, each under its own wire id) and the text the model reads next.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from store import Store
from tests.support.fake_cursor import CursorSession, FakeCursor, updates, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from wire.proto import agent_v1_pb2 as agent


def nbformat_text(value: dict[str, Any]) -> str:
    """A notebook file as Jupyter writes it (one-space indent, sorted keys, final newline)."""
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Report"]},
        {
            "cell_type": "code",
            "execution_count": 3,
            "id": "load",
            "metadata": {"tags": ["setup"]},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}],
            "source": ["rows = load('2025.csv')\n", "print(len(rows))"],
        },
    ],
    "metadata": {"language_info": {"name": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_edit_notebook_changes_one_cell_of_the_file_on_disk(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    tmp_path: Path,
) -> None:
    model = fmt.add_model(server_store, fake)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = workspace / "report.ipynb"
    path.write_text(nbformat_text(NOTEBOOK), encoding="utf-8")
    arguments = {
        "target_notebook": str(path),
        "cell_idx": 1,
        "is_new_cell": False,
        "cell_language": "python",
        "old_string": "load('2025.csv')",
        "new_string": "load('2026.csv')\nrows = rows[:10]",
    }
    text = json.dumps(arguments)
    cut = text.index("2026") + 2  # the model streams new_string in two pieces
    pieces = (text[:20], text[20:cut], text[cut:])
    tools = [FakeToolCall("call_nb", "EditNotebook", pieces)]
    fake.enqueue(fmt.tool_round(tools))
    fake.enqueue(fmt.answer("Updated the notebook."))

    log = await CursorSession(cursor, "turn-nb", workspace=workspace).run(
        user_turn_message("use the 2026 data", model)
    )
    assert log.end == {}, log.end

    # The file on disk: only the edited cell's source changed, in nbformat's own layout.
    expected = json.loads(nbformat_text(NOTEBOOK))
    expected["cells"][1]["source"] = [
        "rows = load('2026.csv')\n",
        "rows = rows[:10]\n",
        "print(len(rows))",
    ]
    assert path.read_text(encoding="utf-8") == nbformat_text(expected)

    # Two execs under two wire ids, both keyed by the call id: the hidden Read, then the Write.
    execs = [m.exec_server_message for m in log.messages if m.HasField("exec_server_message")]
    assert [e.WhichOneof("message") for e in execs] == ["read_args", "write_args"]
    assert [e.exec_id for e in execs] == ["call_nb", "call_nb"]
    assert execs[0].id != execs[1].id
    assert execs[0].read_args.path == str(path)
    assert all(e.accept_hook_additional_contexts for e in execs)

    # The card: the notebook named while streaming, new_string streamed into it, then the
    # started and completed edit cards.
    partials = [p for p in updates(log, "partial_tool_call") if p.call_id == "call_nb"]
    # (the first is the placeholder card sent when the call begins)
    assert [p.tool_call.edit_tool_call.args.path for p in partials] == ["", str(path)]
    streamed = [
        d.tool_call_delta.edit_tool_call_delta.stream_content_delta
        for d in updates(log, "tool_call_delta")
    ]
    # (Gemini sends a call's args whole, so its card fills in one delta.)
    assert len(streamed) >= 2 if fmt.streams_arguments else len(streamed) == 1
    assert "".join(streamed) == arguments["new_string"]
    (started,) = updates(log, "tool_call_started")
    assert started.tool_call.edit_tool_call.args == agent.EditArgs(
        path=str(path), stream_content=arguments["new_string"]
    )
    (completed,) = updates(log, "tool_call_completed")
    success = completed.tool_call.edit_tool_call.result.success
    assert success.path == str(path)
    assert success.before_full_file_content == nbformat_text(NOTEBOOK)
    assert success.after_full_file_content == nbformat_text(expected)
    assert (success.lines_added, success.lines_removed) == (2, 1)

    # The model reads what happened in its next request.
    assert fmt.tool_results(fake.requests[1].json) == {"call_nb": f"edited code cell 1 of {path}"}


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_an_edit_notebook_mistake_is_the_models_error_and_nothing_is_written(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    tmp_path: Path,
) -> None:
    model = fmt.add_model(server_store, fake)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = workspace / "report.ipynb"
    path.write_text(nbformat_text(NOTEBOOK), encoding="utf-8")
    arguments = {
        "target_notebook": str(path),
        "cell_idx": 5,
        "is_new_cell": False,
        "cell_language": "python",
        "old_string": "x",
        "new_string": "y",
    }
    tools = [FakeToolCall("call_nb", "EditNotebook", (json.dumps(arguments),))]
    fake.enqueue(fmt.tool_round(tools))
    fake.enqueue(fmt.answer("Let me read it first."))

    log = await CursorSession(cursor, "turn-nb-bad", workspace=workspace).run(
        user_turn_message("edit cell 5", model)
    )
    assert log.end == {}, log.end  # the model's mistake does not fail the run
    assert path.read_text(encoding="utf-8") == nbformat_text(NOTEBOOK)
    execs = [m.exec_server_message for m in log.messages if m.HasField("exec_server_message")]
    assert [e.WhichOneof("message") for e in execs] == ["read_args"]  # no Write
    error = (
        f"cell_idx 5 is out of range: {path} has 2 cells "
        "(indexes start at 0; set is_new_cell to add one)"
    )
    (completed,) = updates(log, "tool_call_completed")
    assert completed.tool_call.edit_tool_call.result.error.model_visible_error == error
    assert fmt.tool_results(fake.requests[1].json) == {"call_nb": error}
    assert "turn_ended" in log.kinds()
