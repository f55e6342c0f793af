"""Connect error codes, the errors the wire layer raises, and their two wire shapes.

An error before a stream exists is an HTTP status plus JSON ``{"code","message"}``; an error
inside a RunSSE stream is a Connect EndStream frame (see ``wire.connect``). Both shapes are built
here so that the code strings and messages stay identical in both places.
"""

from __future__ import annotations

import base64
from enum import StrEnum

import msgspec

from wire.proto import aiserver_v1_pb2 as aiserver


class Code(StrEnum):
    """The Connect error codes this server emits."""

    CANCELED = "canceled"
    INVALID_ARGUMENT = "invalid_argument"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    NOT_FOUND = "not_found"
    FAILED_PRECONDITION = "failed_precondition"
    ABORTED = "aborted"
    RESOURCE_EXHAUSTED = "resource_exhausted"
    UNIMPLEMENTED = "unimplemented"
    INTERNAL = "internal"
    UNAVAILABLE = "unavailable"


# The HTTP status used when an error of a code is answered before any stream exists.
HTTP_STATUS: dict[Code, int] = {
    Code.CANCELED: 409,
    Code.INVALID_ARGUMENT: 400,
    Code.DEADLINE_EXCEEDED: 504,
    Code.NOT_FOUND: 404,
    Code.FAILED_PRECONDITION: 400,
    Code.ABORTED: 409,
    Code.RESOURCE_EXHAUSTED: 413,
    Code.UNIMPLEMENTED: 501,
    Code.INTERNAL: 500,
    Code.UNAVAILABLE: 502,
}

ERROR_DETAILS_TYPE = "aiserver.v1.ErrorDetails"


class ErrorDetail(msgspec.Struct, frozen=True):
    """One Connect error detail: a fully-qualified type name and the message's bytes."""

    type: str
    value: bytes


class ConnectError(Exception):
    """An error with a Connect code; raised by wire parsers and carried to the client."""

    def __init__(
        self,
        code: Code,
        message: str,
        details: tuple[ErrorDetail, ...] = (),
        *,
        http_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        self.http_status = http_status if http_status is not None else HTTP_STATUS[code]

    def __repr__(self) -> str:
        return f"ConnectError({self.code.value!r}, {self.message!r})"


def protocol_error(message: str) -> ConnectError:
    """A client broke the protocol: ``invalid_argument`` with the ``protocol error:`` prefix."""
    return ConnectError(Code.INVALID_ARGUMENT, f"protocol error: {message}")


def decode_error(message: str) -> ConnectError:
    """Bytes that do not parse as the expected protobuf message."""
    return ConnectError(Code.INVALID_ARGUMENT, f"protobuf decode error: {message}")


def cancelled_error() -> ConnectError:
    """The run was cancelled (client cancel, superseding run or shutdown)."""
    return ConnectError(Code.CANCELED, "run was cancelled")


def b64_unpadded(data: bytes) -> str:
    """Standard-alphabet base64 without ``=`` padding, as Connect carries detail values."""
    return base64.b64encode(data).decode("ascii").rstrip("=")


def b64_decode_unpadded(text: str) -> bytes:
    """Inverse of :func:`b64_unpadded`; accepts padded input too."""
    return base64.b64decode(text + "=" * (-len(text) % 4))


def provider_error_detail(message: str) -> ErrorDetail:
    """The ``aiserver.v1.ErrorDetails`` that makes Cursor show a retryable server error."""
    details = aiserver.ErrorDetails(
        error=aiserver.ErrorDetails.ERROR_PROVIDER_ERROR,
        details=aiserver.CustomErrorDetails(
            title="Server Error",
            detail=message,
            allow_command_links_potentially_unsafe_please_only_use_for_handwritten_trusted_markdown=True,
            is_retryable=True,
            show_request_id=True,
            should_show_immediate_error=False,
        ),
        is_expected=False,
    )
    return ErrorDetail(ERROR_DETAILS_TYPE, details.SerializeToString(deterministic=True))


def end_stream_json(error: ConnectError | None) -> bytes:
    """The JSON payload of a Connect EndStream: ``{}`` or ``{"error":{code,message,details}}``.

    ``message`` is left out when empty and ``details`` when there are none.
    """
    if error is None:
        return b"{}"
    body: dict[str, object] = {"code": error.code.value}
    if error.message:
        body["message"] = error.message
    if error.details:
        body["details"] = [{"type": d.type, "value": b64_unpadded(d.value)} for d in error.details]
    return msgspec.json.encode({"error": body})


def http_error_json(code: str, message: str) -> bytes:
    """The JSON body of an HTTP-level error: ``{"code","message"}``."""
    return msgspec.json.encode({"code": code, "message": message})
