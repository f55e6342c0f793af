"""One log line per event: ``event key=value ...``, values quoted when they need it.

Pure formatting, so every module logs the same shape and tests can parse it back; and the
process's one line layout around it (``configure_logging``), which a test reading a server's
log parses too.
"""

from __future__ import annotations

import logging
import sys

import msgspec


def _format_value(value: object) -> str:
    text = value if isinstance(value, str) else str(value)
    if text and all(ch.isprintable() and ch not in ' "=' for ch in text):
        return text
    return msgspec.json.encode(_encodable(text)).decode()


def _encodable(text: str) -> str:
    """``text`` with lone surrogates (bytes a client sent that were not UTF-8, kept by
    ``surrogateescape``) shown as ``\\xNN``: JSON, and UTF-8, cannot hold them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = text.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "backslashreplace")
    return text


def format_event(event: str, fields: dict[str, object]) -> str:
    """``event k=v k2="v 2"``; fields whose value is None are left out."""
    parts = [event]
    parts.extend(
        f"{key}={_format_value(value)}" for key, value in fields.items() if value is not None
    )
    return " ".join(parts)


def log_event(logger: logging.Logger, level: int, event: str, **fields: object) -> None:
    """Log one event line if the level is enabled."""
    if logger.isEnabledFor(level):
        logger.log(level, format_event(event, fields))


LINE_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class LineFormatter(logging.Formatter):
    """The process's line layout; in a worker (``run.py --workers N``) every line names the
    worker after the logger's name (``... INFO cursor_server worker=w1 event k=v``), and each
    further line of one record (a traceback) starts with the same ``worker=w1``, so every line
    of the one stream the workers share says whose it is."""

    def __init__(self, worker: str | None = None) -> None:
        self._tag = "" if worker is None else f"worker={worker} "
        escaped = self._tag.replace("%", "%%")
        super().__init__(LINE_FORMAT.replace("%(message)s", f"{escaped}%(message)s"))

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if not self._tag or "\n" not in text:
            return text
        first, *rest = text.split("\n")
        return "\n".join([first, *(self._tag + line for line in rest)])


def configure_logging(level: str, worker: str | None = None) -> None:
    """Log lines to stderr; ``worker``: the name every line of a worker process carries."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LineFormatter(worker))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    # Third-party request logs would repeat (and could leak) what our own lines say; peewee's
    # debug lines carry SQL parameters, provider keys included.
    for noisy in ("httpx", "httpcore", "aiohttp.access", "peewee"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
