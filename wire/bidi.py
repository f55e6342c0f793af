"""BidiAppend request validation and the RunSSE request: bytes in, typed values out.

The checks run in a fixed order and the first failure wins, so a client always gets the
same error for the same body. Every failure is a ``ConnectError`` answered as HTTP 400.
"""

from __future__ import annotations

import binascii
from collections.abc import Mapping

import msgspec
from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError

from wire.errors import decode_error, protocol_error
from wire.identity import ANONYMOUS_USER, user_from_authorization
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

# Field 4 of BidiAppendRequest (``data_binary`` in the reference server) is not declared by
# the client schema; a body carrying it is refused rather than silently ignored.
_DATA_BINARY_FIELD = 4

PARENT_REQUEST_HEADER = "x-parent-request-id"
PARENT_TOOL_CALL_HEADER = "x-parent-agent-tool-call-id"


class ParentLink(msgspec.Struct, frozen=True):
    """The parent run and tool call of a subagent request (both or neither)."""

    request_id: str
    tool_call_id: str


class BidiAppend(msgspec.Struct, frozen=True):
    """One validated BidiAppend: which request, which position, which client message."""

    request_id: str
    seqno: int
    message: agent.AgentClientMessage
    parent: ParentLink | None = None
    # Who sent it, read from its ``authorization`` header (``wire.identity``): never the token.
    user_id: str = ANONYMOUS_USER


def parse_run_sse(payload: bytes) -> str:
    """The request id of a RunSSE body (``BidiRequestId``)."""
    try:
        request = agent.BidiRequestId.FromString(payload)
    except DecodeError as exc:
        raise decode_error(f"BidiRequestId: {exc}") from exc
    if not request.request_id:
        raise protocol_error("RunSSE request_id is required")
    return request.request_id


def _visible_ascii(value: str) -> bool:
    return all(0x20 <= ord(ch) < 0x7F for ch in value)


def parse_parent_headers(headers: Mapping[str, str]) -> ParentLink | None:
    """The subagent parent pair from the request headers, validated as an atomic pair."""
    parent_request = headers.get(PARENT_REQUEST_HEADER)
    parent_call = headers.get(PARENT_TOOL_CALL_HEADER)
    if parent_request is None and parent_call is None:
        return None
    if parent_request is None or parent_call is None:
        raise protocol_error("Cursor subagent request must include both parent headers")
    for name, value in (
        (PARENT_REQUEST_HEADER, parent_request),
        (PARENT_TOOL_CALL_HEADER, parent_call),
    ):
        if not _visible_ascii(value):
            raise protocol_error(f"invalid {name} header: not visible ASCII")
    if not parent_request or not parent_call:
        raise protocol_error("Cursor parent run and tool call ids are required")
    return ParentLink(parent_request, parent_call)


def _has_data_binary(request: aiserver.BidiAppendRequest) -> bool:
    fields = unknown_fields.UnknownFieldSet(request)
    return any(
        fields[i].field_number == _DATA_BINARY_FIELD and fields[i].data for i in range(len(fields))
    )


def parse_bidi_append(payload: bytes, headers: Mapping[str, str]) -> BidiAppend:
    """Validate a BidiAppend body in the documented order."""
    try:
        request = aiserver.BidiAppendRequest.FromString(payload)
    except DecodeError as exc:
        raise decode_error(f"BidiAppendRequest: {exc}") from exc
    parent = parse_parent_headers(headers)
    if not request.HasField("request_id") or not request.request_id.request_id:
        raise protocol_error("BidiAppend request_id is required")
    if _has_data_binary(request):
        raise protocol_error("BidiAppend data_binary is not part of the captured protocol")
    if not request.data:
        raise protocol_error("BidiAppend contains no AgentClientMessage")
    try:
        raw = binascii.unhexlify(request.data)
    except (binascii.Error, ValueError) as exc:
        raise protocol_error(f"invalid BidiAppend hex: {exc}") from exc
    try:
        message = agent.AgentClientMessage.FromString(raw)
    except DecodeError as exc:
        raise decode_error(f"AgentClientMessage: {exc}") from exc
    user_id = user_from_authorization(headers.get("authorization"))
    return BidiAppend(request.request_id.request_id, request.append_seqno, message, parent, user_id)
