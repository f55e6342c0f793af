"""Server work: what a tool call needs the server itself to do (a web search, an image).

A tool's state machine asks for it with ``wire.tools.base.ServerWork(request)``; the
ToolRuntimeActor hands the request to a ``ServerWorkers`` and goes on with its mailbox. The
server's ``LoopServerWorkers`` runs the handler registered for the request's type as a task
on the loop (``actors.loop.bridge.LoopTasks``) and calls ``done`` with the handler's typed
answer; a handler that raises, or a request no handler takes, answers ``ServerWorkFailed``
with a message safe for the model (the exception's type and text are logged, never sent: a
handler's error may hold a URL with a key). ``cancel`` on the returned handle stops the task.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from actors.loop.bridge import LoopTasks
from wire.log import log_event
from wire.tools.base import ServerWorkFailed

logger = logging.getLogger("cursor_server.server_work")

ServerWorkHandler = Callable[[Any], Awaitable[Any]]
"""Does one kind of work on the loop: a typed request in, a typed answer out."""


class WorkHandle(Protocol):
    def cancel(self) -> bool: ...


class ServerWorkers(Protocol):
    """Runs server work off the caller's mailbox; ``done`` is called once, from any thread."""

    def start(self, request: Any, done: Callable[[Any], None]) -> WorkHandle: ...


class LoopServerWorkers:
    """Server work as tasks on the server's loop, one handler per request type."""

    def __init__(self, tasks: LoopTasks, handlers: Mapping[type, ServerWorkHandler]) -> None:
        self._tasks = tasks
        self._handlers = dict(handlers)

    def start(self, request: Any, done: Callable[[Any], None]) -> WorkHandle:
        handler = self._handlers.get(type(request))
        return self._tasks.submit(self._run(handler, request, done))

    async def _run(
        self, handler: ServerWorkHandler | None, request: Any, done: Callable[[Any], None]
    ) -> None:
        kind = type(request).__name__
        if handler is None:
            done(ServerWorkFailed(f"this server cannot do {kind} work"))
            return
        try:
            answer = await handler(request)
        except Exception as exc:  # a bug or an unexpected failure: the call still ends
            log_event(
                logger, logging.WARNING, "server work failed", kind=kind, error=type(exc).__name__
            )
            answer = ServerWorkFailed(f"{kind} failed on the server")
        done(answer)
