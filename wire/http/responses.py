"""HTTP-level error responses: a status and JSON ``{"code","message"}``."""

from __future__ import annotations

from aiohttp import web

from wire.errors import ConnectError, http_error_json


def json_error(status: int, code: str, message: str) -> web.Response:
    """An error answered before any stream exists."""
    return web.Response(
        status=status, body=http_error_json(code, message), content_type="application/json"
    )


def connect_error_response(error: ConnectError) -> web.Response:
    """A ``ConnectError`` as an HTTP error response."""
    return json_error(error.http_status, error.code.value, error.message)
