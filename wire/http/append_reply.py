"""A BidiAppend's answer as a value (``wire.peer_frames.AppendReply``), whoever made it: the
run's holder answering its own client, or a peer's forwarded append; and the HTTP response
built from it, the same on both sides."""

from __future__ import annotations

from typing import Final

from aiohttp import web

from wire.errors import ConnectError, http_error_json
from wire.http.proxy import ForwardedResponse, header_text
from wire.peer_frames import AppendReply

_JSON: Final = ((b"content-type", b"application/json"),)

# An append taken: 200 with an empty protobuf body.
ACCEPTED: Final = AppendReply(0, 200, "", ((b"content-type", b"application/proto"),), b"")
# What an instance answers a forwarded request for a run it does not hold (it restarted on the
# same address, or the route moved): the forwarder asks the database again.
MISDIRECTED: Final = 421


def error_reply(error: ConnectError) -> AppendReply:
    """A refusal, as ``connect_error_response`` answers it."""
    body = http_error_json(error.code.value, error.message)
    return AppendReply(0, error.http_status, "", _JSON, body)


def misdirected_reply(request_id: str) -> AppendReply:
    body = http_error_json("unavailable", f"run {request_id} is not held by this instance")
    return AppendReply(0, MISDIRECTED, "", _JSON, body)


async def reply_response(request: web.Request, reply: AppendReply) -> web.StreamResponse:
    """``reply`` to the client of ``request``: an upstream's answer byte for byte, ours with
    its status, headers and body."""
    if reply is ACCEPTED:
        return web.Response(status=200, body=b"", content_type="application/proto")
    headers = [(header_text(name), header_text(value)) for name, value in reply.headers]
    if not reply.verbatim:
        return web.Response(status=reply.status, body=reply.body, headers=headers)
    response = ForwardedResponse(status=reply.status, reason=reply.reason or None, headers=headers)
    await response.prepare(request)
    await response.write(reply.body)
    await response.write_eof()
    return response
