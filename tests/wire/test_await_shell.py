"""AwaitShell as a pure state machine, and the terminal file it reads.

The call's steps are driven by hand here: ``begin``, then each read answered with ``feed`` and
each pause ended with ``wake``. Fresh wire ids per poll are the runtime's (see
``tests/actors/test_tool_runtime_actor.py``); here each poll is a new ``SendExec`` for the same
file.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from wire.proto import agent_v1_pb2 as agent
from wire.tools.await_shell import (
    AWAIT_DEFAULT_MS,
    AWAIT_MAX_MS,
    MATCH_TEXT_LIMIT,
    MATCH_TIMEOUT_S,
    MATCH_WINDOW_CHARS,
    POLL_INTERVAL_MS,
)
from wire.tools.base import (
    ExecContext,
    ExecStep,
    InvalidCall,
    SendExec,
    ToolExecution,
    ToolOutcome,
    WakeAfter,
    WrongResult,
)
from wire.tools.dispatch import prepare_tool_call
from wire.tools.terminal_file import parse_terminal_file, terminal_file_path

CALL_ID = "call-await\nfc_1"
CONTEXT = ExecContext(conversation_id="conv-1", terminals_folder="/home/u/.cursor/terminals/")
FILE = "/home/u/.cursor/terminals/7.txt"
HEADER = "---\npid: 4242\ncwd: /work\ncommand: npm run dev\n---\n"
FOOTER = "---\nexit_code: 3\nelapsed_ms: 1200\n---\n"


def prep(args: dict[str, Any], context: ExecContext = CONTEXT) -> ToolExecution:
    return prepare_tool_call("AwaitShell", CALL_ID, json.dumps(args), context)


def read(content: str) -> agent.ExecClientMessage:
    success = agent.ReadSuccess(path=FILE, content=content)
    return agent.ExecClientMessage(id=9, read_result=agent.ReadResult(success=success))


def not_found() -> agent.ExecClientMessage:
    missing = agent.ReadFileNotFound(path=FILE)
    return agent.ExecClientMessage(id=9, read_result=agent.ReadResult(file_not_found=missing))


def poll(step: object) -> agent.ExecServerMessage:
    assert isinstance(step, SendExec), step
    return step.message


def pause(step: object) -> int:
    assert isinstance(step, WakeAfter), step
    return step.delay_ms


def outcome(step: ExecStep | object) -> ToolOutcome:
    assert isinstance(step, ToolOutcome), step
    return step


def summary(step: object) -> dict[str, Any]:
    done = outcome(step)
    assert not done.is_error, done.content
    parsed: dict[str, Any] = json.loads(done.content)
    return parsed


# ---- the terminal file ----


def test_the_output_leaves_out_the_header_and_the_exit_footer() -> None:
    parsed = parse_terminal_file(HEADER + "compiling\nready on :3000\n" + FOOTER)
    assert parsed.output == "compiling\nready on :3000\n"
    assert parsed.exit_code == 3


def test_a_running_shell_has_output_and_no_exit_code() -> None:
    parsed = parse_terminal_file(HEADER + "compiling\n")
    assert (parsed.output, parsed.exit_code) == ("compiling\n", None)


def test_with_a_header_only_the_footer_records_the_exit() -> None:
    # The command printed an exit_code line of its own: it is output, not the shell's end.
    parsed = parse_terminal_file(HEADER + "exit_code: 1\nstill going\n")
    assert (parsed.output, parsed.exit_code) == ("exit_code: 1\nstill going\n", None)


def test_a_file_without_metadata_takes_the_first_exit_code_line() -> None:
    parsed = parse_terminal_file("server ready\nexit_code: 0\nexit_code: 5\n")
    assert (parsed.output, parsed.exit_code) == ("server ready\nexit_code: 0\nexit_code: 5\n", 0)


def test_a_footer_still_being_written_counts_and_a_bare_rule_is_output() -> None:
    assert parse_terminal_file(HEADER + "done\n---\nexit_code: 0\n") == parse_terminal_file(
        HEADER + "done\n" + "---\nexit_code: 0\n---\n"
    )
    ruled = parse_terminal_file(HEADER + "table\n---\nrow: 1\n---\n")
    assert (ruled.output, ruled.exit_code) == ("table\n---\nrow: 1\n---\n", None)


def test_a_header_still_being_written_has_no_output_yet() -> None:
    assert parse_terminal_file("---\npid: 1\n") == parse_terminal_file("")
    assert parse_terminal_file("").output == ""


def test_the_file_path_joins_with_the_folders_own_separator() -> None:
    assert terminal_file_path("/home/u/terminals/", "7") == "/home/u/terminals/7.txt"
    assert terminal_file_path("C:\\Users\\u\\terminals", "7") == "C:\\Users\\u\\terminals\\7.txt"


# ---- polling a shell ----


def test_each_poll_reads_the_terminal_file_without_hook_contexts_until_the_pattern_appears() -> (
    None
):
    execution = prep({"shell_id": "7", "pattern": "^ready on :(\\d+)$", "block_until_ms": 5000})
    first = poll(execution.begin())
    assert first.read_args == agent.ReadArgs(path=FILE, tool_call_id=CALL_ID)
    assert first.exec_id == CALL_ID
    assert first.HasField("accept_hook_additional_contexts")
    assert first.accept_hook_additional_contexts is False
    assert pause(execution.feed(not_found())) == POLL_INTERVAL_MS  # not written yet: keep going
    second = poll(execution.wake())
    assert second == first  # the same read again; the runtime gives it a fresh wire id
    # "ready on" in the header's command would not count: only the output is searched.
    assert pause(execution.feed(read("---\ncommand: ready on :1\n---\ncompiling\n"))) == 1000
    poll(execution.wake())
    done = outcome(execution.feed(read(HEADER + "compiling\nready on :3000\nmore\n")))
    assert json.loads(done.content) == {
        "task_id": "7",
        "output_file_path": FILE,
        "output_length": len("compiling\nready on :3000\nmore\n"),
        "exit_code": None,
        "pattern_matched": True,
        "match": "ready on :3000",
    }
    card = done.tool_call.await_tool_call
    assert card.args == agent.AwaitArgs(
        task_id="7", block_until_ms=5000, regex="^ready on :(\\d+)$"
    )
    still = card.result.success.still_running
    assert (still.task_id, still.runtime_ms, still.output_file_path) == ("7", 2000, FILE)
    assert (still.regex_requested, still.regex_match) == (True, "ready on :3000")
    assert still.wake_reason == "timeout_or_pattern"


def test_the_shells_exit_ends_the_wait_with_its_code() -> None:
    execution = prep({"shell_id": "7", "pattern": "never"})
    poll(execution.begin())
    done = summary(execution.feed(read(HEADER + "built\n" + FOOTER)))
    assert done == {
        "task_id": "7",
        "output_file_path": FILE,
        "output_length": 6,
        "exit_code": 3,
        "pattern_matched": False,
    }


def test_the_exit_card_is_complete_and_a_redacted_read_counts_as_a_read() -> None:
    execution = prep({"shell_id": 7})  # a whole number is taken as the id
    poll(execution.begin())
    redacted = agent.ReadResult(success=agent.ReadSuccess(content="ok\nexit_code: 0\n"))
    done = outcome(execution.feed(agent.ExecClientMessage(id=3, redacted_read_result=redacted)))
    assert json.loads(done.content)["exit_code"] == 0
    assert "pattern_matched" not in json.loads(done.content)  # no pattern was asked for
    complete = done.tool_call.await_tool_call.result.success.complete
    assert (complete.task_id, complete.exit_code, complete.wake_reason) == ("7", 0, "task_complete")
    assert complete.regex_requested is False and not complete.HasField("regex_match")
    assert done.tool_call.await_tool_call.args.block_until_ms == AWAIT_DEFAULT_MS


def test_the_deadline_counts_the_pauses_and_the_last_one_is_what_is_left() -> None:
    execution = prep({"shell_id": "7", "pattern": "ready", "block_until_ms": 2500})
    poll(execution.begin())
    delays = []
    for _ in range(3):
        delays.append(pause(execution.feed(read(HEADER + "waiting\n"))))
        poll(execution.wake())
    assert delays == [1000, 1000, 500]
    done = outcome(execution.feed(read(HEADER + "waiting\n")))
    assert (json.loads(done.content)["exit_code"], json.loads(done.content)["pattern_matched"]) == (
        None,
        False,
    )
    assert done.tool_call.await_tool_call.result.success.still_running.runtime_ms == 2500


def test_block_until_zero_looks_once_without_pausing() -> None:
    execution = prep({"shell_id": "7", "block_until_ms": 0})
    poll(execution.begin())
    done = outcome(execution.feed(read(HEADER + "half way\n")))
    assert json.loads(done.content)["exit_code"] is None
    still = done.tool_call.await_tool_call.result.success.still_running
    assert (still.runtime_ms, still.output_length) == (0, len("half way\n"))


def test_a_long_match_is_cut_for_the_model_and_the_card() -> None:
    execution = prep({"shell_id": "7", "pattern": "x+"})
    poll(execution.begin())
    done = summary(execution.feed(read("x" * (MATCH_TEXT_LIMIT + 50))))
    assert done["match"] == "x" * MATCH_TEXT_LIMIT


def test_a_read_error_is_an_error_result_for_the_model() -> None:
    execution = prep({"shell_id": "7"})
    poll(execution.begin())
    failed = agent.ReadResult(error=agent.ReadError(path=FILE, error="disk on fire"))
    done = outcome(execution.feed(agent.ExecClientMessage(id=1, read_result=failed)))
    assert (done.content, done.is_error) == ("disk on fire", True)
    assert done.tool_call.await_tool_call.result.error.error == "disk on fire"


def test_a_result_of_another_kind_is_the_clients_mistake() -> None:
    execution = prep({"shell_id": "7"})
    poll(execution.begin())
    wrong = agent.ExecClientMessage(id=1, delete_result=agent.DeleteResult())
    assert execution.feed(wrong) == WrongResult("delete_result")


def test_without_a_terminals_folder_the_model_reads_an_error_and_nothing_is_sent() -> None:
    execution = prep({"shell_id": "7"}, ExecContext(conversation_id="conv-1"))
    done = outcome(execution.begin())
    assert done.is_error and "no terminals folder" in done.content
    assert done.tool_call.await_tool_call.result.error.error == done.content


# ---- the timer ----


def test_without_a_shell_it_pauses_once_and_waited_says_how_long() -> None:
    execution = prep({"block_until_ms": 1500})
    assert pause(execution.begin()) == 1500
    done = outcome(execution.wake())
    assert (done.content, done.is_error) == ("Waited 1500 ms", False)
    card = done.tool_call.await_tool_call
    assert card.args == agent.AwaitArgs(task_id="", block_until_ms=1500)
    still = card.result.success.still_running
    assert (still.task_id, still.runtime_ms, still.wake_reason) == ("", 1500, "sleep_complete")
    started = execution.started().await_tool_call
    assert started.args == card.args and not started.HasField("result")


def test_the_timer_defaults_to_thirty_seconds() -> None:
    assert pause(prep({}).begin()) == AWAIT_DEFAULT_MS


# ---- the model's mistakes ----


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"shell_id": "7", "pattern": "(unclosed"}, "'pattern' is not a valid regular expression"),
        ({"shell_id": "7", "block_until_ms": AWAIT_MAX_MS + 1}, "between 0 and 7140000"),
        ({"block_until_ms": 0}, "between 1 and 7140000"),
        ({"block_until_ms": AWAIT_MAX_MS + 1}, "between 1 and 7140000"),
        ({"shell_id": "7", "block_until_ms": 1.5}, "'block_until_ms' must be a whole number"),
        ({"shell_id": True}, "'shell_id' must be a string"),
        ({"pattern": "ready"}, "'pattern' needs 'shell_id'"),
    ],
)
def test_bad_arguments_are_an_error_the_model_reads(args: dict[str, Any], message: str) -> None:
    execution = prep(args)
    assert isinstance(execution, InvalidCall)
    done = outcome(execution.begin())
    assert done.is_error and message in done.content, done.content
    assert done.tool_call.await_tool_call.result.error.error == done.content


def test_the_cap_itself_is_allowed() -> None:
    assert pause(prep({"block_until_ms": AWAIT_MAX_MS}).begin()) == AWAIT_MAX_MS
    execution = prep({"shell_id": "7", "block_until_ms": AWAIT_MAX_MS})
    assert execution.started().await_tool_call.args.block_until_ms == AWAIT_MAX_MS


def test_the_pattern_is_multiline_as_the_schema_promises() -> None:
    execution = prep({"shell_id": "7", "pattern": "^done$"})
    poll(execution.begin())
    assert summary(execution.feed(read("step 1\ndone\nstep 3\n")))["match"] == "done"


def test_a_pattern_that_backtracks_for_ever_ends_the_wait_with_an_error_not_a_hang() -> None:
    """The model's pattern runs in the tool runtime's mailbox: a catastrophic one gives up after
    its timeout instead of holding the mailbox (``re`` would take years on this input)."""
    execution = prep({"shell_id": "7", "pattern": "(x+x+)+y"})
    poll(execution.begin())
    done = outcome(execution.feed(read(HEADER + "x" * 5000 + "\n")))
    assert done.is_error
    assert done.content.startswith(f"the pattern took over {int(MATCH_TIMEOUT_S * 1000)} ms")
    card = done.tool_call.await_tool_call.result
    assert card.error.error == done.content


def test_the_pattern_sees_only_the_end_of_a_long_output() -> None:
    early = "READY\n" + "." * MATCH_WINDOW_CHARS + "\n"
    execution = prep({"shell_id": "7", "pattern": "READY", "block_until_ms": 0})
    poll(execution.begin())
    assert summary(execution.feed(read(HEADER + early)))["pattern_matched"] is False
    execution = prep({"shell_id": "7", "pattern": "READY", "block_until_ms": 0})
    poll(execution.begin())
    late = "." * MATCH_WINDOW_CHARS + "\nREADY\n"
    assert summary(execution.feed(read(HEADER + late)))["match"] == "READY"
