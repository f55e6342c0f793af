"""Which handler runs each kind of server work: the one table from a request type to the
service that carries it out."""

from __future__ import annotations

import httpx
import peewee

from actors.services.image_generation import ImageGenerator
from actors.services.server_work import ServerWorkHandler
from actors.services.web_search import SearchEndpoints, WebSearcher
from wire.tools.generate_image import ImageRequest
from wire.tools.web_search import WebSearchRequest


def server_work_handlers(
    database: peewee.Database, client: httpx.AsyncClient, endpoints: SearchEndpoints
) -> dict[type, ServerWorkHandler]:
    """What each kind of server work (``wire.tools.base.ServerWork``) runs: request type ->
    handler. Each bounds its own time, so they share the providers' client."""
    return {
        WebSearchRequest: WebSearcher(database, client, endpoints),
        ImageRequest: ImageGenerator(database, client),
    }
