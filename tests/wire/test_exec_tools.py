"""The per-tool Exec codec, as pure functions: model arguments in, wire requests out; editor
results in, the LLM's string, ``is_error`` and the typed UI ToolCall out.

Every exact value comes from ``notes/tools.md`` §1.2 to §2.3 (wire fields and defaults) or from our
own wording of the real output (the reference gave the model one-line summaries; we give it the
file text, matches, diagnostics and command output).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from wire.connect import EnvelopeReader
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import (
    ExecContext,
    InvalidCall,
    SendExec,
    ShellOutput,
    Todo,
    ToolChannel,
    ToolExecution,
    ToolImage,
    ToolOutcome,
    Waiting,
    WrongResult,
)
from wire.tools.dispatch import prepare_tool_call, stamp_tool_call
from wire.tools.frames import (
    exec_abort_frame,
    exec_request_frame,
    partial_tool_call_frame,
    shell_delta_frame,
    tool_call_completed_frame,
    tool_call_started_frame,
)
from wire.tools.mcp_catalog import McpCatalog, McpTool
from wire.tools.read import MAX_READ_IMAGE_BYTES
from wire.tools.registry import REGISTRY, UnsupportedTool, resolve_tool
from wire.tools.shell import SHELL_DEFAULT_TIMEOUT_MS
from wire.tools.todo_write import TodoUpdate, apply_todo_update

CALL_ID = "call-1\nfc_opaque"  # call ids are opaque and may hold a newline
CONTEXT = ExecContext(
    conversation_id="conv-1",
    terminals_folder="/home/u/.cursor/terminals/",
    admin_command_denylist=("rm -rf /",),
    mcp=McpCatalog((McpTool("s", "t", "srv-s-t", "srv-s"),)),
)


# ---- helpers ----


def prep(name: str, args: dict[str, Any] | str, context: ExecContext = CONTEXT) -> ToolExecution:
    text = args if isinstance(args, str) else json.dumps(args)
    return prepare_tool_call(name, CALL_ID, text, context)


def request(execution: ToolExecution) -> agent.ExecServerMessage:
    step = execution.begin()
    assert isinstance(step, SendExec), step
    return step.message


def outcome(step: object) -> ToolOutcome:
    assert isinstance(step, ToolOutcome), step
    return step


def next_request(step: object) -> agent.ExecServerMessage:
    assert isinstance(step, SendExec), step
    return step.message


def decode(frame: bytes) -> agent.AgentServerMessage:
    envelopes = EnvelopeReader().feed(frame)
    assert len(envelopes) == 1 and envelopes[0].flags == 0
    return agent.AgentServerMessage.FromString(envelopes[0].payload)


def read_result(**variant: Any) -> agent.ExecClientMessage:
    return agent.ExecClientMessage(id=1, read_result=agent.ReadResult(**variant))


def file_text(content: str, **fields: Any) -> agent.ExecClientMessage:
    return read_result(success=agent.ReadSuccess(path="/p", content=content, **fields))


def write_ok(lines: int = 1) -> agent.ExecClientMessage:
    result = agent.WriteResult(success=agent.WriteSuccess(path="/p", lines_created=lines))
    return agent.ExecClientMessage(id=2, write_result=result)


def shell_event(**event: Any) -> agent.ExecClientMessage:
    return agent.ExecClientMessage(id=1, shell_stream=agent.ShellStream(**event))


def grep_result(success: agent.GrepSuccess) -> agent.ExecClientMessage:
    return agent.ExecClientMessage(id=1, grep_result=agent.GrepResult(success=success))


def diagnostics(path: str, *items: agent.Diagnostic) -> agent.ExecClientMessage:
    success = agent.DiagnosticsSuccess(path=path, diagnostics=items, total_diagnostics=len(items))
    return agent.ExecClientMessage(
        id=1, diagnostics_result=agent.DiagnosticsResult(success=success)
    )


def diagnostic(
    line: int, column: int, severity: agent.DiagnosticSeverity, message: str, **more: Any
) -> agent.Diagnostic:
    start = agent.Position(line=line, column=column)
    end = agent.Position(line=line, column=column + 1)
    return agent.Diagnostic(
        severity=severity, range=agent.Range(start=start, end=end), message=message, **more
    )


# ---- names and channels ----


def test_each_tool_has_one_channel_and_unknown_names_are_refused() -> None:
    exec_tools = (
        "Read",
        "Write",
        "StrReplace",
        "EditNotebook",
        "Delete",
        "Grep",
        "Glob",
        "Shell",
        "ReadLints",
    )
    channels = {name: prep(name, {}).channel for name in exec_tools}
    assert set(channels.values()) == {ToolChannel.EXEC}
    assert prep("TodoWrite", {}).channel is ToolChannel.LOCAL
    assert resolve_tool("str_replace") == "StrReplace"  # names are matched normalized
    assert resolve_tool("READ") == "Read"
    with pytest.raises(UnsupportedTool) as raised:
        prepare_tool_call("Teleport", CALL_ID, "{}", CONTEXT)
    assert raised.value.message == "unsupported tool: Teleport"


# ---- the common envelope ----


NOTEBOOK = '{\n "cells": [{"cell_type": "code", "source": "x = 1"}]\n}\n'

# Every Exec request each tool sends, and whether it lets the editor attach its hooks' extra
# context (tools.md §1.2: true for all of these; false only for Task, GetMcpTools and the
# AwaitShell terminal read). The edit tools' second request is their Write.
EXEC_REQUESTS: list[tuple[str, dict[str, Any], list[str], bool]] = [
    ("Read", {"path": "/p"}, ["read_args"], True),
    ("Write", {"path": "/p", "contents": "x"}, ["read_args", "write_args"], True),
    (
        "StrReplace",
        {"path": "/p", "old_string": "a", "new_string": "b"},
        ["read_args", "write_args"],
        True,
    ),
    (
        "EditNotebook",
        {
            "target_notebook": "/p",
            "cell_idx": 0,
            "is_new_cell": False,
            "cell_language": "python",
            "old_string": "x = 1",
            "new_string": "x = 2",
        },
        ["read_args", "write_args"],
        True,
    ),
    ("Delete", {"path": "/p"}, ["delete_args"], True),
    # A subagent's result is its report, not the tool's own answer: no hook contexts.
    ("Task", {"description": "d", "prompt": "p"}, ["subagent_args"], False),
    ("Grep", {"pattern": "x"}, ["grep_args"], True),
    ("Glob", {"glob_pattern": "*.py"}, ["grep_args"], True),
    ("Shell", {"command": "ls"}, ["shell_stream_args"], True),
    ("ReadLints", {}, ["diagnostics_args"], True),
    # A poll of the background shell's terminal file is not the tool's answer.
    ("AwaitShell", {"shell_id": "7", "pattern": "ready"}, ["read_args"], False),
    # The MCP state is not the tool's answer either.
    ("GetMcpTools", {}, ["mcp_state_exec_args"], False),
    ("CallMcpTool", {"server": "s", "toolName": "t"}, ["mcp_args"], True),
    ("FetchMcpResource", {"server": "s", "uri": "u://x"}, ["read_mcp_resource_exec_args"], True),
]


def test_every_exec_tool_pins_its_hook_context_flag() -> None:
    pinned = {name for name, *_ in EXEC_REQUESTS}
    assert pinned == {name for name, d in REGISTRY.items() if d.channel is ToolChannel.EXEC}


@pytest.mark.parametrize(("name", "args", "variants", "accepts_hooks"), EXEC_REQUESTS)
def test_every_exec_request_is_keyed_by_the_call_id_and_says_if_it_accepts_hook_contexts(
    name: str, args: dict[str, Any], variants: list[str], accepts_hooks: bool
) -> None:
    execution = prep(name, args)
    messages = [request(execution)]
    if "write_args" in variants:
        content = NOTEBOOK if name == "EditNotebook" else "a"
        messages.append(next_request(execution.feed(file_text(content))))
    assert [message.WhichOneof("message") for message in messages] == variants
    for message, variant in zip(messages, variants, strict=True):
        assert message.exec_id == CALL_ID
        assert message.HasField("accept_hook_additional_contexts")
        assert message.accept_hook_additional_contexts is accepts_hooks
        assert message.id == 0  # the wire id is the runtime's to allocate
        variant_args = getattr(message, variant)
        if "tool_call_id" in variant_args.DESCRIPTOR.fields_by_name:  # the MCP state has none
            assert variant_args.tool_call_id == CALL_ID


def test_exec_request_frame_sets_the_wire_id_on_a_copy() -> None:
    message = request(prep("Read", {"path": "/p"}))
    frame = decode(exec_request_frame(7, message))
    assert frame.WhichOneof("message") == "exec_server_message"
    assert frame.exec_server_message.id == 7
    assert frame.exec_server_message.read_args.path == "/p"
    assert message.id == 0


# ---- Read ----


def test_read_args_carry_path_offset_and_limit() -> None:
    read = request(prep("Read", {"path": "/src/a.py", "offset": -20, "limit": 5})).read_args
    assert (read.path, read.offset, read.limit) == ("/src/a.py", -20, 5)
    plain = request(prep("Read", {"path": "/src/a.py"})).read_args
    assert not plain.HasField("offset") and not plain.HasField("limit")


def test_read_gives_the_llm_the_file_text_verbatim_and_the_ui_a_typed_result() -> None:
    execution = prep("Read", {"path": "/p", "offset": 2, "limit": 3})
    request(execution)
    done = outcome(execution.feed(file_text("two\nthree\nfour\n", total_lines=9, file_size=40)))
    assert (done.content, done.is_error) == ("two\nthree\nfour\n", False)
    read = done.tool_call.read_tool_call
    assert (read.args.path, read.args.offset, read.args.limit) == ("/p", 2, 3)
    success = read.result.success
    assert success.content == "two\nthree\nfour\n"
    assert (success.total_lines, success.file_size, success.path) == (9, 40, "/p")
    assert (success.read_range.start_line, success.read_range.end_line) == (2, 5)
    assert not success.is_empty and not success.exceeded_limit


def test_redacted_read_result_counts_as_a_read_result() -> None:
    execution = prep("Read", {"path": "/p"})
    request(execution)
    result = agent.ReadResult(success=agent.ReadSuccess(path="/p", content="secret-free"))
    done = outcome(execution.feed(agent.ExecClientMessage(id=1, redacted_read_result=result)))
    assert (done.content, done.is_error) == ("secret-free", False)


def test_read_truncated_binary_and_empty_files_say_so() -> None:
    execution = prep("Read", {"path": "/p"})
    done = outcome(execution.feed(file_text("line 1\n", truncated=True, total_lines=5000)))
    assert done.content == (
        "line 1\n[output truncated: /p has 5000 lines; read the rest with offset and limit]"
    )
    assert done.tool_call.read_tool_call.result.success.exceeded_limit

    binary = agent.ReadSuccess(path="/p", data=b"\x00\x01PK\r\n", file_size=6)
    done = outcome(prep("Read", {"path": "/p"}).feed(read_result(success=binary)))
    assert done.content == "/p is a binary file (6 bytes); it cannot be shown as text"
    assert (done.is_error, done.images) == (False, ())
    assert done.tool_call.read_tool_call.result.success.data == b"\x00\x01PK\r\n"

    done = outcome(prep("Read", {"path": "/p"}).feed(file_text("")))
    assert (done.content, done.is_error) == ("/p is empty", False)
    assert done.tool_call.read_tool_call.result.success.is_empty


@pytest.mark.parametrize(
    ("data", "mime_type"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"GIF89a\x01\x00\x01\x00", "image/gif"),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
    ],
)
def test_read_of_an_image_shows_it_to_the_model(data: bytes, mime_type: str) -> None:
    success = agent.ReadSuccess(path="/pic", data=data, file_size=len(data))
    done = outcome(prep("Read", {"path": "/pic"}).feed(read_result(success=success)))
    assert done.images == (ToolImage(mime_type, data),)
    size = f"{len(data)} bytes"
    assert done.content == f"/pic is an image ({mime_type}, {size}); it is attached to this result"
    assert not done.is_error
    assert done.tool_call.read_tool_call.result.success.data == data


def test_read_of_an_image_over_the_bound_is_only_described() -> None:
    at_bound = b"\x89PNG\r\n\x1a\n" + b"\x00" * (MAX_READ_IMAGE_BYTES - 8)
    success = agent.ReadSuccess(path="/big.png", data=at_bound)
    assert outcome(prep("Read", {"path": "/p"}).feed(read_result(success=success))).images
    success = agent.ReadSuccess(path="/big.png", data=at_bound + b"\x00")
    done = outcome(prep("Read", {"path": "/p"}).feed(read_result(success=success)))
    assert done.images == ()
    assert done.content == (
        "/big.png is an image (image/png, 3932161 bytes), larger than the 3932160 bytes "
        "an image may have to be shown to you"
    )


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        ({"file_not_found": agent.ReadFileNotFound(path="/p")}, "file not found: /p"),
        ({"permission_denied": agent.ReadPermissionDenied(path="/p")}, "permission denied: /p"),
        ({"error": agent.ReadError(path="/p", error="EIO: i/o error")}, "EIO: i/o error"),
        (
            {"rejected": agent.ReadRejected(path="/p", reason="outside workspace")},
            "reading /p was rejected: outside workspace",
        ),
        ({"invalid_file": agent.ReadInvalidFile(path="/p", reason="is a dir")}, "is a dir"),
    ],
)
def test_read_errors_reach_the_llm_as_errors(variant: dict[str, Any], expected: str) -> None:
    done = outcome(prep("Read", {"path": "/p"}).feed(read_result(**variant)))
    assert (done.content, done.is_error) == (expected, True)
    assert done.tool_call.read_tool_call.result.error.error_message == expected


# ---- Write and StrReplace: hidden Read, patch here, then Write ----


def test_write_reads_then_writes_the_whole_text_and_reports_the_diff() -> None:
    execution = prep("Write", {"path": "/p", "contents": "one\nTWO\nthree\n"})
    read = request(execution).read_args
    assert (read.path, read.tool_call_id) == ("/p", CALL_ID)
    assert not read.HasField("offset") and not read.HasField("limit")
    assert execution.started().edit_tool_call.args.stream_content == "one\nTWO\nthree\n"

    write_request = next_request(execution.feed(file_text("one\ntwo\nthree\n")))
    assert write_request.exec_id == CALL_ID
    assert write_request.accept_hook_additional_contexts is True
    write = write_request.write_args
    assert (write.path, write.file_text, write.tool_call_id) == ("/p", "one\nTWO\nthree\n", CALL_ID)
    assert write.return_file_content_after_write is False

    done = outcome(execution.feed(write_ok(3)))
    assert (done.content, done.is_error) == ("wrote /p (3 lines)", False)
    success = done.tool_call.edit_tool_call.result.success
    assert (success.lines_added, success.lines_removed) == (1, 1)
    assert success.before_full_file_content == "one\ntwo\nthree\n"
    assert success.after_full_file_content == "one\nTWO\nthree\n"
    assert "-two\n+TWO\n" in success.diff_string
    assert success.diff_string.startswith("--- a//p\n+++ b//p\n")


def test_write_creates_a_missing_file() -> None:
    execution = prep("Write", {"path": "/new.txt", "contents": "hello\n"})
    request(execution)
    missing = read_result(file_not_found=agent.ReadFileNotFound(path="/new.txt"))
    assert next_request(execution.feed(missing)).write_args.file_text == "hello\n"
    done = outcome(execution.feed(write_ok()))
    assert (done.content, done.is_error) == ("created /new.txt (1 line)", False)
    assert done.tool_call.edit_tool_call.result.success.lines_added == 1


def str_replace(before: str, **args: Any) -> tuple[ToolExecution, SendExec | ToolOutcome]:
    execution = prep("StrReplace", {"path": "/p", **args})
    request(execution)
    step = execution.feed(file_text(before))
    assert isinstance(step, SendExec | ToolOutcome)
    return execution, step


def test_str_replace_patches_a_unique_match_server_side() -> None:
    execution, step = str_replace("a = 1\nb = 2\n", old_string="b = 2", new_string="b = 3")
    assert next_request(step).write_args.file_text == "a = 1\nb = 3\n"
    done = outcome(execution.feed(write_ok(2)))
    assert done.content == "edited /p: replaced 1 occurrence; the file now has 2 lines"
    assert not done.is_error
    assert done.tool_call.edit_tool_call.args.stream_content == "b = 3"


def test_str_replace_not_found_is_an_error_the_llm_sees_and_nothing_is_written() -> None:
    _, step = str_replace("a = 1\n", old_string="b = 2", new_string="b = 3")
    done = outcome(step)
    assert done.is_error
    assert done.content.startswith("old_string was not found in /p")
    error = done.tool_call.edit_tool_call.result.error
    assert (error.path, error.error, error.model_visible_error) == (
        "/p",
        done.content,
        done.content,
    )


def test_str_replace_ambiguous_match_needs_replace_all() -> None:
    _, step = str_replace("x\nx\nx\n", old_string="x", new_string="y")
    done = outcome(step)
    assert done.is_error
    assert done.content.startswith("old_string is not unique in /p: found 3 occurrences")

    execution, step = str_replace("x\nx\nx\n", old_string="x", new_string="y", replace_all=True)
    assert next_request(step).write_args.file_text == "y\ny\ny\n"
    done = outcome(execution.feed(write_ok(3)))
    assert done.content == "edited /p: replaced 3 occurrences; the file now has 3 lines"


def test_str_replace_refuses_an_empty_old_string_and_a_missing_file() -> None:
    _, step = str_replace("abc", old_string="", new_string="z")
    assert (outcome(step).content, outcome(step).is_error) == ("old_string must not be empty", True)

    execution = prep("StrReplace", {"path": "/p", "old_string": "a", "new_string": "b"})
    request(execution)
    done = outcome(execution.feed(read_result(file_not_found=agent.ReadFileNotFound(path="/p"))))
    assert done.is_error and done.content.startswith("file not found: /p")
    assert done.tool_call.edit_tool_call.result.file_not_found.path == "/p"


def test_str_replace_matches_across_line_endings_and_keeps_a_crlf_file_crlf() -> None:
    execution, step = str_replace("a\r\nb\r\nc\r\n", old_string="a\nb", new_string="A\nB")
    assert next_request(step).write_args.file_text == "A\r\nB\r\nc\r\n"
    success = outcome(execution.feed(write_ok(3))).tool_call.edit_tool_call.result.success
    assert (success.lines_added, success.lines_removed) == (2, 2)


def test_edit_write_failures_are_errors_the_llm_sees() -> None:
    def failing(result: agent.WriteResult) -> ToolOutcome:
        execution = prep("Write", {"path": "/p", "contents": "x"})
        request(execution)
        next_request(execution.feed(file_text("y")))
        return outcome(execution.feed(agent.ExecClientMessage(id=2, write_result=result)))

    denied = failing(
        agent.WriteResult(permission_denied=agent.WritePermissionDenied(error="read-only fs"))
    )
    assert (denied.content, denied.is_error) == ("read-only fs", True)
    assert denied.tool_call.edit_tool_call.result.write_permission_denied.error == "read-only fs"
    rejected = failing(agent.WriteResult(rejected=agent.WriteRejected(reason="user said no")))
    assert rejected.content == "the edit of /p was rejected: user said no"
    assert rejected.tool_call.edit_tool_call.result.rejected.reason == "user said no"
    full = failing(agent.WriteResult(no_space=agent.WriteNoSpace(path="/p")))
    assert (full.content, full.is_error) == ("no space left on the device to write /p", True)


def test_edit_results_of_the_wrong_kind_are_mismatches_in_either_phase() -> None:
    execution = prep("Write", {"path": "/p", "contents": "x"})
    request(execution)
    assert execution.feed(write_ok()) == WrongResult("write_result")

    execution = prep("Write", {"path": "/p", "contents": "x"})
    request(execution)
    next_request(execution.feed(file_text("y")))
    assert execution.feed(file_text("y")) == WrongResult("read_result")


# ---- Delete ----


def test_delete_sends_the_path_and_reports_each_result() -> None:
    execution = prep("Delete", {"path": "/p"})
    delete = request(execution).delete_args
    assert (delete.path, delete.tool_call_id) == ("/p", CALL_ID)
    success = agent.DeleteResult(success=agent.DeleteSuccess(path="/p", deleted_file="/p"))
    done = outcome(execution.feed(agent.ExecClientMessage(id=1, delete_result=success)))
    assert (done.content, done.is_error) == ("deleted /p", False)
    assert done.tool_call.delete_tool_call.result == success
    assert done.tool_call.delete_tool_call.args.path == "/p"

    for result, text in [
        (agent.DeleteResult(file_not_found=agent.DeleteFileNotFound()), "file not found: /p"),
        (
            agent.DeleteResult(not_file=agent.DeleteNotFile(actual_type="directory")),
            "not a file: /p (it is a directory)",
        ),
        (agent.DeleteResult(file_busy=agent.DeleteFileBusy()), "file busy: /p"),
        (agent.DeleteResult(error=agent.DeleteError(error="EPERM")), "EPERM"),
    ]:
        done = outcome(
            prep("Delete", {"path": "/p"}).feed(agent.ExecClientMessage(id=1, delete_result=result))
        )
        assert (done.content, done.is_error) == (text, True)


# ---- Grep and Glob ----


def test_grep_maps_every_argument_onto_grep_args() -> None:
    args = {
        "pattern": r"def \w+",
        "path": "/src",
        "glob": "*.py",
        "type": "py",
        "output_mode": "content",
        "-A": 2,
        "-B": 1.0,  # JSON numbers may come as floats
        "-C": 3,
        "-i": True,
        "multiline": False,
        "head_limit": 50,
        "offset": 10,
    }
    grep = request(prep("Grep", args)).grep_args
    assert grep == agent.GrepArgs(
        pattern=r"def \w+",
        path="/src",
        glob="*.py",
        output_mode="content",
        context_before=1,
        context_after=2,
        context=3,
        case_insensitive=True,
        type="py",
        head_limit=50,
        multiline=False,
        tool_call_id=CALL_ID,
        offset=10,
    )
    plain = request(prep("Grep", {"pattern": "x"})).grep_args
    assert plain == agent.GrepArgs(pattern="x", tool_call_id=CALL_ID)


def test_grep_gives_the_llm_the_matching_lines() -> None:
    content = agent.GrepContentResult(
        matches=[
            agent.GrepFileMatch(
                file="src/a.py",
                matches=[
                    agent.GrepContentMatch(
                        line_number=3, content="import os", is_context_line=True
                    ),
                    agent.GrepContentMatch(line_number=4, content="def main():"),
                ],
            ),
            agent.GrepFileMatch(
                file="src/b.py", matches=[agent.GrepContentMatch(line_number=9, content="def x():")]
            ),
        ],
        total_matched_lines=2,
        client_truncated=True,
    )
    success = agent.GrepSuccess(
        pattern="def", path="/ws", output_mode="content", workspace_results={"/ws": _u(content)}
    )
    execution = prep("Grep", {"pattern": "def", "output_mode": "content"})
    done = outcome(execution.feed(grep_result(success)))
    assert done.content == (
        "src/a.py\n3-import os\n4:def main():\n\nsrc/b.py\n9:def x():\n"
        "[results truncated: narrow the search with path, glob or type, "
        "or page with head_limit and offset]"
    )
    assert not done.is_error
    assert done.tool_call.grep_tool_call.result.success == success
    assert done.tool_call.grep_tool_call.args.pattern == "def"


def _u(result: agent.GrepContentResult | agent.GrepFilesResult | agent.GrepCountResult) -> Any:
    if isinstance(result, agent.GrepContentResult):
        return agent.GrepUnionResult(content=result)
    if isinstance(result, agent.GrepFilesResult):
        return agent.GrepUnionResult(files=result)
    return agent.GrepUnionResult(count=result)


def test_grep_files_count_no_match_and_error() -> None:
    files = agent.GrepSuccess(
        output_mode="files_with_matches",
        workspace_results={"/ws": _u(agent.GrepFilesResult(files=["a.py", "b.py"]))},
    )
    assert outcome(prep("Grep", {"pattern": "x"}).feed(grep_result(files))).content == "a.py\nb.py"
    counts = agent.GrepSuccess(
        output_mode="count",
        workspace_results={
            "/ws": _u(agent.GrepCountResult(counts=[agent.GrepFileCount(file="a.py", count=4)]))
        },
    )
    assert outcome(prep("Grep", {"pattern": "x"}).feed(grep_result(counts))).content == "a.py:4"
    empty = agent.GrepSuccess(path="/ws", output_mode="content")
    done = outcome(prep("Grep", {"pattern": "zzz"}).feed(grep_result(empty)))
    assert (done.content, done.is_error) == ("no matches for pattern 'zzz' in /ws", False)
    error = agent.GrepResult(error=agent.GrepError(error="regex parse error"))
    done = outcome(
        prep("Grep", {"pattern": "("}).feed(agent.ExecClientMessage(id=1, grep_result=error))
    )
    assert (done.content, done.is_error) == ("regex parse error", True)


def test_glob_is_sent_as_grep_args_and_lists_the_files() -> None:
    execution = prep("Glob", {"glob_pattern": "**/*.md", "target_directory": "/docs"})
    grep = request(execution).grep_args
    assert grep == agent.GrepArgs(
        pattern="",
        path="/docs",
        glob="**/*.md",
        output_mode="files_with_matches",
        tool_call_id=CALL_ID,
    )
    assert execution.started().glob_tool_call.args == agent.GlobToolArgs(
        target_directory="/docs", glob_pattern="**/*.md"
    )
    success = agent.GrepSuccess(
        workspace_results={"/docs": _u(agent.GrepFilesResult(files=["a.md", "b/c.md"]))}
    )
    done = outcome(execution.feed(grep_result(success)))
    assert (done.content, done.is_error) == ("a.md\nb/c.md", False)
    glob = done.tool_call.glob_tool_call.result.success
    assert (list(glob.files), glob.total_files, glob.pattern, glob.path) == (
        ["a.md", "b/c.md"],
        2,
        "**/*.md",
        "/docs",
    )
    none = outcome(prep("Glob", {"glob_pattern": "*.zz"}).feed(grep_result(agent.GrepSuccess())))
    assert none.content == "no files match *.zz"


# ---- Shell ----


def test_shell_args_use_the_documented_defaults() -> None:
    shell = request(prep("Shell", {"command": "make test", "description": "Run tests"}))
    assert shell.shell_stream_args == agent.ShellArgs(
        command="make test",
        working_directory="",
        timeout=SHELL_DEFAULT_TIMEOUT_MS,
        tool_call_id=CALL_ID,
        file_output_threshold_bytes=40_000,
        timeout_behavior=agent.TIMEOUT_BEHAVIOR_BACKGROUND,
        hard_timeout=86_400_000,
        description="Run tests",
        close_stdin=True,
        conversation_id="conv-1",
        admin_command_denylist=["rm -rf /"],
    )
    assert SHELL_DEFAULT_TIMEOUT_MS == 30_000
    custom = request(
        prep("Shell", {"command": "npm run dev", "block_until_ms": 0, "working_directory": "/w"})
    ).shell_stream_args
    assert (custom.timeout, custom.working_directory) == (0, "/w")
    assert not custom.HasField("description")


@pytest.mark.parametrize("bad", [-1, 2.5, "soon", 2**31])
def test_shell_bad_block_until_ms_is_an_error_result_not_a_request(bad: object) -> None:
    execution = prep("Shell", {"command": "ls", "block_until_ms": bad})
    assert isinstance(execution, InvalidCall)
    done = outcome(execution.begin())
    assert done.is_error
    assert done.content.startswith("invalid arguments for Shell: 'block_until_ms'")
    assert done.tool_call.shell_tool_call.result.spawn_error.error == done.content


def test_shell_passes_on_the_output_notification_and_the_smart_mode_approval() -> None:
    shell = request(
        prep(
            "Shell",
            {
                "command": "npm run dev",
                "block_until_ms": 0,
                "notify_on_output": {
                    "pattern": "ready on port \\d+",
                    "reason": "start the browser tests",
                    "debounce_ms": 250,
                },
                "request_smart_mode_approval": True,
                "smart_mode_block_reason": "it opens a network port",
            },
        )
    ).shell_stream_args
    assert shell.output_notification == agent.ShellOutputNotificationConfig(
        pattern="ready on port \\d+", reason="start the browser tests", debounce=250.0
    )
    assert not shell.output_notification.HasField("notification_limit")
    assert shell.smart_mode_approval == agent.SmartModeApproval(
        request_id=CALL_ID, reason="it opens a network port"
    )
    # Field numbers from Cursor's schema: output_notification 18, smart_mode_approval 19.
    fields = {field.name: field.number for field in agent.ShellArgs.DESCRIPTOR.fields}
    assert (fields["output_notification"], fields["smart_mode_approval"]) == (18, 19)
    # The card keeps only what it shows.
    card = prep("Shell", {"command": "ls", "notify_on_output": {"pattern": "x", "reason": "y"}})
    assert not card.started().shell_tool_call.args.HasField("output_notification")


def test_shell_without_them_sends_neither_and_a_declined_approval_needs_no_reason() -> None:
    for args in (
        {"command": "ls"},
        {"command": "ls", "request_smart_mode_approval": False},
        {"command": "ls", "request_smart_mode_approval": False, "smart_mode_block_reason": "x"},
    ):
        shell = request(prep("Shell", args)).shell_stream_args
        assert not shell.HasField("output_notification")
        assert not shell.HasField("smart_mode_approval")
    plain = request(
        prep(
            "Shell", {"command": "tail -f log", "notify_on_output": {"pattern": "E", "reason": "r"}}
        )
    ).shell_stream_args
    assert plain.output_notification.pattern == "E"
    assert not plain.output_notification.HasField("debounce")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"notify_on_output": "ready"}, "'notify_on_output' must be an object"),
        ({"notify_on_output": {"reason": "r"}}, "'notify_on_output.pattern' is required"),
        ({"notify_on_output": {"pattern": "p"}}, "'notify_on_output.reason' is required"),
        (
            {"notify_on_output": {"pattern": 1, "reason": "r"}},
            "'notify_on_output.pattern' must be a string",
        ),
        (
            {"notify_on_output": {"pattern": "p", "reason": "r", "debounce_ms": "soon"}},
            "'notify_on_output.debounce_ms' must be a number",
        ),
        (
            {"notify_on_output": {"pattern": "p", "reason": "r", "debounce_ms": -5}},
            "'notify_on_output.debounce_ms' must be at least 0",
        ),
        ({"request_smart_mode_approval": "yes"}, "'request_smart_mode_approval' must be true"),
        ({"request_smart_mode_approval": True}, "'smart_mode_block_reason' is required"),
        (
            {"request_smart_mode_approval": True, "smart_mode_block_reason": ""},
            "'smart_mode_block_reason' is required",
        ),
        ({"smart_mode_block_reason": 3}, "'smart_mode_block_reason' must be a string"),
    ],
)
def test_shell_notification_and_approval_of_the_wrong_shape_are_argument_errors(
    extra: dict[str, Any], expected: str
) -> None:
    execution = prep("Shell", {"command": "ls", **extra})
    assert isinstance(execution, InvalidCall)
    done = outcome(execution.begin())
    assert done.is_error
    assert done.content.startswith(f"invalid arguments for Shell: {expected}"), done.content
    assert done.tool_call.shell_tool_call.result.spawn_error.error == done.content


def test_shell_stream_output_becomes_deltas_and_exit_zero_ends_the_call() -> None:
    execution = prep("Shell", {"command": "make", "working_directory": "/w"})
    request(execution)
    assert execution.feed(shell_event(start=agent.ShellStreamStart())) == Waiting()
    assert execution.feed(
        shell_event(stdout=agent.ShellStreamStdout(data="built\n"))
    ) == ShellOutput("stdout", "built\n")
    assert execution.feed(
        shell_event(stderr=agent.ShellStreamStderr(data="warn: x\n"))
    ) == ShellOutput("stderr", "warn: x\n")
    exit_message = shell_event(exit=agent.ShellStreamExit(code=0, cwd="/w"))
    exit_message.local_execution_time_ms = 1234
    done = outcome(execution.feed(exit_message))
    assert (done.content, done.is_error) == ("built\n<stderr>\nwarn: x\n</stderr>", False)
    shell = done.tool_call.shell_tool_call
    assert (shell.args.command, shell.args.working_directory) == ("make", "/w")
    assert shell.args.tool_call_id == CALL_ID
    success = shell.result.success
    assert (success.exit_code, success.stdout, success.stderr) == (0, "built\n", "warn: x\n")
    assert success.interleaved_output == "built\nwarn: x\n"
    assert success.local_execution_time_ms == 1234
    assert success.working_directory == "/w"


def test_shell_non_zero_exit_is_an_error_with_its_code_and_output() -> None:
    execution = prep("Shell", {"command": "pytest"})
    request(execution)
    execution.feed(shell_event(stdout=agent.ShellStreamStdout(data="1 failed\n")))
    done = outcome(execution.feed(shell_event(exit=agent.ShellStreamExit(code=2, cwd="/w"))))
    assert (done.content, done.is_error) == (
        "the command failed with exit code 2\n1 failed\n",
        True,
    )
    failure = done.tool_call.shell_tool_call.result.failure
    assert (failure.exit_code, failure.stdout, failure.aborted) == (2, "1 failed\n", False)


def test_shell_without_output_says_so() -> None:
    execution = prep("Shell", {"command": "true"})
    done = outcome(execution.feed(shell_event(exit=agent.ShellStreamExit(code=0))))
    assert (done.content, done.is_error) == ("(no output)", False)


def test_backgrounded_shell_ends_the_call_with_its_id_and_output_so_far() -> None:
    execution = prep("Shell", {"command": "npm run dev", "block_until_ms": 0})
    request(execution)
    execution.feed(shell_event(stdout=agent.ShellStreamStdout(data="listening on :3000\n")))
    backgrounded = agent.ShellStreamBackgrounded(
        shell_id=42,
        command="npm run dev",
        pid=1234,
        reason=agent.SHELL_BACKGROUND_REASON_TIMEOUT,
    )
    done = outcome(execution.feed(shell_event(backgrounded=backgrounded)))
    assert done.content == (
        "the command keeps running in the background: shell_id=42 pid=1234; its output keeps "
        "going to /home/u/.cursor/terminals/42.txt\noutput so far:\nlistening on :3000\n"
    )
    assert not done.is_error
    result = done.tool_call.shell_tool_call.result
    assert result.is_background and result.pid == 1234
    assert result.terminals_folder == "/home/u/.cursor/terminals/"
    assert (result.success.shell_id, result.success.stdout) == (42, "listening on :3000\n")


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (
            {"rejected": agent.ShellRejected(command="rm x", reason="not allowed")},
            "the command was rejected: not allowed",
        ),
        (
            {"permission_denied": agent.ShellPermissionDenied(error="denied by policy")},
            "denied by policy",
        ),
        (
            {"sandbox_unsupported": agent.ShellSandboxUnsupported(reason="no sandbox here")},
            "no sandbox here",
        ),
    ],
)
def test_shell_refusals_are_errors(event: dict[str, Any], expected: str) -> None:
    done = outcome(prep("Shell", {"command": "rm x"}).feed(shell_event(**event)))
    assert (done.content, done.is_error) == (expected, True)


def test_a_direct_shell_result_is_terminal_too() -> None:
    result = agent.ShellResult(
        timeout=agent.ShellTimeout(command="sleep 99", working_directory="/w", timeout_ms=5000)
    )
    done = outcome(
        prep("Shell", {"command": "sleep 99"}).feed(
            agent.ExecClientMessage(id=1, shell_result=result)
        )
    )
    assert (done.content, done.is_error) == ("the command timed out after 5000 ms in /w", True)
    assert done.tool_call.shell_tool_call.result == result


# ---- ReadLints ----


def test_read_lints_asks_for_each_path_in_turn_and_gives_the_diagnostics() -> None:
    execution = prep("ReadLints", {"paths": ["/a.py", "/b.py", "/a.py"]})
    assert request(execution).diagnostics_args == agent.DiagnosticsArgs(
        path="/a.py", tool_call_id=CALL_ID
    )
    error = diagnostic(
        4, 7, agent.DIAGNOSTIC_SEVERITY_ERROR, "undefined name 'x'", source="pyright", code="E1"
    )
    second = next_request(execution.feed(diagnostics("/a.py", error)))
    assert second.diagnostics_args.path == "/b.py"
    assert second.exec_id == CALL_ID
    done = outcome(execution.feed(diagnostics("/b.py")))
    assert done.content == (
        "/a.py: 1 diagnostic\n  4:7 error: undefined name 'x' [pyright E1]\n\n/b.py: no diagnostics"
    )
    assert not done.is_error
    lints = done.tool_call.read_lints_tool_call
    assert list(lints.args.paths) == ["/a.py", "/b.py", "/a.py"]
    success = lints.result.success
    assert (success.total_files, success.total_diagnostics) == (2, 1)
    item = success.file_diagnostics[0].diagnostics[0]
    assert (item.message, item.range.start.line, item.severity) == (
        "undefined name 'x'",
        4,
        agent.DIAGNOSTIC_SEVERITY_ERROR,
    )


def test_read_lints_without_paths_asks_for_the_workspace_and_errors_are_errors() -> None:
    execution = prep("ReadLints", {})
    assert request(execution).diagnostics_args.path == ""
    missing = agent.DiagnosticsResult(file_not_found=agent.DiagnosticsFileNotFound(path="/x"))
    done = outcome(
        prep("ReadLints", {"paths": ["/x"]}).feed(
            agent.ExecClientMessage(id=1, diagnostics_result=missing)
        )
    )
    assert (done.content, done.is_error) == ("file not found: /x", True)
    assert done.tool_call.read_lints_tool_call.result.error.error_message == "file not found: /x"


# ---- TodoWrite (local) ----


def test_todo_write_completes_locally_and_shows_the_list() -> None:
    args = {
        "todos": [
            {"id": "1", "content": "Write tests", "status": "in_progress"},
            {"id": "2", "content": "Ship", "status": "pending"},
        ],
        "merge": False,
    }
    old = (Todo("0", "Something earlier", "pending"),)
    execution = prep("TodoWrite", args, msgspec.structs.replace(CONTEXT, todos=old))
    assert execution.channel is ToolChannel.LOCAL
    done = outcome(execution.begin())
    assert not done.is_error
    assert done.content == (
        "Replaced the todo list; it now holds 2 items:\n"
        "- [in_progress] 1: Write tests\n"
        "- [pending] 2: Ship"
    )
    update = done.tool_call.update_todos_tool_call
    assert [(t.id, t.status) for t in update.args.todos] == [
        ("1", agent.TODO_STATUS_IN_PROGRESS),
        ("2", agent.TODO_STATUS_PENDING),
    ]
    success = update.result.success
    assert (success.total_count, success.was_merge, success.todos[0].content) == (
        2,
        False,
        "Write tests",
    )


def test_todo_write_merge_updates_by_id_and_the_card_and_model_see_the_merged_list() -> None:
    current = (
        Todo("1", "Read the code", "in_progress"),
        Todo("2", "Fix it", "pending"),
        Todo("3", "Ship", "pending"),
    )
    args = {
        "todos": [
            {"id": "4", "content": "Tell the user", "status": "pending"},
            {"id": "1", "content": "Read the code", "status": "completed"},
        ],
        "merge": True,
    }
    execution = prep("TodoWrite", args, msgspec.structs.replace(CONTEXT, todos=current))
    done = outcome(execution.begin())
    assert done.content == (
        "Merged 2 items into the todo list by id; it now holds 4 items:\n"
        "- [completed] 1: Read the code\n"
        "- [pending] 2: Fix it\n"
        "- [pending] 3: Ship\n"
        "- [pending] 4: Tell the user"
    )
    update = done.tool_call.update_todos_tool_call
    assert ([t.id for t in update.args.todos], update.args.merge) == (["4", "1"], True)
    success = update.result.success
    assert [(t.id, t.status) for t in success.todos] == [
        ("1", agent.TODO_STATUS_COMPLETED),
        ("2", agent.TODO_STATUS_PENDING),
        ("3", agent.TODO_STATUS_PENDING),
        ("4", agent.TODO_STATUS_PENDING),
    ]
    assert (success.total_count, success.was_merge) == (4, True)


def test_apply_todo_update_merges_by_id() -> None:
    current = (Todo("a", "A", "pending"), Todo("b", "B", "pending"))
    same_id_twice = TodoUpdate(
        (Todo("c", "C", "pending"), Todo("a", "A2", "completed"), Todo("c", "C2", "pending")),
        merge=True,
    )
    assert apply_todo_update(current, same_id_twice) == (
        Todo("a", "A2", "completed"),
        Todo("b", "B", "pending"),
        Todo("c", "C2", "pending"),
    )
    assert apply_todo_update((), same_id_twice) == (
        Todo("c", "C2", "pending"),
        Todo("a", "A2", "completed"),
    )
    replace = TodoUpdate((Todo("z", "Z", "pending"),), merge=False)
    assert apply_todo_update(current, replace) == (Todo("z", "Z", "pending"),)
    assert apply_todo_update(current, TodoUpdate((), merge=True)) == current


def test_todo_write_merge_still_needs_every_field_of_an_item() -> None:
    done = outcome(
        prep("TodoWrite", {"todos": [{"id": "1", "status": "completed"}], "merge": True}).begin()
    )
    assert done.is_error
    assert (
        done.content == "invalid arguments for TodoWrite: todos[0].content is required (a string)"
    )


def test_todo_write_with_a_bad_status_is_an_error_result() -> None:
    execution = prep(
        "TodoWrite", {"todos": [{"id": "1", "content": "x", "status": "done"}], "merge": True}
    )
    done = outcome(execution.begin())
    assert done.is_error
    assert done.content.startswith("invalid arguments for TodoWrite: todos[0].status must be")
    assert done.tool_call.update_todos_tool_call.result.error.error == done.content


# ---- arguments and result kinds ----


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("Read", "{}", "invalid arguments for Read: 'path' is required (a string)"),
        ("Read", '{"path": 3}', "invalid arguments for Read: 'path' must be a string"),
        ("Delete", "[1]", "invalid arguments for Delete: the arguments must be a JSON object"),
        ("Grep", '{"pattern": "x", "output_mode": "lines"}', "invalid arguments for Grep: "),
    ],
)
def test_bad_arguments_become_an_error_result_without_a_request(
    name: str, arguments: str, expected: str
) -> None:
    execution = prepare_tool_call(name, CALL_ID, arguments, CONTEXT)
    done = outcome(execution.begin())
    assert done.is_error
    assert done.content.startswith(expected)
    assert done.tool_call.WhichOneof("tool") == execution.started().WhichOneof("tool")


def test_a_result_of_the_wrong_kind_is_a_mismatch_and_an_empty_message_is_not_terminal() -> None:
    execution = prep("Read", {"path": "/p"})
    request(execution)
    assert execution.feed(agent.ExecClientMessage(id=1)) == Waiting()
    with_time = agent.ExecClientMessage(id=1, exec_id=CALL_ID, local_execution_time_ms=5)
    assert execution.feed(with_time) == Waiting()
    assert execution.feed(write_ok()) == WrongResult("write_result")
    # A result variant our subset does not declare (ls_result = 8) is still a result.
    undeclared = agent.ExecClientMessage.FromString(b"\x08\x01\x42\x00")
    assert execution.feed(undeclared) == WrongResult("field 8")


# ---- timestamps and UI frames ----


def test_stamp_adds_the_call_id_and_real_times_without_touching_the_input() -> None:
    tool_call = prep("Read", {"path": "/p"}).started()
    stamped = stamp_tool_call(tool_call, CALL_ID, 1_700_000_000_000, 1_700_000_000_250)
    assert (stamped.tool_call_id, stamped.started_at_ms, stamped.completed_at_ms) == (
        CALL_ID,
        1_700_000_000_000,
        1_700_000_000_250,
    )
    assert stamped.read_tool_call.args.path == "/p"
    assert not tool_call.HasField("tool_call_id")
    started_only = stamp_tool_call(tool_call, CALL_ID, 5)
    assert not started_only.HasField("completed_at_ms")


def test_tool_call_frames_decode_to_the_interaction_updates() -> None:
    tool_call = stamp_tool_call(prep("Read", {"path": "/p"}).started(), CALL_ID, 10, 20)

    started = decode(tool_call_started_frame(CALL_ID, "run:0", tool_call)).interaction_update
    assert started.WhichOneof("message") == "tool_call_started"
    assert started.tool_call_started.call_id == CALL_ID
    assert started.tool_call_started.model_call_id == "run:0"
    assert started.tool_call_started.tool_call == tool_call

    completed = decode(
        tool_call_completed_frame(CALL_ID, "run:0", tool_call.SerializeToString())
    ).interaction_update
    assert completed.WhichOneof("message") == "tool_call_completed"
    assert completed.tool_call_completed.tool_call == tool_call
    assert completed.tool_call_completed.model_call_id == "run:0"

    delta = decode(shell_delta_frame(CALL_ID, "run:0", "stderr", "oops\n")).interaction_update
    update = delta.tool_call_delta
    assert (update.call_id, update.model_call_id) == (CALL_ID, "run:0")
    assert update.tool_call_delta.shell_tool_call_delta.stderr.content == "oops\n"

    partial = decode(partial_tool_call_frame(CALL_ID, "Shell", "run:0")).interaction_update
    placeholder = partial.partial_tool_call
    assert (placeholder.call_id, placeholder.model_call_id) == (CALL_ID, "run:0")
    assert placeholder.tool_call.WhichOneof("tool") == "shell_tool_call"
    assert placeholder.tool_call.tool_call_id == CALL_ID
    assert placeholder.args_text_delta == ""
    with pytest.raises(UnsupportedTool):
        partial_tool_call_frame(CALL_ID, "Teleport", "run:0")

    abort = decode(exec_abort_frame(3))
    assert abort.exec_server_control_message.abort.id == 3
