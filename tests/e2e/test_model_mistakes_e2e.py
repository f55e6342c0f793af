"""The model's mistakes are not the client's, end to end in each format that streams argument
text (Gemini's, parsed objects, are in ``tests/e2e/test_gemini_formats_e2e.py``): arguments that are
not JSON, or that do not fit the tool's schema, come back to the model as an error result it can
act on; the round's other calls run and the turn goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from store import Store
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import RAW_ARGUMENT_FORMATS, RAW_ARGUMENT_IDS, ProviderFormat


@pytest.mark.parametrize("fmt", RAW_ARGUMENT_FORMATS, ids=RAW_ARGUMENT_IDS)
async def test_bad_json_and_a_schema_violation_are_error_results_and_the_turn_goes_on(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    model = fmt.add_model(server_store, fake)
    tools = [
        FakeToolCall("call_ok", "Read", ('{"path": ', '"/a.txt"}')),
        FakeToolCall("call_cut", "Read", ('{"path": "/a.t',)),  # cut off mid-string
        FakeToolCall("call_type", "Read", ('{"path": 42}',)),  # not what the schema says
    ]
    fake.enqueue(fmt.tool_round(tools))
    fake.enqueue(fmt.answer("Let me fix those calls."))
    log = await CursorSession(cursor, "turn-mistakes", workspace=workspace, batch_size=1).run(
        user_turn_message("read a.txt", model)
    )
    assert log.end == {}
    # Only the good call reached the editor; the two bad ones show an error card.
    execs = [m.exec_server_message for m in log.messages if m.HasField("exec_server_message")]
    assert [(e.exec_id, e.read_args.path) for e in execs] == [("call_ok", "/a.txt")]
    completed = {
        m.interaction_update.tool_call_completed.call_id: m.interaction_update.tool_call_completed
        for m in log.messages
        if m.interaction_update.HasField("tool_call_completed")
    }
    assert set(completed) == {"call_ok", "call_cut", "call_type"}
    error = completed["call_cut"].tool_call.read_tool_call.result.error.error_message
    assert "not valid JSON" in error
    # The next request replays every call and holds each error for the model to act on.
    results = fmt.tool_results(fake.requests[1].json)
    assert "alpha" in results["call_ok"]
    assert "not valid JSON" in results["call_cut"]
    assert 'you sent: {"path": "/a.t' in results["call_cut"]
    assert results["call_type"] == "invalid arguments for Read: 'path' must be a string"
    assert "turn_ended" in log.kinds()
