"""The default-model routes (``wire/default_model.py``), answered locally from the store.

A Connect unary answer (``application/proto``); without an enabled model there is nothing to
name, so the answer is Connect's ``failed_precondition`` error saying what to do.
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from wire.default_model import DEFAULT_MODEL_ROUTES, default_model_answer
from wire.http.catalog_routes import ModelLoader
from wire.http.responses import json_error
from wire.log import log_event

logger = logging.getLogger("cursor_server.catalog")


class DefaultModelRoutes:
    def __init__(self, load_models: ModelLoader) -> None:
        self._load_models = load_models

    def register(self, app: web.Application) -> None:
        for path in DEFAULT_MODEL_ROUTES:
            app.router.add_post(path, self.handle)

    async def handle(self, request: web.Request) -> web.Response:
        await request.read()
        kind = DEFAULT_MODEL_ROUTES[request.path]
        try:
            models = await asyncio.to_thread(self._load_models)
        except Exception as exc:  # a database query: a store failure (500)
            log_event(logger, logging.ERROR, "loading user models failed", error=repr(exc))
            return json_error(500, "internal", f"store error: {exc}")
        body = default_model_answer(kind, models)
        if body is None:
            return json_error(
                400,
                "failed_precondition",
                "no model is enabled: add and enable one in the console (Models)",
            )
        log_event(logger, logging.INFO, "answered default model", path=request.path)
        return web.Response(body=body, content_type="application/proto")
