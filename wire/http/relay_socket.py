"""The private socket our HTTP/2 relay reaches the main app through, and how the app knows a
request came that way.

The relay's requests were already let in at the HTTP/2 edge (its allow-list and token, on the
client's own address), so the main app must recognise them, and no one else may pass for
them. A mark in a header could leak (to whatever the relay was made to fetch, or in a log)
and would then be a credential anyone could present. Instead the relay connects to a Unix
socket of the main app's own, made in a fresh directory only this user can enter (0700): a
request is the relay's when it arrived on that socket, which nothing a client sends can
change. The relay's URL names no host at all, so no path it is given can send it elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

import httpx
from aiohttp import web

SOCKET_NAME = "app.sock"


class RelaySocket:
    """One process's relay socket: its path, the app site on it, and the relay's client."""

    def __init__(self) -> None:
        self._directory = tempfile.mkdtemp(prefix="cursor-server-relay-")  # mode 0700
        self.path = os.path.join(self._directory, SOCKET_NAME)

    def carries(self, request: web.Request) -> bool:
        """Whether ``request`` arrived on this socket (a TCP peer's sockname is a tuple)."""
        transport = request.transport
        return transport is not None and transport.get_extra_info("sockname") == self.path

    async def start(self, runner: web.AppRunner) -> None:
        """Serve the app on the socket too (after ``runner.setup()``)."""
        await web.UnixSite(runner, self.path).start()

    def client(self) -> httpx.AsyncClient:
        """Through the socket only: no environment proxies, no redirects, no read deadline
        (streams)."""
        return httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=self.path),
            trust_env=False,
            follow_redirects=False,
            timeout=httpx.Timeout(None, connect=5.0),
        )

    def remove(self) -> None:
        """Remove the socket's directory (the site is closed with its runner)."""
        with contextlib.suppress(OSError):
            shutil.rmtree(self._directory)
