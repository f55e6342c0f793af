"""Captured vectors, ErrorDetails bytes, and the two JSON error shapes."""

from __future__ import annotations

import base64
import json

import pytest
from google.protobuf import unknown_fields

from wire.errors import (
    ERROR_DETAILS_TYPE,
    HTTP_STATUS,
    Code,
    ConnectError,
    ErrorDetail,
    b64_decode_unpadded,
    b64_unpadded,
    cancelled_error,
    decode_error,
    end_stream_json,
    http_error_json,
    protocol_error,
    provider_error_detail,
)
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

# notes/wire.md §2.4: the ErrorDetails the server sends for "provider error: provider failed".
PROVIDER_FAILED_HEX = (
    "083912370a0c536572766572204572726f72121f70726f7669646572206572726f723a2070726f76696465"
    "72206661696c656418012001280130001800"
)
PROVIDER_FAILED_B64 = (
    "CDkSNwoMU2VydmVyIEVycm9yEh9wcm92aWRlciBlcnJvcjogcHJvdmlkZXIgZmFpbGVkGAEgASgBMAAYAA"
)

# notes/wire.md §2.4: an ErrorDetails captured from the official server.
OFFICIAL_LOGIN_B64 = (
    "CAISVQoUQXV0aGVudGljYXRpb24gZXJyb3ISMklmIHlvdSBhcmUgbG9nZ2VkIGluLCB0cnkgbG9nZ2luZyBvdXQg"
    "YW5kIGJhY2sgaW4uIABSBwoFbG9naW4YAQ"
)


def _std_b64decode(text: str) -> bytes:
    """Decode unpadded base64 with the standard library alone."""
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


# ---- captured client vector ------------------------------------------------------------------


def test_captured_kv_ack_decodes() -> None:
    message = agent.AgentClientMessage.FromString(bytes.fromhex("1a0408011a00"))
    assert message.WhichOneof("message") == "kv_client_message"
    assert message.kv_client_message.id == 1
    assert message.kv_client_message.WhichOneof("message") == "set_blob_result"
    assert not message.kv_client_message.set_blob_result.HasField("error")
    assert message.SerializeToString() == bytes.fromhex("1a0408011a00")


# ---- provider ErrorDetails -------------------------------------------------------------------


def test_provider_error_detail_worked_example() -> None:
    detail = provider_error_detail("provider error: provider failed")
    assert detail.type == ERROR_DETAILS_TYPE == "aiserver.v1.ErrorDetails"
    assert detail.value.hex() == PROVIDER_FAILED_HEX
    assert b64_unpadded(detail.value) == PROVIDER_FAILED_B64


def test_provider_error_detail_worked_example_round_trips() -> None:
    wire = bytes.fromhex(PROVIDER_FAILED_HEX)
    assert _std_b64decode(PROVIDER_FAILED_B64) == wire
    parsed = aiserver.ErrorDetails.FromString(wire)
    assert parsed.error == aiserver.ErrorDetails.ERROR_PROVIDER_ERROR == 57
    assert parsed.details.title == "Server Error"
    assert parsed.details.detail == "provider error: provider failed"
    custom = parsed.details
    assert custom.HasField(
        "allow_command_links_potentially_unsafe_please_only_use_for_handwritten_trusted_markdown"
    )
    assert custom.is_retryable and custom.show_request_id
    # Optional fields are sent explicitly, even when false.
    assert custom.HasField("should_show_immediate_error") and not custom.should_show_immediate_error
    assert parsed.HasField("is_expected") and not parsed.is_expected
    assert parsed.SerializeToString() == wire


@pytest.mark.parametrize("message", ["", "x", "provider error: é ✓", "a" * 300])
def test_provider_error_detail_carries_the_message(message: str) -> None:
    parsed = aiserver.ErrorDetails.FromString(provider_error_detail(message).value)
    assert parsed.details.detail == message
    assert parsed.error == aiserver.ErrorDetails.ERROR_PROVIDER_ERROR


def test_official_login_error_decodes_and_round_trips() -> None:
    wire = _std_b64decode(OFFICIAL_LOGIN_B64)
    assert b64_decode_unpadded(OFFICIAL_LOGIN_B64) == wire
    parsed = aiserver.ErrorDetails.FromString(wire)
    assert parsed.error == aiserver.ErrorDetails.ERROR_NOT_LOGGED_IN == 2
    assert parsed.details.title == "Authentication error"
    assert parsed.details.detail == "If you are logged in, try logging out and back in."
    assert parsed.details.HasField("is_retryable") and parsed.details.is_retryable is False
    assert parsed.HasField("is_expected") and parsed.is_expected is True
    # Field 10 (analytics metadata, {1: "login"}) is unknown to our subset and must survive.
    field_set = unknown_fields.UnknownFieldSet(parsed.details)
    unknown = [field_set[index] for index in range(len(field_set))]  # the stub has no __iter__
    assert [field.field_number for field in unknown] == [10]
    assert unknown[0].data == bytes.fromhex("0a05") + b"login"
    assert parsed.SerializeToString() == wire
    assert b64_unpadded(parsed.SerializeToString()) == OFFICIAL_LOGIN_B64


# ---- base64 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"a", b"ab", b"abc", b"abcd", bytes(range(256))])
def test_b64_unpadded(data: bytes) -> None:
    text = b64_unpadded(data)
    assert "=" not in text
    assert text == base64.b64encode(data).decode().rstrip("=")
    assert b64_decode_unpadded(text) == data
    assert b64_decode_unpadded(base64.b64encode(data).decode()) == data


def test_b64_uses_standard_alphabet() -> None:
    assert b64_unpadded(b"\xfb\xff") == "+/8"


# ---- EndStream JSON --------------------------------------------------------------------------


def test_end_stream_success() -> None:
    assert end_stream_json(None) == b"{}"


def test_end_stream_error_with_message_and_details() -> None:
    value = bytes.fromhex(PROVIDER_FAILED_HEX)
    error = ConnectError(
        Code.UNAVAILABLE,
        "provider error: provider failed",
        (ErrorDetail("aiserver.v1.ErrorDetails", value),),
    )
    expected = (
        '{"error":{"code":"unavailable","message":"provider error: provider failed",'
        '"details":[{"type":"aiserver.v1.ErrorDetails","value":"' + PROVIDER_FAILED_B64 + '"}]}}'
    )
    assert end_stream_json(error) == expected.encode()


def test_end_stream_key_order_and_several_details() -> None:
    details = (ErrorDetail("a.B", b"\x01"), ErrorDetail("c.D", b"\x02\x03"))
    payload = end_stream_json(ConnectError(Code.INTERNAL, "m", details))
    decoded = json.loads(payload)
    assert list(decoded) == ["error"]
    assert list(decoded["error"]) == ["code", "message", "details"]
    assert decoded["error"]["details"] == [
        {"type": "a.B", "value": "AQ"},
        {"type": "c.D", "value": "AgM"},
    ]
    assert b" " not in payload  # compact JSON


def test_end_stream_empty_message_omitted() -> None:
    assert end_stream_json(ConnectError(Code.INTERNAL, "")) == b'{"error":{"code":"internal"}}'


def test_end_stream_empty_message_with_details() -> None:
    payload = end_stream_json(ConnectError(Code.UNAVAILABLE, "", (ErrorDetail("x.Y", b"z"),)))
    assert payload == b'{"error":{"code":"unavailable","details":[{"type":"x.Y","value":"eg"}]}}'


def test_end_stream_no_details_omitted() -> None:
    payload = end_stream_json(ConnectError(Code.NOT_FOUND, "run not found: r1"))
    assert payload == b'{"error":{"code":"not_found","message":"run not found: r1"}}'


def test_end_stream_escapes_json() -> None:
    message = 'quote " backslash \\ newline \n unicode é'
    payload = end_stream_json(ConnectError(Code.INVALID_ARGUMENT, message))
    assert json.loads(payload) == {"error": {"code": "invalid_argument", "message": message}}


def test_cancel_end_stream_payload() -> None:
    payload = end_stream_json(cancelled_error())
    assert payload == b'{"error":{"code":"canceled","message":"run was cancelled"}}'
    assert len(payload) == 59


# ---- HTTP JSON and error constructors --------------------------------------------------------


def test_http_error_json() -> None:
    body = http_error_json("not_found", "run not found: abc")
    assert body == b'{"code":"not_found","message":"run not found: abc"}'


def test_http_error_json_escapes() -> None:
    body = http_error_json("invalid_argument", 'bad "x"\n')
    assert json.loads(body) == {"code": "invalid_argument", "message": 'bad "x"\n'}
    assert list(json.loads(body)) == ["code", "message"]


def test_error_constructors() -> None:
    assert protocol_error("x").message == "protocol error: x"
    assert protocol_error("x").code is Code.INVALID_ARGUMENT
    assert decode_error("y").message == "protobuf decode error: y"
    assert decode_error("y").code is Code.INVALID_ARGUMENT
    assert cancelled_error().code is Code.CANCELED
    assert cancelled_error().message == "run was cancelled"


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (Code.INVALID_ARGUMENT, 400),
        (Code.NOT_FOUND, 404),
        (Code.UNAVAILABLE, 502),
        (Code.ABORTED, 409),
        (Code.INTERNAL, 500),
    ],
)
def test_http_status_of_documented_codes(code: Code, status: int) -> None:
    """notes/wire.md §1.6: the HTTP status of each error kind answered before a stream."""
    assert ConnectError(code, "m").http_status == status


def test_every_code_has_an_http_status() -> None:
    assert set(HTTP_STATUS) == set(Code)


def test_http_status_override() -> None:
    error = ConnectError(Code.INVALID_ARGUMENT, "m", http_status=415)
    assert error.http_status == 415
    assert str(error) == "m"
