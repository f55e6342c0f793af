"""The process's log layout (``wire.log.LineFormatter``): unchanged for a single server; in a
worker every line, a traceback's too, names the worker."""

from __future__ import annotations

import logging
import re
import sys

from wire.log import LineFormatter

HEADER = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"


def record(message: str, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            info = sys.exc_info()
    return logging.LogRecord("cursor_server.x", logging.WARNING, __file__, 1, message, (), info)


def test_a_single_server_line_is_unchanged() -> None:
    line = LineFormatter().format(record("event k=v"))
    assert re.fullmatch(rf"{HEADER} WARNING cursor_server\.x event k=v", line), line


def test_every_line_of_a_worker_names_it() -> None:
    formatter = LineFormatter("w3")
    assert re.fullmatch(
        rf"{HEADER} WARNING cursor_server\.x worker=w3 event k=v",
        formatter.format(record("event k=v")),
    )
    lines = formatter.format(record("failed", exc=True)).split("\n")
    assert len(lines) > 3  # the traceback
    assert re.match(rf"{HEADER} WARNING cursor_server\.x worker=w3 failed$", lines[0])
    assert all(line.startswith("worker=w3 ") for line in lines[1:]), lines
    assert lines[-1] == "worker=w3 ValueError: boom"
