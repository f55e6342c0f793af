"""JSON nested beyond the interpreter's recursion limit, found by the fuzzers: msgspec raised
``RecursionError`` where every decoder of outside JSON catches ``msgspec.DecodeError``, so a
1 KB ``[[[[…`` escaped as an exception — from a provider's stream, the model's tool arguments,
a checkpoint message from the editor. Each now refuses it as malformed."""

from __future__ import annotations

import msgspec
import pytest

from actors.codecs.checkpoint_json import CheckpointJsonError, decode_root
from actors.conversation.request import ProviderType
from console.json_api import ApiError, decode_body_bytes
from console.models_api import SaveModelsBody

pytest.importorskip("hypothesis")

from tests.support.fuzz import DEEP_JSON
from tests.wire.test_fuzz_providers import _route
from wire.json_input import decode_json
from wire.proto import agent_v1_pb2 as agent
from wire.providers.adapter import provider_error_message
from wire.providers.errors import FailureKind, ProviderFailure
from wire.providers.formats import adapter_for
from wire.tools.base import InvalidCall, ToolOutcome
from wire.tools.dispatch import prepare_tool_call
from wire.tools.mcp_catalog import schema_of


def test_decode_json_refuses_deep_nesting_as_a_decode_error() -> None:
    with pytest.raises(msgspec.DecodeError, match="nested too deeply"):
        decode_json(DEEP_JSON)
    assert decode_json(b'{"a":[1]}') == {"a": [1]}


@pytest.mark.parametrize("provider_type", list(ProviderType))
def test_a_deep_provider_event_is_a_protocol_failure(provider_type: ProviderType) -> None:
    decoder = adapter_for(provider_type).new_decoder(_route(provider_type))
    with pytest.raises(ProviderFailure) as caught:
        decoder.feed(f"data: {DEEP_JSON}\n\n".encode())
    assert caught.value.kind is FailureKind.PROTOCOL


def test_a_deep_provider_error_body_is_shown_as_text() -> None:
    assert provider_error_message(DEEP_JSON.encode()).startswith("[[[")


def test_deep_tool_arguments_are_an_error_result_the_model_reads() -> None:
    execution = prepare_tool_call("Read", "call-1", f'{{"path": {DEEP_JSON}}}')
    assert isinstance(execution, InvalidCall)
    outcome = execution.begin()
    assert isinstance(outcome, ToolOutcome) and outcome.is_error
    assert "not valid JSON" in outcome.content


def test_a_deep_checkpoint_message_is_a_checkpoint_json_error() -> None:
    with pytest.raises(CheckpointJsonError):
        decode_root(f'{{"role":"user","content":{DEEP_JSON}}}', "internal:0")


def test_a_deep_console_body_is_refused() -> None:
    """Typed bodies stop at the first misfit (a 422 here), before the nesting gets deep."""
    with pytest.raises(ApiError) as caught:
        decode_body_bytes(f'{{"models":{DEEP_JSON}}}'.encode(), SaveModelsBody)
    assert caught.value.status in (400, 422)


def test_deep_mcp_arguments_text_is_an_error_result_the_model_reads() -> None:
    """Some models send an MCP call's arguments as JSON text; a deep one is a bad call."""
    arguments = msgspec.json.encode({"server": "s", "toolName": "t", "arguments": DEEP_JSON})
    execution = prepare_tool_call("CallMcpTool", "call-1", arguments.decode())
    assert isinstance(execution, InvalidCall)
    outcome = execution.begin()
    assert isinstance(outcome, ToolOutcome) and outcome.is_error


def test_a_deep_mcp_input_schema_is_kept_as_text() -> None:
    definition = agent.McpToolDefinition(name="t", input_schema_json=DEEP_JSON)
    assert schema_of(definition) == DEEP_JSON
