"""EditNotebook as a pure state machine: its hidden Read, the cell change made here on the
notebook's JSON, then the Write of the whole file (``notes/tools.md`` §2.3).

Beyond the reference: the notebook is written back with its own indentation, trailing newline
and line endings, and every cell but the edited one stays exactly as it was.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import InvalidCall, SendExec, ToolExecution, ToolOutcome
from wire.tools.dispatch import prepare_tool_call

CALL_ID = "call-nb\nfc_1"
PATH = "/w/analysis.ipynb"


def notebook(*cells: dict[str, Any], minor: int = 5) -> dict[str, Any]:
    return {
        "cells": list(cells),
        "metadata": {"kernelspec": {"display_name": "Python 3", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": minor,
    }


def code(source: Any, cell_id: str, count: int | None = 1) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": count,
        "id": cell_id,
        "metadata": {},
        "outputs": [{"name": "stdout", "output_type": "stream", "text": ["1\n"]}],
        "source": source,
    }


def markdown(source: Any, cell_id: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": source}


def nbformat_text(value: dict[str, Any]) -> str:
    """The file as Jupyter writes it: one-space indent, keys sorted, raw UTF-8, final newline."""
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


SAMPLE = notebook(
    markdown(["# Sales\n", "Numbers for Q3 — draft"], "md0"),
    code(["import pandas as pd\n", "df = pd.read_csv('q3.csv')\n", "df.head()"], "c1"),
    code("total = df.sum()\nprint(total)", "c2", count=2),
)


def start(**args: Any) -> ToolExecution:
    full = {"target_notebook": PATH, "cell_language": "python", "old_string": "", **args}
    execution = prepare_tool_call("EditNotebook", CALL_ID, json.dumps(full))
    step = execution.begin()
    assert isinstance(step, SendExec), step
    read = step.message.read_args
    assert (read.path, read.tool_call_id) == (PATH, CALL_ID)
    assert not read.HasField("offset") and not read.HasField("limit")
    return execution


def read_back(execution: ToolExecution, content: str) -> SendExec | ToolOutcome:
    success = agent.ReadSuccess(path=PATH, content=content)
    step = execution.feed(
        agent.ExecClientMessage(id=1, read_result=agent.ReadResult(success=success))
    )
    assert isinstance(step, SendExec | ToolOutcome), step
    return step


def written(step: SendExec | ToolOutcome) -> str:
    """The text the Write sends (and checks it is the edit's Write)."""
    assert isinstance(step, SendExec), step
    write = step.message.write_args
    assert (write.path, write.tool_call_id) == (PATH, CALL_ID)
    assert step.message.exec_id == CALL_ID
    return write.file_text


def finish(execution: ToolExecution) -> ToolOutcome:
    result = agent.WriteResult(success=agent.WriteSuccess(path=PATH))
    done = execution.feed(agent.ExecClientMessage(id=2, write_result=result))
    assert isinstance(done, ToolOutcome), done
    return done


def refused(step: SendExec | ToolOutcome) -> str:
    """An edit-phase error: an error result for the model, the card's EditError, no Write."""
    assert isinstance(step, ToolOutcome), step
    assert step.is_error
    error = step.tool_call.edit_tool_call.result.error
    assert (error.path, error.error, error.model_visible_error) == (
        PATH,
        step.content,
        step.content,
    )
    return step.content


# ---- a new cell ----


def test_a_new_code_cell_is_inserted_with_no_outputs_and_its_source_as_lines() -> None:
    execution = start(cell_idx=1, is_new_cell=True, new_string="x = 1\r\ny = 2\n")
    assert execution.started().edit_tool_call.args.path == PATH
    assert execution.started().edit_tool_call.args.stream_content == "x = 1\ny = 2\n"
    after = json.loads(written(read_back(execution, nbformat_text(SAMPLE))))
    new = after["cells"][1]
    assert new["cell_type"] == "code"
    assert new["execution_count"] is None and new["outputs"] == [] and new["metadata"] == {}
    assert new["source"] == ["x = 1\n", "y = 2\n"]
    assert isinstance(new["id"], str) and new["id"] not in {"md0", "c1", "c2"}  # nbformat 4.5
    assert [after["cells"][i] for i in (0, 2, 3)] == SAMPLE["cells"]
    done = finish(execution)
    assert (done.content, done.is_error) == (
        f"inserted a new code cell at index 1 of {PATH}; the notebook now has 4 cells",
        False,
    )
    success = done.tool_call.edit_tool_call.result.success
    assert success.before_full_file_content == nbformat_text(SAMPLE)
    assert json.loads(success.after_full_file_content) == after
    assert success.lines_added > 0 and success.lines_removed == 0
    assert success.diff_string.startswith(f"--- a/{PATH}\n+++ b/{PATH}\n")


@pytest.mark.parametrize(("language", "kind"), [("markdown", "markdown"), ("raw", "raw")])
def test_a_new_text_cell_takes_its_type_from_the_language(language: str, kind: str) -> None:
    execution = start(cell_idx=3, is_new_cell=True, cell_language=language, new_string="## End")
    after = json.loads(written(read_back(execution, nbformat_text(SAMPLE))))
    new = after["cells"][3]
    assert {key: new[key] for key in ("cell_type", "metadata", "source")} == {
        "cell_type": kind,
        "metadata": {},
        "source": ["## End"],
    }
    assert "outputs" not in new and "execution_count" not in new
    assert after["cells"][:3] == SAMPLE["cells"]
    assert finish(execution).content.startswith(f"inserted a new {kind} cell at index 3")


def test_a_cell_added_to_an_older_notebook_gets_no_id() -> None:
    old = notebook({"cell_type": "code", "metadata": {}, "outputs": [], "source": []}, minor=4)
    execution = start(cell_idx=0, is_new_cell=True, new_string="")
    after = json.loads(written(read_back(execution, nbformat_text(old))))
    assert after["cells"][0] == {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": [],
    }


def test_a_new_cell_past_the_end_is_refused() -> None:
    execution = start(cell_idx=4, is_new_cell=True, new_string="x")
    assert refused(read_back(execution, nbformat_text(SAMPLE))) == (
        f"cannot insert a cell at index 4: {PATH} has 3 cells, so the index must be 3 at most"
    )


# ---- editing a cell ----


def test_editing_a_cell_replaces_the_unique_match_and_keeps_the_file_byte_for_byte() -> None:
    before = nbformat_text(SAMPLE)
    execution = start(cell_idx=1, is_new_cell=False, old_string="q3.csv", new_string="q3_final.csv")
    text = written(read_back(execution, before))
    expected = json.loads(before)
    expected["cells"][1]["source"][1] = "df = pd.read_csv('q3_final.csv')\n"
    assert text == nbformat_text(expected)  # indentation, key order, "—" and outputs unchanged
    done = finish(execution)
    assert (done.content, done.is_error) == (f"edited code cell 1 of {PATH}", False)
    success = done.tool_call.edit_tool_call.result.success
    assert (success.lines_added, success.lines_removed) == (1, 1)
    assert execution.started().edit_tool_call.args.stream_content == "q3_final.csv"


def test_a_string_source_is_written_back_as_lines() -> None:
    execution = start(cell_idx=2, is_new_cell=False, old_string="print(total)", new_string="total")
    after = json.loads(written(read_back(execution, nbformat_text(SAMPLE))))
    assert after["cells"][2]["source"] == ["total = df.sum()\n", "total"]
    assert after["cells"][2]["outputs"] == SAMPLE["cells"][2]["outputs"]
    assert after["cells"][2]["execution_count"] == 2


def test_the_match_spans_the_lines_of_a_list_source() -> None:
    execution = start(
        cell_idx=1,
        is_new_cell=False,
        old_string="pd\r\ndf = pd.read_csv",
        new_string="pd\n\ndf = pd.read_parquet",
    )
    after = json.loads(written(read_back(execution, nbformat_text(SAMPLE))))
    assert after["cells"][1]["source"] == [
        "import pandas as pd\n",
        "\n",
        "df = pd.read_parquet('q3.csv')\n",
        "df.head()",
    ]


def test_an_empty_cell_is_filled_from_an_empty_old_string_and_only_then() -> None:
    value = notebook(code([], "c0", count=None))
    execution = start(cell_idx=0, is_new_cell=False, old_string="", new_string="a = 1\nb = 2")
    after = json.loads(written(read_back(execution, nbformat_text(value))))
    assert after["cells"][0]["source"] == ["a = 1\n", "b = 2"]

    execution = start(cell_idx=1, is_new_cell=False, old_string="", new_string="x")
    assert refused(read_back(execution, nbformat_text(SAMPLE))) == (
        "old_string is empty but cell 1 is not; copy the text to replace from it"
    )


def test_old_string_not_found_in_the_cell() -> None:
    execution = start(cell_idx=0, is_new_cell=False, old_string="import", new_string="x")
    assert refused(read_back(execution, nbformat_text(SAMPLE))).startswith(
        f"old_string was not found in cell 0 of {PATH}; Read the notebook again"
    )


def test_old_string_not_unique_in_the_cell_names_the_count() -> None:
    execution = start(cell_idx=1, is_new_cell=False, old_string="pd", new_string="pandas")
    assert refused(read_back(execution, nbformat_text(SAMPLE))).startswith(
        f"old_string is not unique in cell 1 of {PATH}: found 2 occurrences"
    )


def test_a_cell_index_out_of_range_is_refused() -> None:
    execution = start(cell_idx=3, is_new_cell=False, old_string="x", new_string="y")
    assert refused(read_back(execution, nbformat_text(SAMPLE))) == (
        f"cell_idx 3 is out of range: {PATH} has 3 cells "
        "(indexes start at 0; set is_new_cell to add one)"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"cells": [', f"{PATH} is not valid notebook JSON: "),
        ("", f"{PATH} is not valid notebook JSON: "),
        ('{"metadata": {}}', f"{PATH} is not a notebook: it has no 'cells' array"),
        ('{"cells": {}}', f"{PATH} is not a notebook: it has no 'cells' array"),
        ("[1, 2]", f"{PATH} is not a notebook: it has no 'cells' array"),
        ('{"cells": [3]}', f"cell 0 of {PATH} is not a JSON object"),
        (
            '{"cells": [{"cell_type": "code", "source": 7}]}',
            "cell 0 has a source that is neither text nor a list of lines",
        ),
    ],
)
def test_a_file_that_is_not_a_notebook_is_refused(content: str, expected: str) -> None:
    execution = start(cell_idx=0, is_new_cell=False, old_string="x", new_string="y")
    assert refused(read_back(execution, content)).startswith(expected)


# ---- the file's own layout ----


@pytest.mark.parametrize(("indent", "trailing"), [(2, True), (4, False), ("\t", True)])
def test_the_notebook_keeps_its_indentation_and_trailing_newline(
    indent: int | str, trailing: bool
) -> None:
    before = json.dumps(SAMPLE, indent=indent, ensure_ascii=False) + ("\n" if trailing else "")
    execution = start(cell_idx=0, is_new_cell=False, old_string="draft", new_string="final")
    expected = json.loads(before)
    expected["cells"][0]["source"][1] = "Numbers for Q3 — final"
    assert written(read_back(execution, before)) == (
        json.dumps(expected, indent=indent, ensure_ascii=False) + ("\n" if trailing else "")
    )


def test_a_file_escaping_non_ascii_keeps_escaping_it() -> None:
    before = json.dumps(SAMPLE, indent=1, ensure_ascii=True) + "\n"
    execution = start(cell_idx=0, is_new_cell=False, old_string="Sales", new_string="Café")
    text = written(read_back(execution, before))
    assert text.isascii() and "Caf\\u00e9" in text and "\\u2014" in text


def test_a_compact_notebook_falls_back_to_nbformats_one_space() -> None:
    before = json.dumps(SAMPLE, separators=(",", ":"))
    execution = start(cell_idx=0, is_new_cell=False, old_string="draft", new_string="final")
    text = written(read_back(execution, before))
    assert text.startswith('{\n "cells": [\n  {\n') and not text.endswith("\n")


def test_a_crlf_notebook_is_written_back_with_crlf() -> None:
    before = nbformat_text(SAMPLE).replace("\n", "\r\n")
    execution = start(cell_idx=2, is_new_cell=False, old_string="sum()", new_string="mean()")
    text = written(read_back(execution, before))
    expected = json.loads(nbformat_text(SAMPLE))
    expected["cells"][2]["source"] = ["total = df.mean()\n", "print(total)"]
    assert text == nbformat_text(expected).replace("\n", "\r\n")
    done = finish(execution)
    success = done.tool_call.edit_tool_call.result.success
    assert success.before_full_file_content == before
    assert success.after_full_file_content == text
    # The string source became a list: one JSON line out, four in ("[", two lines, "]").
    assert (success.lines_added, success.lines_removed) == (4, 1)


# ---- the lifecycle's other ends ----


def test_a_missing_notebook_is_an_error_and_nothing_is_written() -> None:
    execution = start(cell_idx=0, is_new_cell=True, new_string="x")
    missing = agent.ReadResult(file_not_found=agent.ReadFileNotFound(path=PATH))
    done = execution.feed(agent.ExecClientMessage(id=1, read_result=missing))
    assert isinstance(done, ToolOutcome) and done.is_error
    assert done.content == f"notebook not found: {PATH} (create a notebook file with Write first)"
    assert done.tool_call.edit_tool_call.result.file_not_found.path == PATH


def test_a_refused_write_is_the_models_error() -> None:
    execution = start(cell_idx=0, is_new_cell=False, old_string="draft", new_string="final")
    written(read_back(execution, nbformat_text(SAMPLE)))
    result = agent.WriteResult(rejected=agent.WriteRejected(reason="user said no"))
    done = execution.feed(agent.ExecClientMessage(id=2, write_result=result))
    assert isinstance(done, ToolOutcome) and done.is_error
    assert done.content == f"the edit of {PATH} was rejected: user said no"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"cell_idx": 0, "is_new_cell": True, "new_string": "x"}, "'target_notebook' is required"),
        (
            {"target_notebook": PATH, "is_new_cell": True, "new_string": "x"},
            "'cell_idx' is required",
        ),
        (
            {"target_notebook": PATH, "cell_idx": -1, "is_new_cell": True, "new_string": "x"},
            "'cell_idx' must be between 0 and",
        ),
        (
            {"target_notebook": PATH, "cell_idx": 1.5, "is_new_cell": True, "new_string": "x"},
            "'cell_idx' must be a whole number",
        ),
        ({"target_notebook": PATH, "cell_idx": 0, "new_string": "x"}, "'is_new_cell' is required"),
        (
            {"target_notebook": PATH, "cell_idx": 0, "is_new_cell": True, "new_string": "x"},
            "'cell_language' is required",
        ),
        (
            {"target_notebook": PATH, "cell_idx": 0, "is_new_cell": False, "new_string": "x"},
            "'old_string' is required",
        ),
        (
            {"target_notebook": PATH, "cell_idx": 0, "is_new_cell": False, "old_string": "x"},
            "'new_string' is required",
        ),
    ],
)
def test_arguments_of_the_wrong_shape_are_errors_without_a_request(
    args: dict[str, Any], expected: str
) -> None:
    execution = prepare_tool_call("EditNotebook", CALL_ID, json.dumps(args))
    assert isinstance(execution, InvalidCall)
    done = execution.begin()
    assert done.is_error
    assert done.content.startswith(f"invalid arguments for EditNotebook: {expected}"), done.content
    assert done.tool_call.edit_tool_call.result.error.error == done.content
