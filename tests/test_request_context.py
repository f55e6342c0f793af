"""Cursor's UserMessage/RequestContext mapped onto the runtime message: every section the
request carries is rendered, none it does not, and the time zone is honoured."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from actors.request_context import runtime_context
from prompt import Environment, GitRepo, RuntimeContextError, load_prompt_assets
from wire.proto import agent_v1_pb2 as agent

MODE = load_prompt_assets().mode("agent")
NOW = datetime(2026, 2, 3, 8, 5, tzinfo=UTC)  # Tuesday


def _request_context() -> agent.RequestContext:
    return agent.RequestContext(
        env=agent.RequestContextEnv(
            os_version="darwin 24.6.0",
            shell="zsh",
            workspace_paths=["/Users/ada/project"],
            terminals_folder="/Users/ada/.cursor/terminals",
            time_zone="Asia/Shanghai",
        ),
        git_repos=[agent.GitRepoInfo(path="/Users/ada/project", status="M  src/main.py")],
        rules=[agent.CursorRule(full_path="/Users/ada/.cursor/rules/a.mdc", content="Use tabs.")],
        non_file_rules=[agent.CursorRule(content="Answer in French.")],
        cloud_rule="Never push to main.",
    )


def test_env_git_repo_and_rules_are_rendered() -> None:
    message = agent.UserMessage(text="fix the bug", message_id="m1")
    context = runtime_context(message, _request_context(), NOW)
    assert context.environment == Environment(
        os_version="darwin 24.6.0",
        shell="zsh",
        workspace_paths=("/Users/ada/project",),
        git_repos=(GitRepo(path="/Users/ada/project", status="M  src/main.py"),),
        terminals_folder="/Users/ada/.cursor/terminals",
        time_zone="Asia/Shanghai",
    )
    assert context.rules == ("Use tabs.", "Answer in French.", "Never push to main.")

    text = MODE.runtime_message(context)
    assert "<user_info>" in text
    assert "Workspace path: /Users/ada/project (git repository at /Users/ada/project)" in text
    assert "Shell: zsh" in text
    assert "Terminals folder: /Users/ada/.cursor/terminals" in text
    assert "<git_status>" in text
    assert "M  src/main.py" in text
    assert "<user_rule>Use tabs.</user_rule>" in text
    assert "<user_rule>Answer in French.</user_rule>" in text
    assert "<user_rule>Never push to main.</user_rule>" in text
    assert text.endswith("<user_query>\nfix the bug\n</user_query>")


def test_time_zone_is_honoured() -> None:
    message = agent.UserMessage(text="hi", message_id="m1")
    text = MODE.runtime_message(runtime_context(message, _request_context(), NOW))
    assert "<timestamp>Tuesday, Feb 3, 2026, 4:05 PM (UTC+8)</timestamp>" in text
    assert "Time zone: Asia/Shanghai" in text


def test_only_a_user_message_renders_only_the_query() -> None:
    message = agent.UserMessage(text="hello", message_id="m1")
    for request_context in (None, agent.RequestContext(), agent.RequestContext(env={})):
        context = runtime_context(message, request_context, None)
        assert context.environment is None
        assert context.rules == ()
        assert context.selected is None
        assert MODE.runtime_message(context) == "<user_query>\nhello\n</user_query>"


def test_empty_parts_leave_sections_out() -> None:
    request_context = agent.RequestContext(
        env=agent.RequestContextEnv(workspace_paths=[""]),
        git_repos=[agent.GitRepoInfo(path="/repo", status="")],
        rules=[agent.CursorRule(full_path="/r.mdc", content="  ")],
        cloud_rule="",
    )
    message = agent.UserMessage(text="q", message_id="m1")
    context = runtime_context(message, request_context, NOW)
    assert context.rules == ()
    text = MODE.runtime_message(context)
    assert "<git_status>" not in text
    assert "<rules>" not in text


def test_unknown_time_zone_is_an_error() -> None:
    request_context = agent.RequestContext(env=agent.RequestContextEnv(time_zone="Mars/Olympus"))
    message = agent.UserMessage(text="q", message_id="m1")
    with pytest.raises(RuntimeContextError):
        MODE.runtime_message(runtime_context(message, request_context, NOW))
