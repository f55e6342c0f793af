"""The model-list routes: Cursor's official answer with the user's enabled models appended.

``AvailableModels`` and both ``GetUsableModels`` routes are forwarded to the same upstream, with
the same httpx client, as the reverse proxy, but buffered: the answer must be uncompressed and
complete before the user models can be appended (``wire.model_catalog.splice``). Only a 2xx is
touched; anything else goes back as the upstream sent it, minus hop-by-hop headers.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

import httpx
from aiohttp import web
from multidict import CIMultiDict

from wire.connect import gunzip_limited
from wire.errors import Code, ConnectError
from wire.hop_by_hop import Header, response_headers, strip_hop_by_hop
from wire.http.agent_routes import read_body_limited
from wire.http.limits import EdgeLimits
from wire.http.responses import connect_error_response, json_error
from wire.log import log_event
from wire.model_catalog import CATALOG_ROUTES, CatalogKind, CatalogModel, catalog_addition, splice

logger = logging.getLogger("cursor_server.catalog")

# Loads the enabled user models in catalog order; blocking (a database query), so it runs in
# a worker thread.
ModelLoader = Callable[[], Sequence[CatalogModel]]

# An official model list is a few hundred KiB; this bounds the buffered (and gunzipped) answer.
MAX_UPSTREAM_CATALOG_BYTES = 32 * 1024 * 1024

# Request headers replaced before forwarding: the upstream must answer uncompressed, and httpx
# sets Content-Length for the buffered body itself.
_IDENTITY_HEADERS: tuple[Header, ...] = (
    (b"accept-encoding", b"identity"),
    (b"connect-accept-encoding", b"identity"),
)
_REPLACED_REQUEST_HEADERS = (
    b"host",
    b"accept-encoding",
    b"connect-accept-encoding",
    b"content-length",
)

# What a spliced route appends to the upstream's 2xx payload, computed per request.
Addition = Callable[[web.Request], Awaitable[bytes]]

# The model list is a small buffered unary call; a hung upstream must not hold the handler.
CATALOG_UPSTREAM_TIMEOUT_S = 30.0

# Failures of the upstream exchange (connect, send, or reading the buffered body).
_UPSTREAM_ERRORS = (httpx.HTTPError, httpx.InvalidURL, OSError)


def _elapsed_ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def _is_gzip(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "gzip"


def _header_text(raw: bytes) -> str:
    """As the proxy does: aiohttp writes str headers as UTF-8, so UTF-8 round-trips exactly."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _text_headers(headers: list[Header], drop: tuple[str, ...]) -> CIMultiDict[str]:
    """Byte header pairs as aiohttp wants them (order and repeats kept), minus ``drop``."""
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in headers:
        text_name = _header_text(name)
        if text_name.lower() not in drop:
            out.add(text_name, _header_text(value))
    return out


class CatalogRoutes:
    """Handlers for the spliced routes, bound to the proxy's upstream and client: the three
    catalog routes when there are user models to load, and any ``extra`` route (path ->
    what to append), such as ``GetServerConfig``."""

    def __init__(
        self,
        upstream_url: str,
        client: httpx.AsyncClient,
        load_models: ModelLoader | None,
        limits: EdgeLimits,
        extra: Mapping[str, Addition] | None = None,
    ) -> None:
        self._upstream_url = upstream_url.rstrip("/")
        self._client = client
        self._load_models = load_models
        self._limits = limits
        self._additions: dict[str, Addition] = dict(extra or {})
        if load_models is not None:
            for path, kind in CATALOG_ROUTES.items():
                self._additions[path] = functools.partial(self._catalog_addition, kind)

    def register(self, app: web.Application) -> None:
        for path in self._additions:
            app.router.add_post(path, self.handle)

    async def _catalog_addition(self, kind: CatalogKind, request: web.Request) -> bytes:
        assert self._load_models is not None
        try:
            models = await asyncio.to_thread(self._load_models)
        except Exception as exc:
            # The loader is a database query; whatever it raises is a store failure (500).
            log_event(logger, logging.ERROR, "loading user models failed", error=repr(exc))
            raise ConnectError(Code.INTERNAL, f"store error: {exc}") from exc
        return catalog_addition(kind, models)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Forward, then splice a 2xx; 502 when the upstream cannot be reached."""
        addition = self._additions[request.path]
        started = time.monotonic()
        try:
            body, drop = await self._request_body(request)
        except ConnectError as error:
            return connect_error_response(error)
        try:
            async with asyncio.timeout(CATALOG_UPSTREAM_TIMEOUT_S):
                upstream, upstream_body = await self._exchange(request, body, drop)
        except (*_UPSTREAM_ERRORS, TimeoutError) as exc:
            if isinstance(exc, TimeoutError):
                detail = f"no complete answer within {CATALOG_UPSTREAM_TIMEOUT_S:g} s"
            else:
                detail = str(exc) or type(exc).__name__
            log_event(
                logger,
                logging.WARNING,
                "Cursor upstream request failed",
                method=request.method,
                path=request.path,
                elapsed_ms=_elapsed_ms(started),
                error=detail,
            )
            return json_error(502, "unavailable", f"http error: {detail}")
        except ConnectError as error:
            return connect_error_response(error)
        headers = response_headers(upstream.headers.raw)
        if not upstream.is_success:
            log_event(
                logger,
                logging.INFO,
                "forwarded Cursor model catalog request",
                path=request.raw_path,
                status=upstream.status_code,
                elapsed_ms=_elapsed_ms(started),
            )
            return self._response(upstream, headers, upstream_body, drop=("content-length",))
        try:
            return await self._spliced(request, addition, upstream, headers, upstream_body, started)
        except ConnectError as error:
            log_event(
                logger,
                logging.WARNING,
                "model catalog splice failed",
                path=request.path,
                code=error.code.value,
                message=error.message,
            )
            return connect_error_response(error)

    async def _request_body(self, request: web.Request) -> tuple[bytes, tuple[bytes, ...]]:
        """The body to forward and the request headers to leave out.

        A gzip body is decompressed here (and its ``Content-Encoding`` dropped) so the upstream
        sees the plain request; any other encoding is forwarded as received, header included.
        """
        limit = self._limits.max_body_bytes
        body = await read_body_limited(request, limit)
        if _is_gzip(request.headers.get("Content-Encoding")):
            return gunzip_limited(body, limit), (*_REPLACED_REQUEST_HEADERS, b"content-encoding")
        return body, _REPLACED_REQUEST_HEADERS

    async def _exchange(
        self, request: web.Request, body: bytes, drop: tuple[bytes, ...]
    ) -> tuple[httpx.Response, bytes]:
        """Send the buffered request upstream and read its whole raw (undecoded) answer."""
        outgoing = httpx.Request(
            request.method,
            httpx.URL(self._upstream_url + request.raw_path),
            headers=[*strip_hop_by_hop(request.raw_headers, drop=drop), *_IDENTITY_HEADERS],
            content=body,
        )
        upstream = await self._client.send(outgoing, stream=True)
        try:
            chunks = bytearray()
            async for chunk in upstream.aiter_raw():
                chunks += chunk
                if len(chunks) > MAX_UPSTREAM_CATALOG_BYTES:
                    raise ConnectError(
                        Code.UNAVAILABLE,
                        f"upstream model catalog exceeds {MAX_UPSTREAM_CATALOG_BYTES} bytes",
                    )
        finally:
            await upstream.aclose()
        return upstream, bytes(chunks)

    async def _spliced(
        self,
        request: web.Request,
        addition: Addition,
        upstream: httpx.Response,
        headers: list[Header],
        body: bytes,
        started: float,
    ) -> web.Response:
        """The 2xx answer with the user models appended, its length and encoding made true.

        ``identity`` was asked for; an upstream that gzips anyway is decompressed here, and any
        other encoding is refused rather than appended to compressed bytes.
        """
        encoding = upstream.headers.get("Content-Encoding")
        if _is_gzip(encoding):
            try:
                body = gunzip_limited(body, MAX_UPSTREAM_CATALOG_BYTES)
            except ConnectError as exc:  # the upstream's fault, not the client's: 502
                raise ConnectError(
                    Code.UNAVAILABLE, f"upstream model catalog: {exc.message}"
                ) from exc
        elif encoding is not None and encoding.strip().lower() not in ("", "identity"):
            raise ConnectError(
                Code.UNAVAILABLE,
                f"upstream model catalog is encoded with {encoding.strip()}, not identity; "
                "cannot append user models",
            )
        added = await addition(request)
        merged = splice(body, added)
        log_event(
            logger,
            logging.INFO,
            "forwarded Cursor model catalog request",
            path=request.raw_path,
            status=upstream.status_code,
            official_bytes=len(body),
            added_bytes=len(added),
            elapsed_ms=_elapsed_ms(started),
        )
        return self._response(
            upstream, headers, merged, drop=("content-length", "content-encoding")
        )

    @staticmethod
    def _response(
        upstream: httpx.Response, headers: list[Header], body: bytes, *, drop: tuple[str, ...]
    ) -> web.Response:
        """``body`` with the upstream status and headers; aiohttp sets Content-Length."""
        return web.Response(
            status=upstream.status_code,
            reason=upstream.reason_phrase or None,
            headers=_text_headers(headers, drop),
            body=body,
        )
