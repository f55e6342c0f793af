"""The agent loop's tools and error lifecycles end to end: the real server over HTTP, the fake
Cursor client running execs against a temporary workspace, and the fake provider.

The fake client runs Grep, Glob and Shell for real (``tests/support/fake_cursor.py``), so a
test sees what the model would read: the actual matches, the command's output and exit code.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from store import Store
from store.conversations import ConversationStore
from store.llm_calls import CallRecords
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    cancel_message,
    grep_workspace,
    kv_ack,
    resume_message,
    updates,
    user_turn_message,
)
from tests.support.fake_provider import (
    FakeProvider,
    FakeToolCall,
    Script,
    chat_events,
    encode_events,
)
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver
from wire.tools.registry import unknown_tool_result


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The editor's workspace (apart from the test database, which lives in tmp_path)."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


# ---- helpers ----


async def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Wait (polling) until ``predicate`` holds; fail naming ``what`` after ``timeout``."""
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def args(**values: Any) -> tuple[str, ...]:
    """A tool call's arguments as the model streams them (two fragments)."""
    text = json.dumps(values)
    return (text[:5], text[5:])


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """The tool messages of an OpenAI Chat request body: call id -> content."""
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def shell_deltas(log: TurnLog) -> list[tuple[str, str]]:
    """The streamed output of every ``tool_call_delta`` frame: (stdout|stderr, text)."""
    out = []
    for delta in updates(log, "tool_call_delta"):
        shell = delta.tool_call_delta.shell_tool_call_delta
        stream = shell.WhichOneof("delta")
        out.append((stream, getattr(shell, stream).content))
    return out


def exec_requests(log: TurnLog) -> list[agent.ExecServerMessage]:
    return [m.exec_server_message for m in log.messages if m.HasField("exec_server_message")]


def index_of(log: TurnLog, kind: str) -> int:
    return log.kinds().index(kind)


def assert_error_details(end: dict[str, Any], *parts: str) -> None:
    """The EndStream error is ``unavailable`` with Cursor's provider ErrorDetails."""
    error = end["error"]
    assert error["code"] == "unavailable", error
    for part in parts:
        assert part in error["message"], (part, error["message"])
    (detail,) = error["details"]
    assert detail["type"] == "aiserver.v1.ErrorDetails"
    value = base64.b64decode(detail["value"] + "=" * (-len(detail["value"]) % 4))
    details = aiserver.ErrorDetails.FromString(value)
    assert details.error == aiserver.ErrorDetails.ERROR_PROVIDER_ERROR
    assert details.details.detail == error["message"]


def stored_origins(server_store: Store, conversation_id: str = "conv-1") -> list[str]:
    conversations = ConversationStore(server_store.database)
    head = conversations.ensure_conversation(conversation_id)
    return [m.origin for m in conversations.messages_at(head)]


def run_status(server_store: Store, request_id: str) -> str | None:
    run = ConversationStore(server_store.database).run(request_id)
    return None if run is None else run.status


# ---- the tools ----


async def test_grep_and_glob_give_the_model_the_real_matches(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, workspace: Path
) -> None:
    (workspace / "src").mkdir()
    (workspace / "docs").mkdir()
    (workspace / "src" / "app.py").write_text(
        "import os\n\ndef handler(event):\n    return os.environ['HOME']\n"
    )
    (workspace / "src" / "util.py").write_text("def helper():\n    pass\n")
    (workspace / "notes.txt").write_text("def not_python():\n")
    (workspace / "README.md").write_text("# Demo\n")
    (workspace / "docs" / "guide.md").write_text("guide\n")
    tools = [
        FakeToolCall("call_grep", "Grep", args(pattern=r"def \w+\(", glob="*.py")),
        FakeToolCall("call_glob", "Glob", args(glob_pattern="**/*.md")),
    ]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    fake.enqueue(Script.sse(chat_events(text=["Found them."])))
    session = CursorSession(cursor, "turn-grep", workspace=workspace, batch_size=2)
    log = await session.run(user_turn_message("find the functions and docs", public_id))
    assert log.end == {}
    # Glob went out as grep args: an empty pattern listing the files the glob selects.
    grep_request, glob_request = (e.grep_args for e in exec_requests(log))
    assert (grep_request.pattern, grep_request.glob) == (r"def \w+\(", "*.py")
    assert (glob_request.pattern, glob_request.glob) == ("", "**/*.md")
    assert glob_request.output_mode == "files_with_matches"
    # The model reads the matches themselves, ripgrep style, not a summary.
    results = tool_results(fake.requests[1].json)
    assert (
        results["call_grep"] == "src/app.py\n3:def handler(event):\n\nsrc/util.py\n1:def helper():"
    )
    assert results["call_glob"] == "README.md\ndocs/guide.md"
    # The cards carry the typed results.
    completed = {c.call_id: c.tool_call for c in updates(log, "tool_call_completed")}
    assert list(completed["call_glob"].glob_tool_call.result.success.files) == [
        "README.md",
        "docs/guide.md",
    ]
    grep_success = completed["call_grep"].grep_tool_call.result.success
    (union,) = grep_success.workspace_results.values()
    assert [m.file for m in union.content.matches] == ["src/app.py", "src/util.py"]
    assert "turn_ended" in log.kinds()


async def test_shell_output_streams_to_the_client_then_reaches_the_model(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, workspace: Path
) -> None:
    """The command prints, then waits for a file only the test creates after the client saw
    that first chunk as a tool_call_delta: the output streamed while the command ran."""
    command = (
        "printf 'first\\n'; while [ ! -e go ]; do sleep 0.01; done; "
        "printf 'oops\\n' >&2; printf 'second\\n'; exit 3"
    )
    tools = [FakeToolCall("call_sh", "Shell", args(command=command, description="try it"))]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    fake.enqueue(Script.sse(chat_events(text=["It failed."])))
    session = CursorSession(cursor, "turn-shell", workspace=workspace)
    task = asyncio.create_task(session.run(user_turn_message("run it", public_id)))
    try:
        await wait_until(lambda: bool(shell_deltas(session.log)), "the first output chunk")
        assert shell_deltas(session.log) == [("stdout", "first\n")]
        assert "tool_call_completed" not in session.log.kinds()
        assert len(fake.requests) == 1
    finally:
        (workspace / "go").touch()  # the command may finish now (also when the test failed)
    log = await asyncio.wait_for(task, 20)
    assert log.end == {}

    (shell_request,) = exec_requests(log)
    shell_args = shell_request.shell_stream_args
    assert shell_args.command == command
    assert shell_args.timeout_behavior == agent.TIMEOUT_BEHAVIOR_BACKGROUND
    deltas = shell_deltas(log)
    assert deltas[0] == ("stdout", "first\n")
    assert sorted(deltas[1:]) == [("stderr", "oops\n"), ("stdout", "second\n")]
    started = updates(log, "tool_call_started")[0]
    for delta in updates(log, "tool_call_delta"):
        assert delta.call_id == "call_sh"
        assert delta.model_call_id and delta.model_call_id == started.model_call_id
    # Every delta comes before the card completes.
    kinds = log.kinds()
    last_delta = max(i for i, k in enumerate(kinds) if k == "tool_call_delta")
    assert last_delta < kinds.index("tool_call_completed")
    (completed,) = updates(log, "tool_call_completed")
    failure = completed.tool_call.shell_tool_call.result.failure
    assert (failure.exit_code, failure.stdout, failure.stderr) == (3, "first\nsecond\n", "oops\n")
    assert failure.working_directory == str(workspace)
    # The model reads the exit code and the whole output.
    assert tool_results(fake.requests[1].json)["call_sh"] == (
        "the command failed with exit code 3\nfirst\nsecond\n<stderr>\noops\n</stderr>"
    )


async def test_shell_success_gives_the_model_its_output(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, workspace: Path
) -> None:
    (workspace / "sub").mkdir()
    command = "pwd; printf 'warn\\n' >&2"
    tools = [FakeToolCall("call_ok", "Shell", args(command=command, working_directory="/sub"))]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    fake.enqueue(Script.sse(chat_events(text=["Done."])))
    log = await CursorSession(cursor, "turn-shell-ok", workspace=workspace).run(
        user_turn_message("where am I", public_id)
    )
    assert log.end == {}
    (completed,) = updates(log, "tool_call_completed")
    success = completed.tool_call.shell_tool_call.result.success
    assert success.exit_code == 0
    where = str(workspace / "sub")
    assert tool_results(fake.requests[1].json)["call_ok"] == (f"{where}\n<stderr>\nwarn\n</stderr>")


@pytest.mark.parametrize("block_until_ms", [0, 500])
async def test_a_backgrounded_shell_ends_its_round_and_the_loop_goes_on(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, workspace: Path, block_until_ms: int
) -> None:
    """``block_until_ms`` 0 backgrounds at once; 500 after the command printed its first line
    and kept running (the fake editor moves it to the background at that time)."""
    command = "printf 'started\\n'; exec sleep 60"
    tools = [FakeToolCall("call_bg", "Shell", args(command=command, block_until_ms=block_until_ms))]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    fake.enqueue(Script.sse(chat_events(text=["It runs."])))
    session = CursorSession(cursor, "turn-bg", workspace=workspace)
    log = await session.run(user_turn_message("start the server", public_id))
    assert log.end == {}
    (shell_request,) = exec_requests(log)
    assert shell_request.shell_stream_args.timeout == block_until_ms
    background = session.background_shells[1]
    (completed,) = updates(log, "tool_call_completed")
    result = completed.tool_call.shell_tool_call.result
    assert result.is_background and result.success.shell_id == 1
    assert result.pid == background.process.pid
    content = tool_results(fake.requests[1].json)["call_bg"]
    head = f"the command keeps running in the background: shell_id=1 pid={background.process.pid}"
    if block_until_ms:
        assert content == head + "\noutput so far:\nstarted\n"
    else:
        assert content == head
    # The loop went on: a second model call, and the turn ended normally.
    assert len(fake.requests) == 2
    assert log.kinds().count("turn_ended") == 1
    assert background.process.returncode is not None  # stopped when the session ended


async def test_shell_requests_carry_the_run_context(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, workspace: Path
) -> None:
    context = agent.RequestContext(
        env=agent.RequestContextEnv(
            workspace_paths=[str(workspace)], terminals_folder="/home/u/.cursor/terminals"
        ),
        admin_command_denylist=["rm -rf /", "git push --force"],
    )
    tools = [FakeToolCall("call_ctx", "Shell", args(command="sleep 60", block_until_ms=0))]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    fake.enqueue(Script.sse(chat_events(text=["ok"])))
    log = await CursorSession(cursor, "turn-ctx", workspace=workspace).run(
        user_turn_message("go", public_id, request_context=context)
    )
    assert log.end == {}
    (shell_request,) = exec_requests(log)
    assert shell_request.shell_stream_args.conversation_id == "conv-1"
    assert list(shell_request.shell_stream_args.admin_command_denylist) == [
        "rm -rf /",
        "git push --force",
    ]
    content = tool_results(fake.requests[1].json)["call_ctx"]
    assert "its output keeps going to /home/u/.cursor/terminals/1.txt" in content


# ---- KV acknowledgements ----


@pytest.mark.parametrize("which", ["initial", "final"])
async def test_a_rejected_kv_set_ends_the_run_with_no_later_checkpoint(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store, which: str
) -> None:
    if which == "initial":
        # The model may be asked while the checkpoint is out; it never answers here, so the
        # run ends on the rejection alone (the test below covers an answered call).
        fake.enqueue(Script.hang_before_headers())
    else:
        fake.enqueue(Script.sse(chat_events(text=["an answer"])))
    session = CursorSession(cursor, f"turn-reject-{which}")

    def reject(kv_id: int) -> bool:
        if session.rejected:
            return False
        if which == "initial":
            return True
        return any(m.interaction_update.HasField("text_delta") for m in session.log.messages)

    log = await session.run(user_turn_message("hi", public_id), reject_set=reject)
    assert log.end is not None
    error = log.end["error"]
    assert error["code"] == "invalid_argument"
    assert "KV SET" in error["message"]
    assert "the test client refused this blob" in error["message"]
    (rejected,) = session.rejected
    at = next(
        i
        for i, m in enumerate(log.messages)
        if m.kv_server_message.HasField("set_blob_args") and m.kv_server_message.id == rejected
    )
    assert "conversation_checkpoint_update" not in log.kinds()[at:]
    assert "turn_ended" not in log.kinds()
    if which == "initial":
        assert log.checkpoints() == []
        assert updates(log, "text_delta") == []
        if fake.requests:  # the model was already asked: that call is cancelled
            await asyncio.wait_for(fake.disconnected(0).wait(), 5)
    else:
        assert len(log.checkpoints()) == 1
    assert run_status(server_store, f"turn-reject-{which}") == "failed"


async def test_a_withheld_ack_holds_the_initial_checkpoint_and_the_answer(
    fake: FakeProvider, public_id: str, cursor: FakeCursor
) -> None:
    """(test_agent_turn covers the final checkpoint's acks.) The first SET of the initial
    checkpoint stays unacknowledged while every other one is acknowledged: the server goes
    quiet (heartbeats) without publishing the checkpoint or showing any of the model's output
    until that ack arrives (the model may already be asked: its events are held)."""
    fake.enqueue(Script.sse(chat_events(text=["ok"])))
    session = CursorSession(cursor, "turn-hold-initial")
    held: list[int] = []

    def hold_first(kv_id: int) -> bool:
        if held:
            return False
        held.append(kv_id)
        return True

    def quiet_after(mark: int) -> Callable[[], bool]:
        """A heartbeat after frame ``mark`` (the server had nothing to send), or a checkpoint
        (which would be the bug)."""
        return lambda: "heartbeat" in session.log.kinds()[mark:] or bool(session.log.checkpoints())

    task = asyncio.create_task(session.run(user_turn_message("hi", public_id), hold_ack=hold_first))
    await wait_until(lambda: bool(held), "the first KV SET")
    # A heartbeat after the SETs: every SET of the batch reached the client...
    await wait_until(quiet_after(index_of(session.log, "kv_set_blob_args")), "a heartbeat")
    sets = session.log.kinds().count("kv_set_blob_args")
    await session.flush()  # ...and every ack but the held one was accepted.
    await wait_until(quiet_after(len(session.log.messages)), "a heartbeat after the acks")
    assert sets > 1, "only one blob: nothing shows the others' acks are not enough"
    assert session.log.checkpoints() == []
    assert updates(session.log, "text_delta") == []
    mark = len(session.log.messages)
    await session.send(kv_ack(held[0]))
    log = await asyncio.wait_for(task, 10)
    assert log.end == {}
    first_checkpoint = index_of(log, "conversation_checkpoint_update")
    assert mark <= first_checkpoint < index_of(log, "text_delta")
    assert [u.text for u in updates(log, "text_delta")] == ["ok"]
    assert len(fake.requests) == 1


@pytest.mark.parametrize("ending", ["rejected-set", "client-cancel"])
async def test_a_run_ending_while_the_answer_is_held_ends_with_its_own_error(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store, ending: str
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["held answer"])))
    session = CursorSession(cursor, f"turn-held-{ending}")
    held: list[int] = []

    def hold_first(kv_id: int) -> bool:
        if held:
            return False
        held.append(kv_id)
        return True

    task = asyncio.create_task(session.run(user_turn_message("hi", public_id), hold_ack=hold_first))
    await wait_until(lambda: bool(held), "the first KV SET")
    records = CallRecords(server_store.database)
    await wait_until(
        lambda: [c.status for c in records.list(10)] == ["completed"], "the model call's end"
    )
    mark = len(session.log.messages)
    await wait_until(lambda: "heartbeat" in session.log.kinds()[mark:], "a quiet server")
    if ending == "rejected-set":
        await session.send(kv_ack(held[0], error="refused late"))
    else:
        await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end is not None
    if ending == "rejected-set":
        assert log.end["error"]["code"] == "invalid_argument", log.end
        assert "refused late" in log.end["error"]["message"]
    else:
        assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    assert log.checkpoints() == [] and updates(log, "text_delta") == []


# ---- provider failures ----


@pytest.mark.parametrize("status", [400, 401, 429, 503])
async def test_a_provider_http_error_before_the_stream_ends_the_run_unavailable(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store, status: int
) -> None:
    fake.enqueue(Script.error(status, {"error": {"message": f"refused with {status}"}}))
    log = await CursorSession(cursor, f"turn-http-{status}").run(user_turn_message("hi", public_id))
    assert log.end is not None
    assert_error_details(log.end, str(status), f"refused with {status}")
    assert "turn_ended" not in log.kinds()
    assert len(log.checkpoints()) == 1  # the initial one only
    assert stored_origins(server_store) == ["runtime"]
    assert run_status(server_store, f"turn-http-{status}") == "failed"


async def test_a_provider_http_error_after_a_tool_round_keeps_the_round(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    tools = [FakeToolCall("call_a", "Read", args(path="/a.txt"))]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    fake.enqueue(Script.error(502, "bad gateway from the upstream proxy"))
    log = await CursorSession(cursor, "turn-http-round", workspace=workspace).run(
        user_turn_message("read a", public_id)
    )
    assert log.end is not None
    assert_error_details(log.end, "502", "bad gateway from the upstream proxy")
    assert "turn_ended" not in log.kinds()
    assert len(fake.requests) == 2
    # initial, staged, settled; nothing after the failed second call
    assert len(log.checkpoints()) == 3
    assert not log.checkpoints()[-1].pending_tool_calls
    assert stored_origins(server_store) == ["runtime", "assistant", "tool"]
    assert run_status(server_store, "turn-http-round") == "failed"


def _cut_inside_an_event() -> Script:
    events = chat_events(text=["Hal", "f"])
    body = encode_events(events[:3])
    return Script.raw([body, b'data: {"id":"chatcmpl-fake","choices":[{"ind'])


def _cut_inside_tool_arguments() -> Script:
    events = chat_events(tools=[FakeToolCall("call_cut", "Read", ('{"path": ', '"/a.txt"}'))])
    return Script.sse(events[:3])  # role, tool call start, first fragment, then EOF


@pytest.mark.parametrize(
    ("script", "texts"),
    [
        (Script.sse(chat_events(text=["Hal", "f"], finish="", done=False)), ["Hal", "f"]),
        (_cut_inside_an_event(), ["Hal", "f"]),
        (_cut_inside_tool_arguments(), []),
    ],
    ids=["after-text", "inside-an-event", "inside-tool-arguments"],
)
async def test_a_provider_stream_cut_mid_stream_ends_the_run_unavailable(
    fake: FakeProvider,
    public_id: str,
    cursor: FakeCursor,
    server_store: Store,
    workspace: Path,
    script: Script,
    texts: list[str],
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    fake.enqueue(script)
    log = await CursorSession(cursor, "turn-cut", workspace=workspace).run(
        user_turn_message("hi", public_id)
    )
    assert log.end is not None
    assert_error_details(log.end, "provider error", "ended before")
    assert [u.text for u in updates(log, "text_delta")] == texts
    assert "turn_ended" not in log.kinds()
    assert exec_requests(log) == []  # a half-streamed tool call is never run
    assert len(log.checkpoints()) == 1
    assert stored_origins(server_store) == ["runtime"]
    assert run_status(server_store, "turn-cut") == "failed"


# ---- protocol failures ----


async def test_a_round_of_only_unknown_tools_settles_and_the_model_is_asked_again(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store
) -> None:
    tools = [
        FakeToolCall("call_x", "Teleport", args(to="mars")),
        FakeToolCall("call_y", "Levitate", args(height=3)),
    ]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    fake.enqueue(Script.sse(chat_events(text=["I cannot do that"])))
    log = await CursorSession(cursor, "turn-all-unknown").run(user_turn_message("go", public_id))
    assert log.end == {}
    assert exec_requests(log) == [] and updates(log, "tool_call_started") == []
    results = tool_results(fake.requests[1].json)
    assert results == {
        "call_x": unknown_tool_result("Teleport"),
        "call_y": unknown_tool_result("Levitate"),
    }
    assert run_status(server_store, "turn-all-unknown") == "completed"


async def test_an_unknown_tool_from_the_model_is_an_error_it_reads_and_the_turn_goes_on(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, server_store: Store, workspace: Path
) -> None:
    """The model's mistake is not the client's: the known call runs, the unknown one shows no
    card and sends no exec, and the next request holds its error result."""
    (workspace / "a.txt").write_text("alpha\n")
    tools = [
        FakeToolCall("call_ok", "Read", args(path="/a.txt")),
        FakeToolCall("call_bad", "Teleport", args(to="mars")),
    ]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    fake.enqueue(Script.sse(chat_events(text=["sorry, no teleport"])))
    log = await CursorSession(cursor, "turn-unknown", workspace=workspace).run(
        user_turn_message("go", public_id)
    )
    assert log.end == {}
    assert [r.WhichOneof("message") for r in exec_requests(log)] == ["read_args"]
    assert [u.call_id for u in updates(log, "tool_call_started")] == ["call_ok"]
    assert [u.call_id for u in updates(log, "tool_call_completed")] == ["call_ok"]
    assert all(p.call_id != "call_bad" for p in updates(log, "partial_tool_call"))
    results = tool_results(fake.requests[1].json)
    assert results["call_bad"] == unknown_tool_result("Teleport")
    assert "alpha" in results["call_ok"]
    assert "turn_ended" in log.kinds()
    assert run_status(server_store, "turn-unknown") == "completed"


@pytest.mark.parametrize(
    ("tool", "tool_args", "wrong"),
    [
        ("Read", {"path": "/a.txt"}, agent.ExecClientMessage(grep_result=agent.GrepResult())),
        (
            "Grep",
            {"pattern": "x"},
            agent.ExecClientMessage(read_result=agent.ReadResult()),
        ),
        (
            "Shell",
            {"command": "true"},
            agent.ExecClientMessage(write_result=agent.WriteResult()),
        ),
    ],
    ids=["read-gets-grep", "grep-gets-read", "shell-gets-write"],
)
async def test_an_exec_result_of_the_wrong_kind_fails_the_run(
    fake: FakeProvider,
    public_id: str,
    cursor: FakeCursor,
    server_store: Store,
    tool: str,
    tool_args: dict[str, Any],
    wrong: agent.ExecClientMessage,
) -> None:
    fake.enqueue(Script.sse(chat_events(tools=[FakeToolCall("call_w", tool, args(**tool_args))])))
    fake.enqueue(Script.sse(chat_events(text=["never asked"])))
    session = CursorSession(cursor, "turn-wrong")  # no workspace: the test answers by hand
    task = asyncio.create_task(session.run(user_turn_message("go", public_id)))
    await wait_until(lambda: bool(exec_requests(session.log)), "the exec request")
    (request,) = exec_requests(session.log)
    reply = agent.ExecClientMessage()
    reply.CopyFrom(wrong)
    reply.id, reply.exec_id = request.id, request.exec_id
    await session.send(agent.AgentClientMessage(exec_client_message=reply))
    log = await asyncio.wait_for(task, 10)
    assert log.end == {
        "error": {
            "code": "invalid_argument",
            "message": f"protocol error: unexpected Exec result for tool {tool}",
        }
    }
    kinds = log.kinds()
    assert "tool_call_completed" not in kinds and "turn_ended" not in kinds
    assert "exec_server_control_message" not in kinds  # the answered exec is not pending
    assert len(fake.requests) == 1
    assert run_status(server_store, "turn-wrong") == "failed"


@pytest.mark.parametrize(
    ("mode", "label"),
    [
        (agent.AGENT_MODE_UNSPECIFIED, "AGENT_MODE_UNSPECIFIED"),
        (agent.AGENT_MODE_TRIAGE, "AGENT_MODE_TRIAGE"),
        (agent.AGENT_MODE_PROJECT, "AGENT_MODE_PROJECT"),
        (agent.AGENT_MODE_CUSTOM, "AGENT_MODE_CUSTOM"),
        (42, "42"),
    ],
)
async def test_a_mode_without_assets_is_refused_naming_it(
    fake: FakeProvider,
    public_id: str,
    cursor: FakeCursor,
    server_store: Store,
    mode: int,
    label: str,
) -> None:
    log = await CursorSession(cursor, "turn-mode").run(
        user_turn_message("hi", public_id, mode=mode)  # type: ignore[arg-type]  # 42: no mode, refused
    )
    assert log.end == {
        "error": {
            "code": "invalid_argument",
            "message": f"protocol error: unsupported agent mode: {label} (this server runs "
            "AGENT_MODE_AGENT, AGENT_MODE_ASK, AGENT_MODE_PLAN, AGENT_MODE_DEBUG, "
            "AGENT_MODE_MULTITASK)",
        }
    }
    assert [k for k in log.kinds() if k != "heartbeat"] == []
    assert fake.requests == []
    assert stored_origins(server_store) == []


# ---- the fake client itself ----


def test_resume_and_user_turn_messages_carry_the_client_state() -> None:
    state = agent.ConversationStateStructure(root_prompt_messages_json=[b"\x01" * 32])
    resume = resume_message("m1", conversation_id="c9", conversation_state=state).run_request
    assert resume.action.WhichOneof("action") == "resume_action"
    assert (resume.conversation_id, resume.requested_model.model_id) == ("c9", "m1")
    assert resume.conversation_state == state
    turn = user_turn_message("hi", "m1", conversation_state=state).run_request
    assert turn.conversation_state == state
    assert not user_turn_message("hi", "m1").run_request.HasField("conversation_state")


def test_the_fake_editor_answers_glob_as_grep_args(workspace: Path) -> None:
    (workspace / "src" / "lib").mkdir(parents=True)
    for name in ("src/a.ts", "src/lib/b.tsx", "src/lib/c.js", "top.ts"):
        (workspace / name).write_text("x\n")
    request = agent.GrepArgs(pattern="", glob="src/**/*.{ts,tsx}", output_mode="files_with_matches")
    result = grep_workspace(workspace, request)
    (union,) = result.success.workspace_results.values()
    assert list(union.files.files) == ["src/a.ts", "src/lib/b.tsx"]


# ---- TodoWrite merge ----


async def test_a_todo_write_merge_updates_the_checkpoint_todos_by_id(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, workspace: Path
) -> None:
    """Two rounds: a list, then a merge naming one old id and one new id. The card, the text
    the model reads and the final checkpoint's todos all hold the merged list."""
    first = [
        {"id": "1", "content": "Read the code", "status": "in_progress"},
        {"id": "2", "content": "Fix the bug", "status": "pending"},
    ]
    merge = [
        {"id": "3", "content": "Tell the user", "status": "pending"},
        {"id": "1", "content": "Read the code", "status": "completed"},
    ]
    fake.enqueue(
        Script.sse(
            chat_events(tools=[FakeToolCall("t1", "TodoWrite", args(todos=first, merge=False))])
        )
    )
    fake.enqueue(
        Script.sse(
            chat_events(tools=[FakeToolCall("t2", "TodoWrite", args(todos=merge, merge=True))])
        )
    )
    fake.enqueue(Script.sse(chat_events(text=["Planned."])))
    session = CursorSession(cursor, "turn-todos", workspace=workspace)
    log = await session.run(user_turn_message("plan it", public_id))
    assert log.end == {}
    merged = [
        ("1", "Read the code", agent.TODO_STATUS_COMPLETED),
        ("2", "Fix the bug", agent.TODO_STATUS_PENDING),
        ("3", "Tell the user", agent.TODO_STATUS_PENDING),
    ]
    completed = {c.call_id: c.tool_call for c in updates(log, "tool_call_completed")}
    success = completed["t2"].update_todos_tool_call.result.success
    assert [(t.id, t.content, t.status) for t in success.todos] == merged
    assert (success.total_count, success.was_merge) == (3, True)
    assert tool_results(fake.requests[2].json)["t2"] == (
        "Merged 2 items into the todo list by id; it now holds 3 items:\n"
        "- [completed] 1: Read the code\n"
        "- [pending] 2: Fix the bug\n"
        "- [pending] 3: Tell the user"
    )
    final = log.checkpoints()[-1]
    items = [agent.TodoItem.FromString(log.blobs[blob_id]) for blob_id in final.todos]
    assert [(t.id, t.content, t.status) for t in items] == merged


# ---- a Read of an image ----


async def test_a_read_png_reaches_the_model_as_an_image_and_other_binaries_as_text(
    fake: FakeProvider, public_id: str, cursor: FakeCursor, workspace: Path
) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR pixels"
    (workspace / "shot.png").write_bytes(png)
    (workspace / "blob.bin").write_bytes(b"\x00\xff\xfe binary")
    tools = [
        FakeToolCall("call_png", "Read", args(path="/shot.png")),
        FakeToolCall("call_bin", "Read", args(path="/blob.bin")),
    ]
    fake.enqueue(Script.sse(chat_events(tools=tools)))
    fake.enqueue(Script.sse(chat_events(text=["A screenshot."])))
    session = CursorSession(cursor, "turn-image", workspace=workspace, batch_size=2)
    log = await session.run(user_turn_message("what is in shot.png?", public_id))
    assert log.end == {}
    messages = fake.requests[1].json["messages"]
    results = tool_results(fake.requests[1].json)
    assert results["call_png"] == (
        f"/shot.png is an image (image/png, {len(png)} bytes); it is attached to this result"
    )
    assert (
        results["call_bin"] == "/blob.bin is a binary file (10 bytes); it cannot be shown as text"
    )
    last_tool = max(i for i, m in enumerate(messages) if m["role"] == "tool")
    shown = messages[last_tool + 1]
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    assert shown == {
        "role": "user",
        "content": [
            {"type": "text", "text": "The image(s) returned by tool call call_png (Read):"},
            {"type": "image_url", "image_url": {"url": url}},
        ],
    }
    # Only the image's result carries one: the other binary shows nothing.
    assert json.dumps(messages).count("data:image/") == 1
