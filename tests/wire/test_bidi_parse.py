"""BidiAppend validation in its documented order, and the RunSSE request id."""

from __future__ import annotations

import pytest

from wire.bidi import (
    PARENT_REQUEST_HEADER,
    PARENT_TOOL_CALL_HEADER,
    ParentLink,
    parse_bidi_append,
    parse_parent_headers,
    parse_run_sse,
)
from wire.errors import Code, ConnectError
from wire.proto import aiserver_v1_pb2 as aiserver

KV_ACK_HEX = "1a0408011a00"  # captured: AgentClientMessage.kv_client_message{id 1, set_blob_result}
DATA_BINARY = bytes.fromhex("22 03 01 02 03")  # field 4, wire type 2, three bytes
PARENTS = {PARENT_REQUEST_HEADER: "parent-req", PARENT_TOOL_CALL_HEADER: "tool-call-7"}


def _body(
    *, request_id: str | None = "req-1", data: str = KV_ACK_HEX, seqno: int = 0, extra: bytes = b""
) -> bytes:
    """A serialized BidiAppendRequest; ``request_id=None`` leaves the field absent."""
    request = aiserver.BidiAppendRequest(data=data, append_seqno=seqno)
    if request_id is not None:
        request.request_id.request_id = request_id
        request.request_id.SetInParent()
    return request.SerializeToString() + extra


def _error(payload: bytes, headers: dict[str, str] | None = None) -> ConnectError:
    with pytest.raises(ConnectError) as info:
        parse_bidi_append(payload, headers or {})
    assert info.value.code is Code.INVALID_ARGUMENT
    assert info.value.http_status == 400
    return info.value


# ---- the happy path ------------------------------------------------------------------------


def test_valid_append() -> None:
    append = parse_bidi_append(_body(seqno=7), {})
    assert append.request_id == "req-1"
    assert append.seqno == 7
    assert append.parent is None
    assert append.message.WhichOneof("message") == "kv_client_message"
    assert append.message.kv_client_message.id == 1
    assert append.message.kv_client_message.HasField("set_blob_result")


def test_uppercase_hex_accepted() -> None:
    append = parse_bidi_append(_body(data=KV_ACK_HEX.upper()), {})
    assert append.message.kv_client_message.id == 1


def test_mixed_case_hex_accepted() -> None:
    append = parse_bidi_append(_body(data="1A0408011a00"), {})
    assert append.message.kv_client_message.HasField("set_blob_result")


def test_parent_pair_is_returned() -> None:
    append = parse_bidi_append(_body(), PARENTS)
    assert append.parent == ParentLink("parent-req", "tool-call-7")


def test_negative_seqno_passes_through() -> None:
    assert parse_bidi_append(_body(seqno=-3), {}).seqno == -3


def test_empty_data_binary_is_not_refused() -> None:
    """Only a non-empty data_binary is refused, as in the reference implementation."""
    append = parse_bidi_append(_body(extra=bytes.fromhex("2200")), {})
    assert append.message.kv_client_message.id == 1


# ---- each failure, in order ------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [b"\x0a\x05ab", b"\xff", b"\x12\x02\x0a", b"\x18"],
    ids=["short-string", "bad-wire-type", "short-submessage", "short-varint"],
)
def test_undecodable_body(payload: bytes) -> None:
    assert _error(payload).message.startswith("protobuf decode error: ")


def test_undecodable_body_wins_over_bad_headers() -> None:
    error = _error(b"\xff", {PARENT_REQUEST_HEADER: "p"})
    assert error.message.startswith("protobuf decode error: ")


@pytest.mark.parametrize("present", [PARENT_REQUEST_HEADER, PARENT_TOOL_CALL_HEADER])
def test_only_one_parent_header(present: str) -> None:
    error = _error(_body(), {present: "x"})
    assert error.message == (
        "protocol error: Cursor subagent request must include both parent headers"
    )


@pytest.mark.parametrize("bad", ["caf\u00e9", "tab\there", "nl\n", "del\x7f", "nul\x00"])
@pytest.mark.parametrize("header", [PARENT_REQUEST_HEADER, PARENT_TOOL_CALL_HEADER])
def test_parent_header_not_visible_ascii(header: str, bad: str) -> None:
    error = _error(_body(), {**PARENTS, header: bad})
    assert error.message.startswith(f"protocol error: invalid {header} header: ")


@pytest.mark.parametrize("header", [PARENT_REQUEST_HEADER, PARENT_TOOL_CALL_HEADER])
def test_parent_header_empty(header: str) -> None:
    error = _error(_body(), {**PARENTS, header: ""})
    assert error.message == "protocol error: Cursor parent run and tool call ids are required"


def test_parent_headers_checked_before_request_id() -> None:
    error = _error(_body(request_id=""), {PARENT_REQUEST_HEADER: "p"})
    assert error.message == (
        "protocol error: Cursor subagent request must include both parent headers"
    )


def test_parse_parent_headers_neither() -> None:
    assert parse_parent_headers({"other": "x"}) is None


@pytest.mark.parametrize("request_id", [None, ""], ids=["absent", "empty"])
def test_request_id_required(request_id: str | None) -> None:
    error = _error(_body(request_id=request_id))
    assert error.message == "protocol error: BidiAppend request_id is required"


def test_data_binary_refused() -> None:
    error = _error(_body(extra=DATA_BINARY))
    assert error.message == (
        "protocol error: BidiAppend data_binary is not part of the captured protocol"
    )


def test_data_binary_refused_even_with_empty_data() -> None:
    error = _error(_body(data="", extra=DATA_BINARY))
    assert error.message == (
        "protocol error: BidiAppend data_binary is not part of the captured protocol"
    )


def test_request_id_checked_before_data_binary() -> None:
    error = _error(_body(request_id=None, extra=DATA_BINARY))
    assert error.message == "protocol error: BidiAppend request_id is required"


def test_empty_data() -> None:
    error = _error(_body(data=""))
    assert error.message == "protocol error: BidiAppend contains no AgentClientMessage"


def test_request_id_checked_before_empty_data() -> None:
    error = _error(_body(request_id="", data=""))
    assert error.message == "protocol error: BidiAppend request_id is required"


@pytest.mark.parametrize(
    "data",
    ["1a0408011a0", "zz", "1a04 08011a00", " 1a0408011a00 ", "1a0408011a00\n", "\u00e9\u00e9"],
    ids=["odd-length", "non-hex", "inner-space", "outer-space", "newline", "non-ascii"],
)
def test_bad_hex(data: str) -> None:
    error = _error(_body(data=data))
    assert error.message.startswith("protocol error: invalid BidiAppend hex:")


@pytest.mark.parametrize(
    "data",
    ["ff", "0a05", "1a02", "08"],
    ids=["bad-wire-type", "short-run-request", "short-kv", "short-varint"],
)
def test_hex_that_is_not_a_client_message(data: str) -> None:
    error = _error(_body(data=data))
    assert error.message.startswith("protobuf decode error:")


# ---- RunSSE ----------------------------------------------------------------------------------


def test_run_sse_request_id() -> None:
    assert parse_run_sse(bytes.fromhex("0a03616263")) == "abc"


def test_run_sse_empty_request_id() -> None:
    for payload in (b"", bytes.fromhex("0a00")):
        with pytest.raises(ConnectError) as info:
            parse_run_sse(payload)
        assert info.value.code is Code.INVALID_ARGUMENT
        assert info.value.message == "protocol error: RunSSE request_id is required"


def test_run_sse_undecodable() -> None:
    with pytest.raises(ConnectError) as info:
        parse_run_sse(b"\x0a\x05ab")
    assert info.value.message.startswith("protobuf decode error: ")
