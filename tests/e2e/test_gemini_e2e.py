"""Gemini end to end: the server, the fake Cursor client and the fake provider's Gemini SSE
server over real sockets. A text turn with thinking; a tool turn that thinks on two rounds,
with every thought signature back on the part that carried it; an image Read result; calls
from an API version that gives them no id.

Every format-parametrized e2e test runs on Gemini too (``FORMATS``); this module holds what
only Gemini has.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from store import Store
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    final_text,
    updates,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, gemini_events
from tests.support.formats import GEMINI

STREAM_PATH = "/v1/models/fake-model:streamGenerateContent"


def call(call_id: str, name: str, **args: Any) -> FakeToolCall:
    return FakeToolCall(call_id, name, (json.dumps(args),))


def parts_bytes(script: Script) -> bytes:
    """The model content of the parts a script streams, as compact JSON bytes."""
    parts: list[dict[str, Any]] = []
    for chunk in script.chunks:
        for line in chunk.decode().splitlines():
            if line.startswith("data: "):
                content = json.loads(line[6:])["candidates"][0].get("content")
                parts += content["parts"] if content else []
    body = json.dumps(parts, separators=(",", ":"), ensure_ascii=False)
    return b'{"role":"model","parts":' + body.encode() + b"}"


def thinking(log: Any) -> str:
    return "".join(update.text for update in updates(log, "thinking_delta"))


async def test_gemini_text_turn_with_thinking(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    model = GEMINI.add_model(server_store, fake)
    fake.enqueue(Script.sse(gemini_events(thinking=["hm", "m"], text=["Hel", "lo."])))
    log = await CursorSession(cursor, "gemini-text", workspace=tmp_path).run(
        user_turn_message("say hello", model)
    )
    assert log.end == {}
    assert final_text(log) == "Hello."
    assert thinking(log) == "hmm"
    request = fake.requests[-1]
    assert request.path == STREAM_PATH and request.query == {"alt": "sse"}
    assert request.problems == ()
    body = request.json
    assert body["systemInstruction"]["parts"][0]["text"]
    assert [c["role"] for c in body["contents"]] == ["user"]
    assert "say hello" in json.dumps(body["contents"])
    assert "turn_ended" in log.kinds()


async def test_gemini_tool_turn_thinks_on_two_rounds_and_replays_every_signature(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    (tmp_path / "notes.md").write_text("remember the milk\n")
    model = GEMINI.add_model(server_store, fake)
    first = Script.sse(
        gemini_events(
            thinking=["First I ", "read."],
            text=["Reading."],
            tools=[call("g_read", "Read", path="/notes.md")],
            signatures="one",
        )
    )
    second = Script.sse(
        gemini_events(
            thinking=["Now the ", "glob."],
            tools=[call("g_glob", "Glob", glob_pattern="**/*.md")],
            signatures="two",
        )
    )
    fake.enqueue(first, second, Script.sse(gemini_events(text=["Done."], signatures="three")))
    log = await CursorSession(cursor, "gemini-tools", workspace=tmp_path).run(
        user_turn_message("look at my notes", model)
    )
    assert log.end == {}
    assert final_text(log) == "Done."
    assert thinking(log) == "First I read.Now the glob."
    one, two, three = (r for r in fake.requests if r.path == STREAM_PATH)
    # Each model turn goes back as the very parts it streamed, signatures where they were.
    assert parts_bytes(first) in two.body and parts_bytes(first) in three.body
    assert parts_bytes(second) in three.body
    contents = three.json["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    signed = [
        (part.get("thought", False), part["thoughtSignature"])
        for content in contents
        for part in content["parts"]
        if "thoughtSignature" in part
    ]
    assert signed == [
        (True, "one-thought"),
        (False, "one-call-g_read"),
        (True, "two-thought"),
        (False, "two-call-g_glob"),
    ]
    results = GEMINI.tool_results(three.json)
    assert "remember the milk" in results["g_read"]
    assert results["g_glob"] == "notes.md"
    responses = [
        p["functionResponse"] for c in contents for p in c["parts"] if "functionResponse" in p
    ]
    assert [(r["name"], r["id"]) for r in responses] == [("Read", "g_read"), ("Glob", "g_glob")]
    assert all(r.problems == () for r in (one, two, three))
    started = [u.call_id for u in updates(log, "tool_call_started")]
    assert started == ["g_read", "g_glob"]


async def test_gemini_image_read_result_follows_its_response(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR pixels"
    (tmp_path / "shot.png").write_bytes(png)
    model = GEMINI.add_model(server_store, fake)
    fake.enqueue(
        Script.sse(gemini_events(tools=[call("g_png", "Read", path="/shot.png")])),
        Script.sse(gemini_events(text=["A screenshot."])),
    )
    log = await CursorSession(cursor, "gemini-image", workspace=tmp_path).run(
        user_turn_message("what is in shot.png?", model)
    )
    assert log.end == {}
    contents = fake.requests[-1].json["contents"]
    answer = contents[2]
    assert answer["role"] == "user"
    assert answer["parts"] == [
        {
            "functionResponse": {
                "name": "Read",
                "response": {
                    "output": f"/shot.png is an image (image/png, {len(png)} bytes); "
                    "it is attached to this result"
                },
                "id": "g_png",
            }
        },
        {"text": "The image(s) returned by tool call g_png (Read):"},
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(png).decode()}},
    ]


async def test_gemini_calls_without_ids_get_ours_and_are_answered_by_name(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    (tmp_path / "a.md").write_text("alpha\n")
    model = GEMINI.add_model(server_store, fake)
    tools = [call("ignored", "Read", path="/a.md"), call("ignored2", "Glob", glob_pattern="*.md")]
    fake.enqueue(
        Script.sse(gemini_events(tools=tools, call_ids=False)),
        Script.sse(gemini_events(text=["ok"])),
    )
    log = await CursorSession(cursor, "gemini-no-ids", workspace=tmp_path).run(
        user_turn_message("read a.md", model)
    )
    assert log.end == {}
    started = [u.call_id for u in updates(log, "tool_call_started")]
    assert len(set(started)) == 2 and "ignored" not in started
    parts = fake.requests[-1].json["contents"][2]["parts"]
    assert [p["functionResponse"]["name"] for p in parts] == ["Read", "Glob"]
    assert all("id" not in p["functionResponse"] for p in parts)
    assert "alpha" in parts[0]["functionResponse"]["response"]["output"]
