"""Cursor's terminal files: where the editor keeps a shell's output, ``<folder>/<shell id>.txt``.

A backgrounded Shell keeps writing its output there (tools.md §2.1), and AwaitShell reads it.
The file may open with a metadata header between two ``---`` lines (pid, cwd, command: the
prompt calls it the session's header), then holds the output, and once the command ended a
footer: a last ``---`` block of ``key: value`` lines holding ``exit_code: N``. Only the output
between them is the command's; the metadata is not (a pattern must not match a header key).

A file with no header at all is read the simple way (the reference's own test file is just
output followed by an ``exit_code:`` line): then the first ``exit_code:`` line anywhere is the
exit. With a header, only the footer can say the command ended, so output that happens to print
``exit_code: 1`` does not end a wait.
"""

from __future__ import annotations

import re

import msgspec

FENCE = "---"
EXIT_CODE_KEY = "exit_code:"
_KEY_LINE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*:")
_SINT32 = (-(2**31), 2**31 - 1)


class TerminalFile(msgspec.Struct, frozen=True):
    """One read of a terminal file: the command's output and its exit code once it ended."""

    output: str
    exit_code: int | None


def terminal_file_path(folder: str, shell_id: str) -> str:
    """``<folder>/<shell_id>.txt`` with the folder's own separator (``\\`` on Windows)."""
    separator = "\\" if "\\" in folder and "/" not in folder else "/"
    return f"{folder.rstrip(separator)}{separator}{shell_id}.txt"


def _is_fence(line: str) -> bool:
    return line.rstrip("\r\n") == FENCE


def _exit_code(lines: list[str]) -> int | None:
    """The first ``exit_code: N`` line that holds a whole number, clamped to sint32."""
    for line in lines:
        if not line.startswith(EXIT_CODE_KEY):
            continue
        try:
            code = int(line[len(EXIT_CODE_KEY) :].strip())
        except ValueError:
            continue
        return min(max(code, _SINT32[0]), _SINT32[1])
    return None


def _footer_start(lines: list[str], start: int) -> int | None:
    """Where the trailing exit record begins: a ``---`` line, then ``key: value`` lines one
    of which is ``exit_code:``, then (unless it is still being written) a closing ``---``."""
    end = len(lines)
    if end > start and _is_fence(lines[end - 1]):
        end -= 1
    first = end
    while first > start and _KEY_LINE.match(lines[first - 1]):
        first -= 1
    if first in (end, start) or not _is_fence(lines[first - 1]):
        return None
    if _exit_code(lines[first:end]) is None:
        return None
    return first - 1


def parse_terminal_file(text: str) -> TerminalFile:
    """The output (header and footer left out) and the exit code, None while it runs."""
    lines = text.splitlines(keepends=True)
    start = 0
    has_header = bool(lines) and _is_fence(lines[0])
    if has_header:
        closing = next((i for i in range(1, len(lines)) if _is_fence(lines[i])), None)
        if closing is None:
            return TerminalFile("", None)  # the header is still being written
        start = closing + 1
    footer = _footer_start(lines, start)
    if footer is not None:
        return TerminalFile("".join(lines[start:footer]), _exit_code(lines[footer:]))
    body = lines[start:]
    return TerminalFile("".join(body), None if has_header else _exit_code(body))
