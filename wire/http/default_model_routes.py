"""The default-model routes (``wire/default_model.py``), answered locally from the store, or
relayed to Cursor's backend when Auto goes there.

A Connect unary answer (``application/proto``); without a model to name (none enabled, or the
Auto setting's model disabled) the answer is Connect's ``failed_precondition`` error saying
what to do.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from wire.default_model import DEFAULT_MODEL_ROUTES, NoDefault, default_model_answer
from wire.http.responses import json_error
from wire.log import log_event
from wire.model_catalog import CatalogModel
from wire.model_routing import RELAY, AutoTarget

logger = logging.getLogger("cursor_server.catalog")

# The enabled user models in catalog order and where Auto goes; blocking (database reads), so
# it runs in a worker thread.
DefaultLoader = Callable[[], tuple[Sequence[CatalogModel], AutoTarget]]
# Sends a request to Cursor's backend and answers with what it answers (the reverse proxy).
Forward = Callable[[web.Request], Awaitable[web.StreamResponse]]


class DefaultModelRoutes:
    def __init__(self, load: DefaultLoader, forward: Forward) -> None:
        self._load = load
        self._forward = forward

    def register(self, app: web.Application) -> None:
        for path in DEFAULT_MODEL_ROUTES:
            app.router.add_post(path, self.handle)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        kind = DEFAULT_MODEL_ROUTES[request.path]
        try:
            models, auto = await asyncio.to_thread(self._load)
        except Exception as exc:  # a database query: a store failure (500)
            await request.read()
            log_event(logger, logging.ERROR, "loading user models failed", error=repr(exc))
            return json_error(500, "internal", f"store error: {exc}")
        try:
            body = default_model_answer(kind, models, auto)
        except NoDefault as exc:
            await request.read()
            return json_error(400, "failed_precondition", exc.message)
        if body is RELAY:
            # The body is still unread: the proxy streams it upstream as it came.
            return await self._forward(request)
        await request.read()
        log_event(logger, logging.INFO, "answered default model", path=request.path)
        return web.Response(body=body, content_type="application/proto")
