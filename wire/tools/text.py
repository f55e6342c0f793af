"""Text helpers the tools share when they word a result for the model."""

from __future__ import annotations


def lf(text: str) -> str:
    """CRLF and lone CR become LF: the edit tools work on one line-ending form."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def line_count(text: str) -> int:
    """Lines of a text; a last line without its newline counts, an empty text has none."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def join_note(text: str, note: str) -> str:
    """``note`` on its own line after ``text`` (a truncation or location remark)."""
    if not text:
        return note
    return text + ("" if text.endswith("\n") else "\n") + note


def plural(count: int, word: str) -> str:
    """``1 line``, ``2 lines``: counts in the model's text read as English."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
