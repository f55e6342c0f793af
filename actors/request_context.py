"""Map Cursor's ``UserMessage`` and ``RequestContext`` onto the renderer's ``RuntimeContext``.

A pure function of the protobuf messages: every section the request carries is filled, and
a section it does not carry (empty strings, empty lists) is left out, so the runtime message
never shows an empty ``<user_info>`` or ``<rules>``. The time zone is checked when the
message is rendered (``RuntimeContextError``), not here.

Only the inline parts are mapped: rules (``rules``, ``non_file_rules``, ``cloud_rule``), the
environment, git repositories and the plain-text selected context (files, code selections,
terminal selections). Images, skills, MCP and blob-referenced parts are not read yet.
"""

from __future__ import annotations

from datetime import datetime

from prompt.runtime_message import (
    Environment,
    GitRepo,
    RuntimeContext,
    SelectedCode,
    SelectedContext,
    SelectedFile,
    TerminalSelection,
)
from wire.proto import agent_v1_pb2 as agent


def runtime_context(
    user_message: agent.UserMessage,
    request_context: agent.RequestContext | None,
    now: datetime | None,
) -> RuntimeContext:
    """The runtime message's context for one user turn; ``now`` must carry a UTC offset."""
    selected = (
        _selected(user_message.selected_context)
        if user_message.HasField("selected_context")
        else None
    )
    if request_context is None:
        return RuntimeContext(user_query=user_message.text, selected=selected, now=now)
    return RuntimeContext(
        user_query=user_message.text,
        environment=_environment(request_context),
        rules=_rules(request_context),
        selected=selected,
        now=now,
    )


def _environment(context: agent.RequestContext) -> Environment | None:
    env = context.env
    environment = Environment(
        os_version=env.os_version,
        shell=env.shell,
        workspace_paths=tuple(path for path in env.workspace_paths if path),
        git_repos=tuple(
            GitRepo(path=repo.path, status=repo.status) for repo in context.git_repos if repo.path
        ),
        terminals_folder=env.terminals_folder,
        time_zone=env.time_zone,
    )
    return None if environment == Environment() else environment


def _rules(context: agent.RequestContext) -> tuple[str, ...]:
    texts = [rule.content for rule in (*context.rules, *context.non_file_rules)]
    if context.HasField("cloud_rule"):
        texts.append(context.cloud_rule)
    return tuple(text for text in texts if text.strip())


def _selected(selected: agent.SelectedContext) -> SelectedContext | None:
    context = SelectedContext(
        files=tuple(
            SelectedFile(path=item.path, content=item.content)
            for item in selected.files
            if item.path
        ),
        code=tuple(
            SelectedCode(
                path=item.path,
                content=item.content,
                start_line=item.range.start.line if item.HasField("range") else None,
                end_line=item.range.end.line if item.HasField("range") else None,
            )
            for item in selected.code_selections
            if item.path or item.content
        ),
        terminal_selections=tuple(
            TerminalSelection(title=item.title, content=item.content)
            for item in selected.terminal_selections
            if item.content.strip()
        ),
    )
    return None if context == SelectedContext() else context
