"""The editor's core tools end to end in each provider format: one round calling Read, Grep,
Glob, Shell, ReadLints and TodoWrite, then one calling Write, StrReplace and Delete, run by the
fake Cursor client against a real workspace; the model reads every real result and the files
on disk change as the calls say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from store import Store
from tests.support.fake_cursor import CursorSession, FakeCursor, TurnLog, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat


def call(call_id: str, name: str, **args: Any) -> FakeToolCall:
    text = json.dumps(args)
    return FakeToolCall(call_id, name, (text[:6], text[6:]))


def completed(log: TurnLog) -> dict[str, Any]:
    return {
        m.interaction_update.tool_call_completed.call_id: m.interaction_update.tool_call_completed
        for m in log.messages
        if m.interaction_update.HasField("tool_call_completed")
    }


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_the_core_tools_run_on_the_editor_and_the_model_reads_their_results(
    fmt: ProviderFormat, fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("def main():\n    return 1  # FIXME\n")
    (workspace / "notes.md").write_text("draft\n")
    (workspace / "old.txt").write_text("stale\n")
    model = fmt.add_model(server_store, fake)
    todos = [
        {"id": "1", "content": "look around", "status": "completed"},
        {"id": "2", "content": "make the change", "status": "in_progress"},
    ]
    first = [
        call("c_read", "Read", path="/src/app.py"),
        call("c_grep", "Grep", pattern="def \\w+", path="/src"),
        call("c_glob", "Glob", glob_pattern="**/*.md"),
        call("c_shell", "Shell", command="printf 'ran\\n'"),
        call("c_lints", "ReadLints", paths=["/src/app.py"]),
        call("c_todo", "TodoWrite", todos=todos, merge=False),
    ]
    second = [
        call("c_write", "Write", path="/src/new.py", contents="VALUE = 2\n"),
        call(
            "c_edit", "StrReplace", path="/src/app.py", old_string="return 1", new_string="return 2"
        ),
        call("c_delete", "Delete", path="/old.txt"),
    ]
    fake.enqueue(fmt.tool_round(first, text=["Looking first."]))
    fake.enqueue(fmt.tool_round(second))
    fake.enqueue(fmt.answer("Done."))
    log = await CursorSession(cursor, "turn-core", workspace=workspace).run(
        user_turn_message("tidy the project", model)
    )
    assert log.end == {}
    results = fmt.tool_results(fake.requests[1].json)
    assert "def main():" in results["c_read"]
    assert "src/app.py" in results["c_grep"] and "def main" in results["c_grep"]
    assert results["c_glob"] == "notes.md"
    assert "ran" in results["c_shell"]
    assert "1 diagnostic" in results["c_lints"] and "unfinished work" in results["c_lints"]
    assert "look around" in results["c_todo"] and "make the change" in results["c_todo"]
    later = fmt.tool_results(fake.requests[2].json)
    assert set(later) == {c.call_id for c in first + second}
    assert all(not text.startswith("invalid arguments") for text in later.values())
    # The files changed as the calls said.
    assert (workspace / "src" / "new.py").read_text() == "VALUE = 2\n"
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 2  # FIXME\n"
    assert not (workspace / "old.txt").exists()
    cards = completed(log)
    assert set(cards) == set(later)
    assert cards["c_delete"].tool_call.delete_tool_call.result.success.path == "/old.txt"
    assert cards["c_edit"].tool_call.edit_tool_call.result.success.lines_added == 1
    assert cards["c_todo"].tool_call.update_todos_tool_call.result.success.total_count == 2
    assert "turn_ended" in log.kinds()
