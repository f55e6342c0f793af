"""The fakes' answer to a client that leaves while they read its body.

The server under test may cancel a call while its request body is still on the way (a run
that ends mid-upload); aiohttp then raises ``ConnectionResetError`` from the fake's
``request.read()`` and logs it as an ERROR line, which the suite's ERROR-line check would
count against whatever test was running. For a fake, a peer that went away is not a fault.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def client_left_quietly(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Run ``handler``; a connection reset after the client's transport closed ends the
    request with a response nobody reads. A reset while the client is still there is
    raised as before."""
    try:
        return await handler(request)
    except ConnectionResetError:
        if request.transport is not None and not request.transport.is_closing():
            raise
        return web.Response(status=499, text="client left")
