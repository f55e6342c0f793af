"""EditNotebook: one cell of a Jupyter notebook edited, or a new one inserted, server-side.

The same lifecycle as StrReplace (``wire.tools.edit``): a hidden Read of the ``.ipynb`` file,
the change made here on its JSON, then a Write of the whole file. Only the cell the call names
changes: the notebook is written back with the indentation it had (nbformat's one space unless
the file shows another), its trailing newline (or none), its key order and its other cells and
metadata as they were. A cell's source is written as a list of lines, as nbformat does.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from wire.json_input import decode_json
from wire.tools.args import ToolArgs
from wire.tools.base import INT32_MAX, ExecContext, ToolChannel, ToolDefinition
from wire.tools.edit import EditExecution, EditRefused
from wire.tools.text import lf, plural

# The cell types a new cell takes from ``cell_language``; any other language is a code cell.
_TEXT_CELL_TYPES = frozenset({"markdown", "raw"})
# The indentation of the notebook's first key: ``{`` then a line break, then the indent.
_FIRST_INDENT = re.compile(r"\A\s*\{[ \t]*\n([ \t]+)\S")
NBFORMAT_INDENT = " "


def source_lines(text: str) -> list[str]:
    """A cell's source as nbformat stores it: lines that keep their ``\\n``, the last maybe not."""
    return text.splitlines(keepends=True)


def _cell_source(cell: dict[str, Any], index: int) -> str:
    """The cell's source as one LF text (nbformat allows a string or a list of strings)."""
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise EditRefused(f"cell {index} has a source that is neither text nor a list of lines")
    return lf(source)


class NotebookLayout:
    """How the notebook file was written, so the new text is written the same way."""

    def __init__(self, text: str) -> None:
        match = _FIRST_INDENT.match(text)
        self.indent = match.group(1) if match else NBFORMAT_INDENT
        self.trailing_newline = text.endswith("\n")
        # Keep \\u escapes only in a file that used them for non-ASCII text and has none raw.
        self.ensure_ascii = text.isascii() and "\\u" in text

    def dump(self, notebook: dict[str, Any]) -> str:
        text = json.dumps(notebook, indent=self.indent, ensure_ascii=self.ensure_ascii)
        return text + "\n" if self.trailing_newline else text


class EditNotebookExecution(EditExecution):
    """A notebook cell edited (``old_string`` → ``new_string``) or inserted (``is_new_cell``)."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(EDIT_NOTEBOOK, call_id, args.required_string("target_notebook"))
        cell_idx = args.integer("cell_idx", minimum=0, maximum=INT32_MAX, required=True)
        assert cell_idx is not None
        self.cell_idx = cell_idx
        self.is_new_cell = bool(args.boolean("is_new_cell", required=True))
        self.new_string = args.required_string("new_string")
        if self.is_new_cell:
            self.cell_language = args.required_string("cell_language")
            self.old_string = args.string("old_string") or ""
        else:
            self.cell_language = args.string("cell_language") or ""
            self.old_string = args.required_string("old_string")
        self._cell_type = ""
        self._cell_count = 0

    def _streamed(self) -> str:
        return self.new_string

    def _missing(self) -> str:
        return f"notebook not found: {self.path} (create a notebook file with Write first)"

    def _patch(self, before: str) -> str:
        try:
            notebook = decode_json(before)
        except ValueError as exc:
            raise EditRefused(f"{self.path} is not valid notebook JSON: {exc}") from exc
        cells = notebook.get("cells") if isinstance(notebook, dict) else None
        if not isinstance(cells, list):
            raise EditRefused(f"{self.path} is not a notebook: it has no 'cells' array")
        if self.is_new_cell:
            self._insert(notebook, cells)
        else:
            self._edit(cells)
        self._cell_count = len(cells)
        return NotebookLayout(before).dump(notebook)

    def _insert(self, notebook: dict[str, Any], cells: list[Any]) -> None:
        if self.cell_idx > len(cells):
            raise EditRefused(
                f"cannot insert a cell at index {self.cell_idx}: {self.path} has "
                f"{plural(len(cells), 'cell')}, so the index must be {len(cells)} at most"
            )
        language = self.cell_language.strip().lower()
        self._cell_type = language if language in _TEXT_CELL_TYPES else "code"
        cell: dict[str, Any] = {"cell_type": self._cell_type}
        if self._cell_type == "code":
            cell["execution_count"] = None
        if _cells_have_ids(notebook, cells):
            cell["id"] = _new_cell_id(self.call_id, cells)
        cell["metadata"] = {}
        if self._cell_type == "code":
            cell["outputs"] = []
        cell["source"] = source_lines(lf(self.new_string))
        cells.insert(self.cell_idx, cell)

    def _edit(self, cells: list[Any]) -> None:
        index = self.cell_idx
        if index >= len(cells):
            raise EditRefused(
                f"cell_idx {index} is out of range: {self.path} has "
                f"{plural(len(cells), 'cell')} (indexes start at 0; set is_new_cell to add one)"
            )
        cell = cells[index]
        if not isinstance(cell, dict):
            raise EditRefused(f"cell {index} of {self.path} is not a JSON object")
        source = _cell_source(cell, index)
        old, new = lf(self.old_string), lf(self.new_string)
        if not old and source:
            raise EditRefused(
                f"old_string is empty but cell {index} is not; copy the text to replace from it"
            )
        count = source.count(old) if old else 1
        if count == 0:
            raise EditRefused(
                f"old_string was not found in cell {index} of {self.path}; Read the notebook "
                "again and copy the text exactly, including whitespace"
            )
        if count > 1:
            raise EditRefused(
                f"old_string is not unique in cell {index} of {self.path}: found {count} "
                "occurrences; include more of the cell's text to make it unique"
            )
        cell["source"] = source_lines(source.replace(old, new, 1) if old else new)
        self._cell_type = str(cell.get("cell_type", "code"))

    def _success_text(self) -> str:
        if self.is_new_cell:
            return (
                f"inserted a new {self._cell_type} cell at index {self.cell_idx} of {self.path}; "
                f"the notebook now has {plural(self._cell_count, 'cell')}"
            )
        return f"edited {self._cell_type} cell {self.cell_idx} of {self.path}"


def _cells_have_ids(notebook: dict[str, Any], cells: list[Any]) -> bool:
    """nbformat 4.5 and later give every cell an ``id``; a new cell then needs one too."""
    if any(isinstance(cell, dict) and "id" in cell for cell in cells):
        return True
    major, minor = notebook.get("nbformat"), notebook.get("nbformat_minor")
    return isinstance(major, int) and isinstance(minor, int) and (major, minor) >= (4, 5)


def _new_cell_id(call_id: str, cells: list[Any]) -> str:
    """An id no other cell has, derived from the call (the same call gives the same id)."""
    taken = {cell.get("id") for cell in cells if isinstance(cell, dict)}
    for attempt in range(len(taken) + 1):
        candidate = hashlib.sha256(f"{call_id}\0{attempt}".encode()).hexdigest()[:8]
        if candidate not in taken:
            return candidate
    raise AssertionError("unreachable: more candidates than taken ids")


# The registry row (``wire.tools.registry.REGISTRY``).
EDIT_NOTEBOOK = ToolDefinition(
    name="EditNotebook",
    channel=ToolChannel.EXEC,
    tool_call_field="edit_tool_call",
    execution=EditNotebookExecution,
    error_path="result.error",
    error_fields=("error", "model_visible_error"),
    streamed_content_field="new_string",
    streamed_path_field="target_notebook",
)
