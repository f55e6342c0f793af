"""Gemini where the format-parametrized e2e tests cannot take it, end to end over real sockets.

``RAW_ARGUMENT_FORMATS`` leaves Gemini out of the tests whose arguments are not a JSON object;
this module proves what Gemini can be scripted to get wrong (a schema violation, a tool that
does not exist) comes back to the model as error results. And a Gemini turn that follows
another provider's tool round rebuilds those calls with Google's placeholder signature, since
Gemini 3 refuses a call part without one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from store import Store
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import (
    FakeProvider,
    FakeThinking,
    FakeToolCall,
    Script,
    anthropic_events,
)
from tests.support.formats import FORMATS, GEMINI
from wire.tools.registry import unknown_tool_result

ANTHROPIC = FORMATS[2]


def call(call_id: str, name: str, **args: Any) -> FakeToolCall:
    return FakeToolCall(call_id, name, (json.dumps(args),))


async def test_gemini_schema_violation_and_unknown_tool_are_error_results(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    model = GEMINI.add_model(server_store, fake)
    tools = [
        call("g_ok", "Read", path="/a.txt"),
        call("g_type", "Read", path=42),
        call("g_none", "Frobnicate", x=1),
    ]
    fake.enqueue(GEMINI.tool_round(tools), GEMINI.answer("Let me fix those calls."))
    log = await CursorSession(cursor, "gemini-mistakes", workspace=tmp_path).run(
        user_turn_message("read a.txt", model)
    )
    assert log.end == {}
    execs = [m.exec_server_message for m in log.messages if m.HasField("exec_server_message")]
    assert [(e.exec_id, e.read_args.path) for e in execs] == [("g_ok", "/a.txt")]
    results = GEMINI.tool_results(fake.requests[1].json)
    assert "alpha" in results["g_ok"]
    assert results["g_type"] == "invalid arguments for Read: 'path' must be a string"
    assert results["g_none"] == unknown_tool_result("Frobnicate")
    assert fake.requests[1].problems == ()
    assert "turn_ended" in log.kinds()


async def test_gemini_after_another_providers_tool_round_signs_the_rebuilt_calls(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    claude = ANTHROPIC.add_model(server_store, fake)
    gemini = GEMINI.add_model(server_store, fake)
    reads = [call("toolu_a", "Read", path="/a.txt"), call("toolu_b", "Read", path="/b.txt")]
    fake.enqueue(
        Script.sse(
            anthropic_events(
                thinking=[FakeThinking(("why",), signature="claude-sig")],
                text=["Reading both."],
                tools=reads,
            )
        ),
        ANTHROPIC.answer("alpha and beta."),
        GEMINI.answer("Both files are short."),
    )
    first = await CursorSession(cursor, "claude-turn", workspace=tmp_path).run(
        user_turn_message("read a and b", claude)
    )
    assert first.end == {}
    later = await CursorSession(cursor, "gemini-turn", workspace=tmp_path).run(
        user_turn_message(
            "how long are they?",
            gemini,
            message_id="msg-2",
            conversation_state=first.checkpoints()[-1],
        )
    )
    assert later.end == {}
    request = fake.requests[-1]
    assert request.problems == ()
    contents = request.json["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    # The Claude round as Gemini parts: its text, then the two calls, the first one signed
    # with the placeholder (parallel calls carry one signature, on the first).
    assert contents[1]["parts"] == [
        {"text": "Reading both."},
        {
            "functionCall": {"name": "Read", "args": {"path": "/a.txt"}},
            "thoughtSignature": "skip_thought_signature_validator",
        },
        {"functionCall": {"name": "Read", "args": {"path": "/b.txt"}}},
    ]
    assert b"claude-sig" not in request.body
    # Claude's ids are ours to Gemini: the responses go back by name only.
    assert [p["functionResponse"] for p in contents[2]["parts"]] == [
        {"name": "Read", "response": {"output": "alpha\n"}},
        {"name": "Read", "response": {"output": "beta\n"}},
    ]
