"""Telling an actor that may have stopped: the message is dropped, with a debug line at most.

A run's actors stop in an order no message can follow: the run stops its children while one of
them is still handling a job whose reply (or next request) goes to a sibling that has already
gone. That message has nobody left to care about it; raising ``ActorDeadError`` would fail the
teller and log a traceback for what is an ordinary end.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import pykka

from wire.log import log_event


class Tellable(Protocol):
    def tell(self, message: Any) -> None: ...


def tell_if_alive(to: Tellable, message: object, logger: logging.Logger, **context: object) -> bool:
    """Tell ``to`` ``message``; False (and a debug line) when it has stopped."""
    try:
        to.tell(message)
    except pykka.ActorDeadError:
        log_event(
            logger,
            logging.DEBUG,
            "message to a stopped actor dropped",
            message=type(message).__name__,
            **context,
        )
        return False
    return True
