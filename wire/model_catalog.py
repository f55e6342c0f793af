"""Splicing the user's models into Cursor's model lists, without decoding the official answer.

Cursor asks its backend which models exist (``AvailableModels``, ``GetUsableModels``). The
server forwards the question and appends protobuf fields for the user's enabled models after
the official payload. Protobuf concatenation merges messages and extends repeated fields, so
the official bytes, including fields our schema subset does not know, stay a byte-exact
prefix: nothing official is decoded or re-encoded.

Sans-IO: plain records in, bytes out. The edge (``wire/http/catalog_routes.py``) does the IO.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from enum import StrEnum
from typing import Final, Protocol

from wire.connect import HEADER_SIZE
from wire.errors import Code, ConnectError
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

INT32_MAX: Final = 2**31 - 1
INT32_MIN: Final = -(2**31)
_U32_MAX: Final = 2**32 - 1
_HEADER = struct.Struct(">BI")


class CatalogKind(StrEnum):
    """Which response message a catalog route answers with (they number their fields apart)."""

    AVAILABLE_MODELS = "AvailableModels"
    USABLE_MODELS = "GetUsableModels"


# Exact paths of the intercepted routes. Both GetUsableModels routes carry the agent.v1
# messages (the aiserver.v1 extraction's inline copy resolves ModelDetails wrongly).
CATALOG_ROUTES: Final[dict[str, CatalogKind]] = {
    "/aiserver.v1.AiService/AvailableModels": CatalogKind.AVAILABLE_MODELS,
    "/agent.v1.AgentService/GetUsableModels": CatalogKind.USABLE_MODELS,
    "/aiserver.v1.AiService/GetUsableModels": CatalogKind.USABLE_MODELS,
}


class CatalogModel(Protocol):
    """What the splice reads of a user model (``store.catalog.ModelRecord`` has these)."""

    @property
    def public_id(self) -> str: ...

    @property
    def display_name(self) -> str: ...

    @property
    def reasoning_enabled(self) -> bool: ...

    @property
    def context_window_tokens(self) -> int | None: ...


def clamp_int32(value: int) -> int:
    """``context_token_limit`` is an int32; a larger configured window is sent as the maximum."""
    return max(INT32_MIN, min(INT32_MAX, value))


def available_models_addition(models: Iterable[CatalogModel]) -> bytes:
    """``AvailableModelsResponse`` fields for ``models``: every name (field 1), then every entry.

    Optional booleans are set explicitly, so they are on the wire even when false.
    """
    response = aiserver.AvailableModelsResponse()
    for model in models:
        response.model_names.append(model.public_id)
        entry = response.models.add(
            name=model.public_id,
            supports_agent=True,
            supports_thinking=model.reasoning_enabled,
            client_display_name=model.display_name,
            server_model_name=model.public_id,
            is_user_added=True,
            inputbox_short_model_name=model.display_name,
        )
        if model.context_window_tokens is not None:
            entry.context_token_limit = clamp_int32(model.context_window_tokens)
    return response.SerializeToString()


def usable_models_addition(models: Iterable[CatalogModel]) -> bytes:
    """``GetUsableModelsResponse`` entries: an empty ``thinking_details`` marks reasoning models."""
    response = agent.GetUsableModelsResponse()
    for model in models:
        details = response.models.add(
            model_id=model.public_id,
            display_model_id=model.public_id,
            display_name=model.display_name,
            display_name_short=model.display_name,
        )
        if model.reasoning_enabled:
            details.thinking_details.SetInParent()
    return response.SerializeToString()


def catalog_addition(kind: CatalogKind, models: Iterable[CatalogModel]) -> bytes:
    """The encoded fields to append for ``kind``."""
    match kind:
        case CatalogKind.AVAILABLE_MODELS:
            return available_models_addition(models)
        case CatalogKind.USABLE_MODELS:
            return usable_models_addition(models)


def splice(body: bytes, addition: bytes) -> bytes:
    """Append ``addition`` to the protobuf payload of an upstream 2xx body.

    A body that is exactly one Connect envelope (its length field equals ``len - 5``) gets the
    addition inside the envelope and its length rewritten; any other body is raw protobuf (a
    Connect unary ``application/proto`` answer) and gets the addition at its end. An envelope
    with flags set (compressed, or end-of-stream JSON) cannot be extended: refused with
    ``unavailable`` (HTTP 502), since the upstream answered something this server cannot merge.
    """
    if len(body) >= HEADER_SIZE:
        flags, length = _HEADER.unpack_from(body)
        if length == len(body) - HEADER_SIZE:
            if flags != 0:
                raise ConnectError(
                    Code.UNAVAILABLE,
                    "cannot merge user models into the upstream model catalog: its Connect "
                    f"envelope has flags=0x{flags:02x} (compressed or end-of-stream)",
                )
            new_length = length + len(addition)
            if new_length > _U32_MAX:
                raise ConnectError(
                    Code.UNAVAILABLE, "model catalog too large for one Connect envelope"
                )
            return _HEADER.pack(0, new_length) + body[HEADER_SIZE:] + addition
    return body + addition


__all__ = [
    "CATALOG_ROUTES",
    "INT32_MAX",
    "CatalogKind",
    "CatalogModel",
    "available_models_addition",
    "catalog_addition",
    "clamp_int32",
    "splice",
    "usable_models_addition",
]
