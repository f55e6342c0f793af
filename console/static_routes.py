"""The console's browser app, served by the server itself from package data (``console/static``).

``GET /console`` redirects to ``/console/``, which answers ``index.html`` with every asset
reference pointing under ``/console/assets/<version>/``: the version is a hash of every file's
content, so an asset URL names exactly one content and is cached for a year (``immutable``),
while ``index.html`` itself is revalidated on every load. A changed file changes the version and
with it every URL, so a browser never mixes old and new files. The app routes by the URL's hash
(``#/models``), so a reload of any page loads ``index.html`` again. No build step, no network.

Every file is gzip-compressed once, when the assets are read at startup (never per request),
and sent compressed with ``Content-Encoding: gzip`` to a client whose ``Accept-Encoding``
allows it (``Vary: Accept-Encoding`` either way); the version hashes the uncompressed content.
gzip rather than brotli: browsers offer ``br`` only over HTTPS, and the console is mostly
reached over plain HTTP on loopback. ``/favicon.ico`` is the app's own icon (an SVG), answered
here so a browser's request for it never goes to the upstream proxy.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
from importlib.resources import files
from importlib.resources.abc import Traversable

from aiohttp import web

from wire.edge_rules import FAVICON_PATH
from wire.http.responses import json_error

CONSOLE_PATH = "/console"
ASSETS_PATH = f"{CONSOLE_PATH}/assets"
ASSETS_PLACEHOLDER = "%ASSETS%"  # in index.html: the versioned asset prefix
INDEX = "index.html"
FAVICON = "favicon.svg"  # answered at FAVICON_PATH too
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
# No other site may frame the console (a framed page could be clicked into saving or deleting),
# and no file is read as another type than it says.
NO_FRAMING = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}
_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".html": "text/html",
    ".svg": "image/svg+xml",
}
GZIP = "gzip"


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` value allows gzip (named, or ``*``, without ``q=0``)."""
    allowed: dict[str, bool] = {}
    for item in accept_encoding.lower().split(","):
        name, _, params = item.partition(";")
        quality = params.strip().removeprefix("q=").strip() if "q=" in params else "1"
        try:
            allowed[name.strip()] = float(quality) > 0
        except ValueError:
            allowed[name.strip()] = False
    return allowed.get(GZIP, allowed.get("*", False))


class Encoded:
    """One file as sent: its bytes, and gzip's when that is smaller (compressed once)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        packed = gzip.compress(data, compresslevel=9, mtime=0)
        self.gzipped = packed if len(packed) < len(data) else None

    def body(self, request: web.Request) -> tuple[bytes, dict[str, str]]:
        """The body for ``request`` and its encoding headers."""
        headers = {"Vary": "Accept-Encoding"}
        if self.gzipped is not None and accepts_gzip(request.headers.get("Accept-Encoding", "")):
            headers["Content-Encoding"] = GZIP
            return self.gzipped, headers
        return self.data, headers


def _walk(root: Traversable, prefix: str = "") -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for entry in sorted(root.iterdir(), key=lambda item: item.name):
        path = f"{prefix}{entry.name}"
        if entry.is_dir():
            found.update(_walk(entry, f"{path}/"))
        elif not entry.name.startswith("."):
            found[path] = entry.read_bytes()
    return found


class StaticAssets:
    """The app's files, read once at startup; ``version`` names this exact set of contents."""

    def __init__(self, assets: dict[str, bytes]) -> None:
        if INDEX not in assets:
            raise ValueError(f"console assets have no {INDEX}")
        digest = hashlib.sha256()
        for path, data in sorted(assets.items()):
            digest.update(path.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
        self.version = digest.hexdigest()[:16]
        self._assets = assets
        self.index = assets[INDEX].replace(
            ASSETS_PLACEHOLDER.encode(), f"{ASSETS_PATH}/{self.version}".encode()
        )
        self.encoded_index = Encoded(self.index)
        self._encoded = {path: Encoded(data) for path, data in assets.items() if path != INDEX}

    @classmethod
    def packaged(cls) -> StaticAssets:
        return cls(_walk(files("console") / "static"))

    def get(self, path: str) -> bytes | None:
        return None if path == INDEX else self._assets.get(path)

    def encoded(self, path: str) -> Encoded | None:
        """``path``'s file as sent (``index.html`` only through ``encoded_index``)."""
        return self._encoded.get(path)


def content_type(path: str) -> str:
    suffix = path[path.rfind(".") :] if "." in path else ""
    return _TYPES.get(suffix) or mimetypes.guess_type(path)[0] or "application/octet-stream"


class StaticRoutes:
    """``/console``, ``/console/`` and ``/console/assets/...``: the app, never the upstream."""

    def __init__(self, assets: StaticAssets | None = None) -> None:
        self._assets = assets or StaticAssets.packaged()

    def register(self, app: web.Application) -> None:
        # Every method: a POST to the bare path must not fall through to the upstream proxy.
        app.router.add_route("*", CONSOLE_PATH, self.redirect)
        app.router.add_get(f"{CONSOLE_PATH}/", self.index)
        app.router.add_get(f"{ASSETS_PATH}/{{version}}/{{path:.+}}", self.asset)
        app.router.add_get(FAVICON_PATH, self.favicon)

    async def redirect(self, request: web.Request) -> web.StreamResponse:
        if request.method not in ("GET", "HEAD"):
            response = json_error(
                405, "unimplemented", f"{request.method} is not allowed on {request.path}"
            )
            response.headers["Allow"] = "GET, HEAD"
            return response
        raise web.HTTPPermanentRedirect(f"{CONSOLE_PATH}/")

    async def index(self, request: web.Request) -> web.StreamResponse:
        body, encoding = self._assets.encoded_index.body(request)
        return web.Response(
            body=body,
            headers={
                "Content-Type": "text/html; charset=utf-8",
                "Cache-Control": REVALIDATE,
                **encoding,
                **NO_FRAMING,
            },
        )

    async def asset(self, request: web.Request) -> web.StreamResponse:
        version, path = request.match_info["version"], request.match_info["path"]
        # An old page asking for an asset that may have changed since: never cache the answer.
        cache = IMMUTABLE if version == self._assets.version else REVALIDATE
        return self._file(request, path, cache)

    async def favicon(self, request: web.Request) -> web.StreamResponse:
        """The app's icon at the path every browser asks for; revalidated, it may change."""
        return self._file(request, FAVICON, REVALIDATE)

    def _file(self, request: web.Request, path: str, cache: str) -> web.StreamResponse:
        encoded = self._assets.encoded(path)
        if encoded is None:
            return json_error(404, "not_found", f"no console asset {path}")
        body, encoding = encoded.body(request)
        return web.Response(
            body=body,
            headers={
                "Content-Type": content_type(path),
                "Cache-Control": cache,
                **encoding,
                **NO_FRAMING,
            },
        )
